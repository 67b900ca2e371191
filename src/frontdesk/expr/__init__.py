"""The one safe expression language of Frontdesk: conditions, values and message templates."""

from frontdesk.expr.evaluator import EvalError, evaluate, is_true
from frontdesk.expr.parser import (
    KNOWN_FUNCTIONS,
    MAX_NESTING_DEPTH,
    ExprSyntaxError,
    collect_refs,
    parse_condition,
    parse_expression,
)
from frontdesk.expr.template import (
    TemplateSyntaxError,
    format_value,
    parse_template,
    render_template,
    template_refs,
)

__all__ = [
    "KNOWN_FUNCTIONS",
    "MAX_NESTING_DEPTH",
    "EvalError",
    "ExprSyntaxError",
    "TemplateSyntaxError",
    "collect_refs",
    "evaluate",
    "format_value",
    "is_true",
    "parse_condition",
    "parse_expression",
    "parse_template",
    "render_template",
    "template_refs",
]
