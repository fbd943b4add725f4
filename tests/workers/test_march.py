"""-march levels at the triplets step: the module retargeted (hand-made text and real modules), recorded,
checked; modules of other targets stay out of MIR datasets."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from farm.cli import main
from farm.errors import InputError
from farm.toolchain import Toolchain
from workers import corpus, march, triplets

X86 = b'target triple = "x86_64-pc-linux-gnu"\nattributes #0 = { "target-cpu"="x86-64" "tune-cpu"="generic" }\n'
VECTOR_LOOP = """
void saxpy(int n, float a, const float *restrict x, float *restrict y) {
  for (int i = 0; i < n; i++)
    y[i] = a * x[i] + y[i];
}
"""


def test_retarget_text_rewrites_every_cpu_of_x86_code_only() -> None:
    out = march.retarget_text(X86 + X86.replace(b"#0", b"#1"), "x86-64-v3")
    assert out.count(b'"target-cpu"="x86-64-v3"') == 2 and b'"target-cpu"="x86-64"' not in out
    assert b'"tune-cpu"="generic"' in out
    assert march.retarget_text(X86.replace(b"x86_64-pc-linux-gnu", b"bpf"), "x86-64-v3") is None
    assert march.retarget_text(b"; no triple\n", "x86-64-v2") is None


@pytest.mark.parametrize(("levels", "message"), [(["x86-64-v5"], "unknown -march level 'x86-64-v5'"),
                                                 (["x86-64", "x86-64"], "-march level listed twice")])
def test_bad_levels_are_one_line(levels: list[str], message: str) -> None:
    with pytest.raises(InputError, match=message):
        march.check_marches(levels)


@pytest.fixture(scope="module")
def vector_corpus(tmp_path_factory: pytest.TempPathFactory, toolchain: Toolchain) -> Path:
    src = tmp_path_factory.mktemp("vsrc")
    (src / "saxpy.c").write_text(VECTOR_LOOP)
    (src / "other.c").write_text("long f(long *p, int n) { long s = 0; for (int i = 0; i < n; i++) s += p[i];"
                                 " return s; }\n")
    out = tmp_path_factory.mktemp("vcorpus") / "c"
    corpus.from_sources(src, out, toolchain)
    return out


def _opcodes(dataset: Path) -> set[str]:
    return set(json.loads((dataset / "manifest.json").read_text())["entities_mentioned"]["Opcodes"]["entities"])


def test_mir_at_wider_levels_meets_their_instructions(vector_corpus: Path, toolchain: Toolchain,
                                                      tmp_path: Path) -> None:
    asis = triplets.build_dataset(vector_corpus, tmp_path / "asis", "mir", toolchain)
    wide = triplets.build_dataset(vector_corpus, tmp_path / "wide", "mir", toolchain,
                                  marches=["x86-64", "x86-64-v3", "x86-64-v4"])
    m = json.loads((wide / "manifest.json").read_text())
    assert m["march"] == ["x86-64", "x86-64-v3", "x86-64-v4"]
    assert json.loads((asis / "manifest.json").read_text())["march"] == []
    new = _opcodes(wide) - _opcodes(asis)
    assert any(op.startswith("V") for op in new), f"no VEX/EVEX opcode among {sorted(new)}"
    assert _opcodes(asis) <= _opcodes(wide), "x86-64 is one of the levels: nothing as compiled is lost"


def test_opt_vectorizes_for_the_level(vector_corpus: Path, toolchain: Toolchain, tmp_path: Path) -> None:
    """The retargeted module is optimized for its level: AVX2's 8-float vectors, SSE2's 4-float ones."""
    from workers import modulerun

    bc = vector_corpus / "saxpy.c.bc"
    widths = {}
    for m, src in modulerun._variants(toolchain, bc, ["x86-64", "x86-64-v3"], tmp_path, 60, "saxpy"):
        out = modulerun._optimize(toolchain, src, "O3", tmp_path, 60, "saxpy", m)
        text = toolchain.run("llvm-dis", [out, "-o", "-"]).stdout.decode()
        widths[m] = ("<8 x float>" in text, "<4 x float>" in text)
    assert widths["x86-64-v3"][0] and not widths["x86-64"][0] and widths["x86-64"][1]
    ir = triplets.build_dataset(vector_corpus, tmp_path / "ir", "ir", toolchain, opt_levels=["O0", "O3"],
                                marches=["x86-64", "x86-64-v3"])
    m = json.loads((ir / "manifest.json").read_text())
    assert m["march"] == ["x86-64", "x86-64-v3"] and m["skipped"] == []

    def compares(name: str, marches: list[str]) -> int:
        out = triplets.build_dataset(vector_corpus, tmp_path / name, "ir", toolchain, opt_levels=["O0"],
                                     marches=marches)
        return json.loads((out / "manifest.json").read_text())["predicates"]["compares"]

    # at O0 a retargeted module is text (.ll), read as it is: each level sees the module's compares once
    assert compares("o0-two", ["x86-64", "x86-64-v3"]) == 2 * compares("o0-plain", []) > 0


def test_other_targets_stay_out_of_mir(vector_corpus: Path, toolchain: Toolchain, tmp_path: Path) -> None:
    c = tmp_path / "c"
    shutil.copytree(vector_corpus, c)
    toolchain.run("clang", ["--target=aarch64-linux-gnu", "-c", "-emit-llvm", "-O2", "-Xclang", "-disable-llvm-passes",
                            "-x", "c", "-", "-o", c / "arm.bc"], input=b"int g(int x) { return x * 3; }\n")
    desc = json.loads((c / corpus.DESCRIPTION).read_text())
    desc["modules"].append("arm")
    (c / corpus.DESCRIPTION).write_text(json.dumps(desc))
    out = triplets.build_dataset(c, tmp_path / "mir", "mir", toolchain)
    skipped = json.loads((out / "manifest.json").read_text())["skipped"]
    arm = [s for s in skipped if s["module"] == "arm"]  # saxpy.c may be lost to LLVM 22's MIR2Vec crash
    assert len(arm) == 1 and "code for aarch64" in arm[0]["reason"] and "MIR datasets are x86-64" in arm[0]["reason"]
    assert all("not x86-64" not in s["reason"] for s in skipped if s["module"] != "arm")


def test_cli_march_option(vector_corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["triplets", "mir", str(vector_corpus), "-o", str(tmp_path / "bad"), "--march", "x86-64-v9"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown -march level 'x86-64-v9'" in err[0]
    assert not (tmp_path / "bad").exists()
    assert main(["triplets", "mir", str(vector_corpus), "-o", str(tmp_path / "ok"), "--march", "x86-64-v2"]) == 0
    assert json.loads((tmp_path / "ok" / "manifest.json").read_text())["march"] == ["x86-64-v2"]
