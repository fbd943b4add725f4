"""Regression rules as data: per metric a direction, a noise model and thresholds.

* `deterministic` metrics (code size) repeat exactly, so any change past `threshold_pct` counts.
* `spread` metrics (callgrind instruction counts) nearly repeat: the same binary run again executes a few more or
  fewer instructions (the environment's size, the stack's address, hash seeds). Measured `--repeats` times, a
  change counts only past `threshold_pct` *and* when the two builds' ranges of counts do not overlap: a
  difference inside the spread of one build measured again is that build's noise, not the policy's.
  With fewer than two counts a side, the spread is unknown and the threshold alone decides.
* `samples` metrics (wall time) are noisy: a change counts only when a one-sided Mann-Whitney U
  test (scipy) rejects "no shift" at `alpha` *and* the medians differ by at least `min_effect_pct`.

`gating` names the subject kinds whose regression makes the whole run a regression (per-module
sizes are reported but a policy may trade one module against another; the binary and corpus
totals decide). Against the previous good run only deterministic metrics gate: wall-time samples
of two runs were taken under different machine loads, so that comparison is reported only.
Rules can be overridden from a TOML file: `[metric] key = value`. The metrics themselves (name,
unit, direction, noise model, which subject kinds gate) are declared once in `metrics.py`; a rule
starts from its metric's declaration and adds the thresholds.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from farm import datafile
from farm.errors import InputError
from regression.metrics import COMPILE_TIME, INSTRUCTIONS, METRICS, TEXT_SIZE, WALL_TIME, Judging, Metric

REGRESSED, IMPROVED, UNCHANGED, NEW = "regressed", "improved", "unchanged", "new"
HEURISTIC_BASELINE, PREVIOUS_BASELINE = "heuristic", "previous"
#: How a metric's values vary between measurements of one build (see the module's docstring).
NOISE_MODELS = ("deterministic", "spread", "samples")


class RunVerdict(StrEnum):
    """A whole run's verdict (`run_verdict`), as history, reports, alerts and the dashboard read it.

    A str: history's SQLite column, JSON and the dashboard (which imports no role) keep the plain word.
    """

    OK = "ok"
    REGRESSION = "regression"


@dataclass(frozen=True)
class Rule(Judging):
    """A metric's thresholds, with how it is judged (direction, noise, gating: `Judging`, from the metric)."""

    metric: str
    unit: str
    threshold_pct: float = 0.0
    alpha: float = 0.01
    min_effect_pct: float = 3.0
    min_samples: int = 3

    def __post_init__(self) -> None:
        if self.direction not in ("lower", "higher"):
            raise InputError(f"rule {self.metric}: direction must be 'lower' or 'higher', not {self.direction!r}")
        if self.noise not in NOISE_MODELS:
            raise InputError(f"rule {self.metric}: noise must be one of {', '.join(NOISE_MODELS)}, not {self.noise!r}")
        if self.threshold_pct < 0 or self.min_effect_pct < 0 or not 0 < self.alpha < 1:
            raise InputError(f"rule {self.metric}: thresholds must be >= 0 and alpha in (0, 1)")


def rule_for(metric: Metric, **thresholds) -> Rule:
    """The rule of a declared metric: its unit, direction, noise model and gating, plus `thresholds`."""
    return Rule(metric.name, metric.unit, **metric.judging(), **thresholds)


#: thresholds per metric (the metric's own properties come from metrics.py)
_THRESHOLDS: dict[Metric, dict[str, float]] = {
    TEXT_SIZE: {"threshold_pct": 0.1},
    INSTRUCTIONS: {"threshold_pct": 0.5},
    WALL_TIME: {"alpha": 0.01, "min_effect_pct": 5.0},
    COMPILE_TIME: {"threshold_pct": 30.0},  # reported against a 1.3x budget
}
DEFAULT_RULES: dict[str, Rule] = {m.name: rule_for(m, **_THRESHOLDS[m]) for m in METRICS.values()}


#: what a rules file may set per metric: field -> (accepted TOML types, what to say when it is wrong)
_FIELD_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    "unit": ((str,), "a string"),
    "direction": ((str,), "a string"),
    "noise": ((str,), "a string"),
    "threshold_pct": ((int, float), "a number"),
    "alpha": ((int, float), "a number"),
    "min_effect_pct": ((int, float), "a number"),
    "min_samples": ((int,), "a whole number"),
    "gating": ((list,), "a list of subject kinds"),
}


def _checked(path: Path, metric: str, values: dict) -> dict:
    """The section's values with their TOML types checked (one-line InputError), `gating` as a tuple."""
    for name, value in values.items():
        types, what = _FIELD_TYPES[name]
        ok = isinstance(value, types) and not isinstance(value, bool)
        if ok and isinstance(value, float):
            ok = math.isfinite(value)
        if ok and name == "gating":
            ok = all(isinstance(k, str) for k in value)
        if not ok:
            raise InputError(f"rules file {path}: [{metric}] {name} must be {what}, not {value!r}")
    if "min_samples" in values and values["min_samples"] < 1:
        raise InputError(f"rules file {path}: [{metric}] min_samples must be >= 1")
    return {**values, "gating": tuple(values["gating"])} if "gating" in values else values


