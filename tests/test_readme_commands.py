"""The README's own command lines work: "Get a vocabulary" runs for real against the dashboard over HTTP (curl,
sha256sum -c, then clang and llvm-ir2vec of LLVM 22), and "Use a policy" says what the policy page's "Use it"
section says (master/dashboard/views_policies.py use_it, whose lines tests/policyhost/test_native_use.py runs
for real on zlib; tests/policyhost/test_shim.py runs the README's on make, libtool and CMake projects). The lines
are read from README.md, so the README and the farm cannot drift apart."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

from farm.config import Settings
from farm.toolchain import Toolchain
from tests.docblocks import run_sh, sh_block
from tests.master.test_dashboard_vocab_use import SOURCE, dashboard, trained  # noqa: F401 (fixtures)

ROOT = Path(__file__).resolve().parents[1]
MASTER = "http://MASTER:8010/plugins/wsgi_dashboards/farm/"


def block(section: str) -> list[str]:
    """The lines of the first ``` block under README.md's heading `## {section}`."""
    return sh_block("README.md", f"## {section}", ends="\n## ")


def test_get_a_vocabulary_runs_as_written(dashboard, toolchain: Toolchain, tmp_path: Path) -> None:  # noqa: F811
    base, _ = dashboard
    lines = block("Get a vocabulary")
    assert len(lines) == 5 and MASTER.rstrip("/") in lines[0], lines
    (tmp_path / "in.c").write_text(SOURCE)
    ir, mir = "\n".join(lines[:3]), "\n".join(lines[:1] + lines[3:])
    for kind, part in (("ir", ir), ("mir", mir)):
        got = run_sh(part.replace(MASTER, base), tmp_path, toolchain, timeout=300)
        assert "vocab.json: OK" in got.stdout, (kind, got.stdout)
        assert re.search(r"\bf\b", got.stdout + got.stderr), f"llvm-ir2vec printed no {kind} embedding of f"
    assert (tmp_path / "mir" / "vocab.json").read_bytes() != (tmp_path / "vocab.json").read_bytes()


def test_use_a_policy_says_what_the_policy_page_says() -> None:
    from master.dashboard.views_policies import use_it

    farm = SimpleNamespace(settings=Settings())
    # a version with the native host's weights: the page's first lines, the ones the README shows
    manifest = {"vocab_version": "VOCAB", "llvm": {"llvm_version": "22.1.8"}, "weights": {"sha256": "0" * 64}}
    use = use_it(farm, "inline", "VERSION", manifest, "ir")["native"]
    page = [line.replace(farm.settings.buildbot.dashboard(""), "$base/") for line in use["fetch"]]
    lines = block("Use a policy")
    base, loop, check, shim, make = lines
    assert base == "base=" + MASTER.rstrip("/")
    names = re.search(r"for f in (.*?); do", loop).group(1).split()
    assert [f"curl -fsSLO $base/{n}{ext}" for n in names for ext in ("", ".sha256")] == [
        c for c in page if c.startswith("curl ")]
    assert "curl -fsSLO $base/$f -O $base/$f.sha256" in loop
    assert shim == page[-1] and shim.startswith("printf '#!/bin/sh")  # the compiler shim, the page's last line
    steps = [s.split("  #")[0] for line in page[:-1] if not line.startswith("curl ") for s in line.split(" && ")]
    assert check.split(" && ") == steps
    command, _, comment = make.partition("   # ")
    assert command == use["make"]
    # the configure and CMake lines (tests/policyhost/test_shim.py runs all three on projects of each kind)
    assert comment == f"in your project; or {use['configure'].removesuffix(' && make')}, {use['cmake'][0]}".replace(
        "cmake -S . -B build ", "cmake ")
