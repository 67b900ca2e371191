"""The one safe expression language of Frontdesk: conditions, values and message templates."""

from frontdesk.expr.evaluator import (
    EvalEnv,
    EvalError,
    call_function,
    evaluate,
    is_true,
)
from frontdesk.expr.functions import Function, Param, function_names
from frontdesk.expr.functions import lookup as lookup_function
from frontdesk.expr.handlebars import parse_handlebars
from frontdesk.expr.parser import (
    MAX_NESTING_DEPTH,
    AblNames,
    Dialect,
    ExprSyntaxError,
    collect_calls,
    collect_refs,
    parse_condition,
    parse_expression,
)
from frontdesk.expr.template import (
    TemplateSyntaxError,
    format_value,
    parse_template,
    render_template,
    template_exprs,
    template_refs,
)

__all__ = [
    "MAX_NESTING_DEPTH",
    "AblNames",
    "Dialect",
    "EvalEnv",
    "EvalError",
    "ExprSyntaxError",
    "Function",
    "Param",
    "TemplateSyntaxError",
    "call_function",
    "collect_calls",
    "collect_refs",
    "evaluate",
    "format_value",
    "function_names",
    "is_true",
    "lookup_function",
    "parse_condition",
    "parse_expression",
    "parse_handlebars",
    "parse_template",
    "render_template",
    "template_exprs",
    "template_refs",
]
