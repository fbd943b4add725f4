"""An LLVM culprit narrowed to its first bad commit (regression/bisectllvm.py, regression/bisectrun.py): a local git
repository stands in for llvm-project (`[llvm] repo`); the farm's own LLVM build (workers/llvm_build.py: git checkout,
CMake, Ninja, as `llvm-build` runs them) builds its `llvm/`, a small CMake project, into a real toolchain (Debian's
LLVM 22 tools, the commit in VCSRevision.h as a source build records it) whose clang stops inlining at -Oz from commit
k of n on. Two real nights (commit 0, then commit n) open one alert; the bisect names LLVM, then commit k, building at
most ceil(log2 n) + 1 toolchains, each kept by commit. Only the project built is a stand-in: no code is swapped."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from farm.config import load_settings
from farm.toolchain import Toolchain
from regression import bisect, compare
from regression.alerts.records import AlertStore
from regression.bisectllvm import commit_range, farm_cache, farm_range
from regression.bisectrun import run_bisect
from regression.compare import RunRequest, run_comparison
from tests.regression.alerts.test_delivery import BENCH
from tests.regression.conftest import delivered


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True,
                          capture_output=True, text=True).stdout.strip()


#: The stand-in's `llvm/`: a CMake project whose targets are named as the farm's llvm-build builds them
#: (workers/llvm_build.py DEFAULT_TARGETS) and whose "build" is `stage.sh`, run by Ninja.
CMAKELISTS = """cmake_minimum_required(VERSION 3.20)
project(llvm-stand-in NONE)
get_filename_component(HOST_BIN "${CMAKE_C_COMPILER}" DIRECTORY)
add_custom_command(OUTPUT staged COMMAND sh ${CMAKE_SOURCE_DIR}/stage.sh ${HOST_BIN} ${CMAKE_SOURCE_DIR}/..
                   COMMAND ${CMAKE_COMMAND} -E touch staged WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
add_custom_target(stage DEPENDS staged)
foreach(t %s)
  add_custom_target(${t})
  add_dependencies(${t} stage)
endforeach()
"""
#: The host's LLVM tools in bin/, with a clang that adds the commit's `oz-flags`; VCSRevision.h names the commit as a
#: source build of LLVM records it (farm/toolchain.py reads it).
STAGE = """set -e
host=$1 src=$2
mkdir -p bin include/llvm/Support
for t in "$host"/*; do ln -sf "$(readlink -f "$t")" "bin/$(basename "$t")"; done
rm -f bin/clang
printf '#!/bin/sh\\nexec %s "$@" %s\\n' "$(readlink -f "$host/clang")" "$(cat "$src/oz-flags")" > bin/clang
chmod 755 bin/clang
printf '#define LLVM_REVISION "%s"\\n' "$(git -C "$src" rev-parse HEAD)" > include/llvm/Support/VCSRevision.h
"""


def _llvm_project(root: Path, n: int, k: int) -> list[str]:
    """Commits 0..n of a stand-in llvm-project whose `llvm/` builds with CMake and Ninja (CMAKELISTS, STAGE); from
    commit k on, `oz-flags` makes its clang stop inlining (a stand-in for an -Oz change)."""
    from workers.llvm_build import DEFAULT_TARGETS

    (root / "llvm").mkdir(parents=True)
    _git(root, "init", "-q", "-b", "main")
    (root / "llvm" / "CMakeLists.txt").write_text(CMAKELISTS % " ".join(DEFAULT_TARGETS))
    (root / "llvm" / "stage.sh").write_text(STAGE)
    commits = []
    for i in range(n + 1):
        (root / "oz-flags").write_text("-fno-inline\n" if i >= k else "\n")
        (root / "ChangeLog").write_text(f"commit {i}\n")
        _git(root, "add", ".")
        _git(root, "commit", "-qm", f"commit {i}")
        commits.append(_git(root, "rev-parse", "HEAD"))
    return commits


@pytest.mark.parametrize(("n", "k"), [(8, 5), (5, 1)])
def test_bisect_names_the_first_bad_llvm_commit_within_the_bound(smtp_env, tmp_path: Path, toolchain: Toolchain,
                                                                  monkeypatch: pytest.MonkeyPatch, n: int, k: int
                                                                  ) -> None:
    commits = _llvm_project(tmp_path / "llvm-project", n, k)
    assert commit_range(tmp_path / "llvm-project", commits[0], commits[n]) == commits[1:]
    monkeypatch.setenv("MLGO_FARM_LLVM_REPO", str(tmp_path / "llvm-project"))
    settings = load_settings()
    cache = farm_cache(settings, toolchain)  # what `regress bisect` uses on a worker: the farm's llvm-build

    def night(run_id: str, commit: str):
        return run_comparison(RunRequest(builder="nightly", run_id=run_id, benchmarks=(BENCH,), policy="heuristic",
                                         repeats=0, jobs=2), toolchain=cache.get(commit))

    assert night("l1", commits[0]).verdict == "ok"
    bad = night("l2", commits[n])
    assert bad.verdict == "regression" and bad.run.llvm_commit == commits[n]
    history = compare.open_history()
    [alert] = AlertStore(history).alerts()
    assert alert.inputs == {"llvm": [commits[0], commits[n]]}
    nights = list(cache.built)  # the nights' own toolchains: the bisect finds them in the cache

    t0 = time.time()
    found = run_bisect(alert.id, history, cache=cache, commits=farm_range(settings))
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
    assert f"first bad commit {commits[k]}" in delivered(smtp_env)[-1].get_payload(decode=True).decode()

    # a second bisect of the same range builds nothing: toolchains are kept by commit
    before = len(cache.built)
    assert run_bisect(alert.id, history, llvm_repo=tmp_path / "llvm-project", cache=cache).commit == commits[k]
    assert (settings.var_dir / "bisect" / "toolchains" / commits[k] / "CMakeCache.txt").is_file()  # CMake built it
    assert len(cache.built) == before
