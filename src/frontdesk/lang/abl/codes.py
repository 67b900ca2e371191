"""The diagnostic codes of the ABL front end (documented in docs/abl-diagnostics.md)."""

# reading the text
READ_ERROR = "ABL001"  # a file cannot be read (missing, not UTF-8, a folder with no ABL file)
SYNTAX = "ABL002"  # a line the outline reader cannot place (bad indentation, unclosed bracket or quote)
YAML_SYNTAX = "ABL003"  # an .agent.yaml file that is not valid YAML, or not a mapping
KEYWORD_CASE = "ABL004"  # a lowercase keyword in .abl, or an uppercase key in .agent.yaml
UNKNOWN_SECTION = "ABL005"  # a top-level section ABL does not define (with "did you mean")
DUPLICATE_SECTION = "ABL006"  # the same section twice in one document
MISSING_HEADER = "ABL007"  # a document with no AGENT:, SUPERVISOR:, TOOLS library or BEHAVIOR_PROFILE header
UNKNOWN_KEY = "ABL008"  # a key a section does not define
WRONG_SHAPE = "ABL009"  # a value of the wrong shape (a list where text is expected, ...)
MISSING_KEY = "ABL010"  # a key a construct needs (TO: of a HANDOFF, ...)
DUPLICATE_NAME = "ABL011"  # two agents, tools, fields or steps of the same name
BAD_NAME = "ABL012"  # a name that is not an identifier
# expressions, templates, signatures
BAD_EXPRESSION = "ABL013"  # a condition or value the expression language rejects
BAD_TEMPLATE = "ABL014"  # a malformed {{...}} template
BAD_SIGNATURE = "ABL015"  # a tool signature that does not parse
BAD_CEL = "ABL016"  # a guardrail `check` that is not valid CEL
UNKNOWN_TYPE = "ABL017"  # a type that is neither built in nor declared
# references
UNKNOWN_AGENT = "ABL018"  # a HANDOFF / DELEGATE / ROUTING / AGENTS target that does not exist
UNKNOWN_STEP = "ABL019"  # THEN / GOTO / a FLOW sequence naming a step that does not exist
UNKNOWN_TOOL = "ABL020"  # a CALL or reference to a tool the agent does not declare
UNKNOWN_ENTITY = "ABL021"  # ENTITY_REF to an entity not in ENTITIES
UNKNOWN_PROFILE = "ABL022"  # USE BEHAVIOR_PROFILE naming no profile
UNSET_FIELD = "ABL023"  # a field a constraint reads that nothing sets
TYPE_MISMATCH = "ABL024"  # a tool parameter type that contradicts the GATHER field of the same name
NO_ENTRY = "ABL025"  # a project with no entry agent, or more than one candidate
BAD_VALUE = "ABL026"  # a value outside the allowed set (consent: sometimes, RESET: weekly, ...)
TOO_DEEP = "ABL027"  # a document, value or type nested deeper than the reader follows (64 levels)
# the spec's own warnings
AUTH_JIT_WITHOUT_PROFILE = "ABL101"  # auth_jit: true without auth_profile
SIDE_EFFECT_TOOL_WITHOUT_CONFIRMATION = "ABL102"  # side_effects: true without confirm:
EXPERIMENTAL_LOOKUP_TABLES = "ABL103"  # agent-local LOOKUP_TABLES are experimental
RESERVED_NAME = "ABL104"  # a variable named like a reserved one (`match`, `_private`)
NON_STRUCTURAL_BEFORE = "ABL105"  # BEFORE <something> other than `calling <tool>` / `returning results`
ORPHAN_CONSENT = "ABL106"  # consent: without auth_profile (ignored)
ENTITY_REF_WITH_TYPE = "ABL107"  # a field with ENTITY_REF that also declares TYPE / OPTIONS / VALUES
DEPRECATED = "ABL108"  # a deprecated form (MODE:, legacy recall event names)
IGNORED = "ABL109"  # accepted for compatibility but without effect here (top-level GATHER strategy, ...)


from frontdesk.yamlsource.codes import YamlCodes  # noqa: E402

# the codes an .agent.yaml document and a project's config.yml are read under
YAML = YamlCodes(read_error=READ_ERROR, syntax=YAML_SYNTAX, duplicate_key=YAML_SYNTAX, wrong_type=WRONG_SHAPE,
                 ignored=IGNORED, document="an .agent.yaml file")
