"""An LLVM culprit narrowed to its first bad commit (regression/bisectllvm.py, regression/bisectrun.py): a local git
repository stands in for llvm-project; its "build" makes a real toolchain (Debian's LLVM 22 tools, the commit in
VCSRevision.h as a source build records it) whose clang stops inlining at -Oz from commit k of n on. Two real nights
(commit 0, then commit n) open one alert; the bisect names LLVM, then commit k, building at most ceil(log2 n) + 1
toolchains, each kept by commit."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from farm.toolchain import Toolchain
from regression import bisect, compare
from regression.alertstore import AlertStore
from regression.bisectllvm import ToolchainCache, commit_range
from regression.bisectrun import run_bisect
from regression.compare import RunRequest, run_comparison
from tests.regression.test_alerts import BENCH


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True,
                          capture_output=True, text=True).stdout.strip()


def _llvm_project(root: Path, n: int, k: int) -> list[str]:
    """Commits 0..n; from commit k on, `oz-flags` makes clang stop inlining (a stand-in for an -Oz change)."""
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    commits = []
    for i in range(n + 1):
        (root / "oz-flags").write_text("-fno-inline\n" if i >= k else "\n")
        (root / "ChangeLog").write_text(f"commit {i}\n")
        _git(root, "add", ".")
        _git(root, "commit", "-qm", f"commit {i}")
        commits.append(_git(root, "rev-parse", "HEAD"))
    return commits


def _builder(repo: Path, host: Toolchain):
    """The stand-in `llvm-build`: the host's tools, with a clang that adds the commit's `oz-flags`."""

    def build(commit: str, dest: Path) -> Path:
        flags = subprocess.run(["git", "-C", str(repo), "show", f"{commit}:oz-flags"], check=True,
                               capture_output=True, text=True).stdout.split()
        bin_dir = dest / "bin"
        bin_dir.mkdir(parents=True)
        for tool in Path(host.bin_dir).iterdir():
            (bin_dir / tool.name).symlink_to(tool.resolve())
        (bin_dir / "clang").unlink()
        (bin_dir / "clang").write_text(f'#!/bin/sh\nexec {host.path("clang").resolve()} "$@" {" ".join(flags)}\n')
        (bin_dir / "clang").chmod(0o755)
        header = dest / "include" / "llvm" / "Support" / "VCSRevision.h"
        header.parent.mkdir(parents=True)
        header.write_text(f'#define LLVM_REVISION "{commit}"\n')
        return bin_dir

    return build


@pytest.mark.parametrize(("n", "k"), [(8, 5), (5, 1)])
def test_bisect_names_the_first_bad_llvm_commit_within_the_bound(smtp_env, tmp_path: Path, toolchain: Toolchain,
                                                                  n: int, k: int) -> None:
    commits = _llvm_project(tmp_path / "llvm-project", n, k)
    assert commit_range(tmp_path / "llvm-project", commits[0], commits[n]) == commits[1:]
    cache = ToolchainCache(tmp_path / "toolchains", _builder(tmp_path / "llvm-project", toolchain))

    def night(run_id: str, commit: str):
        return run_comparison(RunRequest(builder="nightly", run_id=run_id, benchmarks=(BENCH,), policy="heuristic",
                                         repeats=0, jobs=2), toolchain=cache.get(commit), deliver_backoff=0.05)

    assert night("l1", commits[0]).verdict == "ok"
    bad = night("l2", commits[n])
    assert bad.verdict == "regression" and bad.run.llvm_commit == commits[n]
    history = compare.open_history()
    [alert] = AlertStore(history).alerts()
    assert alert.inputs == {"llvm": [commits[0], commits[n]]}
    nights = list(cache.built)  # the nights' own toolchains: the bisect finds them in the cache

    t0 = time.time()
    found = run_bisect(alert.id, history, llvm_repo=tmp_path / "llvm-project", cache=cache)
    took = time.time() - t0
    built = cache.built[len(nights):]
    print(f"llvm bisect n={n} k={k}: {len(built)} builds, {len(found.steps)} re-runs in {took:.1f} s")
    assert found.culprit == "llvm" and found.commit == commits[k], found.sentence()
    assert len(built) <= bisect.max_builds(n) and len(found.commit_steps) == len(built)
    assert [c for c, _ in found.commit_steps] == built  # each tried commit built once, none of the nights' again
    stored = AlertStore(history).get(alert.id).bisect
    assert stored["commit"] == commits[k] and f"first bad commit {commits[k]}" in stored["sentence"]
    assert stored["commits"] == n and stored["commit_builds_bound"] == bisect.max_builds(n)
    # every re-run is a bisect run: not in the trend, no other alert
    assert [r.run_id for r in history.runs("nightly")] == ["l1", "l2"] and len(AlertStore(history).alerts()) == 1
    assert f"first bad commit {commits[k]}" in smtp_env.messages[-1].get_payload(decode=True).decode()

    # a second bisect of the same range builds nothing: toolchains are kept by commit
    before = len(cache.built)
    assert run_bisect(alert.id, history, llvm_repo=tmp_path / "llvm-project", cache=cache).commit == commits[k]
    assert len(cache.built) == before
