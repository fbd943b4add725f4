"""Regression rules: deterministic thresholds, spreads of repeated counts, the significance test with a minimum
effect, overrides."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.stats import mannwhitneyu

from farm.errors import InputError
from regression import rules
from regression.rules import DEFAULT_RULES, IMPROVED, NEW, REGRESSED, UNCHANGED, Rule, judge


@pytest.mark.parametrize("metric", ["text_size", "instructions"])
def test_deterministic_threshold(metric: str) -> None:
    rule = DEFAULT_RULES[metric]
    t = rule.threshold_pct
    base = 1_000_000.0
    just_over = base * (1 + (t + 0.01) / 100)
    just_under = base * (1 + (t - 0.01) / 100)
    assert judge(rule, base, just_over).verdict == REGRESSED
    assert judge(rule, base, just_under).verdict == UNCHANGED
    assert judge(rule, base, base * (1 - (t + 0.01) / 100)).verdict == IMPROVED
    assert judge(rule, base, base).verdict == UNCHANGED
    assert judge(rule, base, just_over).delta_pct == pytest.approx((just_over - base) / base * 100)
    assert judge(rule, None, base).verdict == NEW


def test_instruction_counts_are_judged_against_their_own_spread() -> None:
    """A change past the threshold counts only when the two builds' repeated counts do not overlap: one build
    measured again spreading over the other's counts is noise (issue 38 item 4)."""
    rule = DEFAULT_RULES["instructions"]
    assert rule.noise == "spread"
    base = [1_000_000.0, 1_004_000.0, 1_008_000.0]  # one build, three counts, 0.8 % apart
    overlapping = [1_007_000.0, 1_012_000.0, 1_015_000.0]  # median +0.8 %: past the 0.5 % threshold
    assert judge(rule, 1_004_000.0, 1_012_000.0).verdict == REGRESSED  # without the spread it would count
    assert judge(rule, 1_004_000.0, 1_012_000.0, base, overlapping).verdict == UNCHANGED
    apart = [1_009_000.0, 1_012_000.0, 1_015_000.0]
    out = judge(rule, 1_004_000.0, 1_012_000.0, base, apart)
    assert out.verdict == REGRESSED and out.delta_pct == pytest.approx(0.7968, abs=1e-3)
    better = [990_000.0, 991_000.0, 992_000.0]
    assert judge(rule, 1_004_000.0, 991_000.0, base, better).verdict == IMPROVED
    # apart but inside the threshold: still no change
    tight = [1_000_000.0, 1_000_001.0]
    assert judge(rule, 1_000_000.5, 1_000_002.5, tight, [1_000_002.0, 1_000_003.0]).verdict == UNCHANGED
    # one count a side: the spread is unknown and the threshold alone decides
    assert judge(rule, 1_004_000.0, 1_012_000.0, [1_004_000.0], [1_012_000.0]).verdict == REGRESSED


def test_spread_metrics_gate_against_the_previous_run() -> None:
    """Instruction counts do not depend on the machine's load, so unlike wall time they gate across runs."""
    new = {("b/run", "instructions"): (1_100.0, (1_100.0, 1_101.0)), ("b/run", "wall_time"): (2.0, (2.0,) * 5)}
    base = {("b/run", "instructions"): (1_000.0, (1_000.0, 1_001.0)), ("b/run", "wall_time"): (1.0, (1.0,) * 5)}
    kinds = {k: "workload" for k in new}
    got = {c.metric: c for c in rules.compare_values(DEFAULT_RULES, rules.PREVIOUS_BASELINE, base, new, kinds)}
    assert (got["instructions"].verdict, got["instructions"].gating) == (REGRESSED, True)
    assert got["wall_time"].gating is False


def test_a_rules_file_names_the_noise_models(tmp_path: Path) -> None:
    bad = tmp_path / "rules.toml"
    bad.write_text('[instructions]\nnoise = "fuzzy"\n')
    with pytest.raises(InputError, match="deterministic, spread, samples"):
        rules.load_rules(bad)


