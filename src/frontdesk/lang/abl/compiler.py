"""The ABL front end: a project of ABL documents compiled to the shared IR, with diagnostics.

A project is a folder (or a list of files): every `.agent.abl` / `.agent.yaml` agent and supervisor,
`.tools.abl` tool library and `.behavior_profile.abl` profile in it compiles together. An agent
without FLOW lowers to a ReasoningAgent, one with FLOW to a FlowAgent (its REASONING steps to
reasoning agents it calls), a SUPERVISOR to a RouterAgent. What an agent declares beyond that
(GATHER, MEMORY, CONSTRAINTS, ...) goes to `AgentBase.rules` (ir/behaviour.py).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from pathlib import Path

from frontdesk.diagnostics import Diagnostic, DiagnosticBag, Span, did_you_mean
from frontdesk.ir.behaviour import AgentRules
from frontdesk.ir.models import (
    Agent,
    ArgDef,
    Delegation,
    FlowAgent,
    Handoff,
    HttpBinding,
    McpBinding,
    McpServer,
    Program,
    PythonBinding,
    ReasoningAgent,
    Ref,
    RemoteAgent,
    RouterAgent,
    RouterMember,
    StubBinding,
    ToolAuth,
    ToolConfirmation,
    ToolDef,
    ToolParam,
    is_secret_header,
)

from . import codes
from .context import SESSION, Names, SectionContext
from .conventions import apply_abl_conventions
from .documents import Document, is_abl_file, read_document
from .outline import Node

MAX_FILES = 500
ABL_MAX_ITERATIONS = 10  # EXECUTION max_iterations when not given (abl-specification 7.11)
_AGENT_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
TEXT_SECTIONS = ("GOAL", "PERSONA", "INSTRUCTIONS", "DESCRIPTION")
_ROUTE = re.compile(r"^\s*INTENT\s*\((?P<words>[^)]*)\)\s*->\s*(?P<target>\S+)\s*$", re.IGNORECASE)
_DEFAULT = re.compile(r"^\s*DEFAULT\s*->\s*(?P<target>\S+)\s*$", re.IGNORECASE)
_PROTOCOL = re.compile(r"^\s*FROM\s+(?P<src>\S+)\s+TO\s+(?P<dst>[^:\s]+)\s*:?\s*$", re.IGNORECASE)
_USE_PROFILE = re.compile(r"^\s*USE\s+BEHAVIOR_PROFILE\s*:\s*(?P<name>\S+)\s*$", re.IGNORECASE)


def abl_files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file() and is_abl_file(p))[:MAX_FILES]
    return [path]


def load_abl(paths: Path | list[Path], entry: str | None = None) -> tuple[Program | None, list[Diagnostic]]:
    """Compile the ABL project at `paths` (a folder, a file, or a list of files)."""
    bag = DiagnosticBag()
    given = paths if isinstance(paths, list) else [paths]
    files: list[Path] = []
    for p in given:
        p = Path(p)
        if not p.exists():
            bag.error(codes.READ_ERROR, f"{p} does not exist", Span(file=str(p)))
            continue
        files += abl_files(p)
    if given and not files and not bag.has_errors:
        bag.error(codes.READ_ERROR, f"no ABL file in {given[0]}", Span(file=str(given[0])),
                  hint="ABL files end in .agent.abl, .agent.yaml, .tools.abl or .behavior_profile.abl")
    root = Path(given[0]) if given and Path(given[0]).is_dir() else (Path(given[0]).parent if given else Path("."))
    docs = [d for d in (read_document(f, str(f), bag) for f in files) if d is not None]
    program = compile_documents(docs, bag, entry=entry, root=root)
    if program is not None and root.is_dir():  # project settings: config.yml beside the agents, as for ADL
        from frontdesk.yamlsource import find_config, load_settings

        config = find_config(root)
        if config is not None:
            program.settings = load_settings(config, str(config), bag, codes.YAML)
            program.sources.append(config.name)
    return program, _without_echoes(bag.items)


def _without_echoes(diags: list[Diagnostic]) -> list[Diagnostic]:
    """The diagnostics less those on a line whose value was left out as too deep (ABL027): what the
    compiler then says about the missing value only repeats it."""
    deep = {(d.span.file, d.span.line) for d in diags if d.code == codes.TOO_DEEP and d.span is not None}
    return [d for d in diags if d.code == codes.TOO_DEEP or d.span is None or (d.span.file, d.span.line) not in deep]


def compile_documents(docs: list[Document], bag: DiagnosticBag, entry: str | None = None,
                      root: Path | None = None) -> Program | None:
    names = Names()
    agents_docs: dict[str, Document] = {}
    for doc in docs:
        if doc.kind in ("agent", "supervisor") and doc.name:
            if doc.name in agents_docs:
                first = agents_docs[doc.name]
                bag.error(codes.DUPLICATE_NAME, f"agent {doc.name} is defined twice", doc.header.span if doc.header else None,
                          hint=f"the first is in {first.shown}")
                continue
            agents_docs[doc.name] = doc
        elif doc.kind == "profile" and doc.name:
            names.profiles.add(doc.name)
            profile_ctx = SectionContext(bag=bag, file=doc.shown, agent="", fmt=doc.fmt, names=names)
            names.profile_data[doc.name] = {
                c.key.lower(): profile_ctx.data(c) for c in doc.root.children
                if c.key is not None and c.key.upper() != "BEHAVIOR_PROFILE"}
    names.agents = set(agents_docs)
    names.memory_paths = _shared_memory_paths(agents_docs)
    names.agent_tools = _declared_tools(agents_docs)
    remotes, broken = _remote_agents(agents_docs, bag)
    names.agents |= set(remotes) | broken  # a broken remote: its error is said once, not again where it is named
    tools: dict[str, ToolDef] = {}
    for doc in docs:
        if doc.kind == "tools":
            for tool in compile_tool_library(doc, bag, names):
                tools[tool.name] = tool
    names.tools = set(tools)
    program_agents: dict[str, Agent] = {}
    for name, doc in agents_docs.items():
        for agent in compile_agent(doc, bag, names, tools):
            program_agents[agent.name] = agent
    for remote, endpoint in remotes.values():
        program_agents[remote.name] = remote
        tools[endpoint.name] = endpoint
    if not agents_docs:
        if not bag.has_errors and docs:
            bag.error(codes.NO_ENTRY, "the project has no agent", Span(file=docs[0].shown))
        return None
    chosen = _entry(agents_docs, program_agents, entry, bag)
    if chosen is None:
        return None
    program = Program(language="abl", entry=chosen, agents=program_agents, tools=tools,
                      sources=[_relative(d.path, root) for d in docs])
    apply_abl_conventions(program)  # what ABL means, as each agent's DialoguePolicy
    program.root = str(root.resolve()) if root is not None else ""
    if root is not None:
        _missing_tool_files(program, root, bag)
    from .checks import check_call_types

    check_call_types(program, bag)
    return program


def _shared_memory_paths(docs: dict[str, Document]) -> set[str]:
    """The persistent memory paths the project's agents declare (3.7.2): user and project memory is
    the same for every agent, so `user.last_rx` is memory wherever it is read. Each agent's MEMORY is
    reported on when it is compiled; this first reading keeps no diagnostics."""
    from .sections.memory import _persistent

    paths: set[str] = set()
    for doc in docs.values():
        memory = doc.root.get("MEMORY")
        persistent = memory.get("persistent") if memory is not None else None
        if persistent is None:
            continue
        scratch = SectionContext(bag=DiagnosticBag(), file=doc.shown, agent=doc.name, fmt=doc.fmt)
        _persistent(persistent, scratch, AgentRules())
        paths |= scratch.memory_paths
    return paths


def _declared_tools(docs: dict[str, Document]) -> dict[str, set[str]]:
    """The tools each agent declares in its TOOLS section (a first reading keeping no diagnostics)."""
    declared: dict[str, set[str]] = {}
    for name, doc in docs.items():
        scratch = SectionContext(bag=DiagnosticBag(), file=doc.shown, agent=name, fmt=doc.fmt)
        declared[name] = {t.name for t in _agent_tools(doc.root.get("TOOLS"), scratch, {})}
    return declared


_ENV_HOLE = re.compile(r"\{\{\s*(env\.)?([A-Za-z_]\w*)\s*\}\}")


def _remote_agents(docs: dict[str, Document], bag: DiagnosticBag
                   ) -> tuple[dict[str, tuple[RemoteAgent, ToolDef]], set[str]]:
    """The agents of other services the project hands off to (a HANDOFF entry with `remote:`, 3.10):
    each is an agent of the program whose turns are requests to an endpoint tool (runtime/remote.py).
    Its auth header takes its secret from the environment: `{{service_token}}` is the variable
    SERVICE_TOKEN (or `{{env.NAME}}`), so no conversation value and no trace holds it. Also the names of
    remote agents whose `remote:` has an error."""
    found: dict[str, tuple[RemoteAgent, ToolDef]] = {}
    broken: set[str] = set()
    for doc in docs.values():
        ctx = SectionContext(bag=bag, file=doc.shown, agent=doc.name, fmt=doc.fmt)
        section = doc.root.get("HANDOFF")
        for item in section.items() if section is not None else []:
            target, remote = item.get("TO"), item.get("remote")
            if target is None or remote is None or not target.value:
                continue
            name = target.value.strip()
            if name in docs:  # a local stand-in (while developing): it takes the handoff
                ctx.warning(codes.IGNORED, f"remote: is not used: the project has an agent {name}, which takes "
                            "the handoff", remote, f"remove the local {name} to hand off to the service")
                continue
            settings = ctx.data(remote)
            url = settings.get("service_url") if isinstance(settings, dict) else None
            if not isinstance(url, str) or not url.strip():
                ctx.error(codes.MISSING_KEY, f"the remote agent {name} needs service_url:", remote,
                          'write remote: {service_url: "https://other-service.example.com"}')
                broken.add(name)
                continue
            if not re.match(r"(?i)https?://", url.strip()) and "{" not in url:
                ctx.error(codes.BAD_VALUE, f"service_url of {name} is not an http(s) url: {url}", remote)
                broken.add(name)
                continue
            passes = [p.split(".")[-1] for p in ctx.names_list((item.get("CONTEXT") or item).get("pass"))]
            if name in found:  # a second HANDOFF to it: the values it may be passed add up
                agent = found[name][0]
                agent.args += [ArgDef(name=p) for p in passes if p not in agent.arg_names()]
                continue
            headers: dict[str, str] = {}
            auth = settings.get("auth_header")
            if isinstance(auth, str) and auth.strip():
                headers["Authorization"] = _ENV_HOLE.sub(
                    lambda m: "{{env.%s}}" % (m.group(2) if m.group(1) else m.group(2).upper()), auth.strip())
            timeout = settings.get("timeout")
            try:
                binding = HttpBinding(method="POST", url=url.strip(), headers=headers,
                                      timeout=float(timeout) if isinstance(timeout, (int, float)) else None)
            except ValueError as exc:  # a credential written into the program
                ctx.error(codes.BAD_VALUE, f"auth_header of the remote agent {name}: {_first_reason(exc)}", remote,
                          'write auth_header: "Bearer {{service_token}}" (the environment variable SERVICE_TOKEN)')
                broken.add(name)
                continue
            endpoint = ToolDef(name=f"{name}__remote", description=f"the service of the remote agent {name}",
                               binding=binding, span=remote.span)
            agent = RemoteAgent(name=name, description=f"{name}, served by {url.strip()}", endpoint=endpoint.name,
                                args=[ArgDef(name=p) for p in dict.fromkeys(passes)], span=target.value_span())
            found[name] = (agent, endpoint)
    return found, broken - set(found)


def _first_reason(exc: ValueError) -> str:
    """The reason a pydantic validation gave, without its banner ("1 validation error for ...")."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        found = errors()
        if found:
            loc = ".".join(str(part) for part in found[0].get("loc", ()))
            reason = str(found[0].get("msg", exc)).removeprefix("Value error, ")
            return f"{loc}: {reason}" if loc else reason
    return str(exc)


