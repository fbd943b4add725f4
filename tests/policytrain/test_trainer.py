"""The trainer for real: `mlgo-farm policy train` on small corpora, in threads and through Celery workers."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from farm.errors import InputError
from farm.toolchain import Toolchain
from policytrain.trainer import Measured, check_names, resolve_splits, specs
from tests.servers import stop, wait_until

ROOT = Path(__file__).resolve().parents[2]
MLGO_FARM = str(Path(sys.executable).with_name("mlgo-farm"))


def _train_args(packages: dict[str, Path], out: Path) -> list[str]:
    return ["policy", "train", "--recipe", "smoke", "--train", f"alpha={packages['alpha']}",
            "--validation", f"beta={packages['beta']}", "--evaluation", f"gamma={packages['gamma']}", "-o", str(out)]


def _run(args: list[str], env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([MLGO_FARM, *args], capture_output=True, text=True, timeout=timeout, env=env)


def test_splits_are_checked_on_names_before_anything_compiles() -> None:
    with pytest.raises(InputError, match="too small to split honestly: no validation package"):
        check_names({"train": ["a"], "validation": [], "evaluation": ["c"]})
    with pytest.raises(InputError, match="package a is in both the train and the evaluation split"):
        check_names({"train": ["a"], "validation": ["b"], "evaluation": ["a"]})


def test_a_training_on_packages_sharing_code_nobody_decided_on_stops_before_compiling(
        tmp_path: Path, toolchain: Toolchain) -> None:
    """speexdsp (in no split) carries near-copies of speex's headers: training on one and judging on the other is
    refused in one line, before any corpus is compiled (the declared splits' decided pairs pass the same check in
    tests/policytrain/test_overlap.py)."""
    if not shutil.which("apt-get"):
        pytest.skip("needs apt-get source")
    with pytest.raises(InputError) as e:
        resolve_splits("speexdsp", "jansson", "speex", tmp_path, toolchain)
    assert str(e.value) == ("package splits: 1 pair(s) of packages share code with no decision in "
                            "policytrain/data/splits.toml [overlap]: speex and speexdsp")
    assert not (tmp_path / "policy").exists()


def test_a_split_not_named_is_the_declared_one_the_decision_packages_too() -> None:
    """`policy heldout --split decision` measures the packages recipes are compared on (policytrain/splitdata.py)."""
    from policytrain import splitdata

    assert specs("decision", None) == list(splitdata.DECISION)
    assert specs("evaluation", None) == list(splitdata.EVALUATION)
    assert specs("decision", " zlib, ,bzip2") == ["zlib", "bzip2"]
    with pytest.raises(InputError, match="package zlib is in both the validation and the decision split"):
        check_names({"train": ["lua5.4"], "validation": ["zlib"], "decision": ["zlib"]})


def test_a_checkpoint_within_the_cap_beats_a_lower_geomean_that_grows_a_package() -> None:
    """Checkpoints are ranked by the promotion gate's bars: none above the cap first, then the geomean; of those
    beyond it, the least growth. Without a cap, the geomean alone."""
    hides = Measured((("a", 0.952778), ("b", 1.008)))  # geomean 0.9800
    modest = Measured((("a", 0.986), ("b", 1.004)))  # 0.9950
    better = Measured((("a", 0.975), ("b", 1.005)))  # 0.9899
    worse_growth = Measured((("a", 0.922), ("b", 1.020)))  # 0.9698
    cap = 1.005
    assert min([hides, modest, better, worse_growth], key=lambda m: m.rank(cap)) is better
    assert min([hides, worse_growth], key=lambda m: m.rank(cap)) is hides
    assert min([hides, modest, better, worse_growth], key=lambda m: m.rank(None)) is worse_growth
    assert str(hides) == "0.9800x (worst package 1.0080x)"
    failed = Measured((("a", 0.5), ("b", None)))  # a validation compile failed: what it does to b is unknown
    assert all(max([failed, m], key=lambda x: x.rank(c)) is failed for m in (hides, worse_growth) for c in (cap, None))
    assert str(failed) == "no ratio (failed compiles in b)" and failed.fields()["validation_packages"]["b"] is None


def test_a_recipes_own_cap_chooses_checkpoints_instead_of_the_gates() -> None:
    """`TrainingRecipe.cap` (headroom under the gate's tolerance) changes which checkpoint the trainer keeps; without
    one the gate's cap chooses."""
    from dataclasses import replace

    from policytrain.recipes import RECIPES
    from policytrain.trainer import Splits, Trainer

    grows = Measured((("a", 0.975), ("b", 1.003)))  # 0.9889, within the gate's 1.005
    flat = Measured((("a", 0.990), ("b", 1.000)))  # 0.9950, grows nothing
    gate = Trainer(None, Splits((), ()), RECIPES["nightly"], None, cap=1.005)
    strict = Trainer(None, Splits((), ()), replace(RECIPES["nightly"], cap=1.0), None, cap=1.005)
    assert gate.choose_cap == 1.005 and strict.choose_cap == 1.0
    assert gate._better(grows, flat) and not gate._better(flat, grows)
    assert strict._better(flat, grows) and not strict._better(grows, flat)


def test_the_held_out_table_ends_with_both_bars() -> None:
    """Both bars judge the shipped modules (the row's `shipped`, or all modules where a package declares none)."""
    from policytrain.heldout import format_table

    def row(p: str, r: float, shipped: float | None) -> dict:
        part = None if shipped is None else {"modules": 1, "heuristic": 100, "policy": round(100 * shipped),
                                             "ratio": shipped}
        return {"package": p, "modules": 3, "heuristic": 1000, "policy": round(1000 * r), "ratio": r, "failed": [],
                "shipped": part}

    rows = [row("a", 0.95, None), row("b", 1.01, None), row("c", 1.006, 0.99)]
    table = {"packages": rows, "geomean": 0.9882, "all": {"geomean": 0.9883}}
    lines = format_table(table, cap=1.005).splitlines()
    assert lines[2].endswith("1.0100  (no shipped list: all modules)")
    assert lines[3].split() == ["c", "1", "100", "99", "0.9900", "0.9900", "3", "1.0060",
                                "(not", "linked:", "sum", "of", "objects)"]
    assert lines[-2].split() == ["geomean", "0.9882", "-", "0.9883"]
    assert lines[-1].split() == ["worst", "b", "1.0100", "(1", "of", "3", "above", "1.0050x)"]
    assert format_table(table).splitlines()[-1].split() == ["worst", "b", "1.0100"]


def test_a_package_with_a_failed_compile_has_no_ratio_and_its_table_fails() -> None:
    """The modules that did compile are not the package: a policy whose every compile failed showed `0 modules ...
    1.0000 (5 failed)` and passed. Its row, the bars and the verb's one line say there is no ratio."""
    from farm.errors import FarmError
    from policytrain.heldout import check_complete, format_table, package_row
    from policytrain.trainer import Package
    from policytrain.units import Unit

    units = tuple(Unit(n, Path(f"/c/{n}.bc")) for n in ("a.c", "b.c", "t.c"))
    good = package_row(Package("good", units), [100, 200, 300], [90, 200, 310])
    assert good["ratio"] == pytest.approx(600 / 600) and good["failed"] == [] and "errors" not in good
    bad = package_row(Package("c", units, frozenset({"a.c"})), [100, 200, 300], [None, 190, None],
                      [None, None, "policy model x.onnx gave no advice within 1s"])
    assert bad["ratio"] is None and bad["shipped"]["ratio"] is None and bad["failed"] == ["a.c", "t.c"]
    assert bad["errors"] == {"a.c": "the compile failed", "t.c": "policy model x.onnx gave no advice within 1s"}
    assert bad["modules"] == 1 and bad["heuristic"] == 200 and bad["policy"] == 190  # what did compile, shown
    table = {"packages": [good, bad], "geomean": None, "worst": None, "all": {"geomean": None, "worst": None}}
    lines = format_table(table, cap=1.005).splitlines()
    assert lines[2].split()[:8] == ["c", "0", "0", "0", "-", "-", "1", "-"] and lines[2].endswith(
        "(2 of 3 failed to compile: no ratio)"), lines
    assert lines[-1].split() == ["geomean", "-", "-", "(1", "of", "2", "packages", "without", "a", "ratio)"]
    check_complete({"packages": [good]})
    with pytest.raises(FarmError) as e:
        check_complete(table)
    assert str(e.value) == ("the held-out table has no ratio for c: 2 of 3 modules failed to compile (first, a.c: "
                            "the compile failed)")


def test_train_writes_a_signed_policy_and_its_held_out_table(packages: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "p.onnx"
    res = _run(_train_args(packages, out))
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].startswith("train on ") and any(ln.startswith("round 1/1: explored ") for ln in lines)
    assert any(ln.startswith("es step 1/1: ") for ln in lines) and any("best on validation" in ln for ln in lines)
    assert lines[-2].startswith("geomean ") and lines[-1].split()[:2] == ["worst", "gamma"], lines[-2:]
    assert lines[-1].endswith(" of 1 above 1.0050x)"), lines[-1]
    record = json.loads(out.with_suffix(".json").read_text())
    assert record["kind"] == "inline-es" and record["splits"] == {
        "train": ["alpha"], "validation": ["beta"], "evaluation": ["gamma"]}
    from policyhost.release import read_result

    assert read_result(out)["heldout"] == record["heldout"]  # signed by this farm over the model's bytes
    row = record["heldout"]["packages"][0]
    assert row["package"] == "gamma" and row["policy"] == pytest.approx(row["ratio"] * row["heuristic"])
    # the model as published runs in a real compile and its table is the one training printed
    held = _run(["policy", "heldout", str(out), "--evaluation", f"gamma={packages['gamma']}", "--json"])
    assert held.returncode == 0, held.stderr
    assert json.loads(held.stdout)["packages"][0] == row
    # a package it trained or validated on is no held-out table: refused in one line, nothing compiled
    for seen in ("alpha", "beta"):
        evaluation = f"gamma={packages['gamma']},{seen}=/nonexistent"
        refused = _run(["policy", "heldout", str(out), "--evaluation", evaluation])
        assert refused.returncode == 2 and refused.stdout == "", refused
        assert refused.stderr.strip().splitlines() == [
            f"mlgo-farm: error: {out} was trained or validated on {seen}: a held-out table measures only packages "
            "the policy never saw (choose them with --split or --evaluation)"], refused.stderr


def test_training_without_evaluation_packages_trains_the_same_network_and_says_so(packages: dict[str, Path],
                                                                                 tmp_path: Path) -> None:
    """The held-out packages never steer training: an experiment that keeps them unseen (`--no-evaluation`) gets
    the same network, and one line saying how to measure it later instead of a table of nothing."""
    import numpy as np

    from policytrain.native_export import weights_from_onnx

    runs = {}
    for name in ("with", "without"):
        out = tmp_path / f"{name}.onnx"
        args = _train_args(packages, out)
        if name == "without":
            args[args.index("--evaluation"):args.index("--evaluation") + 2] = ["--no-evaluation"]
        res = _run(args)
        assert res.returncode == 0, res.stderr
        runs[name] = (res.stdout, np.load(out.with_suffix(".npz")))
        # and the same network for the native host (mlgo-policy-host), the ONNX graph's very constants
        assert out.with_suffix(".weights").read_bytes() == weights_from_onnx(out.read_bytes())
    out, net = runs["without"]
    assert f"held out: no evaluation packages; later: mlgo-farm policy heldout {tmp_path / 'without.onnx'}" in out
    assert "nan" not in out and "geomean" not in out
    assert {k: net[k].tolist() for k in net.files} == {k: runs["with"][1][k].tolist() for k in runs["with"][1].files}


def test_a_missing_validation_split_is_one_line(packages: dict[str, Path], tmp_path: Path) -> None:
    res = _run(["policy", "train", "--recipe", "smoke", "--train", f"alpha={packages['alpha']}", "--validation", "",
                "--no-evaluation", "-o", str(tmp_path / "p.onnx")])
    assert res.returncode != 0 and res.stderr.strip().splitlines() == [
        "mlgo-farm: error: the corpus is too small to split honestly: no validation package (train: alpha; "
        "validation: none)"]
    assert not (tmp_path / "p.onnx").exists()


def test_celery_workers_train_the_same_policy_as_threads(packages: dict[str, Path], tmp_path: Path,
                                                        redis_url: str) -> None:
    """Every compile a Celery task on a real worker: the same bytes as the threaded run (all is deterministic)."""
    import os

    import redis

    redis.Redis.from_url(redis_url).flushall()
    env = {**os.environ, "MLGO_FARM_CELERY_BROKER_URL": f"{redis_url}/0",
           "MLGO_FARM_CELERY_RESULT_BACKEND": f"{redis_url}/1", "MLGO_FARM_PATHS_VAR_DIR": str(tmp_path / "var")}
    log = tmp_path / "worker.log"
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "farm.celery_app", "worker", "--pool=prefork", "--concurrency=2",
         "--loglevel=INFO", "-n", "trainer@%h", "--without-gossip", "--without-mingle", "--without-heartbeat",
         f"--logfile={log}"], cwd=ROOT, env=env, start_new_session=True, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: log.exists() and "ready." in log.read_text(), 60, "the Celery worker")
        threads, celery = tmp_path / "threads.onnx", tmp_path / "celery.onnx"
        res = _run(_train_args(packages, threads), env={**env, "MLGO_FARM_PATHS_VAR_DIR": str(tmp_path / "v2")})
        assert res.returncode == 0, res.stderr
        res = _run([*_train_args(packages, celery), "--celery", "--timeout", "600"], env=env)
        assert res.returncode == 0, res.stderr + log.read_text()[-3000:]
        assert "policyhost.train_tasks.work" in log.read_text()
        assert celery.read_bytes() == threads.read_bytes()
    finally:
        stop(worker)


