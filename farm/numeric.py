"""The farm's one geometric mean: how a set of ratios (a policy's `.text` against the heuristic's) is summarised.

Why below every role: the size check that gates a policy (regression/policygate.py), the trainer that picks
its checkpoint by the same bar (policytrain/trainer.py, policytrain/heldout.py) and the regression report
(regression/report.py) must agree to the last digit on what "the geomean" of the same ratios is; two copies
had drifted into two ways of computing it (math and numpy). Plain `math`: no numpy import for a gate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def geomean(xs: Sequence[float]) -> float:
    """The geometric mean of positive numbers; NaN for none."""
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")
