"""The compiler launcher: byte-for-byte heuristic builds, policies changing size, vocabularies,
parallel compiles, a real `make -j2` through `mlgo-farm policy-cc`, regalloc eviction."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from farm.errors import InputError
from farm.toolchain import Toolchain
from policyhost.launcher import compiler_tool, run_compile
from policyhost.protocol import Header, Observation
from policyhost.runnable import HeuristicPolicy, masked_argmax
from tests.policyhost.conftest import (
    CSRC,
    VOCAB_DIM,
    cmake_build,
    process_running,
    publish_vocab,
    write_onnx_first_masked_out,
    write_onnx_nan_logit,
    write_onnx_policy,
)

SOURCES = sorted(CSRC.glob("*.c"))
MLGO_FARM = str(Path(sys.executable).with_name("mlgo-farm"))


def plain_oz(toolchain: Toolchain, src: Path, out: Path) -> bytes:
    toolchain.run("clang", ["-Oz", "-c", src, "-o", out])
    return out.read_bytes()


def text_size(toolchain: Toolchain, objs: list[Path]) -> int:
    """Total Berkeley `.text` of the objects, as llvm-size reports it."""
    lines = toolchain.run("llvm-size", objs).stdout.decode().splitlines()[1:]
    return sum(int(ln.split()[0]) for ln in lines)


def policy_build(toolchain: Toolchain, policy, out_dir: Path, **kw) -> tuple[list[Path], int]:
    out_dir.mkdir(parents=True, exist_ok=True)
    objs, decisions = [], 0
    for src in SOURCES:
        obj = out_dir / f"{src.stem}.o"
        outcome = run_compile(["clang", "-Oz", "-c", str(src), "-o", str(obj)], policy, toolchain=toolchain,
                              timeout=30, **kw)
        assert outcome.ok, outcome.error
        objs.append(obj)
        decisions += outcome.decisions
    return objs, decisions


def test_default_answer_reproduces_heuristic_byte_for_byte(toolchain: Toolchain, tmp_path: Path) -> None:
    objs, decisions = policy_build(toolchain, "heuristic", tmp_path / "ml")
    assert decisions > 0, "the ML inliner must actually have been asked"
    for src, obj in zip(SOURCES, objs, strict=True):
        assert obj.read_bytes() == plain_oz(toolchain, src, tmp_path / f"{src.stem}.plain.o"), src.name


def test_policies_that_change_decisions_change_size(toolchain: Toolchain, tmp_path: Path) -> None:
    sizes = {}
    for pol in ("heuristic", "never", "always"):
        objs, decisions = policy_build(toolchain, pol, tmp_path / pol)
        assert decisions > 0
        sizes[pol] = text_size(toolchain, objs)
    assert sizes["never"] != sizes["heuristic"]
    assert sizes["always"] != sizes["heuristic"]
    # an ONNX model answering 0 everywhere is the built-in `never`, decision for decision
    zero = write_onnx_policy(tmp_path / "zero.onnx", "callee_basic_block_count", "Mul", 0)
    objs, _ = policy_build(toolchain, str(zero), tmp_path / "onnx-never")
    assert [o.read_bytes() for o in objs] == [(tmp_path / "never" / o.name).read_bytes() for o in objs]


def test_vocabulary_adds_embedding_features(toolchain: Toolchain, tmp_path: Path, ir2vec_vocab: Path) -> None:
    class Capture(HeuristicPolicy):
        def __init__(self) -> None:
            self.header: Header | None = None
            self.embeddings: list[tuple] = []

        def bind(self, header: Header) -> None:
            super().bind(header)
            self.header = header

        def decide(self, obs: Observation) -> int:
            self.embeddings.append(obs.features["callee_embedding"])
            return super().decide(obs)

    cap = Capture()
    out = run_compile(["clang", "-Oz", "-c", str(CSRC / "sort.c"), "-o", str(tmp_path / "s.o")], cap,
                      vocab=ir2vec_vocab, toolchain=toolchain, timeout=30)
    assert out.ok, out.error
    emb = cap.header.feature("callee_embedding")
    assert emb is not None and emb.type == "float" and emb.count == VOCAB_DIM
    assert cap.header.feature("caller_embedding").count == VOCAB_DIM
    assert any(any(v != 0.0 for v in e) for e in cap.embeddings), "embeddings come from the vocabulary"
    # the default answer still reproduces the heuristic with embeddings switched on
    assert (tmp_path / "s.o").read_bytes() == plain_oz(toolchain, CSRC / "sort.c", tmp_path / "p.o")


def test_missing_or_broken_vocabulary(toolchain: Toolchain, tmp_path: Path) -> None:
    argv = ["clang", "-Oz", "-c", str(CSRC / "sort.c"), "-o", str(tmp_path / "s.o")]
    with pytest.raises(InputError, match=r"^IR2Vec vocabulary .*missing.json not found$"):
        run_compile(argv, "heuristic", vocab=tmp_path / "missing.json", toolchain=toolchain)
    bad = tmp_path / "bad.json"
    bad.write_text('{"Opcodes": {}}')
    with pytest.raises(InputError, match="ir sections must be Opcodes, Types, Arguments; missing Arguments, Types"):
        run_compile(argv, "heuristic", vocab=bad, toolchain=toolchain)
    assert not (tmp_path / "s.o").exists()


def test_two_compiles_at_once(toolchain: Toolchain, tmp_path: Path) -> None:
    def one(src: Path):
        return run_compile(["clang", "-Oz", "-c", str(src), "-o", str(tmp_path / f"{src.stem}.o")], "heuristic",
                           toolchain=toolchain, timeout=30)

    with ThreadPoolExecutor(2) as pool:
        outcomes = list(pool.map(one, [CSRC / "sort.c", CSRC / "hash.c"]))
    assert all(o.ok for o in outcomes) and all(o.decisions > 0 for o in outcomes)
    for src in (CSRC / "sort.c", CSRC / "hash.c"):
        assert (tmp_path / f"{src.stem}.o").read_bytes() == plain_oz(toolchain, src, tmp_path / "plain.o")


def test_one_invocation_two_sources_two_sessions(toolchain: Toolchain, tmp_path: Path) -> None:
    out = run_compile(["clang", "-Oz", "-c", str(CSRC / "sort.c"), str(CSRC / "hash.c")], "heuristic",
                      toolchain=toolchain, cwd=tmp_path, timeout=30)
    assert out.ok and out.sessions == 2
    assert (tmp_path / "sort.o").is_file() and (tmp_path / "hash.o").is_file()


def test_make_j2_through_policy_cc(toolchain: Toolchain, tmp_path: Path) -> None:
    if not shutil.which("make"):
        pytest.skip("make is not installed")
    for d, cc in (("ml", f"{MLGO_FARM} policy-cc --policy heuristic --stats stats.jsonl -- clang"),
                  ("plain", str(toolchain.path("clang")))):
        shutil.copytree(CSRC, tmp_path / d)
        (tmp_path / d / "Makefile").write_text(
            "CFLAGS = -Oz\nOBJS = " + " ".join(f"{s.stem}.o" for s in SOURCES) + "\n"
            "prog: $(OBJS)\n\t$(CC) -o $@ $(OBJS) -lm\n"
        )
        p = subprocess.run(["make", "-j2", f"CC={cc}"], cwd=tmp_path / d, capture_output=True, text=True,
                           timeout=120)
        assert p.returncode == 0, p.stderr
        assert "argument unused" not in p.stderr  # the link step ran without the interactive flags
    for s in SOURCES:
        assert (tmp_path / "ml" / f"{s.stem}.o").read_bytes() == (tmp_path / "plain" / f"{s.stem}.o").read_bytes()
    runs = [subprocess.run([tmp_path / d / "prog", "5000"], capture_output=True, timeout=60) for d in ("ml", "plain")]
    assert runs[0].returncode == 0 and runs[0].stdout == runs[1].stdout
    stats = (tmp_path / "ml" / "stats.jsonl").read_text().splitlines()
    assert len(stats) == len(SOURCES) + 1  # every compile plus the link


def test_cli_exit_codes_and_messages(tmp_path: Path) -> None:
    bad = Path(__file__).parents[1] / "data/bad/syntax_error.c"
    p = subprocess.run([MLGO_FARM, "policy-cc", "--", "clang", "-Oz", "-c", str(bad), "-o", str(tmp_path / "x.o")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "syntax_error.c:1:" in p.stderr and "mlgo-farm: error" not in p.stderr
    p = subprocess.run([MLGO_FARM, "policy-cc", "--policy", "smart", "--", "clang", "-c", "x.c"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stderr.startswith("mlgo-farm: error: unknown policy 'smart'")
    assert len(p.stderr.strip().splitlines()) == 1


def test_only_the_farm_clang_is_launched(toolchain: Toolchain) -> None:
    assert compiler_tool("clang", toolchain) == "clang"
    assert compiler_tool("clang++-22", toolchain) == "clang++"
    assert compiler_tool(str(toolchain.path("clang")), toolchain) == "clang"
    with pytest.raises(InputError, match="cannot launch 'gcc'"):
        compiler_tool("gcc", toolchain)


def test_regalloc_eviction_with_mask_respecting_policy(toolchain: Toolchain, tmp_path: Path) -> None:
    class EvictFirstAllowed:
        """Evicts the first allowed interference: different from the heuristic, always legal."""

        name = "evict-first"

        def bind(self, header: Header) -> None:
            assert header.advice.name == "index_to_evict" and header.feature("mask") is not None

        def decide(self, obs: Observation) -> int:
            mask = obs.features["mask"]
            return masked_argmax([-float(i) for i in range(len(mask))], mask)

    src, obj = CSRC / "hash.c", tmp_path / "hash.o"
    out = run_compile(["clang", "-O2", "-c", str(src), "-o", str(obj)], EvictFirstAllowed(), advisor="regalloc",
                      toolchain=toolchain, timeout=30)
    assert out.ok, out.error
    assert out.decisions > 0
    assert text_size(toolchain, [obj]) > 0


def test_regalloc_policy_choosing_masked_candidate_is_a_clear_failure(toolchain: Toolchain, tmp_path: Path) -> None:
    class IgnoreMask:
        name = "ignore-mask"

        def bind(self, header: Header) -> None:
            pass

        def decide(self, obs: Observation) -> int:
            return next(i for i, m in enumerate(obs.features["mask"]) if not m)

    out = run_compile(["clang", "-O2", "-c", str(CSRC / "hash.c"), "-o", str(tmp_path / "h.o")], IgnoreMask(),
                      advisor="regalloc", toolchain=toolchain, timeout=30)
    assert not out.ok and out.host_error == out.error
    assert out.error.startswith("policy ignore-mask advised index ") and "mask excludes" in out.error
    assert "\n" not in out.error and out.decisions == 0  # stopped before the compiler read the bad advice
    assert out.returncode < 0 and "Stack dump" not in out.stderr  # killed by the host, not crashed
    assert not (tmp_path / "h.o").exists()


def test_onnx_model_with_integer_output_cannot_evict_a_masked_candidate(toolchain: Toolchain, tmp_path: Path) -> None:
    """The host enforces the mask for every policy: an int-output model answering a masked-out index."""
    import re

    from policyhost.runnable import OnnxPolicy

    model = write_onnx_first_masked_out(tmp_path / "first-masked-out.onnx")
    t0 = time.monotonic()
    out = run_compile(["clang", "-O2", "-c", str(CSRC / "hash.c"), "-o", str(tmp_path / "h.o")], str(model),
                      advisor="regalloc", toolchain=toolchain, timeout=30)
    elapsed = time.monotonic() - t0
    assert not out.ok and out.host_error == out.error, out.error
    m = re.fullmatch(r"policy first-masked-out\.onnx advised index (\d+) on observation (\d+), "
                     r"a candidate the compiler's mask excludes; stopped the compile", out.error)
    assert m, out.error
    assert "Stack dump" not in out.stderr and out.returncode < 0
    assert elapsed < 20 and not (tmp_path / "h.o").exists()
    # the index it names is the model's own answer, and the mask really excludes it
    pol, seen = OnnxPolicy(model), []

    class Recording:
        name = "recording"

        def bind(self, header: Header) -> None:
            pol.bind(header)

        def decide(self, obs: Observation) -> int:
            seen.append((obs.index, pol.decide(obs), obs.features["mask"]))
            return seen[-1][1]

    run_compile(["clang", "-O2", "-c", str(CSRC / "hash.c"), "-o", str(tmp_path / "h2.o")], Recording(),
                advisor="regalloc", toolchain=toolchain, timeout=30)
    index, answer, mask = seen[-1]
    assert (index, answer) == (int(m.group(2)), int(m.group(1))) and mask[answer] == 0


def test_model_answering_nan_fails_the_compile_in_one_line(toolchain: Toolchain, tmp_path: Path) -> None:
    model = write_onnx_nan_logit(tmp_path / "nan.onnx")
    p = subprocess.run([sys.executable, "-m", "farm.cli", "policy-cc", "--policy", str(model), "--",
                        "clang", "-Oz", "-c", str(CSRC / "hash.c"), "-o", str(tmp_path / "h.o")],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode != 0 and not (tmp_path / "h.o").exists()
    lines = [ln for ln in p.stderr.splitlines() if "non-finite" in ln]
    assert len(lines) == 1 and str(model) in lines[0], p.stderr


def test_cmake_compiler_launcher(toolchain: Toolchain, tmp_path: Path) -> None:
    if not shutil.which("cmake"):
        pytest.skip("cmake is not installed")
    stats = tmp_path / "stats.jsonl"
    cmake_build(toolchain, tmp_path, f"{MLGO_FARM};policy-cc;--policy;heuristic;--stats;{stats};--")
    compiles = [ln for ln in stats.read_text().splitlines() if '"-c"' in ln]
    assert len(compiles) == len(SOURCES)
    assert sum(json.loads(ln)["decisions"] for ln in compiles) > 0
    run = subprocess.run([tmp_path / "build" / "prog", "3000"], capture_output=True, timeout=60)
    assert run.returncode == 0 and run.stdout.strip()


def test_vocabulary_published_by_the_farm(toolchain: Toolchain, tmp_path: Path, ir2vec_vocab: Path) -> None:
    argv = ["clang", "-Oz", "-c", str(CSRC / "sort.c"), "-o", str(tmp_path / "s.o")]
    with pytest.raises(InputError, match="no ir vocabulary has been published"):
        run_compile(argv, "heuristic", vocab="store:latest", toolchain=toolchain)
    version = publish_vocab(ir2vec_vocab.read_bytes())
    out = run_compile(argv, "heuristic", vocab="store:latest", toolchain=toolchain, timeout=30)
    assert out.ok, out.error
    cached = list((tmp_path / "var" / "cache" / "vocab" / "ir").glob("*.json"))
    assert [c.name for c in cached] == [f"{version}.json"] and cached[0].read_bytes() == ir2vec_vocab.read_bytes()
    assert (tmp_path / "s.o").read_bytes() == plain_oz(toolchain, CSRC / "sort.c", tmp_path / "p.o")


STUCK_HOST = """
import sys, threading
from farm.config import load_settings
from farm.toolchain import Toolchain
from policyhost.launcher import run_compile

