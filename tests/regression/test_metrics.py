"""Metrics are declared once: the rules, the measurements and the report all take them from metrics.py."""

from __future__ import annotations

from regression import metrics, rules


def test_default_rules_start_from_the_declared_metrics() -> None:
    assert set(rules.DEFAULT_RULES) == set(metrics.METRICS)
    for name, rule in rules.DEFAULT_RULES.items():
        m = metrics.METRICS[name]
        assert (rule.unit, rule.direction, rule.noise, rule.gating) == (m.unit, m.direction, m.noise, m.gating)


def test_values_are_shown_as_the_metric_says() -> None:
    assert metrics.TEXT_SIZE.format(12345) == "12,345" and metrics.TEXT_SIZE.format(12345, unit=True) == "12,345 bytes"
    assert metrics.WALL_TIME.format(0.123456) == "0.1235" and metrics.COMPILE_TIME.format(None) == "-"
    assert metrics.get("made_up").format(2.5) == "2.5"  # a metric a rules file adds is still shown


def test_measurements_carry_the_declared_unit(compare_corpus, toolchain, tmp_path) -> None:
    from regression import build, compare

    variants = [build.heuristic_variant(), build.policy_variant("heuristic")]
    rows, _ = compare.measure_corpus(toolchain, compare_corpus, variants, tmp_path, ("-Oz",), 2)
    assert rows and all(r.unit == metrics.METRICS[r.metric].unit for r in rows)
