"""The package layout's import rules, read from the source: a rule broken here is a design change.

`farm/` is shared by everyone and imports none of the roles; the policy side (`policyhost/`)
never imports the comparison side (`regression/`), which is its client; nothing imports
`master/` (the Buildbot master) except `master/` itself.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ROLES = ("farm", "workers", "vocabgen", "policyhost", "regression", "master")
#: package -> packages it must never import
FORBIDDEN = {
    "farm": {"workers", "vocabgen", "policyhost", "regression", "master"},
    "policyhost": {"regression", "master"},
    "vocabgen": {"regression", "policyhost", "master"},
    "regression": {"master"},
    "workers": {"master"},
}


def imported_roles(path: Path) -> set[str]:
    """Top-level farm packages a module imports, anywhere in its body (lazy imports count)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found & set(ROLES)


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_only_what_its_role_allows(package: str) -> None:
    broken = {f"{p.relative_to(ROOT)} imports {', '.join(sorted(bad))}"
              for p in sorted((ROOT / package).rglob("*.py"))
              if (bad := imported_roles(p) & FORBIDDEN[package])}
    assert not broken, sorted(broken)


def test_the_rule_reader_sees_lazy_imports(tmp_path: Path) -> None:
    mod = tmp_path / "m.py"
    mod.write_text("import os\n\ndef f():\n    from master.registry import REGISTRY\n    import regression.rules\n")
    assert imported_roles(mod) == {"master", "regression"}