class Stuck:
    name = "stuck"
    def bind(self, header): pass
    def decide(self, obs):
        print("deciding", flush=True)
        threading.Event().wait()

run_compile(["clang", "-Oz", "-c", sys.argv[1], "-o", sys.argv[2]], Stuck(),
            toolchain=Toolchain.from_settings(load_settings()))
"""


def _children(pid: int) -> list[int]:
    kids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            kids.append(int(stat.parent.name))
    return kids


def test_a_compiler_dies_with_the_host_that_was_killed(tmp_path: Path) -> None:
    """A training worker SIGKILLed mid-compile leaves no compiler behind (it would wait on a dead channel)."""
    import os
    import signal

    from tests.servers import wait_until

    src = tmp_path / "calls.c"
    src.write_text("static int sq(int x) { return x * x; }\nint f(int a) { return sq(a) + sq(a + 1); }\n")
    host = subprocess.Popen([sys.executable, "-c", STUCK_HOST, str(src), str(tmp_path / "o.o")],
                            stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[2])
    clangs: list[int] = []
    try:
        assert host.stdout.readline().strip() == "deciding"
        clangs = [p for p in _children(host.pid) if process_running(p, "clang")]
        assert clangs, "the compile runs as the host's child"
        host.send_signal(signal.SIGKILL)
        host.wait(timeout=30)
        wait_until(lambda: not any(process_running(p, "clang") for p in clangs), 30,
                   "the orphaned compiler to die with its host")
    finally:
        host.kill()
        for p in clangs:
            if process_running(p, "clang"):
                os.kill(p, signal.SIGKILL)


@pytest.mark.parametrize(("text", "said"), [
    ('{"Opcodes":{"Ret":[NaN,1]},"Types":{"I":[1,2]},"Arguments":{"C":[1,2]}}', "Opcodes.Ret holds nan"),
    ('{"Opcodes":{"Ret":[1e400,1]},"Types":{"I":[1,2]},"Arguments":{"C":[1,2]}}', "Opcodes.Ret holds inf"),
    ('{"Opcodes":{"Ret":[1,2,3]},"Types":{"I":[1,2]},"Arguments":{"C":[1,2]}}', "has dimension 2, expected 3"),
    ('{"Opcodes":' + "[" * 100000 + "]" * 100000 + "}", "nested too deeply"),
])
def test_the_farm_launcher_checks_what_it_hands_the_compiler(tmp_path: Path, text: str, said: str) -> None:
    """Issue 35, item 7: a vocabulary clang would choke on (four lines of its errors), or whose infinities the
    policy would be blamed for, is one line before any compile."""
    from farm.errors import InputError
    from policyhost.launcher import check_vocab

    (tmp_path / "v.json").write_text(text)
    with pytest.raises(InputError) as e:
        check_vocab(tmp_path / "v.json")
    assert said in str(e.value) and "\n" not in str(e.value)
