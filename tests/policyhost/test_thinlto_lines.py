"""docs/policies.md's ThinLTO lines run as written on a real C program: through the launcher with LLVM's heuristic
they build the program plain clang-22's distributed ThinLTO builds, and the program runs."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from farm.toolchain import Toolchain, text_sizes
from tests.conftest import CSRC
from tests.docblocks import ROOT, run_sh, sh_block


def lines() -> list[str]:
    """The ```sh block under docs/policies.md's `### A ThinLTO build with a policy`."""
    return sh_block("docs/policies.md", "### A ThinLTO build with a policy")


def _build(script: str, where: Path, toolchain: Toolchain) -> Path:
    shutil.copytree(CSRC, where)
    run_sh(script, where, toolchain)
    return where / "prog"


def test_the_thinlto_lines_build_with_the_policy_what_plain_clang_builds(tmp_path: Path, toolchain: Toolchain) -> None:
    block = lines()
    assert len(block) == 5 and "store:latest" in block[0] and "--thinlto-index-only" in block[2], block
    farm = str(ROOT / ".venv" / "bin" / "mlgo-farm")
    hosted = _build("\n".join(block).replace(".venv/bin/mlgo-farm", farm).replace("store:latest", "heuristic"),
                    tmp_path / "hosted", toolchain)
    plain = _build("\n".join(['cc="clang-22"', *block[1:]]), tmp_path / "plain", toolchain)
    assert (tmp_path / "hosted" / "thin" / "sort.native").is_file()  # one backend per module
    sizes = text_sizes(toolchain, [hosted, plain])
    assert sizes[hosted] == sizes[plain] > 0
    for prog in (hosted, plain):
        run = subprocess.run([prog, "2000"], capture_output=True, text=True, timeout=120)
        assert run.returncode == 0 and run.stdout, run.stderr