def test_direction_higher_is_better_flips_verdicts() -> None:
    rule = Rule("throughput", "MB/s", direction="higher", threshold_pct=1.0)
    assert judge(rule, 100, 90).verdict == REGRESSED
    assert judge(rule, 100, 110).verdict == IMPROVED


def test_size_growth_from_zero_is_a_regression() -> None:
    out = judge(DEFAULT_RULES["text_size"], 0, 16)
    assert out.verdict == REGRESSED and out.delta_pct == float("inf")


def _samples(seed: int, center: float, n: int = 12) -> list[float]:
    return list(np.random.default_rng(seed).normal(center, center * 0.01, n))


def test_significant_and_large_shift_is_a_regression() -> None:
    rule = DEFAULT_RULES["wall_time"]
    base, new = _samples(1, 1.0), _samples(2, 1.0 * (1 + 3 * rule.min_effect_pct / 100))
    out = judge(rule, float(np.median(base)), float(np.median(new)), base, new)
    assert out.verdict == REGRESSED
    assert out.p_value == pytest.approx(mannwhitneyu(new, base, alternative="greater").pvalue)
    assert out.p_value < rule.alpha
    back = judge(rule, float(np.median(new)), float(np.median(base)), new, base)
    assert back.verdict == IMPROVED


def test_significant_but_small_shift_is_not_a_regression() -> None:
    rule = DEFAULT_RULES["wall_time"]
    base, new = _samples(3, 1.0), _samples(4, 1.0 * (1 + rule.min_effect_pct / 200))
    out = judge(rule, float(np.median(base)), float(np.median(new)), base, new)
    assert mannwhitneyu(new, base, alternative="greater").pvalue < rule.alpha  # significant ...
    assert out.verdict == UNCHANGED  # ... but below the minimum effect size


def test_large_but_noisy_shift_is_not_a_regression() -> None:
    rule = DEFAULT_RULES["wall_time"]
    base, new = [1.0, 1.5, 0.8, 1.2], [1.3, 0.9, 1.6, 1.25]
    out = judge(rule, float(np.median(base)), float(np.median(new)), base, new)
    assert out.delta_pct > rule.min_effect_pct and out.p_value >= rule.alpha
    assert out.verdict == UNCHANGED


def test_too_few_samples_decide_nothing() -> None:
    rule = DEFAULT_RULES["wall_time"]
    assert judge(rule, 1.0, 2.0, [1.0, 1.0], [2.0, 2.0]).verdict == UNCHANGED


def test_rules_are_validated() -> None:
    with pytest.raises(InputError, match="direction"):
        Rule("x", "s", direction="sideways")
    with pytest.raises(InputError, match="noise"):
        Rule("x", "s", noise="gaussian")


def test_rules_file_overrides_fields(tmp_path: Path) -> None:
    f = tmp_path / "rules.toml"
    f.write_text('[text_size]\nthreshold_pct = 2.5\ngating = ["total"]\n[cycles]\nunit = "c"\nthreshold_pct = 1\n')
    loaded = rules.load_rules(f)
    assert loaded["text_size"].threshold_pct == 2.5 and loaded["text_size"].gating == ("total",)
    assert loaded["text_size"].direction == DEFAULT_RULES["text_size"].direction
    assert loaded["cycles"] == Rule("cycles", "c", threshold_pct=1)
    assert loaded["wall_time"] == DEFAULT_RULES["wall_time"]
    f.write_text("[text_size]\nthreshhold = 1\n")
    with pytest.raises(InputError, match=r"\[text_size\] may only set"):
        rules.load_rules(f)
    f.write_text("[text_size\n")
    with pytest.raises(InputError, match="rules file"):
        rules.load_rules(f)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('threshold_pct = "abc"', "[text_size] threshold_pct must be a number, not 'abc'"),
        ('gating = "binary"', "[text_size] gating must be a list of subject kinds, not 'binary'"),
        ("gating = [1, 2]", "[text_size] gating must be a list of subject kinds, not [1, 2]"),
        ("alpha = true", "[text_size] alpha must be a number, not True"),
        ("min_samples = 2.5", "[text_size] min_samples must be a whole number, not 2.5"),
        ("min_samples = 0", "[text_size] min_samples must be >= 1"),
        ("threshold_pct = nan", "[text_size] threshold_pct must be a number, not nan"),
        ("direction = 1", "[text_size] direction must be a string, not 1"),
        ('unit = ["s"]', "[text_size] unit must be a string, not ['s']"),
    ],
)
def test_rules_file_with_wrong_types_is_one_line(tmp_path: Path, body: str, message: str) -> None:
    f = tmp_path / "rules.toml"
    f.write_text(f"[text_size]\n{body}\n")
    with pytest.raises(InputError) as e:
        rules.load_rules(f)
    assert str(e.value) == f"rules file {f}: {message}"