def test_a_guided_search_follows_the_first_and_both_feed_cloning(packages: dict[str, Path], tmp_path: Path,
                                                                  toolchain: Toolchain) -> None:
    """With `TrainingRecipe.prior`, the heuristic is searched a second time in the order a prior learned from the first
    search; each module's two searches are merged (the smaller trajectory, every flip tried)."""
    from dataclasses import replace

    from policytrain.explore import ExploreCache
    from policytrain.fanout import thread_fanout
    from policytrain.params import Budget, PriorParams
    from policytrain.recipes import RECIPES
    from policytrain.trainer import Trainer, resolve_splits

    rec = replace(RECIPES["smoke"], budget=Budget(8, 1), prior=PriorParams(hidden=(8,), epochs=5, min_helpful=1))
    splits = resolve_splits(f"beta={packages['beta']}", f"alpha={packages['alpha']}", "", tmp_path, toolchain, rec)
    lines: list[str] = []
    t = Trainer(toolchain, splits, rec, thread_fanout(toolchain, ExploreCache(tmp_path / "cache"), 2),
                progress=lines.append)
    units = [u for p in splits.train for u in p.units]
    first = t.explore(None, units)
    assert sum(int((m.trial_deltas < 0).sum()) for m in first) >= 1, "the first search found something smaller"
    merged = t.guided(first, units, 1)
    assert any(ln.startswith("round 1: guided search of the heuristic: ") for ln in lines), lines
    assert [m.name for m in merged] == [u.name for u in units]
    for a, m in zip(first, merged, strict=True):
        assert m.compiles > a.compiles and (m.best_size or 0) <= (a.best_size or 0)
        assert len(m.trial_deltas) > len(a.trial_deltas)
    assert [h["stage"] for h in t.history] == ["guided"]
    never = replace(rec, prior=PriorParams(min_helpful=10**6))
    t2 = Trainer(toolchain, splits, never, t.fanout, progress=lines.append)
    assert t2.guided(first, units, 1) is first and "too few smaller flips" in lines[-1]


