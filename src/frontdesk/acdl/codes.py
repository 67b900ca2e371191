"""The diagnostic codes of the ACDL front end, each with a one-line description (docs/acdl-diagnostics.md)."""

from __future__ import annotations

# ---- syntax (parser.py)
SYNTAX = "ACDL001"
UNCLOSED_BRACE = "ACDL002"
UNMATCHED_BRACE = "ACDL003"
MISSING_ROLE_COLON = "ACDL004"
UNKNOWN_ROLE = "ACDL005"
BAD_CHARACTER = "ACDL006"
EMPTY_ROLE = "ACDL007"
UNCLOSED_PAREN = "ACDL008"
SINGLE_EQUALS = "ACDL009"
BAD_ELEMENT = "ACDL010"
ELSE_WITHOUT_IF = "ACDL011"
BAD_SWITCH = "ACDL012"
BAD_LOOP_VAR = "ACDL013"
ROLE_OUTSIDE_SPEC = "ACDL014"
READ_ERROR = "ACDL015"

# ---- structure and scoping (checker.py)
NESTED_ROLE = "ACDL020"
CONTROL_IN_SINGLE_ROLE = "ACDL021"
N_WITH_CHAT_ROLES = "ACDL022"
N_TWICE = "ACDL023"
N_NOT_ALONE = "ACDL024"
CONTENT_OUTSIDE_ROLE = "ACDL025"
STR_FRAG_OUTSIDE_ROLE = "ACDL026"
ROLES_FRAG_IN_ROLE = "ACDL027"
ROLE_IN_STR_FRAG = "ACDL028"
TEMPLATE_NAME = "ACDL029"
CAPS_FUNCTION = "ACDL030"
FUNCTION_NAME = "ACDL031"
UNDEFINED_FRAGMENT = "ACDL032"
UNDEFINED_NAME = "ACDL033"
DUPLICATE_DEFINITION = "ACDL034"
UNKNOWN_NAMESPACE = "ACDL035"
JUMP_OUTSIDE_LOOP = "ACDL036"
MARK_WITHOUT_NUMBER = "ACDL037"
NAME_REDEFINED = "ACDL038"
FRAGMENT_ARITY = "ACDL039"
SECOND_ELEMENT_ON_ROLE_LINE = "ACDL040"
ENDS_HERE_IN_ROLE = "ACDL041"
NESTED_FRAGMENT_DEF = "ACDL042"
RANGE_ARITY = "ACDL043"

DESCRIPTIONS: dict[str, str] = {
    SYNTAX: "syntax error: a token the grammar does not allow at that place (the message says what was expected)",
    UNCLOSED_BRACE: "a `{` is never closed; reported at the opening brace",
    UNMATCHED_BRACE: "a `}` with no open block to close",
    MISSING_ROLE_COLON: "a role letter without its colon (`U env.x` or `U {`); write `U:`",
    UNKNOWN_ROLE: "`X:` inside a block where X is not one of the roles S, U, A, T, N",
    BAD_CHARACTER: "a character that cannot start any ACDL token (or an unterminated string)",
    EMPTY_ROLE: "a role marker with nothing after it on its line (`U:` then a newline, `}` or a comment)",
    UNCLOSED_PAREN: "a `(` or `[` that is not closed before the block or file ends",
    SINGLE_EQUALS: "a single `=`; compare with `==`, bind a name with `Name x := ...`",
    BAD_ELEMENT: "a malformed element: a context variable called like a function, chained calls, `[]` twice in a row, an empty index list",
    ELSE_WITHOUT_IF: "`Else`/`ElseIf` that does not follow an `If` block",
    BAD_SWITCH: "`Case`/`Default` outside a Switch, a second `Default`, or a `Case` after `Default`",
    BAD_LOOP_VAR: "a ForEach or list-comprehension variable that is not a plain name or `@name`",
    ROLE_OUTSIDE_SPEC: "a role message at file level; put it inside `Name[@T]: { ... }`",
    READ_ERROR: "the file cannot be read",
    NESTED_ROLE: "a role message inside another role message",
    CONTROL_IN_SINGLE_ROLE: "control flow or a non-content element in a single-line role message; use the braced form",
    N_WITH_CHAT_ROLES: "`N:` (completion format) in a prompt that also uses chat roles S/U/A/T",
    N_TWICE: "more than one `N:` block in a prompt",
    N_NOT_ALONE: "something other than the single `N:` block (and comments) at the top level of a completion prompt",
    CONTENT_OUTSIDE_ROLE: "a content element (template, variable, function, literal, $name) outside any role message",
    STR_FRAG_OUTSIDE_ROLE: "a string fragment (StrFrag) invoked where role messages are expected",
    ROLES_FRAG_IN_ROLE: "a roles fragment (RolesFrag) invoked inside a role message or string fragment, or used as an argument",
    ROLE_IN_STR_FRAG: "a role message inside a StrFrag definition (string fragments produce content only)",
    TEMPLATE_NAME: "warning: a template whose name is not ALL_CAPS (e.g. `Instructions`)",
    CAPS_FUNCTION: "an ALL_CAPS name called with an index list like a function; templates take no indices",
    FUNCTION_NAME: "warning: a function whose name starts with a capital (functions are camelCase or lower_snake)",
    UNDEFINED_FRAGMENT: "`Frag Name` where no StrFrag/RolesFrag Name is defined in the file",
    UNDEFINED_NAME: "`$name` with no `Name name := ...` before it in scope",
    DUPLICATE_DEFINITION: "two specifications or fragments with the same name",
    UNKNOWN_NAMESPACE: "a dotted variable whose namespace is not env, sys or resp (or a loop variable)",
    JUMP_OUTSIDE_LOOP: "`break`/`continue` outside a ForEach",
    MARK_WITHOUT_NUMBER: "`Mark {` without its number (or with a number that is not a whole number)",
    NAME_REDEFINED: "warning: `Name x` defined again in the same block",
    FRAGMENT_ARITY: "a fragment invoked with a different number of arguments than its definition has parameters",
    SECOND_ELEMENT_ON_ROLE_LINE: "a second element on the line of a single-line role message; use `U: { a  b }`",
    ENDS_HERE_IN_ROLE: "`PromptEndsHere` inside a role message or string fragment (it ends the message sequence)",
    NESTED_FRAGMENT_DEF: "a fragment definition that is not at the top level of the file or of a prompt body",
    RANGE_ARITY: "`range` called with other than 1 to 3 arguments",
}
