"""How the dashboard writes numbers (master/dashboard/numbers.py)."""

from __future__ import annotations

from master.dashboard import numbers


def test_a_ratio_keeps_its_decimals_when_it_happens_to_be_whole() -> None:
    assert numbers.ratio(1.0) == "1.0000" and numbers.ratio(0.99193) == "0.9919" and numbers.ratio(1) == "1.0000"
    assert numbers.ratio(None) == "-" and numbers.ratio(float("nan")) == "nan" and numbers.ratio(True) == "True"
    assert numbers.number(412) == "412", "a count stays a count"