def test_more_cloning_seeds_keep_the_best_on_validation(packages: dict[str, Path], tmp_path: Path,
                                                        toolchain: Toolchain) -> None:
    """Cloning is a draw: every seed's network is measured on validation and the best kept, so more seeds
    never validate worse than one, and the round says which seed won."""
    from dataclasses import replace

    from policytrain.explore import ExploreCache
    from policytrain.fanout import thread_fanout
    from policytrain.params import Budget, EsParams
    from policytrain.recipes import RECIPES
    from policytrain.trainer import Trainer, resolve_splits

    one = replace(RECIPES["smoke"], budget=Budget(8, 1), es=EsParams(steps=0))
    splits = resolve_splits(f"beta={packages['beta']}", f"alpha={packages['alpha']}", "", tmp_path, toolchain, one)
    fanout = thread_fanout(toolchain, ExploreCache(tmp_path / "cache"), 2)
    lines: list[str] = []
    _, single = Trainer(toolchain, splits, one, fanout, progress=lines.append).run()
    _, several = Trainer(toolchain, splits, replace(one, seeds=(0, 1, 2)), fanout, progress=lines.append).run()
    assert several["validation"] <= single["validation"]
    for info in (single, several):
        assert info["validation_worst"] == max(info["validation_packages"].values())
        assert list(info["validation_packages"]) == ["alpha"]
        assert all("validation_worst" in h for h in info["history"])
    assert several["history"][0]["seed"] in (0, 1, 2) and single["history"][0]["seed"] == 0
    assert any(ln.startswith("round 1/1: ") and " of 3)" in ln for ln in lines), lines