def load_rules(path: Path | None = None) -> dict[str, Rule]:
    """The default rules, with the fields a TOML file sets per metric section replaced."""
    rules = dict(DEFAULT_RULES)
    if path is None:
        return rules
    data = datafile.read(Path(path), "rules file")  # the farm's one TOML reader: hostile text is one line there
    names = set(_FIELD_TYPES)
    for metric, values in data.items():
        if not isinstance(values, dict) or set(values) - names:
            raise InputError(f"rules file {path}: [{metric}] may only set {', '.join(sorted(names))}")
        values = _checked(path, metric, values)
        base = rules.get(metric) or Rule(metric, values.get("unit", ""))
        rules[metric] = dataclasses.replace(base, **values)
    return rules


@dataclass(frozen=True)
class Judgement:
    """What `judge` says of one metric against one baseline: its verdict, its change, and the test's p-value (None
    when no test ran)."""

    verdict: str
    delta_pct: float | None
    p_value: float | None = None


def delta_pct(base: float, new: float) -> float:
    if base == 0:
        return 0.0 if new == 0 else math.inf
    return (new - base) / base * 100.0


def judge(rule: Rule, base: float | None, new: float, base_samples: Sequence[float] = (),
          new_samples: Sequence[float] = ()) -> Judgement:
    """The verdict on `new` against `base` under `rule` (NEW when there is no baseline)."""
    if base is None:
        return Judgement(NEW, None)
    sign = 1.0 if rule.direction == "lower" else -1.0
    d = delta_pct(base, new)
    worse = sign * d  # > 0 means worse
    if rule.noise == "spread" and min(len(base_samples), len(new_samples)) >= 2:
        # the ranges overlap: one of the builds measured again could give the other's count
        apart = min(new_samples) > max(base_samples) or max(new_samples) < min(base_samples)
        if not apart:
            return Judgement(UNCHANGED, d)
    if rule.noise in ("deterministic", "spread"):
        if worse > rule.threshold_pct:
            return Judgement(REGRESSED, d)
        if worse < -rule.threshold_pct:
            return Judgement(IMPROVED, d)
        return Judgement(UNCHANGED, d)
    if min(len(base_samples), len(new_samples)) < rule.min_samples:
        return Judgement(UNCHANGED, d)
    from scipy.stats import mannwhitneyu

    worse_alt = "greater" if rule.direction == "lower" else "less"
    better_alt = "less" if rule.direction == "lower" else "greater"
    p_worse = float(mannwhitneyu(new_samples, base_samples, alternative=worse_alt).pvalue)
    p_better = float(mannwhitneyu(new_samples, base_samples, alternative=better_alt).pvalue)
    if p_worse < rule.alpha and worse >= rule.min_effect_pct:
        return Judgement(REGRESSED, d, p_worse)
    if p_better < rule.alpha and worse <= -rule.min_effect_pct:
        return Judgement(IMPROVED, d, p_better)
    return Judgement(UNCHANGED, d, min(p_worse, p_better))


@dataclass(frozen=True)
class Comparison:
    """One verdict: a subject's metric under the policy against a baseline."""

    subject: str
    kind: str
    metric: str
    baseline: str  # HEURISTIC_BASELINE or PREVIOUS_BASELINE
    base_value: float | None
    value: float
    delta_pct: float | None
    p_value: float | None
    verdict: str
    gating: bool


def compare_values(rules: Mapping[str, Rule], baseline: str, base: Mapping[tuple[str, str], tuple],
                   new: Mapping[tuple[str, str], tuple], kinds: Mapping[tuple[str, str], str]) -> list[Comparison]:
    """Judge every `(subject, metric) -> (value, samples[, sha256])` in `new` against the same key in `base`.

    Metrics without a rule are not judged. Two rows whose sha256 (of the object file or binary they measured) are
    the same measured byte-identical builds: unchanged, whatever their numbers say (LNT's binary hash check: the
    difference of two samples of one binary is noise).
    """
    out = []
    for (subject, metric), (value, samples, *digest) in sorted(new.items()):
        rule = rules.get(metric)
        if rule is None:
            continue
        b_value, b_samples, *b_digest = base.get((subject, metric), (None, ()))
        identical = bool(digest and b_digest and digest[0] and digest[0] == b_digest[0])
        o = Judgement(UNCHANGED, delta_pct(b_value, value)) if identical and b_value is not None else \
            judge(rule, b_value, value, b_samples, samples)
        kind = kinds[(subject, metric)]
        # Samples from another run were taken under another machine load: only interleaved samples of
        # the same run are a fair test, so across runs a noisy metric is reported but never gates.
        fair = baseline == HEURISTIC_BASELINE or rule.noise != "samples"
        out.append(Comparison(subject, kind, metric, baseline, b_value, value, o.delta_pct, o.p_value, o.verdict,
                              fair and kind in rule.gating))
    return out


def run_verdict(comparisons: Sequence[Comparison]) -> RunVerdict:
    """`regression` when any gating comparison regressed, else `ok`."""
    regressed = any(c.gating and c.verdict == REGRESSED for c in comparisons)
    return RunVerdict.REGRESSION if regressed else RunVerdict.OK
