"""Exploration with the real clang: replaying the heuristic, flipping decisions, caching what was found."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from farm.toolchain import Toolchain, text_sizes
from policytrain.explore import (
    Abandoned,
    Budget,
    ExploreCache,
    callee_key,
    callee_offsets,
    candidate_steps,
    default_offset,
    explore,
    explore_cached,
    merge,
    play,
)
from policytrain.mlp import Mlp
from policytrain.units import Unit, corpus_units
from tests.policyhost.callgraph import write_sources


@pytest.fixture(scope="module")
def units(tmp_path_factory: pytest.TempPathFactory, toolchain: Toolchain) -> list[Unit]:
    from workers.corpus import from_sources

    tmp = tmp_path_factory.mktemp("explore")
    corpus = from_sources(write_sources(tmp / "src", files=4, per_file=12, seed=5), tmp / "corpus", toolchain, jobs=2,
                          level="Oz")
    return corpus_units(corpus.path)


def test_replaying_the_heuristic_builds_what_plain_clang_builds(units: list[Unit], toolchain: Toolchain,
                                                                tmp_path: Path) -> None:
    unit = units[0]
    p = play(unit, None, (), toolchain)
    assert p.error is None and p.policy.actions
    plain = tmp_path / "plain.o"
    toolchain.run("clang", ["-Oz", "-c", str(unit.bitcode), "-o", str(plain)])
    assert p.size == text_sizes(toolchain, [plain])[plain]
    at = default_offset(p.policy.features)
    assert [int(r[at]) for r in p.policy.rows] == p.policy.actions  # the heuristic answered its own default


def test_a_flip_answers_the_opposite_at_that_step_and_the_base_before_it(units: list[Unit],
                                                                         toolchain: Toolchain) -> None:
    unit = max(units, key=lambda u: len(play(u, None, (), toolchain).policy.actions))
    base = play(unit, None, (), toolchain)
    k = len(base.policy.actions) // 2
    flipped = play(unit, None, (k,), toolchain)
    at = default_offset(flipped.policy.features)
    assert flipped.policy.actions[:k] == base.policy.actions[:k]
    assert flipped.policy.actions[k] == 1 - int(flipped.policy.rows[k][at])
    again = play(unit, None, (k,), toolchain)
    assert (again.size, again.policy.actions) == (flipped.size, flipped.policy.actions), "replays are deterministic"


def test_a_group_flip_holds_every_later_call_of_its_callee_to_the_flipped_action(units: list[Unit],
                                                                                 toolchain: Toolchain) -> None:
    """With `Budget.groups` a flip at step k also answers the flipped action at every later step whose callee has
    k's key, whatever the heuristic says there; other steps before and after are the base's. Only each callee's
    first step is a candidate, and the search replays."""
    def shared(u: Unit) -> tuple[int, int]:  # (later calls of the callee at the most shared key, -its first step)
        p = play(u, None, (), toolchain).policy
        keys = [callee_key(r, callee_offsets(p.features)) for r in p.rows]
        k = max(keys, key=keys.count)
        return keys.count(k), -keys.index(k)

    unit = max(units, key=shared)
    calls, first = shared(unit)
    assert calls >= 3, "the generated call graph has a callee called from three places"
    k = -first
    single, group = play(unit, None, (k,), toolchain), play(unit, None, (k,), toolchain, groups=True)
    at, pol = callee_offsets(group.policy.features), group.policy
    key, flipped = callee_key(pol.rows[k], at), group.policy.actions[k]
    assert flipped == single.policy.actions[k] and pol.actions[:k + 1] == single.policy.actions[:k + 1]
    later = [s for s in range(k + 1, len(pol.actions)) if callee_key(pol.rows[s], at) == key]
    assert later and all(pol.actions[s] == flipped for s in later)
    d = default_offset(pol.features)
    others = [s for s in range(len(pol.actions)) if s != k and s not in later]
    assert all(pol.actions[s] == int(pol.rows[s][d]) for s in others)
    base = play(unit, None, (), toolchain)
    keys = [callee_key(r, at) for r in base.policy.rows]
    steps = candidate_steps(base, 0, 10**6, "00" * 8, groups=True)
    assert sorted(steps) == [s for s, x in enumerate(keys) if x not in keys[:s]] and k in steps
    r = explore(unit, None, toolchain, Budget(4, 2, groups=True))
    assert r.best_size <= r.base_size and play(unit, None, r.flips, toolchain, groups=True).size == r.best_size
    assert Budget(4, 2).as_json() == {"per_round": 4, "rounds": 2}, "single-flip searches keep their cache keys"


def test_group_flips_on_a_module_without_inlining_decisions(tmp_path: Path, toolchain: Toolchain) -> None:
    """A module that calls nothing sends no decision, so no feature names a callee: nothing to flip, no error."""
    from workers.corpus import from_sources

    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "leaf.c").write_text("int leaf(int x) { return x * 3 + 1; }\n")
    unit = corpus_units(from_sources(tmp_path / "src", tmp_path / "corpus", toolchain, jobs=1, level="Oz").path)[0]
    r = explore(unit, None, toolchain, Budget(4, 2, groups=True))
    assert r.error is None and r.base_size == r.best_size and r.flips == [] and r.compiles == 1
    assert Budget(4, 2, groups=True).as_json() != Budget(4, 2).as_json()


def test_exploration_keeps_only_strictly_smaller_trajectories_and_they_replay(units: list[Unit],
                                                                               toolchain: Toolchain) -> None:
    results = [explore(u, None, toolchain, Budget(per_round=4, rounds=2)) for u in units]
    assert all(r.error is None and r.best_size <= r.base_size for r in results)
    assert all(r.compiles <= 1 + 4 * 2 for r in results)
    improved = [r for r in results if r.flips]
    assert improved, [r.summary() for r in results]  # generated call graphs always leave something to find
    for r in improved:
        assert r.best_size < r.base_size
        unit = next(u for u in units if u.name == r.name)
        assert play(unit, None, r.flips, toolchain).size == r.best_size
        at = default_offset(r.features)
        assert all(r.actions[f] != int(r.rows[f, at]) for f in r.flips)


def test_results_are_cached_by_content_base_and_budget(units: list[Unit], toolchain: Toolchain,
                                                       tmp_path: Path) -> None:
    cache = ExploreCache(tmp_path / "cache")
    first = explore_cached(units[1], None, toolchain, Budget(2, 1), cache)
    assert first.compiles >= 1
    hit = explore_cached(units[1], None, toolchain, Budget(2, 1), cache)
    assert hit.compiles == 0 and (hit.best_size, hit.flips) == (first.best_size, first.flips)
    np.testing.assert_array_equal(hit.rows, first.rows)
    assert explore_cached(units[1], None, toolchain, Budget(3, 1), cache).compiles >= 1, "another budget, new key"


def test_a_search_told_to_stop_gives_up_before_its_next_compile_and_caches_nothing(
        units: list[Unit], toolchain: Toolchain, tmp_path: Path) -> None:
    """The run is being interrupted (policytrain/fanout.py sets `stop`): the search raises instead of
    finishing its budget, and no partial result is cached as if it were the module's answer."""
    asked = []

    def stop() -> bool:
        asked.append(1)
        return len(asked) > 2  # the base compile and one flip, then the run stops

    cache = ExploreCache(tmp_path / "cache")
    with pytest.raises(Abandoned, match=units[0].name):
        explore_cached(units[0], None, toolchain, Budget(4, 2), cache, stop=stop)
    assert len(asked) == 3 and not list((tmp_path / "cache").glob("*.npz"))
    whole = explore_cached(units[0], None, toolchain, Budget(4, 2), cache, stop=lambda: False)
    assert whole.compiles > 2 and len(list((tmp_path / "cache").glob("*.npz"))) == 1