def test_an_ensemble_recipe_keeps_the_seeds_average_not_one_seed(packages: dict[str, Path], tmp_path: Path,
                                                                  toolchain: Toolchain) -> None:
    """`TrainingRecipe.ensemble`: the round's clone is the average of every seed's (policytrain/mlp.py `average`), the
    same network whichever seed would have validated best, and the round says so; with `TrainingRecipe.bag` too."""
    from dataclasses import replace

    import numpy as np

    from policytrain.explore import ExploreCache
    from policytrain.fanout import thread_fanout
    from policytrain.improve import bc_dataset, fit_bc
    from policytrain.mlp import average
    from policytrain.params import Budget, EsParams
    from policytrain.recipes import RECIPES
    from policytrain.trainer import Trainer, resolve_splits

    rec = replace(RECIPES["smoke"], budget=Budget(8, 1), es=EsParams(steps=0), seeds=(0, 1, 2), ensemble=True)
    splits = resolve_splits(f"beta={packages['beta']}", f"alpha={packages['alpha']}", "", tmp_path, toolchain, rec)
    fanout = thread_fanout(toolchain, ExploreCache(tmp_path / "cache"), 2)
    lines: list[str] = []
    t = Trainer(toolchain, splits, rec, fanout, progress=lines.append)
    policy, info = t.run()
    data = bc_dataset(t.explore(None, splits.train[0].units), rec.bc)  # cached: the data the round cloned
    mean = average([fit_bc(*data, replace(rec.bc, seed=s)) for s in rec.seeds])
    assert all(np.array_equal(a, b) for a, b in zip(policy.ws + policy.bs, mean.ws + mean.bs, strict=True))
    assert policy.ws[0].shape[1] == 3 * rec.bc.hidden[0] and info["history"][0]["seed"] is None
    assert any(ln.startswith("round 1/1: ") and ", 3 seeds averaged)" in ln for ln in lines), lines
    # bagging (TrainingRecipe.bag): each seed clones its own draw of the modules, normalised on all of them, so
    # they average
    bag, _ = Trainer(toolchain, splits, replace(rec, bag=True), fanout, progress=lambda _: None).run()
    assert np.array_equal(bag.mean, policy.mean) and np.array_equal(bag.std, policy.std)
    assert bag.ws[0].shape == policy.ws[0].shape and not np.array_equal(bag.ws[0], policy.ws[0])


