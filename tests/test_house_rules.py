"""The house rules that a reader can check mechanically, over every module of ``src/chakra``
(issue "[house]"): imports run one way, down the layers below; no import circle between
modules; no function over 60 lines; no module over 400 lines; and no ``dict`` or ``tuple``
in the signature of a function that one package hands to another (typed values cross
package boundaries: a frozen struct says what each field is, a tuple does not).

The checks read the source with :mod:`ast`; they import nothing from the package.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "chakra"
MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 400

#: The layers, bottom up: a package imports only from its own layer or those below it.
#: Plumbing, then the formats read and written, then the pipeline's stages in order, then
#: what reads their results, then the companions, then the command-line tools.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "progress", "workers", "fileio"),  # plumbing
    ("et", "schema", "src", "ingest", "text"),  # formats: Chakra ET, host ET and Kineto, text
    ("link",),  # stage 1: host ET + Kineto -> ET+
    ("convert",),  # stage 2: ET+ (or host ET) -> Chakra ET
    ("simulate",),  # stage 3: replay
    ("ranks", "views"),  # results across ranks, and views of a run
    ("pipeline", "feeder", "synth", "tools", "analysis"),  # the whole job, the companions
    ("cli",),  # command-line tools: thin
)
LAYER_OF = {name: depth for depth, names in enumerate(LAYERS) for name in names}


@dataclass(frozen=True)
class Module:
    name: str  # dotted: chakra.link.linker
    path: Path
    tree: ast.Module

    @property
    def package(self) -> str:
        """The top-level package under chakra (``link``), or the module's own name for a
        module directly under chakra (``errors``); ``""`` for chakra itself."""
        parts = self.name.split(".")
        return parts[1] if len(parts) > 1 else ""


def _modules() -> list[Module]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found.append(Module(".".join(parts), path, ast.parse(path.read_text(), str(path))))
    return found


MODULES = _modules()
BY_NAME = {m.name: m for m in MODULES}


def _imports(module: Module, *, top_level_only: bool) -> Iterator[tuple[str, int]]:
    """``(imported chakra module, line)`` for each import of ``module``: the module itself
    when it exists, else its package (``from chakra.link import x``: chakra.link)."""
    nodes = module.tree.body if top_level_only else ast.walk(module.tree)
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.startswith("chakra"):
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    yield (full if full in BY_NAME else node.module), node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("chakra"):
                    yield alias.name, node.lineno


def _package_of(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_every_package_has_a_layer() -> None:
    packages = {m.package for m in MODULES} - {""}
    assert sorted(packages - set(LAYER_OF)) == []


def upward_imports(modules: list[Module]) -> list[str]:
    """Every import (lazy ones inside functions too) that reaches a higher layer."""
    upward = []
    for module in modules:
        if not module.package:
            continue
        for target, line in _imports(module, top_level_only=False):
            other = _package_of(target)
            if other and LAYER_OF[other] > LAYER_OF[module.package]:
                upward.append(f"{module.name}:{line}: {module.package} -> {other}")
    return upward


def test_no_import_goes_up_the_layers() -> None:
    assert upward_imports(MODULES) == []


def test_the_layer_check_sees_an_import_going_up() -> None:
    """The checker itself: a lazy import of the CLI from the ET reader is an arrow up."""
    code = "def f():\n    from chakra.cli.sim import main\n"
    fake = Module("chakra.et.fake", PACKAGE / "et" / "fake.py", ast.parse(code))
    assert upward_imports([fake]) == ["chakra.et.fake:2: et -> cli"]


def test_packages_import_each_other_one_way() -> None:
    """No two packages import each other (within a layer too)."""
    edges = defaultdict(set)
    for module in MODULES:
        for target, _ in _imports(module, top_level_only=False):
            other = _package_of(target)
            if other and module.package and other != module.package:
                edges[module.package].add(other)
    both = sorted(f"{a} <-> {b}" for a, bs in edges.items() for b in bs
                  if a < b and a in edges.get(b, ()))  # fmt: skip
    assert both == []


def test_no_import_circle_between_modules() -> None:
    """The modules' imports, lazy ones inside functions too, form no cycle (a package's
    ``__init__`` re-exporting its modules counts like any module; a lazy import that
    closes a circle only hides it)."""
    graph = {m.name: {t for t, _ in _imports(m, top_level_only=False) if t in BY_NAME}
             for m in MODULES}  # fmt: skip
    cycles = _cycles(graph)
    assert cycles == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one vertex (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            vertex, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[vertex] = min(low[vertex], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[vertex])
            if low[vertex] == index[vertex]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == vertex:
                        break
                if len(component) > 1 or vertex in graph[vertex]:
                    found.append(sorted(component))
    return found


def test_cycle_finder_finds_a_circle() -> None:
    """The checker itself: a circle of three and a self loop are found, a chain is not."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"d"}, "e": {"a"}}
    assert sorted(_cycles(graph)) == [["a", "b", "c"], ["d"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


#: What only presentation code does: draw (matplotlib) or write a Chrome/Perfetto trace.
_PRESENTATION = ("matplotlib", "traceEvents")


def _presentation_in(module: Module) -> list[str]:
    """What in ``module`` is presentation: an import of matplotlib, a Chrome trace key."""
    imported = [node.module or "" for node in ast.walk(module.tree)
                if isinstance(node, ast.ImportFrom)]  # fmt: skip
    imported += [alias.name for node in ast.walk(module.tree) if isinstance(node, ast.Import)
                 for alias in node.names]  # fmt: skip
    found = [f"imports {name}" for name in imported if name.split(".")[0] == "matplotlib"]
    found += [f"writes {node.value!r}" for node in ast.walk(module.tree)
              if isinstance(node, ast.Constant) and node.value in _PRESENTATION]  # fmt: skip
    return found


def test_the_simulator_holds_no_presentation_code() -> None:
    """Pictures and timelines live in ``chakra.views`` (issue 32): ``chakra.simulate``
    computes times, and neither draws nor writes a trace to look at."""
    found = [f"{m.name}: {what}" for m in MODULES if m.package == "simulate"
             for what in _presentation_in(m)]  # fmt: skip
    assert found == []


def test_the_presentation_check_sees_a_picture() -> None:
    assert _presentation_in(BY_NAME["chakra.views.plot"]) != []
    assert _presentation_in(BY_NAME["chakra.views.timeline"]) != []


def _functions(tree: ast.AST) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def test_no_function_over_60_lines() -> None:
    long = [f"{m.path.relative_to(SRC)}:{f.lineno} {f.name}: {f.end_lineno - f.lineno + 1} lines"
            for m in MODULES for f in _functions(m.tree)
            if f.end_lineno - f.lineno + 1 > MAX_FUNCTION_LINES]  # fmt: skip
    assert long == []


def test_no_module_over_400_lines() -> None:
    long = [f"{m.path.relative_to(SRC)}: {n} lines" for m in MODULES
            if (n := len(m.path.read_text().splitlines())) > MAX_MODULE_LINES]  # fmt: skip
    assert long == []


_DICTS = ("dict", "Dict")
_TUPLES = ("tuple", "Tuple")


def _name(node: ast.expr) -> str:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(
        node, ast.Attribute) else ""  # fmt: skip


def _loose_types(annotation: ast.expr | None) -> list[str]:
    """The loose containers an annotation uses (a string annotation is parsed): ``dict``
    (a record or a table: a struct, or a read-only ``Mapping``, says more) and a tuple of
    fixed length (a record without field names). ``tuple[X, ...]``, an immutable sequence
    of one kind of item, is fine."""
    if annotation is None:
        return []
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        annotation = ast.parse(annotation.value, mode="eval").body
    found = []
    for node in ast.walk(annotation):
        if isinstance(node, ast.Subscript) and _name(node.value) in _TUPLES:
            items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if not (len(items) == 2 and isinstance(items[1], ast.Constant)
                    and items[1].value is Ellipsis):  # fmt: skip
                found.append("tuple")
        elif isinstance(node, (ast.Name, ast.Attribute)) and _name(node) in _DICTS:
            found.append("dict")
        elif isinstance(node, (ast.Name, ast.Attribute)) and _name(node) in _TUPLES:
            parent_is_subscript = any(isinstance(p, ast.Subscript) and p.value is node
                                      for p in ast.walk(annotation))  # fmt: skip
            if not parent_is_subscript:
                found.append("tuple")
    return found


def _crossing_names() -> dict[str, set[str]]:
    """For each module, the names another package imports from it (or from its package's
    ``__init__``, which re-exports it)."""
    wanted: dict[str, set[str]] = defaultdict(set)
    for module in MODULES:
        for node in ast.walk(module.tree):
            if not (isinstance(node, ast.ImportFrom) and node.module and node.level == 0):
                continue
            if not node.module.startswith("chakra") or _package_of(node.module) in (
                    module.package, ""):  # fmt: skip
                continue
            for alias in node.names:
                wanted[node.module].add(alias.name)
    return wanted


def _defining_module(module_name: str, name: str) -> str | None:
    """The module that defines ``name`` as seen from ``module_name`` (following one level of
    re-export in a package ``__init__``, eager or lazy: a lazy one lists its names under
    ``if TYPE_CHECKING:``, see :func:`chakra.lazy_exports`)."""
    module = BY_NAME.get(module_name)
    if module is None:
        return None
    for node in module.tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name:
            return module_name
    for node in _top_level_and_type_checking(module.tree):
        if (isinstance(node, ast.ImportFrom) and node.module in BY_NAME
                and any((a.asname or a.name) == name for a in node.names)):  # fmt: skip
            return _defining_module(node.module, name)
    return None


def _top_level_and_type_checking(tree: ast.Module) -> list[ast.stmt]:
    """The module's statements, those under a top-level ``if TYPE_CHECKING:`` included."""
    found: list[ast.stmt] = []
    for node in tree.body:
        found.append(node)
        if (
            isinstance(node, ast.If)
            and isinstance(node.test, ast.Name)
            and (node.test.id == "TYPE_CHECKING")
        ):
            found.extend(node.body)
    return found


def _signature_problems(node: ast.FunctionDef | ast.AsyncFunctionDef, where: str) -> list[str]:
    args = node.args
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    found = [f"{where}: parameter {a.arg}: {', '.join(_loose_types(a.annotation))}"
             for a in every if _loose_types(a.annotation)]  # fmt: skip
    if _loose_types(node.returns):
        found.append(f"{where}: returns {', '.join(_loose_types(node.returns))}")
    return found


def crossing_signature_problems() -> list[str]:
    """Each dict/tuple in the signature of a function (or a public method of a class)
    that another package imports."""
    problems = []
    for module_name, names in sorted(_crossing_names().items()):
        for name in sorted(names):
            origin = _defining_module(module_name, name)
            if origin is None:
                continue
            for node in BY_NAME[origin].tree.body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
                    problems += _signature_problems(node, f"{origin}.{name}")
                elif isinstance(node, ast.ClassDef) and node.name == name:
                    problems += _method_problems(node, f"{origin}.{name}")
    return sorted(set(problems))


def _method_problems(node: ast.ClassDef, where: str) -> list[str]:
    """Those of the public methods of a class (and its ``__init__``)."""
    problems = []
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
            not item.name.startswith("_") or item.name == "__init__"
        ):
            problems += _signature_problems(item, f"{where}.{item.name}")
    return problems


def test_no_dict_or_tuple_in_a_signature_between_packages() -> None:
    assert crossing_signature_problems() == []


@pytest.mark.parametrize(
    ("annotation", "loose"),
    [("dict[str, int]", ["dict"]), ("Optional[tuple[int, str]]", ["tuple"]),
     ("tuple[int, ...]", []), ("tuple", ["tuple"]), ("Sequence[RankResult]", []),
     ("Mapping[int, Fill]", []), ("'typing.Dict[str, Any]'", ["dict"])],
)  # fmt: skip
def test_the_signature_check_sees_dicts_and_tuples(annotation: str, loose: list[str]) -> None:
    assert _loose_types(ast.parse(annotation, mode="eval").body) == loose
