"""Writing an ABL outline in either format: `.agent.abl` text or `.agent.yaml` (see docs/abl-yaml.md).

The two formats hold the same tree. In YAML an entry with only a value is `key: value`; one with
only entries is a mapping, one with only items a list; anything else is a mapping in which the
reserved keys `=value` (the entry's own value), `=lines` (its bare lines, in order; a line with a
block under it is `{=line: text, ...}`) and `=items` (its list items) sit beside its entries.
Keywords are capitals in `.abl` and lowercase in `.agent.yaml`; names keep their spelling.
Comments are not carried over.
"""

from __future__ import annotations

import json
import re

import yaml

from .keywords import KEYWORDS, NAME_CONTAINERS
from .lineparts import split_list
from .outline import Node


def keyword_case(key: str, fmt: str, name: bool = False) -> str:
    """`key` as `fmt` writes it: a keyword in capitals (.abl) or lowercase (.agent.yaml); a name as is."""
    if not name and key.upper() in KEYWORDS:
        return key.upper() if fmt == "abl" else key.lower()
    return key


def _holds_names(node: Node) -> bool:
    return node.key is not None and node.key.upper() in NAME_CONTAINERS


# ---- .abl -----------------------------------------------------------------------------------------------


def to_abl(root: Node) -> str:
    out: list[str] = []
    for node in root.children:
        _abl_node(node, 0, out)
    return "\n".join(out) + "\n"


def _abl_scalar(node: Node) -> str:
    text = node.value or ""
    if node.quoted or text != text.strip() or text == "" or _needs_quotes(text):
        return json.dumps(text, ensure_ascii=False)
    return text


def _needs_quotes(text: str) -> bool:
    return " #" in text or text.startswith(("#", "- ", "|", ">", '"', "'")) or "\n" in text


def _abl_node(node: Node, indent: int, out: list[str], prefix: str = "", name: bool = False) -> None:
    pad = " " * indent
    if node.item:
        children = node.children
        if not children:
            out.append(f"{pad}-")
            return
        first, rest = children[0], children[1:]
        if first.item:  # a list inside a list
            out.append(f"{pad}-")
            rest = children
        else:
            _abl_node(first, indent + 2, out, prefix="- ", name=name)
        for child in rest:
            _abl_node(child, indent + 2, out)
        return
    lead = pad if not prefix else " " * (indent - 2) + prefix
    key = keyword_case(node.key, "abl", name) if node.key is not None else None
    if key is None:
        out.append(f"{lead}{_abl_scalar(node)}")
    elif node.block and node.value is not None:
        out.append(f"{lead}{key}: |")
        out.extend(f"{pad}  {line}" if line else "" for line in node.value.split("\n"))
    elif node.value is not None:
        out.append(f"{lead}{key}: {_abl_scalar(node)}")
    else:
        out.append(f"{lead}{key}:")
    names = _holds_names(node)
    for child in node.children:
        _abl_node(child, indent + 2, out, name=names)


# ---- .agent.yaml ----------------------------------------------------------------------------------------


_PLAIN_SAFE = re.compile(r"^[^\s\-?:,\[\]{}#&*!|>'\"%@`][^#]*$")


class _Raw(str):
    """A scalar written as it is (plain), because the .abl value was not quoted and YAML reads it back
    as the same text."""


class _Quoted(str):
    """Text that was quoted in the .abl: quoted in YAML too, so both read it as text, not an expression."""


class _Unquoted(str):
    """Text that was not quoted in the .abl but must be quoted in YAML (it holds `: `): tagged !raw, so
    reading it back knows it was a bare value."""


def _yaml_scalar(node: Node):
    text = node.value or ""
    if node.block:
        return _Block(text)
    if node.quoted:
        return _Quoted(text)
    if not node.quoted and _PLAIN_SAFE.match(text) and ": " not in text and not text.endswith(":"):
        try:
            loaded = yaml.safe_load(text)
        except yaml.YAMLError:
            return text
        if not isinstance(loaded, (dict, list)):
            return _Raw(text)
    if not node.quoted and text.startswith("{") and text.endswith("}"):
        try:
            loaded = yaml.safe_load(text)
        except yaml.YAMLError:
            loaded = None
        if isinstance(loaded, dict) and all(not isinstance(v, (dict, list)) for v in loaded.values()) and \
                all(re.fullmatch(r"[A-Za-z_]\w*", str(k)) for k in loaded):
            return {str(k): (None if v is None else _Raw(str(v).lower() if isinstance(v, bool) else str(v)))
                    for k, v in loaded.items()}
    if not node.quoted and text.startswith("[") and text.endswith("]"):
        try:
            loaded = yaml.safe_load(text)
        except yaml.YAMLError:
            return text
        if isinstance(loaded, list) and all(not isinstance(x, (dict, list)) for x in loaded):
            # `[a, b]` is the same list as `- a` / `- b` to every compiler (Node.items, ctx.data)
            return [_flow_element(part.strip()) for part in split_list(text[1:-1])]
    return text if node.quoted else _Unquoted(text)