def _big_callee_units(tmp_path: Path, toolchain: Toolchain) -> list:
    """One module whose large static function is called from three places: LLVM's -Oz heuristic does not inline
    it, and its cost estimate is far above the threshold."""
    from policytrain.units import corpus_units
    from workers.corpus import from_sources

    src = tmp_path / "big-src"
    src.mkdir()
    body = "".join(f"    acc = acc * {k} + (acc >> {k % 7 + 1});\n    if (acc & {k}) acc ^= x;\n" for k in range(3, 60))
    (src / "big.c").write_text(f"static int big(int x) {{\n    int acc = x;\n{body}    return acc;\n}}\n"
                               "int a(int x) { return big(x) + 1; }\nint b(int x) { return big(x * 3); }\n"
                               "int c(int x) { return big(x - 7) ^ 5; }\n")
    return corpus_units(from_sources(src, tmp_path / "big", toolchain, jobs=1, level="Oz").path)


def _decisions(units: list, policy, toolchain: Toolchain):
    """Every decision of `policy` on `units`, compiled for real: its action, LLVM's, `cost_estimate - threshold`."""
    import numpy as np

    from policytrain.explore import ReplayPolicy, compile_size
    from policytrain.mlp import DEFAULT

    acts, llvm, gaps = [], [], []
    for u in units:
        replay = ReplayPolicy(policy)
        assert compile_size(u, replay, toolchain)[0] is not None
        rows, names = np.asarray(replay.rows), replay.names
        acts.append(np.asarray(replay.actions))
        llvm.append(rows[:, names.index(DEFAULT)])
        gaps.append(rows[:, names.index("cost_estimate")] - rows[:, names.index("threshold")])
    return np.concatenate(acts), np.concatenate(llvm), np.concatenate(gaps)


