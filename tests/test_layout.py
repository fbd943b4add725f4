"""The package layout's import rules, read from the source: a rule broken here is a design change.

`farm/` is shared by everyone and imports none of the roles; the policy side (`policyhost/`)
never imports the comparison side (`regression/`), which is its client, nor the trainer (`policytrain/`), which
stands on it; nothing imports
`master/` (the Buildbot master) except `master/` itself; `workers/` (corpora and datasets) is below
`vocabgen/` (which trains on its datasets). `pipeline/` declares how the roles' Celery
tasks follow each other: it imports every role but master, and no role imports it, except the two
doors into it: the Celery app's `include` (a worker registers every task through it) and the verbs
that start its chains. An import is any `import` (lazy ones too), a module named in an `include=` or
`imports=` list, and a string naming a Celery task of another package ("regression.tasks.size_gate"):
Celery wires by names, so a name is an import that Python does not see. No module reaches itself
through the modules it imports.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ROLES = ("farm", "workers", "vocabgen", "policyhost", "policytrain", "regression", "master", "pipeline")
#: package -> packages it must never import
FORBIDDEN = {
    "farm": {"workers", "vocabgen", "policyhost", "policytrain", "regression", "master", "pipeline"},
    "policyhost": {"policytrain", "regression", "master", "pipeline"},
    "policytrain": {"regression", "master", "pipeline"},
    "vocabgen": {"regression", "policyhost", "policytrain", "master", "pipeline"},
    "regression": {"policytrain", "master", "pipeline"},
    "workers": {"vocabgen", "policytrain", "master", "pipeline"},
    "pipeline": {"master"},
    "master": {"pipeline"},  # the master drives the roles through `mlgo-farm` verbs, never the chains directly
}
#: (module, package) pairs the rules allow: the doors into the pipeline.
DOORS = {
    ("farm/celery_app.py", "pipeline"),  # include=["pipeline"]: the worker's app registers every task through it
    ("vocabgen/cli.py", "pipeline"),  # `vocab retrain` starts the vocabulary chain
    ("policytrain/cli.py", "pipeline"),  # `policy retrain` starts the policy chain
}


def _modules() -> dict[str, Path]:
    """Every module of the farm's packages by dotted name."""
    found = {}
    for role in ROLES:
        for path in sorted((ROOT / role).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
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
    """Top-level farm packages a module imports, anywhere in its body (lazy imports count), names in its
    `include=`/`imports=` lists, and the packages of the Celery tasks it names by string (`tasks`: every
    task name of the farm by default)."""
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
    return found & set(ROLES)


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_only_what_its_role_allows(package: str) -> None:
    broken = {f"{p.relative_to(ROOT)} imports {', '.join(sorted(bad))}"
              for p in sorted((ROOT / package).rglob("*.py"))
              if (bad := {r for r in imported_roles(p) & FORBIDDEN[package]
                          if (str(p.relative_to(ROOT)), r) not in DOORS})}
    assert not broken, sorted(broken)


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
    modules = _modules()
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
