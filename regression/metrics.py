"""The metrics a regression run measures, declared once (like LNT's test-suite schema).

A metric's name is what history rows, verdicts, reports and alerts carry; its unit is shown with
every value; its direction and noise model are what `rules.judge` needs; `gating` names the
subject kinds whose change decides a run (a policy may trade one module's size against
another's, so per-module sizes are reported but only binary and corpus totals gate); `summary`
says how the report folds many subjects into one trend line. Thresholds are not a property of
the metric but of the rules (`rules.py`), which a rules file may override.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Judging:
    """How a change of a metric is judged: declared by the metric, carried by its rule (rules.Rule), which a
    rules file may override. Keyword-only, so that a metric and a rule keep their own leading fields."""

    #: "lower" or "higher" is better
    direction: str = "lower"
    #: "deterministic" (repeats exactly: any change past the threshold counts), "spread" (nearly repeats: a change
    #: counts past the threshold and outside what the same build measured again spreads over) or "samples" (noisy:
    #: tested for significance)
    noise: str = "deterministic"
    #: subject kinds whose regression makes the run a regression
    gating: tuple[str, ...] = ()

    def judging(self) -> dict[str, object]:
        """These fields by name (a rule starts from its metric's)."""
        return {f: getattr(self, f) for f in ("direction", "noise", "gating")}


@dataclass(frozen=True)
class Metric(Judging):
    name: str
    unit: str
    label: str
    #: decimals to show (None: a whole number with thousands separators)
    decimals: int | None = None
    #: how the report's trend folds subjects: "total" (sum over the gating subjects, binaries and corpus
    #: totals) or "geomean" of the per-subject ratios; the series is named "<label> (<how>)"
    summary: str | None = None

    def format(self, value: float | None, unit: bool = False) -> str:
        """`value` as the report shows it (with the unit when `unit`)."""
        if value is None:
            return "-"
        if self.decimals is not None:
            text = f"{value:.{self.decimals}f}"
        else:
            text = f"{value:,.0f}" if float(value).is_integer() or abs(value) >= 1000 else f"{value:.4g}"
        return f"{text} {self.unit}" if unit else text


TEXT_SIZE = Metric("text_size", "bytes", "size", gating=("binary", "total"), summary="total")
#: A binary's executed instructions vary a little between runs of the same binary (the environment's size, the
#: stack's address, hash seeds): judged against the spread of its own `--repeats` measurements.
INSTRUCTIONS = Metric("instructions", "Ir", "instructions", noise="spread", gating=("workload",), summary="geomean")
WALL_TIME = Metric("wall_time", "s", "wall time", noise="samples", gating=("workload",), decimals=4,
                   summary="geomean")
#: The policy build runs a policy host per compile: reported against a budget, never gating.
COMPILE_TIME = Metric("compile_time", "s", "compile time", decimals=4)

METRICS: dict[str, Metric] = {m.name: m for m in (TEXT_SIZE, INSTRUCTIONS, WALL_TIME, COMPILE_TIME)}


def get(name: str) -> Metric:
    """The declared metric, or a plain one for a name a rules file or an older history introduced."""
    return METRICS.get(name) or Metric(name, "", name)
