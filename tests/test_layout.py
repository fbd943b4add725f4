"""The package layout's import rules, read from the source: a rule broken here is a design change.

The farm is a house of six floors, `LAYERS`, lowest first, and a package imports only from the floors below
its own, never from another package of its floor. On the ground floor `farm/`, shared by everyone, which
imports no role (the vocabulary file's format is there: the vocabulary trainer and the policy hosts read it).
Above it `workers/` (corpora and datasets). Then two packages that know nothing of each other: `vocabgen/`
(which trains vocabularies on the workers' datasets) and `policyhost/` (LLVM's channel, the policy hosts, the
launchers, which import nothing but `farm/`). Then the
two that stand on those: the trainer, `policytrain/`, and the comparison side, `regression/` (the policy
host's client), neither importing the other. Then `master/` (the Buildbot master, which drives the roles
through `mlgo-farm` verbs, never the chains directly: it never imports `pipeline/`) and `pipeline/` (how the
roles' Celery tasks follow each other). On top `bench/`, the benchmarks run by hand, which import the roles,
master too. So nothing imports `master/` but `master/` itself (and the benchmarks above it).

No role imports `pipeline/`, although it stands above them, except through the two doors into it, `DOORS`:
the Celery app's `include` (a worker registers every task through it) and the verbs that start its chains.
Leaving the doors out, the packages' graph has no circle and at most six floors (a floor: the longest
chain of packages, each importing the next). An import is any `import` (lazy ones too), a module named in
an `include=` or `imports=` list, and a string naming a Celery task of another package
("regression.tasks.size_gate"): Celery wires by names, so a name is an import that Python does not see.
No module reaches itself through the modules it imports, and a package's own modules stand on few floors too
(`internal_floors`).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: The floors, lowest first: a package imports only from the floors below its own (and through `DOORS`).
LAYERS = (
    ("farm",),
    ("workers",),
    ("vocabgen", "policyhost"),
    ("policytrain", "regression"),
    ("master", "pipeline"),
    ("bench",),  # the benchmarks, run by hand: they import the roles, master too
)
FLOOR = {package: n for n, floor in enumerate(LAYERS, 1) for package in floor}
PACKAGES = tuple(FLOOR)
#: The farm's roles: every package but the benchmarks.
ROLES = tuple(p for p in PACKAGES if p != "bench")
#: The most floors the packages may stand on, and a package's modules (policytrain/, the largest).
MAX_FLOORS = 6
MAX_INTERNAL_FLOORS = {"policytrain": 7}
#: (module, package) pairs the rules allow: the doors into the pipeline.
DOORS = {
    ("farm/celery_app.py", "pipeline"),  # include=["pipeline"]: the worker's app registers every task through it
    ("vocabgen/cli.py", "pipeline"),  # `vocab retrain` starts the vocabulary chain
    ("policytrain/cli.py", "pipeline"),  # `policy retrain` starts the policy chain
}


def _modules(packages: tuple[str, ...] = ROLES, root: Path = ROOT) -> dict[str, Path]:
    """Every module of the farm's packages (its roles by default) by dotted name."""
    found = {}
    for role in packages:
        for path in sorted((root / role).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _task_decorator(node: ast.AST) -> ast.Call | None:
    """`@app.task(...)` (or `@x.task(...)`): the call, else None."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "task":
        return node
    return None


def task_names(path: Path, module: str) -> set[str]:
    """The Celery task names a module declares: `name=` given, else Celery's default, module.function."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for deco in filter(None, map(_task_decorator, node.decorator_list)):
                given = [k.value.value for k in deco.keywords if k.arg == "name" and isinstance(k.value, ast.Constant)]
                names.add(given[0] if given else f"{module}.{node.name}")
    return names


@functools.cache
def task_owners() -> dict[str, str]:
    """Each Celery task name -> the package that declares it (a task keeps its registered name when its module
    moves, as `policyhost.tasks.retrain` did into policytrain/, so queued messages still route)."""
    return {n: module.split(".")[0] for module, path in _modules().items() for n in task_names(path, module)}


def all_task_names() -> frozenset[str]:
    return frozenset(task_owners())


def imported_roles(path: Path, tasks: frozenset[str] | None = None) -> set[str]:
    """Top-level farm packages (`PACKAGES`, bench/ too) a module imports, anywhere in its body (lazy imports
    count), names in its `include=`/`imports=` lists, and the packages of the Celery tasks it names by string
    (`tasks`: every task name of the farm by default)."""
    tasks = all_task_names() if tasks is None else tasks
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
        elif isinstance(node, ast.keyword) and node.arg in ("include", "imports"):
            found |= {e.value.split(".")[0] for e in ast.walk(node.value)
                      if isinstance(e, ast.Constant) and isinstance(e.value, str)}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in tasks:
            found.add(task_owners().get(node.value, node.value.split(".")[0]))
    return found & set(PACKAGES)


def package_imports(package: str) -> dict[str, set[str]]:
    """Each module of `package` (by path) -> the other packages it imports, the doors left out."""
    found = {}
    for p in sorted((ROOT / package).rglob("*.py")):
        where = str(p.relative_to(ROOT))
        found[where] = {r for r in imported_roles(p) - {package} if (where, r) not in DOORS}
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_a_package_imports_only_from_the_floors_below_it(package: str) -> None:
    broken = sorted(f"{where} imports {', '.join(sorted(bad))}" for where, used in package_imports(package).items()
                    if (bad := {r for r in used if FLOOR[r] >= FLOOR[package]}))
    assert not broken, broken


def test_nothing_imports_master_but_master_and_master_never_imports_pipeline() -> None:
    """The layers say both (master/ shares its floor with pipeline/, and only the benchmarks stand above it);
    stated on their own, since a new floor must not undo them."""
    importers = sorted(where for package in ROLES if package != "master"
                       for where, used in package_imports(package).items() if "master" in used)
    assert importers == []
    assert not [where for where, used in package_imports("master").items() if "pipeline" in used]


def floors(graph: Mapping[str, set[str]]) -> dict[str, int]:
    """Each node's floor: 1 when it imports no node of `graph`, else one above the highest it imports (so the
    highest floor is the longest chain of imports). ValueError naming a circle, which has no floors."""
    found: dict[str, int] = {}
    path: list[str] = []

    def floor(v: str) -> int:
        if v in found:
            return found[v]
        if v in path:
            raise ValueError("a circle: " + " -> ".join([*path[path.index(v):], v]))
        path.append(v)
        found[v] = 1 + max((floor(w) for w in sorted(graph.get(v, ())) if w in graph), default=0)
        path.pop()
        return found[v]

    for v in sorted(graph):
        floor(v)
    return found


def package_graph() -> dict[str, set[str]]:
    """Each package -> the packages it imports, the doors into the pipeline left out."""
    return {package: set().union(*package_imports(package).values()) for package in PACKAGES}


def test_the_packages_stand_on_at_most_six_floors_without_a_circle() -> None:
    graph = package_graph()
    assert circles(graph) == []
    assert len(LAYERS) <= MAX_FLOORS and max(floors(graph).values()) <= MAX_FLOORS, floors(graph)


def internal_floors(root: Path, package: str) -> dict[str, int]:
    """The floors of a package's own modules (`floors` over the imports between them, lazy ones too): floor 1
    imports no module of its package. A package of many floors hides a long chain a change must climb."""
    modules = _modules((package,), root)
    return floors({m: module_imports(p, modules) - {m} for m, p in modules.items()})


def test_the_internal_floors_are_the_longest_chain_of_sibling_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text('"""A package."""\n')
    (pkg / "a.py").write_text("import os\n")
    (pkg / "b.py").write_text("from pkg.a import X\nimport farm.errors\n")
    (pkg / "c.py").write_text("def f():\n    from pkg import b\n")  # lazy: counted
    (pkg / "d.py").write_text("import pkg.a\n")
    assert internal_floors(tmp_path, "pkg") == {"pkg": 1, "pkg.a": 1, "pkg.b": 2, "pkg.c": 3, "pkg.d": 2}
    (pkg / "a.py").write_text("from pkg import c\n")
    with pytest.raises(ValueError, match=r"a circle: pkg\.a -> pkg\.c -> pkg\.b -> pkg\.a"):
        internal_floors(tmp_path, "pkg")


@pytest.mark.parametrize("package", sorted(MAX_INTERNAL_FLOORS))
def test_a_package_s_modules_stand_on_few_floors(package: str) -> None:
    found = internal_floors(ROOT, package)
    top = max(found.values())
    assert top <= MAX_INTERNAL_FLOORS[package], sorted(((f, m) for m, f in found.items()
                                                         if f > MAX_INTERNAL_FLOORS[package]), reverse=True)


def test_the_floors_are_the_longest_chain() -> None:
    assert floors({"a": set(), "b": {"a"}, "c": {"a", "b"}, "d": {"x"}}) == {"a": 1, "b": 2, "c": 3, "d": 1}
    with pytest.raises(ValueError, match=r"^a circle: x -> y -> x$"):
        floors({"x": {"y"}, "y": {"x"}})


def test_the_rule_reader_sees_lazy_imports(tmp_path: Path) -> None:
    mod = tmp_path / "m.py"
    mod.write_text("import os\n\ndef f():\n    from master.registry import REGISTRY\n    import regression.rules\n")
    assert imported_roles(mod) == {"master", "regression"}


def test_the_rule_reader_sees_celery_names(tmp_path: Path) -> None:
    """Celery's wiring by name: an `include=` list and a task named by string are imports."""
    mod = tmp_path / "m.py"
    mod.write_text('from celery import Celery\n\napp = Celery("x", include=["vocabgen.tasks"])\n'
                   'SIZE = "regression.tasks.size_gate"\nWORDS = "regression is not a task"\n')
    assert imported_roles(mod, frozenset({"regression.tasks.size_gate"})) == {"vocabgen", "regression"}


def test_task_names_are_read_as_celery_gives_them(tmp_path: Path) -> None:
    mod = tmp_path / "m.py"
    mod.write_text('@app.task(name="vocabgen.tasks.train", bind=True)\ndef train(self): ...\n\n'
                   '@app.task(**RELIABLE)\ndef after(x): ...\n\ndef plain(): ...\n')
    assert task_names(mod, "pipeline") == {"vocabgen.tasks.train", "pipeline.after"}
    assert {"regression.tasks.size_gate", "vocabgen.tasks.publish"} <= all_task_names()


#: Celery's signals about tasks: a listener on one makes a task follow another out of sight of pipeline/.
TASK_SIGNALS = {"task_success", "task_failure", "task_postrun", "task_prerun", "task_retry", "task_received"}


def test_no_task_follows_another_through_a_signal() -> None:
    listening = sorted(f"{p.relative_to(ROOT)} uses {node.attr if isinstance(node, ast.Attribute) else node.id}"
                       for p in _modules().values() for node in ast.walk(ast.parse(p.read_text()))
                       if (isinstance(node, ast.Attribute) and node.attr in TASK_SIGNALS)
                       or (isinstance(node, ast.Name) and node.id in TASK_SIGNALS))
    assert not listening, listening


def module_imports(path: Path, modules: dict[str, Path] | set[str]) -> set[str]:
    """The farm modules a module imports, lazily too (`from a import b` is a.b when b is a module, else a)."""
    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {known(a.name) for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found |= {known(f"{node.module}.{a.name}") if f"{node.module}.{a.name}" in modules else known(node.module)
                      for a in node.names}
    return found - {None}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted, in name order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while not component or component[-1] != v:
                component.append(stack.pop())
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def test_no_module_imports_itself_through_others() -> None:
    """A file circle (a imports b, b imports a, lazily or not) means two files are one concept, or a third
    is missing; it is broken by moving what both need below both."""
    modules = _modules(PACKAGES)
    graph = {m: module_imports(p, modules) - {m} for m, p in modules.items()}
    assert circles(graph) == []


def test_the_circle_finder_sees_lazy_and_indirect_circles(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("def f():\n    from pkg import b\n")
    (tmp_path / "b.py").write_text("from pkg.c import X\n")
    (tmp_path / "c.py").write_text("import pkg.a\nimport os\n")
    names = {"pkg.a", "pkg.b", "pkg.c"}
    graph = {f"pkg.{n}": module_imports(tmp_path / f"{n}.py", names) for n in "abc"}
    assert graph == {"pkg.a": {"pkg.b"}, "pkg.b": {"pkg.c"}, "pkg.c": {"pkg.a"}}
    assert circles(graph) == [["pkg.a", "pkg.b", "pkg.c"]]
    assert circles({"x": {"y"}, "y": set()}) == []


#: Where an exception is made one line: farm/errors.py (first_line), farm/client.py (one_line, which hides
#: secrets in broker URLs), and the standalone launcher, which imports nothing of the farm.
LINE_HOMES = {"farm/errors.py", "farm/client.py", "policyhost/standalone/mlgo_cc.py"}


def test_an_exception_is_made_one_line_in_one_home() -> None:
    names = {"one_line", "_one_line", "first_line", "_first_line"}
    elsewhere = sorted(f"{p.relative_to(ROOT)} defines {node.name}" for p in _modules().values()
                       for node in ast.walk(ast.parse(p.read_text()))
                       if isinstance(node, ast.FunctionDef) and node.name in names
                       and str(p.relative_to(ROOT)) not in LINE_HOMES)
    assert not elsewhere, elsewhere
