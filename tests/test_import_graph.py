"""The import graph of src/frontdesk (issue 24): no two modules import each other, directly or round a
circle, and the low layers (the IR, the NLU) import nothing from above them.

The graph is read from the source with `ast`; no module is imported. What counts as an edge:

- every `import` and `from ... import` in a module, wherever it stands: at the top, inside a function
  body, under `try:` or any other `if`. Only imports under `if TYPE_CHECKING:` (or
  `if typing.TYPE_CHECKING:`) are skipped, since they never run;
- relative imports are resolved against the module's package;
- `from pkg import name` is an edge to the submodule `pkg.name` when there is one, otherwise to `pkg`
  itself (its `__init__`); `import pkg.sub` is an edge to `pkg.sub`;
- only modules of `frontdesk` count; the standard library and other packages are left out, and so
  are modules loaded by name at run time (`importlib.import_module`), which no reading can follow.

Importing `frontdesk.a.b` makes Python run `frontdesk/a/__init__.py` first. That implicit import of a
module's parent packages does NOT count as an edge: a package's `__init__` that re-exports from its
submodules would otherwise close a circle with every one of them. It counts only when the module
names the package itself (`from frontdesk.a import x` where `x` is not a submodule, or `import
frontdesk.a`).
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
PACKAGE = "frontdesk"

# What each low layer may import from frontdesk (a module is allowed when it is one of these or lies
# inside one). The IR is the bottom: it knows its own models and where things are in the source
# (diagnostics). The NLU (embeddings, the matcher, BM25 terms) works on text and numbers: besides
# itself it may read the IR and diagnostics, and the text helpers that import nothing (textutil); the
# runtime, the front ends, the models (llm) and everything above them are out of bounds.
LAYERS: dict[str, tuple[str, ...]] = {
    "frontdesk.ir": ("frontdesk.ir", "frontdesk.diagnostics"),
    "frontdesk.nlu": ("frontdesk.nlu", "frontdesk.ir", "frontdesk.diagnostics", "frontdesk.textutil"),
}


def module_files(src: Path = SRC, package: str = PACKAGE) -> dict[str, Path]:
    """Each module's dotted name and its file; a package is named by its `__init__.py`."""
    modules: dict[str, Path] = {}
    for path in sorted((src / package).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _imports(tree: ast.AST):
    """Each import statement that can run, with `if TYPE_CHECKING:` blocks left out (their `else:` kept)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
            continue
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute name `from <node.module>` means in `module`."""
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _owner(name: str, modules: dict[str, Path]) -> str | None:
    """The nearest module of ours that `name` lies in (`frontdesk.a.b.C` -> `frontdesk.a.b`)."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def import_graph(src: Path = SRC, package: str = PACKAGE) -> dict[str, set[str]]:
    """Module -> the modules of the package it imports (see the module docstring for what counts)."""
    modules = module_files(src, package)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in _imports(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = _resolve(name, is_package, node)
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.append(sub if sub in modules else base)
            for target in targets:
                owner = _owner(target, modules)
                if owner is not None and owner != name:
                    graph[name].add(owner)
    return graph


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, without recursion: the components of more than one module, each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return sorted(found)


def a_cycle(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """One circle through a component, as a path that ends where it starts (for the message)."""
    members = set(component)
    start = component[0]
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:  # breadth first, so the circle shown is a short one
        following = []
        for node in frontier:
            for child in sorted(graph[node] & members):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return path[::-1] + [start]
                if child not in previous:
                    previous[child] = node
                    following.append(child)
        frontier = following
    return component


def _short(name: str) -> str:
    return name.removeprefix(PACKAGE + ".") or name


def cycle_report(graph: dict[str, set[str]]) -> list[str]:
    lines = []
    for component in strongly_connected(graph):
        circle = " -> ".join(_short(m) for m in a_cycle(graph, component))
        lines.append(f"{len(component)} modules: {', '.join(_short(m) for m in component)}\n    e.g. {circle}")
    return lines


def layer_report(graph: dict[str, set[str]], layers: dict[str, tuple[str, ...]] = LAYERS) -> list[str]:
    def inside(module: str, prefix: str) -> bool:
        return module == prefix or module.startswith(prefix + ".")

    lines = []
    for layer, allowed in layers.items():
        for module in sorted(m for m in graph if inside(m, layer)):
            for target in sorted(graph[module]):
                if not any(inside(target, a) for a in allowed):
                    lines.append(f"{_short(module)} imports {_short(target)}")
    return lines


def test_no_import_cycles():
    cycles = cycle_report(import_graph())
    assert not cycles, "modules of src/frontdesk import each other round a circle:\n" + "\n".join(cycles)


def test_low_layers_import_nothing_above_them():
    arrows = layer_report(import_graph())
    assert not arrows, "a low layer imports from a higher one:\n" + "\n".join(arrows)


# The package layers docs/architecture.md draws: a module imports only from its own row or the rows
# above it. The command-line modules of a lower package (`analysis/graph_cli`, `acdl/cli`, ...) sit in
# the last row with the CLI. One arrow goes up on purpose: ADL's front end registers its tool return
# convention with the runtime's tools (`lang/adl/returns.py`), as a plugin does.
PACKAGE_ROWS: tuple[tuple[str, ...], ...] = (
    ("", "diagnostics", "textutil", "progress", "extras", "ir"),  # "": the package's own __init__
    ("access", "nlu", "expr", "llm"),
    ("yamlsource", "lang", "acdl", "analysis"),
    ("runtime", "store"),
    ("app", "conversation_file", "testing", "server", "convtest", "evaluation", "loading", "cli"),
)
CLI_MODULES = ("frontdesk.analysis.graph_cli", "frontdesk.acdl.cli", "frontdesk.acdl.render_cli")
UPWARD_ON_PURPOSE = {("frontdesk.lang.adl.returns", "frontdesk.runtime.tools")}


def row_of(module: str) -> int | None:
    if module in CLI_MODULES:
        return len(PACKAGE_ROWS) - 1
    top = module.split(".")[1] if "." in module else ""
    return next((i for i, row in enumerate(PACKAGE_ROWS) if top in row), None)


def test_packages_import_only_their_row_and_the_rows_above():
    graph = import_graph()
    unplaced = sorted({m for m in graph if row_of(m) is None})
    assert not unplaced, f"modules in no row of PACKAGE_ROWS (place them): {unplaced}"
    up = [f"{_short(m)} imports {_short(t)}" for m in sorted(graph) for t in sorted(graph[m])
          if row_of(t) > row_of(m) and (m, t) not in UPWARD_ON_PURPOSE]
    assert not up, "a package imports from a row below it (docs/architecture.md, Packages and layers):\n" + "\n".join(up)


# ---- the checks themselves ----------------------------------------------------------------------


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


def test_the_graph_reads_each_kind_of_import(tmp_path):
    src = _tree(tmp_path, {
        "frontdesk/__init__.py": "",
        "frontdesk/low.py": "X = 1\n",
        "frontdesk/pkg/__init__.py": "from .sub import Y\n",
        "frontdesk/pkg/sub.py": "from .. import low\nY = low.X\n",
        "frontdesk/pkg/other.py": (
            "from typing import TYPE_CHECKING\n"
            "from frontdesk.pkg import Y\n"
            "if TYPE_CHECKING:\n    from frontdesk import top\n"
            "def f():\n    import frontdesk.low.X\n"
        ),
        "frontdesk/top.py": "from frontdesk.pkg import sub, other\nimport json\n",
    })
    graph = import_graph(src)
    assert graph["frontdesk.pkg"] == {"frontdesk.pkg.sub"}
    assert graph["frontdesk.pkg.sub"] == {"frontdesk.low"}  # not frontdesk (its parent, not named)
    assert graph["frontdesk.pkg.other"] == {"frontdesk.pkg", "frontdesk.low"}  # TYPE_CHECKING left out
    assert graph["frontdesk.top"] == {"frontdesk.pkg.sub", "frontdesk.pkg.other"}
    assert not strongly_connected(graph)


def test_a_circle_and_an_arrow_up_are_reported(tmp_path):
    src = _tree(tmp_path, {
        "frontdesk/__init__.py": "",
        "frontdesk/a.py": "from frontdesk import b\n",
        "frontdesk/b.py": "def f():\n    from frontdesk.c import g\n",  # inside a function still counts
        "frontdesk/c.py": "from . import a\n",
        "frontdesk/d.py": "import frontdesk.e\n",
        "frontdesk/e.py": "from frontdesk import d as _\n",
        "frontdesk/ir/__init__.py": "",
        "frontdesk/ir/models.py": "from frontdesk.diagnostics import Span\nfrom frontdesk.a import x\n",
        "frontdesk/diagnostics.py": "",
    })
    graph = import_graph(src)
    assert strongly_connected(graph) == [["frontdesk.a", "frontdesk.b", "frontdesk.c"],
                                         ["frontdesk.d", "frontdesk.e"]]
    report = cycle_report(graph)
    assert "a -> b -> c -> a" in report[0] and "d -> e -> d" in report[1]
    assert layer_report(graph) == ["ir.models imports a"]