def _first_field(exc: ValueError) -> str | None:
    """The field a pydantic validation error is about ("method"), when it names one."""
    errors = getattr(exc, "errors", None)
    found = errors() if callable(errors) else []
    loc = found[0].get("loc") if found else ()
    return str(loc[0]) if loc else None


def _missing_tool_files(program: Program, root: Path, bag: DiagnosticBag) -> None:
    """An error at the first tool of each `python:` file that is not in the project (a file outside
    its folder is frontdesk.access's to report)."""
    seen: set[str] = set()
    for tool in program.tools.values():
        binding = tool.binding
        if not isinstance(binding, PythonBinding) or binding.module in seen:
            continue
        seen.add(binding.module)
        written = Path(binding.module)
        if written.is_absolute() or ".." in written.parts:
            continue  # outside the project: FD060
        if not (root / written).is_file():
            bag.error(codes.READ_ERROR, f"tool {tool.name}: its Python file {binding.module} does not exist",
                      tool.span, hint=f"python: names a file of the project, relative to {root}")


def _relative(path: Path, root: Path | None) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix() if root else path.name
    except ValueError:
        return path.name


def _entry(docs: dict[str, Document], agents: dict[str, Agent], entry: str | None, bag: DiagnosticBag) -> str | None:
    if entry is not None:
        if entry not in agents:
            bag.error(codes.NO_ENTRY, f"the entry agent {entry} is not in the project",
                      hint=f"did you mean {did_you_mean(entry, list(docs))}?" if did_you_mean(entry, list(docs)) else None)
            return None
        return entry
    supervisors = [n for n, d in docs.items() if d.kind == "supervisor"]
    referenced = set()
    for agent in agents.values():
        if isinstance(agent, RouterAgent):
            referenced |= {m.agent for m in agent.members}
        if isinstance(agent, ReasoningAgent):
            referenced |= {d.agent for d in agent.delegates} | {h.agent for h in agent.handoffs}
        if isinstance(agent, FlowAgent):
            referenced |= {n.target for n in agent.graph.nodes.values() if hasattr(n, "target")}
        referenced |= _rule_targets(agent)
    tops = [n for n in supervisors if n not in referenced] or [n for n in docs if n not in referenced]
    if len(tops) == 1:
        return tops[0]
    if len(docs) == 1:
        return next(iter(docs))
    candidates = [docs[n] for n in (tops or list(docs))]
    first = min(candidates, key=lambda d: d.path.name)
    bag.error(codes.NO_ENTRY, "the project has no single entry agent: " + (
        f"{', '.join(sorted(tops))} could each be it" if tops else "every agent is reached from another"),
        first.header.span if first.header else Span(file=first.shown),
        hint="keep one supervisor (or one agent nothing hands off to), or pass --entry NAME")
    return None


