"""A gate's verdict on a version, as every artifact index records it: checks, some of them pending.

Why here and not with one role's rules: the vocabulary gate (vocabgen/gate.py) judges, the
policy store lists a version pending its size check, and the regression side settles that check
(regression/policygate.py): all three read and write the same record in the store's index
(farm/artifacts/versions.py). `accepted` says whether a recorded verdict lets a version be `latest`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: The rule a consumer of an IR vocabulary settles after publishing: the inliner policy retrained with
#: it does not grow code (regression/policygate.py judges it; vocabgen/gate.py and policyhost wait for it).
POLICY_SIZE = "policy_size"


@dataclass(frozen=True)
class Check:
    rule: str
    ok: bool
    detail: str
    #: not judged yet: a later step settles it (`settled`); counts as not passed until then
    pending: bool = False
    #: the figure the rule judged, when it has one (the size check's geomean `.text` ratio), so that lists and pages
    #: show the rule's own number rather than one like it
    value: float | None = None


@dataclass(frozen=True)
class Verdict:
    checks: tuple[Check, ...]
    against: str | None  # the `latest` version compared with, None when there was none

    @property
    def passed(self) -> bool:
        return all(c.ok for c in self.checks)

    @property
    def reasons(self) -> list[str]:
        """Why the version did not pass (empty when it did)."""
        return [f"{c.rule}: {c.detail}" for c in self.checks if not c.ok]

    @property
    def pending(self) -> list[str]:
        return [c.rule for c in self.checks if c.pending]

    def to_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "against": self.against, "reasons": self.reasons, "pending": self.pending,
                "checks": [{"rule": c.rule, "ok": c.ok, "detail": c.detail, **({"pending": True} if c.pending else {}),
                            **({"value": c.value} if c.value is not None else {})} for c in self.checks]}

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> Verdict:
        checks = tuple(Check(str(c.get("rule")), c.get("ok") is True, str(c.get("detail", "")),
                             c.get("pending") is True, _number(c.get("value")))
                       for c in record.get("checks") or () if isinstance(c, Mapping))
        return cls(checks, record.get("against"))


def _number(x: Any) -> float | None:
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else None


def check_value(record: Mapping[str, Any] | None, rule: str) -> float | None:
    """The figure a recorded verdict's `rule` judged (None when it has none, or is pending)."""
    if not isinstance(record, Mapping):
        return None
    return next((c.value for c in Verdict.from_dict(record).checks if c.rule == rule and not c.pending), None)


def awaits_only(record: Mapping[str, Any] | None, rule: str) -> bool:
    """Whether a recorded verdict fails only because `rule` is pending (every other rule holds)."""
    if not isinstance(record, Mapping):
        return False
    v = Verdict.from_dict(record)
    return bool(v.checks) and v.pending == [rule] and all(c.ok for c in v.checks if c.rule != rule)


def settled(record: Mapping[str, Any], outcome: Check) -> dict[str, Any]:
    """A recorded verdict with its pending `outcome.rule` replaced by `outcome` (pure; KeyError if not pending)."""
    v = Verdict.from_dict(record)
    if outcome.rule not in v.pending:
        raise KeyError(outcome.rule)
    checks = tuple(outcome if c.rule == outcome.rule else c for c in v.checks)
    return Verdict(checks, v.against).to_dict()


def accepted(entry: Mapping[str, Any]) -> bool:
    """Whether a listed version may be `latest`: it passed the gate or was promoted (or predates the gate)."""
    gate = entry.get("gate")
    return bool(entry.get("promoted")) or not isinstance(gate, dict) or gate.get("passed") is True
