"""The IR package: models and the checked-in JSON schema."""

from frontdesk.ir.models import *  # noqa: F401,F403
from frontdesk.ir.models import Program, IR_VERSION  # noqa: F401
