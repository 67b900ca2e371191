"""What an agent declares about its data and its rules, beyond its steps: fields to gather, memory,
constraints, guardrails, templates, completion, error handling, execution settings and hooks.

ABL's sections lower here (GATHER, MEMORY, CONSTRAINTS, GUARDRAILS, TEMPLATES, COMPLETE, ON_ERROR,
EXECUTION, HOOKS, ENTITIES, LOOKUP_TABLES, ...); an ADL program leaves them empty. The runtime
reads them at the turn pipeline's points (docs/architecture.md).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from frontdesk.diagnostics import Span
from frontdesk.ir.expr import Condition, Expr, IRModel, Template


class Validation(IRModel):
    """A check of a gathered value: a regex, a numeric range, allowed values, an expression, or words
    an LLM judges by."""

    kind: Literal["pattern", "range", "enum", "custom", "llm"]
    rule: str = ""  # as written (the regex, "1-10", "a, b", the instruction)
    expr: Expr | None = None  # custom: the expression
    error: str = ""  # what the user is told when the value fails
    max_retries: int | None = None


class GatherField(IRModel):
    """A value the agent collects from the user (ABL GATHER)."""

    name: str
    prompt: str = ""
    type: str = "string"  # string, number, boolean, date, email, phone, or a declared type
    required: bool = True
    default: Any = None
    validations: list[Validation] = Field(default_factory=list)
    activation: Literal["required", "optional", "progressive", "when"] = "required"
    when: Condition | None = None  # activation `when`
    depends_on: list[str] = Field(default_factory=list)
    infer: bool = False
    infer_confirm: bool = False
    options: list[str] = Field(default_factory=list)  # allowed values (enum)
    entity: str | None = None  # ENTITY_REF
    semantics: dict[str, Any] = Field(default_factory=dict)  # format, components, unit, lookup, ...
    sensitive: bool = False
    attachment: bool = False  # a file the user uploads
    extra: dict[str, Any] = Field(default_factory=dict)  # other properties, kept as written
    span: Span | None = None


class EntityDef(IRModel):
    """A reusable extraction contract (ABL ENTITIES): an enum with synonyms, or a pattern."""

    name: str
    type: Literal["enum", "pattern"]
    values: list[str] = Field(default_factory=list)
    synonyms: dict[str, list[str]] = Field(default_factory=dict)
    pattern: str = ""
    sensitive: bool = False
    extra: dict[str, Any] = Field(default_factory=dict)
    span: Span | None = None


class LookupTable(IRModel):
    name: str
    source: Literal["inline", "collection", "api"] = "inline"
    values: list[Any] = Field(default_factory=list)
    table_name: str = ""
    field: str = ""
    case_sensitive: bool = False
    fuzzy_match: bool = False
    fuzzy_threshold: float | None = None
    span: Span | None = None


class SessionVariable(IRModel):
    name: str
    initial: Any = None
    reset: Literal["per_session", "per_activation", "per_step", "never"] = "per_session"


class PersistentPath(IRModel):
    path: str  # user.preferences, project.rates, workflow.quote
    scope: Literal["user", "project", "execution_tree"] = "user"
    access: Literal["read", "write", "readwrite"] = "readwrite"


class RememberRule(IRModel):
    when: Condition
    value: Expr  # what is stored (a value, or an object literal of fields)
    target: str  # the persistent path
    span: Span | None = None


class RecallRule(IRModel):
    on: str  # canonical event: session:start, tool:<name>:after, agent:<name>:after, ...
    action: Literal["inject_context", "load_memory", "prompt_llm"] = "inject_context"
    paths: list[str] = Field(default_factory=list)
    instruction: str = ""
    domain: str = ""
    span: Span | None = None


class MemorySpec(IRModel):
    session: list[SessionVariable] = Field(default_factory=list)
    persistent: list[PersistentPath] = Field(default_factory=list)
    remember: list[RememberRule] = Field(default_factory=list)
    recall: list[RecallRule] = Field(default_factory=list)


class MemoryStore(IRModel):
    """A write of a value to persistent memory (ABL `STORE: value -> target`)."""

    value: Expr  # a value, or an object literal of fields
    target: str  # the persistent path: user.past_bookings, workflow.current_quote, ...


class Action(IRModel):
    """What a failed rule, a completion or an error handler does, in order: log, say something, set or
    clear values, store to memory, ask again for fields, retry; then (when there is no retry, or
    no retry left) hand off, delegate, escalate, block, ask the user to choose, or go to a step."""

    log: list[str] = Field(default_factory=list)  # values written to the log (ON_ERROR LOG: {a, b})
    respond: Template | None = None
    template: str | None = None  # a named template (TEMPLATE(name))
    set: list[tuple[str, Expr]] = Field(default_factory=list)
    clear: list[str] = Field(default_factory=list)
    store: list[MemoryStore] = Field(default_factory=list)
    collect: list[str] = Field(default_factory=list)
    retry: bool = False
    max_retries: int | None = None
    handoff: str | None = None
    delegate: str | None = None
    escalate: bool = False
    escalate_reason: str = ""
    escalate_priority: Literal["", "low", "medium", "high", "critical"] = ""
    block: bool = False
    ask_user: list[str] = Field(default_factory=list)  # choices offered to the user (ASK_USER {retry, escalate})
    goto: str | None = None  # a flow step, or COMPLETE
    extra: dict[str, Any] = Field(default_factory=dict)


class Constraint(IRModel):
    """A deterministic rule over session state (ABL CONSTRAINTS), checked every turn or at a checkpoint."""

    kind: Literal["require", "warn", "limit", "restrict"] = "require"
    condition: Condition
    when: Condition | None = None
    checkpoint: Literal["turn", "before_tool", "before_results"] = "turn"
    tool: str | None = None  # before_tool: which tool
    on_fail: Action = Field(default_factory=Action)
    label: str = ""
    source: str = ""
    span: Span | None = None


class Guardrail(IRModel):
    """A safety check on input, tool input or output, a handoff, or the bot's output (ABL GUARDRAILS)."""

    name: str
    kind: Literal["input", "output", "tool_input", "tool_output", "handoff"]
    check: str = ""  # a CEL expression, as written
    llm_check: str = ""  # an instruction an LLM judges by
    patterns: list[str] = Field(default_factory=list)
    action: Literal["block", "warn", "redact", "fix", "reask", "filter", "escalate", "log", "rewrite"] = "block"
    message: Template | None = None
    extra: dict[str, Any] = Field(default_factory=dict)
    span: Span | None = None


