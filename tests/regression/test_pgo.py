"""`regress run --pgo` (regression/pgo.py) with the real clang-22, llvm-profdata, ld.lld and callgrind, on a small
branchy C benchmark (tests/data/pgo) whose training input makes the other branch of `classify` hot and never runs
`never_in_training`: the profile changes the code, both variants (the heuristic and `--policy spill` through the
regalloc launcher) are built with it, the run's lineage names the inputs and the profile by sha256, and bad input
(a stale or corrupt profile, a missing training input, a training run that fails or hangs) is one line."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from farm.config import load_settings
from farm.errors import FarmError, InputError
from farm.toolchain import Toolchain
from regression import benchmarks, build, compare, pgo
from regression.request import RunRequest
from regression.runargs import parse_run, request_from_args
from tests.conftest import DATA

SRC = DATA / "pgo"
TRAIN = ("{inputs}/hot.txt",)
BENCH = benchmarks.local_benchmark(SRC, ("100000",), name="branchy", train_args=TRAIN)


def _sections(toolchain: Toolchain, obj: Path) -> set[str]:
    out = toolchain.run("llvm-readelf", ["-S", "-W", obj]).stdout.decode()
    return {w for line in out.splitlines() for w in line.split() if w.startswith(".text")}


def _copy(tmp_path: Path, train: str | None = None) -> Path:
    """The benchmark's sources in `tmp_path/branchy`, its training input replaced by `train` when given."""
    d = tmp_path / "branchy"
    shutil.copytree(SRC, d)
    if train is not None:
        (d / "train" / "hot.txt").write_text(train)
    return d


def test_a_pgo_thinlto_run_builds_both_variants_with_the_profile_and_names_its_inputs(toolchain: Toolchain,
                                                                                        tmp_path: Path) -> None:
    """One `--pgo --thinlto` comparison of the heuristic and the inliner's `never` policy: both variants' backend
    objects carry the profile's hot and cold sections (`never_in_training` ran 0 times in training), which the same
    build without the profile has not, so the profile changed the code in both; the lineage has the measured and
    training inputs' and the profile's sha256, the report says the configuration, the reproduce line keeps it."""
    result = compare.run_comparison(RunRequest(builder="pgo", run_id="p1", benchmarks=(BENCH,), policy="never",
                                               advisor="inline", opt_flags=("-O2",), pgo=True, thinlto=True,
                                               repeats=1, jobs=2, publish=False))
    assert result.skipped == [], result.skipped
    work = compare.run_dir(load_settings(), "pgo", "p1") / "bench" / "branchy"
    objects = [work / f"build{i}" / "native" / "branchy.o" for i in (0, 1)]  # heuristic, policy
    for obj in objects:
        assert {".text.hot.", ".text.unlikely."} <= _sections(toolchain, obj), obj
    plain = build.build_benchmark(toolchain, BENCH, SRC, build.heuristic_variant(), tmp_path / "plain", ["-O2"],
                                  thinlto=True)
    plain_obj = plain.objects[0].obj
    assert ".text.unlikely." not in _sections(toolchain, plain_obj)
    assert plain_obj.read_bytes() != objects[0].read_bytes()
    counted = {m.policy for m in compare.open_history().measurements(result.run) if m.metric == "instructions"}
    assert counted == {"heuristic", "policy"}  # callgrind counted both PGO builds

    config = result.run.config
    assert config["pgo"] is True and config["thinlto"] is True
    lineage = config["inputs"]["branchy"]
    profile = work / "pgo" / "branchy.profdata"
    assert lineage["profile_sha256"] == hashlib.sha256(profile.read_bytes()).hexdigest()
    assert lineage["training_sha256"] == benchmarks.input_digest(BENCH.training, work / "pgo" / "train-inputs")
    assert lineage["measurement_sha256"] == benchmarks.input_digest(BENCH.workloads, work / "inputs")
    assert lineage["training_sha256"] != lineage["measurement_sha256"]
    assert compare.open_history().run("p1", "pgo").config["inputs"] == config["inputs"]  # in the history too
    assert "build -O2 + PGO + ThinLTO" in result.summary
    assert " --pgo --thinlto " in config["reproduce"] and "'--bench-train-arg={inputs}/hot.txt'" in config["reproduce"]
    assert "build -O2 + PGO + ThinLTO" in (result.report_dir / "index.html").read_text()
    again = request_from_args(parse_run(["--pgo", "--thinlto", "--bench-dir", str(SRC), "--bench-train-arg",
                                         TRAIN[0]]))
    assert again.pgo and again.thinlto and again.benchmarks[0].training[0].args == TRAIN
    assert build.build_configuration({"opt_flags": ["-Oz"]}) == "-Oz"


def test_thinlto_with_the_eviction_advisor_is_refused_in_one_line() -> None:
    """LLVM 22's ThinLTO backends build the default eviction advisor whatever the flags (policyhost/advisors.py
    `thinlto_backends`): such a comparison would set the heuristic against itself, so it is refused, not run."""
    with pytest.raises(InputError) as e:
        request_from_args(parse_run(["--pgo", "--thinlto", "--advisor", "regalloc", "--policy", "spill",
                                     "--bench-dir", str(SRC), "--bench-train-arg", TRAIN[0]]))
    assert str(e.value) == ("--thinlto with the regalloc advisor: LLVM 22 never consults it in a ThinLTO backend, so "
                            "both variants would be the heuristic (build per file, with --pgo)")
    assert request_from_args(parse_run(["--pgo", "--advisor", "regalloc", "--policy", "spill", "--bench-dir",
                                        str(SRC), "--bench-train-arg", TRAIN[0]])).pgo


