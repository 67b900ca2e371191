"""The words ABL writes in capitals: section names, step keys and the keys nested below them."""

from __future__ import annotations

# Top-level sections of an agent or supervisor document (spec §2, §3, §5), in canonical spelling.
SECTIONS = (
    "AGENT", "SUPERVISOR", "GOAL", "PERSONA", "LIMITATIONS", "INSTRUCTIONS", "TOOLS", "ENTITIES",
    "LOOKUP_TABLES", "NLU", "INTENTS", "MULTI_INTENT", "MESSAGES", "TESTS", "GATHER", "MEMORY",
    "CONSTRAINTS", "GUARDRAILS", "TEMPLATES", "BEHAVIOR_PROFILES", "USE", "FLOW", "DELEGATE",
    "HANDOFF", "ESCALATE", "COMPLETE", "ON_ERROR", "EXECUTION", "HOOKS", "ON_START", "ACTION_HANDLERS",
    "RESPOND_ACTIONS", "AGENTS", "ROUTING", "HANDOFF_PROTOCOL", "BEHAVIOR_PROFILE", "DESCRIPTION",
    "VERSION", "MODE", "DIGRESSIONS",
)
# Keys of a FLOW step.
STEP_KEYS = (
    "REASONING", "INSTRUCTIONS", "RESPOND", "PRESENT", "COLLECT", "PROMPT", "GATHER", "STRATEGY", "CORRECTIONS",
    "COMPLETE_WHEN", "ON_INPUT", "DIGRESSIONS", "SUB_INTENTS", "CALL", "WITH", "AS", "ON_SUCCESS", "ON_FAIL",
    "ON_RESULT", "SET", "CLEAR", "TRANSFORM", "THEN", "GOTO", "DELEGATE", "HANDOFF", "ESCALATE", "DESCRIPTION",
    "TOOLS", "GOAL", "ACTIONS", "TEMPLATE", "VOICE", "CALL_WITH", "RICH_CONTENT", "BUTTONS",
)
# Keys ABL writes in capitals below the top level (spec §3), besides sections and step keys.
NESTED_KEYWORDS = (
    "TO", "WHEN", "CONTEXT", "RETURN", "ON_RETURN", "AGENT", "PURPOSE", "INPUT", "RETURNS", "USE_RESULT", "PASS",
    "IF", "ELSE", "INTENT", "CONDITION", "RESUME", "FILTER", "MAP", "SORT_BY", "LIMIT", "ON_FAIL", "RETRY",
    "PATH", "SCOPE", "ACCESS", "STORE", "ON", "ACTION", "PATHS", "INSTRUCTION", "DOMAIN", "INITIAL", "RESET",
    "READS", "WRITES", "TYPE", "VALUES", "SYNONYMS", "PATTERN", "ENTITY_REF", "REQUIRED", "DEFAULT", "NAME",
    "PRIORITY", "REASON", "SENSITIVE", "SENSITIVE_DISPLAY", "MASK_CONFIG", "PII_TYPE", "BLOCK", "MAX_RETRIES",
    "VOICE", "RESPONSE_RULES", "TOOLS_HIDE", "TOOLS_ADD", "GATHER_OVERRIDES", "FLOW_MODIFICATIONS",
    "FLOW_REPLACE", "TRIGGER", "LEXICAL_FALLBACK", "STEPS", "OPTIONS", "VALIDATE", "FROM", "MESSAGE", "LOG",
    "ASK_USER", "THEN",
)
KEYWORDS = frozenset(SECTIONS) | frozenset(STEP_KEYS) | frozenset(NESTED_KEYWORDS)
# Keys directly under these are names the author chose (fields, steps, templates, parameters, ...),
# written as they are in both formats; so is the first key of a list item under them.
NAME_CONTAINERS = frozenset({
    "GATHER", "FLOW", "ENTITIES", "LOOKUP_TABLES", "TEMPLATES", "MESSAGES", "AGENTS", "WITH", "CALL_WITH", "MAP",
    "INPUT", "RETURNS", "PARAMS", "SYNONYMS", "CONSTRAINTS", "HEADERS", "ON_RETURN", "SET", "SESSION",
    "INTENTS", "FIELD_OVERRIDES", "OVERRIDE", "INSERT_BEFORE", "ACTION_HANDLERS", "HOOKS", "TOOLS", "QUERY",
    "BODY", "ENV", "VARIABLES", "CONTEXT_FOR_HUMAN", "STORE",
})