def _added_inlines(units: list, policy, toolchain: Toolchain, above: float = float("-inf")) -> int:
    """Inlines `policy` makes, compiled for real, where LLVM would not and its estimate is over `above` past its
    threshold."""
    acts, llvm, gap = _decisions(units, policy, toolchain)
    return int(((acts == 1) & (llvm == 0) & (gap > above)).sum())


def _refused_inlines(units: list, policy, toolchain: Toolchain, below: float) -> int:
    """Inlines LLVM would make, compiled for real, that `policy` refuses where the estimate is over `below` under
    the threshold."""
    acts, llvm, gap = _decisions(units, policy, toolchain)
    return int(((acts == 0) & (llvm == 1) & (gap < -below)).sum())


def _trained(packages: dict[str, Path], tmp_path: Path, toolchain: Toolchain, **recipe):
    from dataclasses import replace

    from policytrain.explore import ExploreCache
    from policytrain.fanout import thread_fanout
    from policytrain.params import Budget
    from policytrain.recipes import RECIPES
    from policytrain.trainer import Trainer, resolve_splits

    rec = replace(RECIPES["smoke"], budget=Budget(8, 1), sticks=(0.0,))
    splits = resolve_splits(f"beta={packages['beta']}", f"alpha={packages['alpha']}", "", tmp_path, toolchain, rec)
    fanout = thread_fanout(toolchain, ExploreCache(tmp_path / "cache"), 2)
    return Trainer(toolchain, splits, replace(rec, **recipe), fanout, progress=lambda _: None).run()[0]


def _eager(policy):
    """`policy` biased to inline, whatever the features."""
    from dataclasses import replace

    import numpy as np

    return replace(policy, bs=(*policy.bs[:-1], np.array([-10.0, 10.0])))


def test_a_recipe_that_holds_llvms_no_trains_a_policy_that_only_refuses(packages: dict[str, Path], tmp_path: Path,
                                                                        toolchain: Toolchain) -> None:
    """`TrainingRecipe.hold_no` is carried by every clone and through ES, and compiled for real a held network inlines
    nowhere LLVM's heuristic would not: not the trained one, and not one biased to inline everything, which
    without the hold adds inlines."""
    from dataclasses import replace

    held = _trained(packages, tmp_path, toolchain, hold_no=50.0)
    assert held.hold_no == 50.0
    units = _big_callee_units(tmp_path, toolchain)
    eager = _eager(held)
    assert _added_inlines(units, held, toolchain) == 0 and _added_inlines(units, eager, toolchain) == 0
    assert _added_inlines(units, replace(eager, hold_no=0.0), toolchain) > 0, "without the hold it adds inlines"


def test_a_recipe_with_a_guard_and_a_floor_trains_a_policy_that_keeps_llvms_far_decisions(
        packages: dict[str, Path], tmp_path: Path, toolchain: Toolchain) -> None:
    """`TrainingRecipe.guard` and `TrainingRecipe.floor` are carried by every clone and through ES; compiled for real,
    a guarded network biased to inline everything adds no inline whose estimate is more than the guard above LLVM's
    threshold, a floored one biased to refuse everything refuses none more than the floor below it (a last call to a
    static function), and without them they do."""
    from dataclasses import replace

    import numpy as np

    from policytrain.units import corpus_units
    from workers.corpus import from_sources

    guarded = _trained(packages, tmp_path, toolchain, guard=100.0, floor=1000.0)
    assert guarded.guard == 100.0 and guarded.floor == 1000.0
    units = _big_callee_units(tmp_path, toolchain)
    eager = _eager(guarded)
    assert _added_inlines(units, eager, toolchain, above=100.0) == 0
    assert _added_inlines(units, replace(eager, guard=None), toolchain, above=100.0) > 0, "without it, it adds them"
    src = tmp_path / "once-src"
    src.mkdir()
    (src / "once.c").write_text("static int once(int x) { return x * 7 + (x >> 3); }\n"
                                "int entry(int x) { return once(x) + 1; }\n")
    once = corpus_units(from_sources(src, tmp_path / "once", toolchain, jobs=1, level="Oz").path)
    reluctant = replace(guarded, bs=(*guarded.bs[:-1], np.array([10.0, -10.0])))
    assert _refused_inlines(once, reluctant, toolchain, below=1000.0) == 0
    assert _refused_inlines(once, replace(reluctant, floor=None), toolchain, below=1000.0) > 0, "without it, it refuses"