def _flow_element(text: str):
    from .outline import _unquote

    inner = _unquote(text)
    return _Quoted(inner) if inner is not None else _Raw(text)


class _Block(str):
    pass


def _yaml_value(node: Node, fmt: str = "yaml", names: bool | None = None):
    """The YAML data of an entry's value and block (`names`: its keys are names, not keywords)."""
    names = _holds_names(node) if names is None else names
    entries = [c for c in node.children if c.key is not None and not c.item]
    lines = [c for c in node.children if c.key is None and not c.item]
    items = [c for c in node.children if c.item]
    keys = [c.key for c in entries]
    if not node.children:
        return _yaml_scalar(node) if node.value is not None else None
    if node.value is None and not lines and not items and len(set(keys)) == len(keys):
        return {keyword_case(c.key, fmt, names): _yaml_value(c, fmt) for c in entries}
    if node.value is None and not lines and not entries:
        return [_yaml_item(c, fmt, names) for c in items]
    out: dict = {}
    if node.value is not None:
        out["=value"] = _yaml_scalar(node)
    if lines:
        out["=lines"] = [_yaml_line(c, fmt) for c in lines]
    for c in entries:
        out[keyword_case(c.key, fmt, names)] = _yaml_value(c, fmt)
    if items:
        out["=items"] = [_yaml_item(c, fmt, names) for c in items]
    return out


def _yaml_line(node: Node, fmt: str):
    if not node.children:
        return _yaml_scalar(node)
    inner = _yaml_value(Node(key=None, value=None, span=node.span, children=node.children), fmt)
    out = {"=line": _yaml_scalar(node)}
    if isinstance(inner, dict):
        out.update(inner)
    else:
        out["=items"] = inner
    return out


def _yaml_item(node: Node, fmt: str, names: bool = False):
    if len(node.children) == 1 and node.children[0].key is None and not node.children[0].children \
            and not node.children[0].item:
        return _yaml_scalar(node.children[0])
    holder = Node(key=None, value=None, span=node.span, children=node.children)
    data = _yaml_value(holder, fmt, names=False)
    first = node.children[0] if node.children else None
    if names and isinstance(data, dict) and first is not None and first.key is not None:
        # the item's first key is a name (`- description: required` under GATHER)
        renamed = {}
        for i, (k, v) in enumerate(data.items()):
            renamed[first.key if i == 0 and k == keyword_case(first.key, fmt) else k] = v
        data = renamed
    return data


class _Dumper(yaml.SafeDumper):
    pass


def _repr_raw(dumper, data):
    # tagged as YAML reads it back (2 an int, true a bool), so it is written plain, as in the .abl
    tag = dumper.resolve(yaml.ScalarNode, str(data), (True, False))
    return dumper.represent_scalar(tag, str(data), style="")


def _repr_block(dumper, data):
    return dumper.represent_scalar("tag:yaml.org,2002:str", str(data), style="|")


def _repr_str(dumper, data):
    style = '"' if data and (data != data.strip() or any(c in data for c in ":#{}[],&*!|>'\"%@`") or
                             data[0] in "-?") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(_Raw, _repr_raw)
_Dumper.add_representer(_Quoted, lambda dumper, data: dumper.represent_scalar("tag:yaml.org,2002:str", str(data),
                                                                             style='"'))
_Dumper.add_representer(_Unquoted, lambda dumper, data: dumper.represent_scalar("!raw", str(data), style='"'))
_Dumper.add_representer(_Block, _repr_block)
_Dumper.add_representer(str, _repr_str)


def _signature_list(node: Node) -> list:
    """TOOLS (or ROUTING) as YAML lists it: each line a string, or `{signature: ..., key: ...}`."""
    out = []
    for line in node.children:
        if not line.children:
            out.append(line.value or "")
        else:
            entry = {"signature": line.value or ""}
            entry.update(_yaml_value(Node(key=None, value=None, span=line.span, children=line.children)))
            out.append(entry)
    return out


def to_yaml(root: Node) -> str:
    data = {}
    for node in root.children:
        if node.key is None:
            data.setdefault("=lines", []).append(_yaml_line(node, "yaml"))
            continue
        if node.key.upper() in ("TOOLS", "ROUTING") and node.value is None and node.children and \
                all(c.key is None and not c.item and all(k.key is not None and not k.item for k in c.children)
                    for c in node.children):
            data[keyword_case(node.key, "yaml")] = _signature_list(node)
            continue
        data[keyword_case(node.key, "yaml")] = _yaml_value(node)
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100, default_flow_style=False)
