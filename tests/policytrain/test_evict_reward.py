"""RegAllocScore from allocated MIR (policytrain/evict_reward.py), on real clang-22 output."""

from __future__ import annotations

from pathlib import Path

import pytest

from farm.toolchain import Toolchain
from policyhost.launcher import run_compile
from policytrain import evict_reward as er

SPILLS = """long g(void);
long f(long *p) {
  long a = p[0], b = p[1], c = p[2], d = p[3], e = p[4], h = p[5], i = p[6], j = p[7], k = p[8], l = p[9];
  long r = g();
  return (a ^ r) * (b ^ r) + (c ^ r) * (d ^ r) + (e ^ r) * (h ^ r) + (i ^ r) * (j ^ r) + (k ^ r) * (l ^ r);
}
int loop(int *x, int n) { int s = 0; for (int i = 0; i < n; i++) s += x[i] * 3; return s; }
"""


def allocated_mir(toolchain: Toolchain, tmp_path: Path, text: str) -> Path:
    src, mir = tmp_path / "s.c", tmp_path / "s.mir"
    src.write_text(text)
    toolchain.run("clang", ["-O2", *er.mir_args(src, mir)])
    return mir


def test_a_function_forced_to_spill_scores_what_its_mir_counts_by_hand(toolchain: Toolchain, tmp_path: Path) -> None:
    """Ten values live across a call, six callee-saved registers: spill stores and reloads in one block (freq 1)."""
    mir = allocated_mir(toolchain, tmp_path, SPILLS)
    lines = er.parse_blocks(mir.read_text())["f"]
    assert list(lines) == [0]  # one block: every instruction weighs 1
    body = lines[0]
    spills = [ln for ln in body if "(store (s64) into %stack." in ln]
    reloads = [ln for ln in body if "from %stack." in ln]
    loads = [ln for ln in body if ":: (load" in ln]  # the ten loads of p[] and the reloads, folded ones included
    copies = [ln for ln in body if " = COPY " in ln]
    assert len(spills) >= 4 and len(reloads) == len(spills) and len(loads) == 10 + len(reloads)
    scored = er.score(mir.read_text(), er.block_frequencies(toolchain, mir))["f"]
    assert scored.counts == {k: v for k, v in {"loads": len(loads), "stores": len(spills),
                                                "copies": len(copies)}.items() if v}
    assert scored.score == pytest.approx(4.0 * len(loads) + 1.0 * len(spills) + 0.2 * len(copies))


def test_scores_are_per_function_and_weighted_by_llvm_block_frequencies(toolchain: Toolchain, tmp_path: Path) -> None:
    mir = allocated_mir(toolchain, tmp_path, SPILLS)
    freqs = er.block_frequencies(toolchain, mir)
    assert set(er.function_scores(toolchain, mir)) == {"f", "loop"} == set(freqs)
    assert freqs["loop"][0] == 1.0 and max(freqs["loop"].values()) > 4  # the loop body runs more than the entry
    scored = er.score(mir.read_text(), freqs)["loop"]
    blocks = er.parse_blocks(mir.read_text())["loop"]
    by_hand = sum(freqs["loop"][bb] * {"loads": 4.0, "stores": 1.0, "copies": 0.2, "load_stores": 5.0,
                                       "cheap_remats": 0.2, "expensive_remats": 1.0}[kind]
                  for bb, lines in blocks.items() for kind in map(er.classify, lines) if kind)
    assert scored.score == pytest.approx(by_hand) and scored.score > sum(scored.counts.values()) * 0.2


@pytest.mark.parametrize(("line", "kind"), [
    ("renamable $eax = MOV32r0 implicit-def dead $eflags", "cheap_remats"),
    ("renamable $xmm1 = V_SET0", "cheap_remats"),
    ("renamable $rax = MOV64rm $rip, 1, $noreg, target-flags(x86-gotpcrel) @g, $noreg :: (load (s64) from got)",
     "expensive_remats"),
    ("renamable $rax = MOV64rm $rip, 1, $noreg, @g, $noreg :: (load (s64) from @g)", "loads"),
    ("renamable $rax = LEA64r %stack.0, 1, $noreg, 0, $noreg", "expensive_remats"),
    ("renamable $rax = LEA64r renamable $rdi, 1, $noreg, 8, $noreg", None),
    ("ADD32mr renamable $rdi, 1, $noreg, 0, $noreg, killed renamable $eax, implicit-def dead $eflags :: "
     "(store (s32) into %ir.p), (load (s32) from %ir.p)", "load_stores"),
    ("MOV64mr %stack.0, 1, $noreg, 0, $noreg, killed renamable $rax :: (store (s64) into %stack.0)", "stores"),
    ("$rax = COPY killed renamable $rbx", "copies"),
    ("KILL renamable $eax", None),
    ("DBG_VALUE $eax, $noreg, !12, !DIExpression()", None),
    ("INLINEASM &\"nop\" [sideeffect] [attdialect]", None),
    ("renamable $ecx = nsw ADD32rr killed renamable $ecx, renamable $eax, implicit-def dead $eflags", None),
])
def test_each_instruction_is_counted_as_regallocscore_counts_it(line: str, kind: str | None) -> None:
    assert er.classify(line) == kind


def test_spill_and_heuristic_score_differently_on_a_real_file(toolchain: Toolchain, tmp_path: Path) -> None:
    """zlib's deflate.c: the `spill` policy (never evict when allowed) and the default advisor allocate differently,
    and the reward sees it per function."""
    from workers import debsrc

    src = debsrc.fetch_source("zlib", tmp_path / "debsrc") / "deflate.c"
    plain, spill = tmp_path / "plain.mir", tmp_path / "spill.mir"
    toolchain.run("clang", ["-O2", *er.mir_args(src, plain)])
    out = run_compile(["clang", "-O2", *er.mir_args(src, spill)], "spill", advisor="regalloc", toolchain=toolchain,
                      timeout=60)
    assert out.ok and out.decisions > 50, out.error
    heuristic, policy = er.function_scores(toolchain, plain), er.function_scores(toolchain, spill)
    assert set(heuristic) == set(policy) and "deflate" in heuristic
    changed = {f for f in heuristic if heuristic[f] != pytest.approx(policy[f])}
    assert changed, "spill decided as the heuristic everywhere"