def test_compare_values_and_run_verdict() -> None:
    base = {("lua", "text_size"): (1000.0, ()), ("lua/src/lvm.c", "text_size"): (100.0, ())}
    new = {("lua", "text_size"): (1000.0, ()), ("lua/src/lvm.c", "text_size"): (150.0, ()),
           ("lua", "cycles"): (5.0, ())}
    kinds = {("lua", "text_size"): "binary", ("lua/src/lvm.c", "text_size"): "module", ("lua", "cycles"): "binary"}
    out = rules.compare_values(DEFAULT_RULES, rules.HEURISTIC_BASELINE, base, new, kinds)
    by = {c.subject: c for c in out}
    assert set(by) == {"lua", "lua/src/lvm.c"}  # no rule for `cycles`: not judged
    assert by["lua/src/lvm.c"].verdict == REGRESSED and not by["lua/src/lvm.c"].gating
    assert rules.run_verdict(out) == "ok"  # a module may grow while the binary does not
    new[("lua", "text_size")] = (1100.0, ())
    out = rules.compare_values(DEFAULT_RULES, rules.HEURISTIC_BASELINE, base, new, kinds)
    assert rules.run_verdict(out) == "regression"


def test_noisy_metric_never_gates_across_runs() -> None:
    """Wall time against the previous run is reported; against the same run's heuristic it gates."""
    from regression.rules import DEFAULT_RULES, HEURISTIC_BASELINE, PREVIOUS_BASELINE, REGRESSED, compare_values

    key = ("lua/fib", "wall_time")
    slow = {key: (1.5, (1.5, 1.52, 1.49, 1.51, 1.5, 1.53, 1.48))}
    fast = {key: (1.0, (1.0, 1.01, 0.99, 1.02, 1.0, 0.98, 1.01))}
    kinds = {key: "workload"}
    same_run = compare_values(DEFAULT_RULES, HEURISTIC_BASELINE, fast, slow, kinds)
    across = compare_values(DEFAULT_RULES, PREVIOUS_BASELINE, fast, slow, kinds)
    assert same_run[0].verdict == across[0].verdict == REGRESSED
    assert same_run[0].gating and not across[0].gating
    size = ("lua", "text_size")
    across_size = compare_values(DEFAULT_RULES, PREVIOUS_BASELINE, {size: (100.0, ())}, {size: (110.0, ())},
                                 {size: "binary"})
    assert across_size[0].verdict == REGRESSED and across_size[0].gating


def test_a_rule_is_judged_as_its_metric_declares() -> None:
    """Direction, noise model and gating are declared once, by the metric; the rule carries them."""
    from regression.metrics import METRICS, Judging

    assert issubclass(Rule, Judging) and issubclass(type(METRICS["wall_time"]), Judging)
    for name, metric in METRICS.items():
        assert DEFAULT_RULES[name].judging() == metric.judging()


def test_the_run_verdict_is_one_declared_type() -> None:
    from regression.rules import RunVerdict, run_verdict

    assert run_verdict([]) is RunVerdict.OK and RunVerdict.REGRESSION == "regression"