class TemplateDef(IRModel):
    """A named message (ABL TEMPLATES): a default text and per-channel variants."""

    name: str
    default: Template
    channels: dict[str, Template] = Field(default_factory=dict)
    span: Span | None = None


class CompletionRule(IRModel):
    """When the agent's task is done (ABL COMPLETE), and what it says and returns then."""

    when: Condition
    action: Action = Field(default_factory=Action)
    returns: dict[str, Expr] = Field(default_factory=dict)
    span: Span | None = None


class EscalationTrigger(IRModel):
    """An ABL ESCALATE trigger (3.11.1): when its condition holds after a turn, the session goes to a
    person with the agent's context_for_human package."""

    when: Condition
    reason: str = ""
    priority: Literal["low", "medium", "high", "critical"] = "medium"
    respond: Template | None = None  # said to the user when it fires
    span: Span | None = None


class ErrorHandler(IRModel):
    """What to do when something fails (ABL ON_ERROR): which errors, and the action."""

    on: str = "default"  # tool_error, timeout, llm_error, <tool name>, default, ...
    when: Condition | None = None
    action: Action = Field(default_factory=Action)
    span: Span | None = None


class ExecutionSettings(IRModel):
    """Model, time limits, iteration limits and the supervisor pre-classification pipeline."""

    model: str = ""
    temperature: float | None = None
    max_iterations: int | None = None
    max_flow_iterations: int | None = None  # flow step transitions per session
    timeout: float | None = None  # seconds per turn
    tool_timeout: float | None = None  # seconds per tool call
    llm_timeout: float | None = None  # seconds per LLM request
    session_timeout: float | None = None  # seconds a session may stay idle
    pipeline: dict[str, Any] = Field(default_factory=dict)
    extra: dict[str, Any] = Field(default_factory=dict)