def _rule_targets(agent: Agent) -> set[str]:
    """Agents a rule of `agent` may hand off or delegate to (ON_FAIL, ON_ERROR, COMPLETE actions)."""
    return {a for action in agent.rules.rule_actions() for a in (action.handoff, action.delegate) if a}


# ---- tools ------------------------------------------------------------------------------------------


def compile_tool_library(doc: Document, bag: DiagnosticBag, names: Names) -> list[ToolDef]:
    ctx = SectionContext(bag=bag, file=doc.shown, agent="", fmt=doc.fmt, names=names)
    servers = _mcp_servers(doc.root.get("MCP_SERVERS"), ctx)
    section = doc.root.get("TOOLS")
    nodes = section.children if section is not None else [c for c in doc.root.children if c.key is None]
    return [t for t in (tool_from_line(n, ctx, servers) for n in nodes) if t is not None]


_MCP_SERVER_KEYS = ["command", "args", "env", "cwd", "url", "headers", "timeout"]


def _mcp_servers(section: Node | None, ctx: SectionContext) -> dict[str, McpServer | None]:
    """The MCP servers a tool library declares (our extension), each once under its name:
    `command:` (with `args:`, `env:`, `cwd:`) for a server started as a subprocess speaking stdio,
    or `url:` (with `headers:`) for a streamable HTTP endpoint; `timeout:` in seconds (`command:
    python` is the interpreter Frontdesk runs in). The tools
    they serve are written as signatures with `mcp: <server>` (and `mcp_tool:` when the server
    names the tool differently): the contract stays in the source and `frontdesk check` starts
    no server. A server that does not compile maps to None (its tools become stubs)."""
    servers: dict[str, McpServer | None] = {}
    for node in section.entries() if section is not None else []:
        props = {c.key.lower(): c for c in node.entries()}
        for child in node.entries():
            if child.key.lower() not in _MCP_SERVER_KEYS:
                ctx.unknown_key(child, _MCP_SERVER_KEYS, f"MCP server {node.key}")
        args = ctx.data(props.get("args"))
        env = ctx.data(props.get("env"))
        headers = ctx.data(props.get("headers"))
        data = {"name": node.key, "command": ctx.text(props.get("command")) or None,
                "args": [str(a) for a in args] if isinstance(args, list) else ([str(args)] if args else []),
                "env": {str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else {},
                "cwd": ctx.text(props.get("cwd")) or None, "url": ctx.text(props.get("url")) or None,
                "headers": {str(k): str(v) for k, v in headers.items()} if isinstance(headers, dict) else {}}
        if "timeout" in props:
            data["timeout"] = ctx.number(props["timeout"])
        if node.key in servers:
            ctx.error(codes.DUPLICATE_NAME, f"MCP server {node.key} is declared twice", node)
            continue
        try:
            servers[node.key] = McpServer(**data)
        except Exception as exc:  # noqa: BLE001 - a server the IR refuses (no transport, a literal secret)
            message = str(exc).splitlines()
            ctx.error(codes.BAD_VALUE, f"MCP server {node.key} is not valid: "
                      f"{next((m for m in message[1:] if m.strip()), message[0]).strip()}", node)
            servers[node.key] = None
    return servers


_HTTP_KEYS = ("method", "url", "endpoint", "headers", "query", "body", "body_template", "timeout")


def tool_from_line(node: Node, ctx: SectionContext,
                   servers: dict[str, McpServer | None] | None = None) -> ToolDef | None:
    """A TOOLS entry: a signature line with its properties (description, auth, confirmation, HTTP)."""
    if node.item and node.children:
        node = node.children[0] if node.children[0].key is None else node
    if node.key is not None and node.value is None and node.children and not node.item:
        parsed = _mapping_tool(node, ctx)  # `name:` with description / params / returns under it
    elif node.key is not None or not node.value:
        ctx.error(codes.BAD_SIGNATURE, "a TOOLS entry must be a signature such as "
                  "search(query: string) -> Result", node, None)
        return None
    else:
        parsed = _signature(node, ctx)
    if parsed is None:
        return None
    name, params, returns = parsed
    props = {c.key.lower(): c for c in node.children if c.key is not None}
    description = ctx.text(props.get("description"))
    extra_problems(props, node, ctx)
    binding = StubBinding()
    if any(k in props for k in _HTTP_KEYS):
        binding = _http_binding(props, ctx)
    elif "python" in props:
        # our extension for tool libraries: `python: tools.py` (and `function:`), a function of the
        # project's Python file that returns the tool's value
        binding = PythonBinding(module=ctx.text(props["python"]), function=ctx.text(props.get("function")) or name)
    elif "mcp" in props:
        binding = _mcp_binding(name, props, ctx, servers or {})
    auth = None
    if "auth_profile" in props or "auth_jit" in props:
        auth = ToolAuth(profile=ctx.text(props.get("auth_profile")), jit=ctx.boolean(props.get("auth_jit")),
                        consent=ctx.choice(props.get("consent"), ("preflight", "inline")) if "auth_profile" in props
                        else None,
                        connection=ctx.choice(props.get("connection"), ("per_user", "shared")))
    confirmation = None
    if any(k in props for k in ("side_effects", "confirm", "immutable")):
        confirmation = ToolConfirmation(side_effects=ctx.boolean(props.get("side_effects")),
                                        require=ctx.choice(props.get("confirm"), ("always", "never", "when_side_effects")),
                                        immutable=ctx.names_list(props.get("immutable")),
                                        # our extension: the question asked before the call
                                        message=ctx.text(props.get("confirm_message")))
        known = {p.name for p in params}
        for field in confirmation.immutable:  # a parameter the tool does not have cannot be held fixed
            if field not in known:
                guess = did_you_mean(field, sorted(known))
                ctx.error(codes.BAD_VALUE, f"immutable names {field}, which is not a parameter of {name}",
                          props["immutable"].value_span() if props["immutable"].value else props["immutable"],
                          f"did you mean {guess}?" if guess else
                          f"name parameters of {name}: {', '.join(sorted(known)) or '(it has none)'}")
    return ToolDef(name=name, description=description, params=params, returns=returns, binding=binding,
                   convention="value", auth=auth, confirmation=confirmation, span=node.span)


def extra_problems(props: dict[str, Node], node: Node, ctx: SectionContext) -> None:
    """The spec's warnings about a tool's auth and confirmation properties."""
    jit = props.get("auth_jit")
    if jit is not None and ctx.boolean(jit) and "auth_profile" not in props:
        ctx.warning(codes.AUTH_JIT_WITHOUT_PROFILE, "auth_jit: true without auth_profile (AUTH_JIT_WITHOUT_PROFILE)",
                    jit, "name the credentials with auth_profile: \"...\"")
    if "consent" in props:
        ctx.choice(props["consent"], ("preflight", "inline"))
        if "auth_profile" not in props:
            ctx.warning(codes.ORPHAN_CONSENT, "consent without auth_profile is ignored", props["consent"],
                        "add auth_profile: or remove consent:")
    if "connection" in props:
        ctx.choice(props["connection"], ("per_user", "shared"))
    side = props.get("side_effects")
    if side is not None and ctx.boolean(side) and "confirm" not in props:
        ctx.warning(codes.SIDE_EFFECT_TOOL_WITHOUT_CONFIRMATION,
                    "side_effects: true without a confirm policy (SIDE_EFFECT_TOOL_WITHOUT_CONFIRMATION)", side,
                    "choose confirm: when_side_effects, always or never")
    if "confirm" in props:
        ctx.choice(props["confirm"], ("always", "never", "when_side_effects"))


def _mcp_binding(name: str, props: dict[str, Node], ctx: SectionContext, servers: dict[str, McpServer | None]):
    """`mcp: <server>`: the tool is served by an MCP server the library declares under MCP_SERVERS."""
    wanted = ctx.text(props["mcp"])
    if wanted not in servers:
        guess = did_you_mean(wanted, list(servers))
        ctx.error(codes.MISSING_KEY, f"tool {name} names the MCP server '{wanted}', which this tool library "
                  "does not declare", props["mcp"].value_span(),
                  f"did you mean {guess}?" if guess else "declare it under MCP_SERVERS: with command: or url:")
        return StubBinding()
    server = servers[wanted]
    if server is None:
        return StubBinding()
    return McpBinding(server=server, tool=ctx.text(props.get("mcp_tool")) or name)


# an HTTP header line (RFC 9110 token names: `X-Api-Key: "..."`), which the outline reader's keys (identifiers)
# do not take, so it reaches here as a line of text
_HEADER_LINE = re.compile(r"([!#$%&'*+.^_`|~0-9A-Za-z-]+)[ \t]*:[ \t]*(.*)")


def _header_entries(node: Node) -> dict[str, str]:
    """The `headers:` of an HTTP tool: its entries, and its lines of the form `Name-With-Dashes: value`."""
    headers: dict[str, str] = {}
    for child in node.children:
        if child.item:
            continue
        if child.key is not None:
            headers[child.key] = child.text
            continue
        found = _HEADER_LINE.fullmatch(child.text.strip())
        if found is not None:
            value = found.group(2).strip()
            quoted = value[:1] in ("'", '"') and len(value) > 1 and value[-1] == value[0]
            headers[found.group(1)] = value[1:-1] if quoted else value
    return headers


def _http_binding(props: dict[str, Node], ctx: SectionContext):
    url = ctx.text(props.get("url") or props.get("endpoint"))
    method = ctx.text(props.get("method")) or ("POST" if "body" in props or "body_template" in props else "GET")
    headers = _header_entries(props["headers"]) if "headers" in props else {}
    data: dict = {"method": method.upper(), "url": url, "headers": headers}
    body = props.get("body_template") or props.get("body")
    if body is not None and body.value:
        data["body"] = ctx.data(body) if not body.block else body.value
    if "timeout" in props:
        data["timeout"] = ctx.number(props["timeout"])
    try:
        return HttpBinding(**{k: v for k, v in data.items() if k in HttpBinding.model_fields})
    except ValueError as exc:  # a binding the IR refuses (a literal secret header, a method it has not, ...)
        where = _first_field(exc)
        node = props.get(where) if where else None
        if node is None and "credential" in str(exc) and "headers" in props:  # the header line itself
            node = next((c for c in props["headers"].children
                         if is_secret_header(c.key or (c.value or "").split(":", 1)[0])), props["headers"])
        ctx.error(codes.BAD_VALUE, f"the HTTP implementation is not valid: {_first_reason(exc)}",
                  node or props.get("url") or next(iter(props.values())))
        return StubBinding()


def _signature(node: Node, ctx: SectionContext):
    """(name, params, returns schema) of a signature line, or None after a diagnostic."""
    from .signatures import SignatureError, parse_signature

    try:
        sig = parse_signature(node.value or "")
    except SignatureError as exc:
        column = getattr(exc, "column", 0) or 0
        span = node.value_span()
        ctx.error(codes.BAD_SIGNATURE, f"bad tool signature: {getattr(exc, 'message', str(exc))}",
                  Span(file=span.file, line=span.line, column=span.column + max(column - 1, 0)),
                  getattr(exc, "hint", None) or "write name(param: type, other: type = default) -> ReturnType")
        return None
    if sig.returns is None:
        ctx.error(codes.BAD_SIGNATURE, f"the tool {sig.name} has no return type", node.value_span(),
                  f"end the signature with -> and the type of what it returns: {sig.name}(...) -> "
                  "{found: boolean}, -> Hotel[], or -> object")
        return None
    params = [ToolParam(name=p.name, type=_json_type(p.schema), required=p.required, default=p.default,
                        description=p.schema.get("description", "") if isinstance(p.schema, dict) else "")
              for p in sig.params]
    return sig.name, params, sig.returns


def _mapping_tool(node: Node, ctx: SectionContext):
    """A tool written as a mapping: `name:` with `params:` (name: type) and `returns:` under it."""
    from .signatures import SignatureError, type_to_schema

    def schema(text: str, where: Node) -> dict:
        try:
            return type_to_schema(text)
        except SignatureError as exc:
            ctx.error(codes.UNKNOWN_TYPE, f"bad type '{text}': {getattr(exc, 'message', exc)}", where)
            return {}

    params = []
    params_node = node.get("params")
    for entry in params_node.entries() if params_node is not None else []:
        optional = entry.key.endswith("?")
        s = schema(entry.text or "string", entry)
        params.append(ToolParam(name=entry.key.rstrip("?"), type=_json_type(s), required=not optional))
    returns_node = node.get("returns")
    returns = schema(returns_node.text, returns_node) if returns_node is not None and returns_node.value else {}
    return node.key, params, returns


def _json_type(schema) -> str:
    if isinstance(schema, dict) and isinstance(schema.get("type"), str):
        return schema["type"]
    return "any"


# ---- agents -----------------------------------------------------------------------------------------


def compile_agent(doc: Document, bag: DiagnosticBag, names: Names, library: dict[str, ToolDef]) -> list[Agent]:
    """The IR agents of one AGENT or SUPERVISOR document (a FLOW's reasoning steps become agents too)."""
    ctx = SectionContext(bag=bag, file=doc.shown, agent=doc.name, fmt=doc.fmt, names=names)
    rules = AgentRules()
    if doc.header is not None and not _AGENT_NAME.fullmatch(doc.name):
        ctx.error(codes.BAD_NAME, f"'{doc.name}' is not an agent name", doc.header.value_span(),
                  "write a name of letters, digits and underscores, starting with a letter (Hotel_Search)")
    sections = {n.key.upper(): n for n in doc.sections() if n.key and n.key.upper() != doc.kind.upper()}
    _identity(sections, ctx, rules)
    tools = _agent_tools(sections.get("TOOLS"), ctx, library)
    ctx.tools = {t.name for t in tools}
    for tool in tools:
        library.setdefault(tool.name, tool)
    _declarative(sections, ctx, rules)
    for line in doc.root.lines():
        match = _USE_PROFILE.match(line.value or "")
        if match:
            at = line.value_span()
            _use_profile(match.group("name"), Span(file=at.file, line=at.line, column=at.column + match.start("name")),
                         ctx, rules)
    use = sections.get("USE")
    if use is not None and (use.value or "").upper().startswith("BEHAVIOR_PROFILE"):
        _use_profile((use.value or "").split(":", 1)[-1].strip(), use, ctx, rules)
    from .sections.meta import profile_tool_defs

    for tool in profile_tool_defs(rules):  # TOOLS_ADD: offered while its profile is active
        library.setdefault(tool.name, tool)
    description = rules.goal.splitlines()[0] if rules.goal else ""
    instructions = _instructions(rules, sections, ctx)
    span = doc.header.span if doc.header else None
    if doc.kind == "supervisor":
        agent = _supervisor(doc, sections, ctx, rules, _args(rules), description, instructions, span)
        agent.setup = _on_start_graph(rules)
        _cross_checks(doc, sections, ctx, rules)
        return [agent]
    delegates = _delegates(sections.get("DELEGATE"), ctx)
    handoffs = _handoffs(sections.get("HANDOFF"), ctx)
    can_escalate = "ESCALATE" in sections
    if "ESCALATE" in sections:
        _escalate(sections["ESCALATE"], ctx, rules)
    max_iterations = rules.execution.max_iterations or ABL_MAX_ITERATIONS
    setup = _on_start_graph(rules)
    if "FLOW" in sections:
        from .flow import compile_flow

        graph, extra_agents = compile_flow(sections["FLOW"], ctx, rules, instructions, [t.name for t in tools],
                                           delegates, handoffs,
                                           # a CALL's positional arguments are named by the signature: the
                                           # agent's own, else the tool library's
                                           {t.name: [p.name for p in t.params] for t in [*library.values(), *tools]})
        agent = FlowAgent(name=doc.name, description=description, args=_args(rules), graph=graph, rules=rules,
                          setup=setup, span=span, handoffs=handoffs)
        for step_agent in extra_agents:  # REASONING: true steps: the flow's limit, and they speak as the flow's agent
            if isinstance(step_agent, ReasoningAgent):
                step_agent.max_iterations = int(max_iterations)
                step_agent.shown_as = step_agent.owner = doc.name
        _cross_checks(doc, sections, ctx, rules)
        _check_gotos(doc, ctx, rules, set(graph.labels))
        return [agent, *extra_agents]
    agent = ReasoningAgent(name=doc.name, description=description, args=_args(rules), instructions=instructions,
                           tools=[t.name for t in tools], delegates=delegates, handoffs=handoffs,
                           can_escalate=can_escalate, max_iterations=int(max_iterations), rules=rules,
                           setup=setup, span=span)
    _cross_checks(doc, sections, ctx, rules)
    return [agent]


def _cross_checks(doc: Document, sections: dict[str, Node], ctx: SectionContext, rules: AgentRules) -> None:
    from .checks import check_signature_types, check_unset_fields, name_span

    gather = {f.name: f.type for f in rules.gather}
    tools = sections.get("TOOLS")
    for node in tools.children if tools is not None else []:
        line = node.children[0] if node.item and node.children else node
        if line.key is None and line.value and "(" in line.value:
            check_signature_types(line.value, line.value_span(), ctx, gather)
    lines = doc.text.split("\n")  # (a YAML rule may write BEFORE on the next line: `before:`)
    check_unset_fields(rules, ctx, lines)
    for constraint in rules.constraints:  # BEFORE calling <tool>: a tool the agent declares
        if constraint.tool and constraint.tool not in ctx.tools and constraint.tool not in ctx.names.tools:
            ctx.error(codes.UNKNOWN_TOOL, f"BEFORE calling {constraint.tool}: the agent declares no such tool",
                      name_span(constraint.span, constraint.tool, ctx.file, lines),
                      "declare it under TOOLS: or name a tool the agent has")
    words = _Words(doc.text, ctx.file)
    for action in rules.rule_actions():
        for target, what in ((action.handoff, "HANDOFF"), (action.delegate, "DELEGATE")):
            if target and target not in ctx.names.agents:
                _check_agent(target, words.find(target), ctx, f"ON_FAIL {what}")
        if action.template and action.template not in rules.templates:
            # RESPOND: TEMPLATE(x) of a hook, a COMPLETE, an ON_ERROR or a constraint's ON_FAIL (a FLOW's
            # own are checked where its steps are read): it would render nothing
            guess = did_you_mean(action.template, list(rules.templates))
            ctx.error(codes.BAD_VALUE, f"no template named {action.template}", words.find(action.template),
                      f"did you mean {guess}?" if guess else "define it under TEMPLATES:")
    known = {f.name for f in rules.gather}
    for field in rules.gather:  # depends_on naming no field: the field could never become required
        for name in field.depends_on:
            if name not in known:
                guess = did_you_mean(name, sorted(known))
                ctx.error(codes.UNSET_FIELD, f"{field.name} depends on {name}, which no GATHER declares",
                          words.find(name) or field.span,
                          f"did you mean {guess}?" if guess else "name a field of the agent's GATHER")




def _check_gotos(doc: Document, ctx: SectionContext, rules: AgentRules, steps: set[str]) -> None:
    """GOTO <step> of a constraint's ON_FAIL, an ON_ERROR, a hook or a COMPLETE: a step of the FLOW (ABL019)."""
    words = _Words(doc.text, ctx.file)
    for action in rules.rule_actions():
        if action.goto and action.goto.upper() != "COMPLETE" and action.goto not in steps:
            guess = did_you_mean(action.goto, sorted(steps))
            ctx.error(codes.UNKNOWN_STEP, f"GOTO {action.goto}: the FLOW has no such step", words.find(action.goto),
                      f"did you mean {guess}?" if guess else "name a step of the agent's FLOW")


class _Words:
    """Where words are first written in a document: every name found in one pass when the first is
    looked for (looking each up by reading the lines again is quadratic on a long document)."""

    _NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

    def __init__(self, text: str, file: str) -> None:
        self.text, self.file = text, file
        self.first: dict[str, int] | None = None  # name -> offset of its first whole-word occurrence
        self.line_starts: list[int] = []

    def find(self, word: str) -> Span | None:
        if self.first is None:
            self.first = {}
            # comments are not where a name is written: a line from `#` on is left out ("#" inside quotes
            # is rare enough in a name's line to be taken as a comment start too)
            seen = re.sub(r"(?m)(^|\s)#[^\n]*", lambda m: m.group(1) + " " * (len(m.group(0)) - len(m.group(1))),
                          self.text)
            for match in self._NAME.finditer(seen):
                self.first.setdefault(match.group(0), match.start())
            self.line_starts = [0] + [m.end() for m in re.finditer("\n", self.text)]
        at = self.first.get(word)
        if at is None:  # not one name (or not written at all): the text itself, as written
            at = self.text.find(word) if word else -1
            if at < 0:
                return None
        line = bisect_right(self.line_starts, at)
        return Span(file=self.file, line=line, column=at - self.line_starts[line - 1] + 1)


def _on_start_graph(rules: AgentRules):
    """ON_START's tool call, values and words (in that order, as a hook runs them) as the steps an agent
    runs when it starts (AgentBase.setup)."""
    from frontdesk.ir.models import ArgValue, Assignment, AssignNode, InvokeNode, SayNode, StepGraph

    nodes = []
    for hook in rules.hooks:
        if hook.event != "on_start":
            continue
        if hook.call:
            bound = hook.action.extra.get("result_as")
            nodes.append(InvokeNode(id=f"on_start.{len(nodes) + 1}", target=hook.call, target_kind="tool",
                                    args=[ArgValue(name=name, value=value) for name, value in hook.args.items()],
                                    result=hook.call, bind=Ref(scope=SESSION, name=bound) if bound else None))
        if hook.action.set:
            nodes.append(AssignNode(id=f"on_start.{len(nodes) + 1}", assignments=[
                Assignment(target=Ref(scope=SESSION, name=name), value=value) for name, value in hook.action.set]))
        text, variants = hook.action.respond, {}
        if text is None and hook.action.template and hook.action.template in rules.templates:
            named = rules.templates[hook.action.template]  # RESPOND: TEMPLATE(welcome)
            text, variants = named.default, dict(named.channels)
        if text is not None:
            nodes.append(SayNode(id=f"on_start.{len(nodes) + 1}", text=text, variants=variants))
    if not nodes:
        return None
    for a, b in zip(nodes, nodes[1:]):
        a.next = b.id
    return StepGraph(entry=nodes[0].id, nodes={n.id: n for n in nodes})


def _args(rules: AgentRules) -> list[ArgDef]:
    """The agent's arguments: its GATHER fields, kept as session variables (shared with other agents)."""
    return [ArgDef(name=f.name, description=f.prompt, type=f.type, span=f.span,
                   bound_to=Ref(scope=SESSION, name=f.name)) for f in rules.gather]


def _identity(sections: dict[str, Node], ctx: SectionContext, rules: AgentRules) -> None:
    for name in TEXT_SECTIONS:
        node = sections.get(name)
        if node is not None and node.children:
            ctx.error(codes.WRONG_SHAPE, f"{name} is text, not a list or a block of keys", node.children[0],
                      f'write {name}: "..." or {name}: | with the text on the lines below')
    rules.goal = ctx.text(sections.get("GOAL"))
    rules.persona = ctx.text(sections.get("PERSONA"))
    limitations = sections.get("LIMITATIONS")
    if limitations is not None:
        rules.limitations = [str(x) for x in (ctx.data(limitations) or []) if x is not None] \
            if limitations.children else [ctx.text(limitations)]
    if "MODE" in sections:
        ctx.warning(codes.DEPRECATED, "MODE: is deprecated; the execution mode follows from FLOW and REASONING",
                    sections["MODE"], "remove MODE: and use REASONING: true | false on FLOW steps")


def _instructions(rules: AgentRules, sections: dict[str, Node], ctx: SectionContext) -> str:
    parts = []
    if rules.goal:
        parts.append(f"Goal: {rules.goal}")
    if rules.persona:
        parts.append(rules.persona)
    if rules.limitations:
        parts.append("Limitations:\n" + "\n".join(f"- {x}" for x in rules.limitations))
    extra = ctx.text(sections.get("INSTRUCTIONS"))
    if extra:
        parts.append(extra)
        rules.metadata["INSTRUCTIONS"] = extra
    return "\n\n".join(parts)


def _agent_tools(section: Node | None, ctx: SectionContext, library: dict[str, ToolDef]) -> list[ToolDef]:
    if section is None:
        return []
    out: list[ToolDef] = []
    seen: dict[str, Node] = {}
    for node in section.children:
        if node.key is not None and not node.item and node.value is None and not node.children:
            continue
        tool = tool_from_line(node, ctx)
        if tool is None:
            continue
        if tool.name in seen:
            ctx.error(codes.DUPLICATE_NAME, f"tool {tool.name} is declared twice", node,
                      hint=f"the first is on line {seen[tool.name].span.line}")
            continue
        seen[tool.name] = node
        implemented = library.get(tool.name)
        if implemented is not None and not isinstance(implemented.binding, StubBinding):
            tool = tool.model_copy(update={"binding": implemented.binding})
        out.append(tool)
    return out


def _declarative(sections: dict[str, Node], ctx: SectionContext, rules: AgentRules) -> None:
    """GATHER, MEMORY, CONSTRAINTS and the other declarative sections (lang/abl/sections/), in an
    order where each finds what it refers to (entities before fields, templates before messages)."""
    from .sections import execution, gather, guardrails, memory, meta, templates
    from .sections import rules as rule_sections

    order = [
        ("ENTITIES", gather.compile_entities), ("LOOKUP_TABLES", gather.compile_lookup_tables),
        ("GATHER", gather.compile_gather), ("MEMORY", memory.compile_memory),
        ("TEMPLATES", templates.compile_templates), ("MESSAGES", templates.compile_messages),
        ("CONSTRAINTS", rule_sections.compile_constraints), ("GUARDRAILS", guardrails.compile_guardrails),
        ("COMPLETE", rule_sections.compile_complete), ("ON_ERROR", rule_sections.compile_on_error),
        ("EXECUTION", execution.compile_execution), ("HOOKS", execution.compile_hooks),
        ("ON_START", execution.compile_on_start), ("ACTION_HANDLERS", execution.compile_action_handlers),
        ("RESPOND_ACTIONS", execution.compile_action_handlers),
    ]
    for section, compile_section in order:
        if section in sections:
            compile_section(sections[section], ctx, rules)
    for section in ("NLU", "INTENTS", "MULTI_INTENT", "TESTS", "DIGRESSIONS"):
        if section in sections:
            meta.compile_metadata(section, sections[section], ctx, rules)
    if "BEHAVIOR_PROFILES" in sections:
        rules.metadata["BEHAVIOR_PROFILES"] = ctx.data(sections["BEHAVIOR_PROFILES"])
        meta.compile_behavior_profiles(sections["BEHAVIOR_PROFILES"], ctx, rules)


def _use_profile(name: str, node: Node | Span, ctx: SectionContext, rules: AgentRules) -> None:
    if name not in ctx.names.profiles:
        guess = did_you_mean(name, sorted(ctx.names.profiles))
        ctx.error(codes.UNKNOWN_PROFILE, f"no behaviour profile named {name}", node,
                  f"did you mean {guess}?" if guess else "define it in a .behavior_profile.abl file of the project")
        return
    rules.behavior_profiles.append(name)
    if name in ctx.names.profile_data:
        rules.metadata.setdefault("behavior_profiles", {})[name] = ctx.names.profile_data[name]
        from .sections.meta import add_profile

        if isinstance(ctx.names.profile_data[name], dict):
            add_profile(name, ctx.names.profile_data[name], ctx, rules, node if isinstance(node, Node) else None)


def _first(item: Node) -> Node:
    """Where a list item's content starts (its first key), for diagnostics about the item."""
    return item.children[0] if item.children else item


def _check_agent(name: str, node: Node, ctx: SectionContext, what: str) -> bool:
    if name in ctx.names.agents:
        return True
    guess = did_you_mean(name, sorted(ctx.names.agents))
    ctx.error(codes.UNKNOWN_AGENT, f"{what} names {name}, which is not an agent of the project", node,
              f"did you mean {guess}?" if guess else "define it in an .agent.abl file of the project")
    return False


def _escalate(section: Node, ctx: SectionContext, rules: AgentRules) -> None:
    """ESCALATE: triggers (WHEN, REASON, PRIORITY), context for the human, what happens after."""
    rules.metadata["ESCALATE"] = ctx.data(section)
    triggers = section.get("triggers")
    items = triggers.items() if triggers is not None else section.items()
    for item in items:
        holder = Node(key=None, value=None, span=item.span, children=item.children)
        when = holder.get("WHEN")
        condition = ctx.condition(when.text, when) if when is not None and when.text else None
        priority = holder.get("PRIORITY")
        level = "medium"
        if priority is not None:
            ctx.choice(priority, ("low", "medium", "high", "critical"))
            level = (priority.text or "medium").strip().lower()
        if condition is not None:
            from frontdesk.ir.behaviour import EscalationTrigger

            respond = holder.get("RESPOND")
            rules.escalation.append(EscalationTrigger(
                when=condition, reason=ctx.text(holder.get("REASON")),
                priority=level if level in ("low", "medium", "high", "critical") else "medium",
                respond=ctx.template(respond.text, respond) if respond is not None and respond.text else None,
                span=item.span))
    after = section.get("on_human_complete") if triggers is not None else None
    for item in after.items() if after is not None else []:
        head = item.children[0] if item.children else None
        words = (head.key or head.text or "").strip().rstrip(":").strip() if head is not None else ""
        if head is None or not words.upper().startswith("IF "):
            ctx.error(codes.SYNTAX, "an on_human_complete entry is - IF <condition>: with RESPOND / COMPLETE / "
                      "CONTINUE under it", _first(item), "for example - IF human.resolved == true:")
            continue
        from frontdesk.ir.behaviour import Action, CompletionRule

        respond = head.get("RESPOND")
        extra = {"complete": ctx.boolean(head.get("COMPLETE")),
                 "continue": ctx.text(head.get("CONTINUE")), "context": ctx.text(head.get("CONTEXT"))}
        rules.after_human.append(CompletionRule(
            when=ctx.condition(words[3:].strip(), head),
            action=Action(respond=ctx.template(respond.text, respond) if respond is not None and respond.text
                          else None, extra=extra),
            span=item.span))


def _delegates(section: Node | None, ctx: SectionContext) -> list[Delegation]:
    out: list[Delegation] = []
    for item in section.items() if section is not None else []:
        agent = item.get("AGENT")
        if agent is None or not agent.value:
            ctx.error(codes.MISSING_KEY, "a DELEGATE entry needs AGENT:", _first(item), "write - AGENT: Some_Agent")
            continue
        name = agent.value.strip()
        if not _check_agent(name, agent.value_span(), ctx, "DELEGATE"):
            continue
        inputs_node = item.get("INPUT")
        given = ctx.delegate_inputs(inputs_node)
        inputs = list(given)
        returns_node = item.get("RETURNS")
        returns = {}
        if returns_node is not None:
            if returns_node.value:
                for part in returns_node.value.strip("{} ").split(","):
                    if ":" in part:
                        k, v = part.split(":", 1)
                        returns[k.strip().rstrip("?")] = v.strip()
            for c in returns_node.entries():
                returns[c.key] = c.text
        purpose = ctx.text(item.get("PURPOSE"))
        use = ctx.text(item.get("USE_RESULT"))
        when = ctx.text(item.get("WHEN"))
        text = " ".join(x for x in (purpose, f"When: {when}." if when else "", f"Then: {use}" if use else "") if x)
        out.append(Delegation(agent=name, purpose=text, inputs=inputs, given=given, returns=returns, span=item.span))
        ctx.fields.update(returns)  # 3.10: the agent continues with the result: its RETURNS are values it has
    return out


def _handoffs(section: Node | None, ctx: SectionContext) -> list[Handoff]:
    out: list[Handoff] = []
    for item in section.items() if section is not None else []:
        target = item.get("TO")
        if target is None or not target.value:
            ctx.error(codes.MISSING_KEY, "a HANDOFF entry needs TO:", _first(item), "write - TO: Some_Agent")
            continue
        name = target.value.strip()
        if not _check_agent(name, target.value_span(), ctx, "HANDOFF"):
            continue
        out.append(_handoff_of(item, name, ctx))
    return out


def _handoff_of(item: Node, name: str, ctx: SectionContext) -> Handoff:
    """One HANDOFF entry to `name` (checked to be an agent): CONTEXT, history, RETURN, ON_RETURN."""
    context = item.get("CONTEXT")
    passes = ctx.names_list(context.get("pass")) if context is not None else []
    passes += ctx.names_list(item.get("PASS"))
    summary_node = context.get("summary") if context is not None else None
    history_node = context.get("history") if context is not None else None
    history = "summary_only" if summary_node is not None else "none"  # a summary written is passed
    if history_node is not None:
        data = ctx.data(history_node)
        history = f"last_n:{data.get('last_n')}" if isinstance(data, dict) and "last_n" in data else \
            str(data or "none")
    on_return: dict = {}
    extra: dict = {}
    returned = item.get("ON_RETURN")
    if returned is not None:
        mapping = returned.get("map")
        # read in the agent that ended: its tools' results are names there (`track.status`)
        lent = ctx.names.agent_tools.get(name, set()) - ctx.tools
        ctx.tools |= lent
        try:
            for entry in mapping.entries() if mapping is not None else []:
                on_return[entry.key] = ctx.value(entry)
        finally:
            ctx.tools -= lent
        if returned.value or returned.get("action") is not None:
            extra["on_return"] = returned.text or ctx.text(returned.get("action"))
    for key in ("async", "asyncTimeout", "remote"):
        node = item.get(key)
        if node is not None:
            extra[key.lower()] = ctx.data(node)
    return Handoff(agent=name, purpose=ctx.text(item.get("WHEN")), resume=ctx.boolean(item.get("RETURN")),
                   condition=_when_condition(item.get("WHEN"), ctx),
                   passes=[p.split(".")[-1] for p in passes], when=ctx.text(item.get("WHEN")),
                   summary=ctx.template(summary_node.text, summary_node) if summary_node is not None else None,
                   history=history, on_return=on_return, extra=extra, span=item.span)


_WHEN_EXPRESSION = re.compile(r"==|!=|>=|<=|\s[<>]\s|\bIS\s+(?:NOT\s+)?SET\b|\b(?:AND|OR|NOT)\b|^[\w.]+$")


def _when_condition(node: Node | None, ctx: SectionContext):
    """A supervisor's WHEN written as an expression (`language == "es"`, `user.wants_human`) as a
    condition the runtime evaluates; words for a model ("user asks about refunds") give None."""
    text = ctx.text(node)
    if not text or not _WHEN_EXPRESSION.search(text):
        return None
    if reads_as_words(text):  # "user asks about opening hours OR store locations": words for the model
        return None
    return ctx.condition(text, node)


_WHEN_KEYWORDS = frozenset({"and", "or", "not", "in", "is", "set", "null", "true", "false", "contains", "matches",
                            "between", "starts_with", "ends_with", "exists", "empty", "none"})


def reads_as_words(text: str) -> bool:
    """Whether a WHEN is a sentence rather than an expression: it does not parse, and somewhere two
    plain words stand side by side (`asks about`), which no expression writes."""
    from frontdesk.expr import ExprSyntaxError, parse_condition

    try:
        parse_condition(text, "")
        return False
    except ExprSyntaxError:
        pass
    words = re.findall(r"\"[^\"]*\"|'[^']*'|[A-Za-z_][\w.]*|\S", text)
    return any(a[0].isalpha() and b[0].isalpha() and a.lower() not in _WHEN_KEYWORDS
               and b.lower() not in _WHEN_KEYWORDS for a, b in zip(words, words[1:]))


def _supervisor(doc: Document, sections: dict[str, Node], ctx: SectionContext, rules: AgentRules,
                args: list[ArgDef], description: str, instructions: str, span: Span | None) -> RouterAgent:
    members: dict[str, RouterMember] = {}
    aliases: dict[str, str] = {}
    agents_node = sections.get("AGENTS")
    if agents_node is not None:
        for entry in agents_node.entries():
            target = entry.text
            if _check_agent(target, entry.value_span(), ctx, "AGENTS"):
                aliases[entry.key] = target
                members.setdefault(target, RouterMember(agent=target, span=entry.span))
        for item in agents_node.items():
            for child in item.children:
                name = child.text if child.key is None else child.key
                if name and _check_agent(name, child, ctx, "AGENTS"):
                    members.setdefault(name, RouterMember(agent=name, span=child.span))
    default = None
    routing = sections.get("ROUTING")
    for node in (routing.children if routing is not None else []):
        line = node.children[0] if node.item and node.children else node
        if node.item and line.key is not None and line.key.upper() == "TO":
            name = aliases.get(line.text, line.text)  # a rule written like a HANDOFF: TO + WHEN
            if _check_agent(name, line.value_span(), ctx, "ROUTING"):
                member = members.setdefault(name, RouterMember(agent=name, span=line.span))
                member.description = ctx.text(node.get("WHEN"))
                member.condition = _when_condition(node.get("WHEN"), ctx)
                member.passes = ctx.names_list(node.get("PASS"))
            continue
        text = line.value or ""
        route, fallback = _ROUTE.match(text), _DEFAULT.match(text)
        if route is None and fallback is None:
            ctx.error(codes.SYNTAX, f"a ROUTING rule is INTENT(words) -> agent or DEFAULT -> agent, not '{text}'",
                      line, "for example - INTENT(pay, checkout) -> payment")
            continue
        found = route or fallback
        target = found.group("target")
        name = aliases.get(target, target)
        at = line.value_span()
        if not _check_agent(name, Span(file=at.file, line=at.line, column=at.column + found.start("target")),
                            ctx, "ROUTING"):
            continue
        member = members.setdefault(name, RouterMember(agent=name, span=line.span))
        if route is not None:
            member.examples += [w.strip() for w in route.group("words").split(",") if w.strip()]
        else:
            default = name
    for item in (sections["HANDOFF"].items() if "HANDOFF" in sections else []):
        target = item.get("TO")
        if target is None or not target.value:
            ctx.error(codes.MISSING_KEY, "a HANDOFF entry needs TO:", _first(item), "write - TO: Some_Agent")
            continue
        name = aliases.get(target.text, target.text)
        if not _check_agent(name, target.value_span(), ctx, "HANDOFF"):
            continue
        member = members.setdefault(name, RouterMember(agent=name, span=item.span))
        member.description = ctx.text(item.get("WHEN"))
        returns = item.get("RETURN")
        member.resume = ctx.boolean(returns, default=True)
        context = item.get("CONTEXT")
        member.passes = ctx.names_list(context.get("pass")) if context is not None else ctx.names_list(item.get("PASS"))
        member.handoff = _handoff_of(item, name, ctx)  # reads the WHEN (once: one diagnostic if it is wrong)
        member.handoff.resume = member.resume
        member.condition = member.handoff.condition
    protocol = sections.get("HANDOFF_PROTOCOL")
    if protocol is not None:
        rules.metadata["HANDOFF_PROTOCOL"] = ctx.data(protocol)
        for item in protocol.items():
            head = item.children[0] if item.children else None
            match = _PROTOCOL.match((head.value or "") if head is not None and head.key is None else "")
            if head is None or match is None:
                continue
            for side in ("src", "dst"):
                name = match.group(side)
                if name.lower() != "any":
                    _check_agent(aliases.get(name, name), head, ctx, "HANDOFF_PROTOCOL")
    if "ESCALATE" in sections:
        _escalate(sections["ESCALATE"], ctx, rules)
    if not members:
        ctx.error(codes.MISSING_KEY, f"supervisor {doc.name} routes to no agent",
                  doc.header, "list its agents under HANDOFF: (- TO: Agent) or AGENTS:")
    return RouterAgent(name=doc.name, description=description, args=args, members=list(members.values()),
                       instructions=instructions or None, default=default, rules=rules, span=span,
                       strategy=rules.execution.extra.get("orchestration"))
