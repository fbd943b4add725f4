"""docs/policies.md's PGO lines with the eviction policy run as written on a real C program: the profile is made
and used (its hot and cold code sections are in the objects), every compile goes through the launcher with the
regalloc advisor, and the program computes what the plain -O2 build computes."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from farm.toolchain import Toolchain
from tests.conftest import CSRC
from tests.docblocks import ROOT, run_sh, sh_block


def lines() -> list[str]:
    """The ```sh block under docs/policies.md's `### A PGO build with the eviction policy`."""
    return sh_block("docs/policies.md", "### A PGO build with the eviction policy")


def _sections(toolchain: Toolchain, obj: Path) -> str:
    return toolchain.run("llvm-readelf", ["-S", "-W", str(obj)], subject=obj.name).stdout.decode()


def test_the_pgo_lines_build_with_the_eviction_policy_and_the_profile(tmp_path: Path, toolchain: Toolchain) -> None:
    block = lines()
    assert len(block) == 4 and "--advisor regalloc" in block[0] and "-fprofile-use=" in block[2], block
    farm = str(ROOT / ".venv" / "bin" / "mlgo-farm")
    where = tmp_path / "prog"
    shutil.copytree(CSRC, where)
    script = "\n".join(block).replace(".venv/bin/mlgo-farm", farm).replace("evict.onnx", "spill")
    run_sh(script.replace("TRAINING-INPUT", "2000"), where, toolchain)
    assert any((where / "gen").glob("*.profraw")) and (where / "prog.profdata").is_file()
    objects = sorted((where / "pgo").glob("*.o"))
    assert len(objects) == len(list(CSRC.glob("*.c")))
    assert any(".text.hot." in _sections(toolchain, o) or ".text.unlikely." in _sections(toolchain, o)
               for o in objects), "the profile did not reach the compiles"
    run_sh("clang-22 -O2 *.c -o plain", where, toolchain)
    ran = [subprocess.run([str(where / p), "3000"], capture_output=True, text=True, timeout=120) for p in
           ("prog", "plain")]
    assert ran[0].returncode == ran[1].returncode == 0 and ran[0].stdout == ran[1].stdout