class Hook(IRModel):
    """A lifecycle handler (ABL HOOKS / ON_START / ACTION_HANDLERS): when it runs and what it does."""

    event: str  # before_turn, after_turn, on_start, action:<name>, ...
    action: Action = Field(default_factory=Action)
    call: str | None = None  # a tool to call
    args: dict[str, Expr] = Field(default_factory=dict)
    span: Span | None = None


class ActionElement(IRModel):
    """An interactive element of a response (ABL RESPOND ... ACTIONS): a button, a drop-down or an
    input field; what the user picks arrives as action `id` (see the `action:<id>` hooks)."""

    kind: Literal["button", "select", "input"]
    id: str
    label: str = ""
    value: Any = None  # button: the value it submits
    options: list[dict[str, Any]] = Field(default_factory=list)  # select: {id, label} choices
    input_type: Literal["text", "number", "date", "time", "email"] = "text"
    placeholder: str = ""
    required: bool = False
    span: Span | None = None


class BehaviorProfile(IRModel):
    """A context-dependent overlay of the agent (ABL BEHAVIOR_PROFILES, 3.13.2): active while `when`
    holds; active profiles merge by priority (the highest wins a conflict)."""

    name: str
    priority: float = 0
    when: Condition | None = None  # None: always active
    instructions: str = ""
    tools_hide: list[str] = Field(default_factory=list)
    tools_add: list[Any] = Field(default_factory=list)  # tool definitions as written
    constraints: list[Constraint] = Field(default_factory=list)
    voice: dict[str, Any] = Field(default_factory=dict)
    response_rules: dict[str, Any] = Field(default_factory=dict)
    gather_overrides: dict[str, Any] = Field(default_factory=dict)
    # GATHER_OVERRIDES field_overrides compiled: the agent's field as this profile has it, and its prompt
    gather_fields: dict[str, GatherField] = Field(default_factory=dict)
    gather_prompts: dict[str, Template] = Field(default_factory=dict)
    flow_modifications: dict[str, Any] = Field(default_factory=dict)
    flow_replace: str = ""
    extra: dict[str, Any] = Field(default_factory=dict)
    span: Span | None = None


class AgentRules(IRModel):
    """Everything an agent declares besides its steps; empty for ADL agents."""

    goal: str = ""
    persona: str = ""
    limitations: list[str] = Field(default_factory=list)
    gather: list[GatherField] = Field(default_factory=list)
    entities: list[EntityDef] = Field(default_factory=list)
    lookup_tables: list[LookupTable] = Field(default_factory=list)
    memory: MemorySpec = Field(default_factory=MemorySpec)
    constraints: list[Constraint] = Field(default_factory=list)
    guardrails: list[Guardrail] = Field(default_factory=list)
    templates: dict[str, TemplateDef] = Field(default_factory=dict)
    messages: dict[str, str] = Field(default_factory=dict)
    complete: list[CompletionRule] = Field(default_factory=list)
    escalation: list[EscalationTrigger] = Field(default_factory=list)  # ESCALATE triggers
    # ESCALATE on_human_complete: IF <condition on human.*>: RESPOND, COMPLETE (extra: complete / continue)
    after_human: list[CompletionRule] = Field(default_factory=list)
    on_error: list[ErrorHandler] = Field(default_factory=list)
    execution: ExecutionSettings = Field(default_factory=ExecutionSettings)
    hooks: list[Hook] = Field(default_factory=list)
    actions: list[ActionElement] = Field(default_factory=list)  # agent-level interactive elements
    behavior_profiles: list[str] = Field(default_factory=list)  # USE BEHAVIOR_PROFILE names
    profiles: list[BehaviorProfile] = Field(default_factory=list)  # inline and USE'd, compiled
    # sections parsed for compatibility and kept as data (NLU, INTENTS, MULTI_INTENT, TESTS, ...)
    metadata: dict[str, Any] = Field(default_factory=dict)

    def rule_actions(self) -> list[Action]:
        """The actions of the agent's rules: each constraint's ON_FAIL, each ON_ERROR handler, each
        COMPLETE rule and each hook (what may hand off, delegate or render a template)."""
        return [c.on_fail for c in self.constraints] + [h.action for h in self.on_error] + \
            [c.action for c in self.complete] + [h.action for h in self.hooks]
