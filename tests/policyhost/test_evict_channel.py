"""The regalloc eviction channel driven for real (clang-22 -O2 on Debian's zlib): what LLVM 22.1.8 does with each
kind of answer, and that the host never lets a bad one through (docs/policies.md, "Driving the eviction advisor")."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from farm.toolchain import Toolchain
from policyhost import host
from policyhost.launcher import run_compile
from policyhost.protocol import Header, Observation
from policytrain.evict_model import rebuilt_default as heuristic_rebuilt

MASK = "mask"


@pytest.fixture(scope="module")
def zlib(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from workers import debsrc

    return debsrc.fetch_source("zlib", tmp_path_factory.mktemp("debsrc"))


class Answer:
    """A test policy answering `pick(features)`; it does not look at the mask unless `pick` does."""

    def __init__(self, name: str, pick) -> None:
        self.name, self.pick = name, pick

    def bind(self, header: Header) -> None:
        assert header.advice.name == "index_to_evict" and header.feature(MASK).count == 33

    def decide(self, obs: Observation) -> int:
        return self.pick(obs.features)


def random_valid(seed: int) -> Answer:
    rng = random.Random(seed)
    return Answer(f"random-valid-{seed}", lambda f: rng.choice([i for i, m in enumerate(f[MASK]) if m]))


def compile_with(toolchain: Toolchain, src: Path, obj: Path, policy) -> object:
    return run_compile(["clang", "-O2", "-c", str(src), "-o", str(obj)], policy, advisor="regalloc",
                       toolchain=toolchain, timeout=30)


@pytest.mark.parametrize("name", ["deflate.c", "inflate.c"])
def test_any_masked_in_answer_compiles(toolchain: Toolchain, zlib: Path, tmp_path: Path, name: str) -> None:
    """Random valid evictions, hundreds per module: LLVM 22.1.8 takes every one (its crashes come from bad indices)."""
    for seed in (1, 2):
        out = compile_with(toolchain, zlib / name, tmp_path / f"{seed}.o", random_valid(seed))
        assert out.ok, out.error
        assert out.decisions > 100 and (tmp_path / f"{seed}.o").stat().st_size > 0


@pytest.mark.parametrize(("pick", "why"), [
    (lambda f: f[MASK].index(0), "a candidate the compiler's mask excludes"),
    (lambda f: 33, "outside the 33 candidates"),
    (lambda f: -1, "outside the 33 candidates"),
])
def test_the_host_refuses_an_invalid_index_before_llvm_reads_it(toolchain: Toolchain, zlib: Path, tmp_path: Path,
                                                                pick, why: str) -> None:
    out = compile_with(toolchain, zlib / "deflate.c", tmp_path / "d.o", Answer("bad", pick))
    assert not out.ok and out.host_error == out.error and "\n" not in out.error
    assert re.fullmatch(rf"policy bad advised index -?\d+ on observation 0, {why}; stopped the compile", out.error)
    assert out.decisions == 0 and "Stack dump" not in out.stderr and not (tmp_path / "d.o").exists()


@pytest.mark.parametrize("pick", [lambda f: f[MASK].index(0), lambda f: 33], ids=["masked-out", "out-of-range"])
def test_without_the_guard_llvm_crashes_and_the_compile_says_so_in_one_line(
        toolchain: Toolchain, zlib: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pick) -> None:
    """Why the guard exists: 22.1.8's release build trusts the index (its checks are asserts), and the greedy
    allocator crashes at the first bad answer; the failure is one line naming the signal, the pass and the function."""
    monkeypatch.setattr(host, "_check_mask", lambda *a: None)
    out = compile_with(toolchain, zlib / "deflate.c", tmp_path / "d.o", Answer("unguarded", pick))
    assert not out.ok and out.host_error is None and out.returncode != 0
    assert "Stack dump" in out.stderr and "\n" not in out.error
    assert re.fullmatch(r"clang crashed with SIG[A-Z]+ in pass 'Greedy Register Allocator' on function '@\w+' "
                        r"after 1 policy decisions", out.error), out.error


def test_an_unspillable_range_told_not_to_evict_is_an_llvm_error_not_a_crash(
        toolchain: Toolchain, zlib: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Index 32 (the range itself: no eviction) when its mask is 0 (it must evict): LLVM reports, does not crash."""
    monkeypatch.setattr(host, "_check_mask", lambda *a: None)
    out = compile_with(toolchain, zlib / "deflate.c", tmp_path / "d.o", Answer("never-evict", lambda f: 32))
    assert not out.ok and out.returncode == 1 and "Stack dump" not in out.stderr
    assert "ran out of registers during register allocation" in out.error


def test_answering_the_heuristic_is_transparent(toolchain: Toolchain, zlib: Path, tmp_path: Path) -> None:
    """The channel itself changes nothing: answering what the default advisor would gives plain clang's object,
    byte for byte (trees.c, where the rebuilt rule is exact; `spill` gives another object there)."""
    src, plain = zlib / "trees.c", tmp_path / "plain.o"
    toolchain.run("clang", ["-O2", "-c", src, "-o", plain])
    out = compile_with(toolchain, src, tmp_path / "h.o", Answer("heuristic-rebuilt", heuristic_rebuilt))
    assert out.ok and out.decisions > 10, out.error
    assert (tmp_path / "h.o").read_bytes() == plain.read_bytes()
    out = compile_with(toolchain, src, tmp_path / "s.o", "spill")
    assert out.ok and (tmp_path / "s.o").read_bytes() != plain.read_bytes()