def test_a_module_that_does_not_compile_is_reported_not_raised(tmp_path: Path, toolchain: Toolchain) -> None:
    bad = tmp_path / "bad.bc"
    bad.write_bytes(b"BC\xc0\xde not bitcode")
    r = explore(Unit("bad.c", bad), None, toolchain)
    assert r.base_size is None and r.error and len(r.error.splitlines()) == 1


def test_a_prior_orders_the_heuristics_steps_and_keys_its_own_cache(units: list[Unit], toolchain: Toolchain,
                                                                    tmp_path: Path) -> None:
    """With a prior, the steps tried first are those it scores most promising; the search is the heuristic's
    still (same base trajectory), and it is cached apart from the unguided search, whose key is unchanged."""
    unit = max(units, key=lambda u: len(play(u, None, (), toolchain).policy.actions))
    base = play(unit, None, (), toolchain)
    rows = np.asarray(base.policy.rows)
    prior = Mlp.init(base.policy.features, rows, (4,), seed=3)
    guided = play(unit, None, (), toolchain, prior=prior)
    assert (guided.size, guided.policy.actions) == (base.size, base.policy.actions)
    assert guided.policy.margins == pytest.approx(list(-prior.margin(rows)))
    from policytrain.explore import candidate_steps

    order = candidate_steps(guided, 0, 3, "00" * 8)
    assert order == sorted(range(len(rows)), key=lambda s: -prior.margin(rows[s:s + 1])[0])[:3]
    r = explore(unit, None, toolchain, Budget(3, 1), prior=prior)
    assert r.compiles == 4 and r.best_size <= r.base_size
    cache = ExploreCache(tmp_path / "c")
    plain = cache.key(unit, toolchain, None, Budget(3, 1), None)
    assert cache.key(unit, toolchain, None, Budget(3, 1), None, prior) != plain
    import hashlib
    import json

    old = json.dumps([unit.digest(), toolchain.describe(), "heuristic", Budget(3, 1).as_json(), None, 3],
                     sort_keys=True, default=str)
    assert plain == hashlib.sha256(old.encode()).hexdigest()[:24], "a nightly's cached unguided search stays valid"


def test_two_searches_of_a_module_merge_into_the_smaller_and_every_trial(units: list[Unit],
                                                                           toolchain: Toolchain) -> None:
    a = explore(units[0], None, toolchain, Budget(2, 1))
    b = explore(units[0], None, toolchain, Budget(4, 1))
    m = merge(a, b)
    assert m.best_size == min(a.best_size, b.best_size) and m.compiles == a.compiles + b.compiles
    assert len(m.trial_deltas) == len(a.trial_deltas) + len(b.trial_deltas)
    assert len(m.trial_rows) == len(m.trial_actions) == len(m.trial_deltas)