def test_a_stale_profile_is_a_skipped_benchmark_with_one_line(toolchain: Toolchain, tmp_path: Path) -> None:
    """A profile made from another build of the benchmark (its `classify` has one more branch) fits neither the
    per-file nor the ThinLTO build: the compile fails and the benchmark's reason says the profile is stale."""
    other = _copy(tmp_path)
    text = (other / "branchy.c").read_text()
    (other / "branchy.c").write_text(text.replace("return x % 13 == 0 ? -x : x / 3;",
                                                  "if (x % 17 == 0) return 1;\n  return x % 13 == 0 ? -x : x / 3;"))
    stale = pgo.train(toolchain, benchmarks.local_benchmark(other, name="branchy", train_args=TRAIN), other,
                      tmp_path / "other", ["-O2"], 2)
    for thin in (False, True):
        built = build.build_benchmark(toolchain, BENCH, SRC, build.heuristic_variant(), tmp_path / f"b{thin}",
                                      ["-O2"], thinlto=thin, profile_flags=pgo.use_flags(stale.path))
        line = pgo.describe_stale(BENCH, built.error or "")
        assert line.startswith("benchmark branchy: the profile does not fit this build (stale"), line
        assert "hash mismatch" in line and "\n" not in line


def test_a_corrupt_profile_is_one_line(toolchain: Toolchain, tmp_path: Path) -> None:
    bad = tmp_path / "bad.profdata"
    bad.write_bytes(b"not a profile\n" * 10)
    with pytest.raises(InputError) as e:
        pgo.check_profile(toolchain, BENCH, bad)
    assert str(e.value).startswith("benchmark branchy: profile bad.profdata is not usable: llvm-profdata exited")
    assert "\n" not in str(e.value)
    built = build.build_benchmark(toolchain, BENCH, SRC, build.heuristic_variant(), tmp_path / "b", ["-O2"],
                                  profile_flags=pgo.use_flags(bad))
    assert "Error in reading profile" in built.error and "\n" not in built.error


def test_a_missing_training_input_or_none_at_all_is_one_line(toolchain: Toolchain, tmp_path: Path) -> None:
    missing = benchmarks.local_benchmark(SRC, name="branchy", train_args=("{inputs}/absent.txt",))
    with pytest.raises(InputError, match=r"^benchmark branchy: training input absent\.txt of run train is missing "
                                         r"\(/.*/absent\.txt\)$"):
        pgo.train(toolchain, missing, SRC, tmp_path / "w", ["-O2"], 2)
    untrained = benchmarks.local_benchmark(SRC, name="branchy")
    result = compare.run_comparison(RunRequest(builder="pgo", benchmarks=(BENCH, dataclass_named(untrained)),
                                               opt_flags=("-O2",), pgo=True, repeats=0, callgrind=False, jobs=2,
                                               publish=False))
    [skip] = result.skipped
    assert skip.subject == "lone" and skip.reason.startswith("benchmark lone: no PGO training runs")
    with pytest.raises(InputError, match=r"^--pgo builds benchmarks from sources; a corpus is bitcode"):
        compare.run_comparison(RunRequest(corpus=tmp_path, benchmarks=(BENCH,), pgo=True))


def dataclass_named(bench: benchmarks.Benchmark) -> benchmarks.Benchmark:
    import dataclasses

    return dataclasses.replace(bench, name="lone", binary="lone")


@pytest.mark.parametrize(("train", "timeout", "expected"), [
    ("garbage", pgo.TRAIN_TIMEOUT, r"^benchmark branchy: training run train: branchy exited with code 2: cannot read "),
    ("9 1", 1.0, r"^benchmark branchy: training run train timed out after 1s \(killed\)$"),
])
def test_a_training_run_that_fails_or_hangs_is_one_line(toolchain: Toolchain, tmp_path: Path, train: str,
                                                         timeout: float, expected: str) -> None:
    """Mode 9 makes the program wait for a signal forever: the timeout stops its process group."""
    d = _copy(tmp_path, train)
    with pytest.raises(FarmError, match=expected) as e:
        pgo.train(toolchain, benchmarks.local_benchmark(d, name="branchy", train_args=TRAIN), d, tmp_path / "w",
                  ["-O2"], 2, timeout=timeout)
    assert "\n" not in str(e.value)


def test_every_speed_benchmark_trains_on_other_inputs_than_it_is_measured_on() -> None:
    """No training run reads a file a measured run reads (the inputs of each are named apart in the lineage)."""
    for bench in benchmarks.BENCHMARKS.values():
        assert bench.training, bench.name
        measured = {f.name for w in bench.workloads for f in w.files(Path("/inputs"))}
        trained = {f.name for w in bench.training for f in w.files(Path("/inputs"))}
        assert trained and not measured & trained, bench.name
    for script in benchmarks.LUA_TRAINING:
        assert (benchmarks.SCRIPTS / script).is_file() and script not in benchmarks.LUA_SCRIPTS
