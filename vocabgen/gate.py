"""The promotion gate, as data: which newly published vocabulary may become `latest`.

Why a gate: `latest` is what downloads, the inliner policy's retraining and the regression
builders follow, and publishing used to move it unconditionally, so a version trained on a
four-file dataset (held-out MRR 0.418) replaced one trained on a whole corpus (0.619) just by
being published later. Now a new version is published as a *candidate* and `latest` moves to it
only when every rule below holds; otherwise it stays listed with the reasons, and an operator can
still promote it by hand (`mlgo-farm vocab promote`, recorded with a reason).

The rules, each judged from manifests alone (`promotion_verdict` is pure, so a verdict can be recomputed and
tested without a store):

* `validation`: LLVM loaded exactly these bytes (the manifest's validation record names their
  sha256). Publishing refuses anything else already; the gate says it again so that a verdict
  read on its own is complete.
* `coverage`: per section, the fraction of LLVM's entities the triplets trained (not filler) is
  at least the floor of `[gate] min_<kind>_<section>`. A manifest without per-section coverage
  (made before coverage was recorded) fails: nobody can tell its filler from its training.
* `mrr`, `hits_at_10`, `analogy`: not worse than the current `latest`'s by more than the
  tolerance (absolute). The analogy score is the one over *all* questions, where an untrained
  entity counts as wrong (vocabgen/analogy.py), so a vocabulary cannot pass by leaving entities
  out. With no `latest`, or a `latest` made before the metric was recorded, there is nothing to
  compare and the rule passes saying so; a candidate without a metric its `latest` has fails.
  Link prediction is measured on each version's own held-out triplets, so across datasets it is
  a sanity bound (a tiny dataset's collapse), not a fine ranking: hence the tolerance.

* `policy_size` (IR only, `[gate] policy_size`): the inliner policy retrained with this
  vocabulary does not grow `.text` on the regression benchmarks against the policy in force.
  `latest` of the vocabularies is what the nightly policy is retrained with, so a vocabulary that
  makes the policy worse must not become it, however good its own metrics. This rule cannot be
  judged at publish time: the version is listed as a candidate with the rule *pending*, the
  policy chain retrains with it, and the size check (regression/policygate.py) settles the rule
  (`settled`), which moves `latest` if every rule now holds. vocabgen never imports the policy
  or regression side; it only records what they found.

Floors and tolerances come from the `[gate]` settings (farm/config.py, `MLGO_FARM_GATE_*`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from farm.artifacts.verdict import POLICY_SIZE, Check, Verdict

#: `[gate]` setting -> (kind, section) whose trained fraction it bounds from below.
FLOOR_SETTINGS: dict[str, tuple[str, str]] = {
    "min_ir_opcodes": ("ir", "Opcodes"),
    "min_ir_types": ("ir", "Types"),
    "min_ir_arguments": ("ir", "Arguments"),
    "min_mir_opcodes": ("mir", "Opcodes"),
    "min_mir_common_operands": ("mir", "CommonOperands"),
    "min_mir_physical_registers": ("mir", "PhysicalRegisters"),
    "min_mir_virtual_registers": ("mir", "VirtualRegisters"),
}

#: rule name -> (where the metric sits in a manifest, `[gate]` setting of its tolerance); higher is better.
NOT_WORSE: dict[str, tuple[tuple[str, ...], str]] = {
    "mrr": (("metrics", "holdout", "mrr"), "mrr_tolerance"),
    "hits_at_10": (("metrics", "holdout", "hits_at_10"), "hits_at_10_tolerance"),
    "analogy": (("metrics", "analogy", "score_all"), "analogy_tolerance"),
}


#: The kinds the `policy_size` rule applies to: the inliner policy reads IR2Vec embeddings
#: (policyhost/advisors.py); no MIR policy consumes MIR2Vec yet.
POLICY_KINDS = frozenset({"ir"})


@dataclass(frozen=True)
class Gate:
    """Floors per (kind, section) as fractions in [0, 1]; tolerances per NOT_WORSE rule (absolute);
    `policy_size`: whether an IR version waits for its retrained policy's size check."""

    floors: Mapping[tuple[str, str], float] = field(default_factory=dict)
    tolerances: Mapping[str, float] = field(default_factory=dict)
    policy_size: bool = False


def gate_from_settings(settings=None) -> Gate:
    """The gate the `[gate]` settings declare (defaults in farm/config.py)."""
    from farm.config import load_settings

    g = (settings or load_settings()).gate
    return Gate(floors={where: float(getattr(g, name)) for name, where in FLOOR_SETTINGS.items()},
                tolerances={rule: float(getattr(g, key)) for rule, (_, key) in NOT_WORSE.items()},
                policy_size=bool(g.policy_size))


#: A gate that every validated version with recorded coverage passes: floors 0, any drop tolerated.
OPEN = Gate(floors={where: 0.0 for where in FLOOR_SETTINGS.values()},
            tolerances={rule: float("inf") for rule in NOT_WORSE})


def _metric(manifest: Mapping[str, Any] | None, path: tuple[str, ...]) -> float | None:
    node: Any = manifest
    for key in path:
        if not isinstance(node, Mapping):
            return None
        node = node.get(key)
    return float(node) if isinstance(node, int | float) and not isinstance(node, bool) else None


def _validation(manifest: Mapping[str, Any]) -> Check:
    v = manifest.get("validation")
    if not isinstance(v, Mapping) or v.get("ok") is not True:
        return Check("validation", False, "LLVM has not validated this vocabulary")
    if v.get("sha256") != manifest.get("sha256"):
        return Check("validation", False, "the validation record is for other bytes")
    return Check("validation", True, f"LLVM {v.get('llvm_version') or '?'} loaded it")


def _coverage(manifest: Mapping[str, Any], floors: Mapping[tuple[str, str], float]) -> list[Check]:
    kind = manifest.get("kind")
    wanted = [(section, floor) for (k, section), floor in floors.items() if k == kind]
    coverage = manifest.get("coverage")
    if not isinstance(coverage, Mapping):
        return [Check("coverage", False, "the manifest records no per-section coverage (trained/total), "
                                         "so its filler cannot be told from its training")]
    out = []
    for section, floor in wanted:
        c = coverage.get(section)
        trained, total = (c.get("trained"), c.get("total")) if isinstance(c, Mapping) else (None, None)
        counts = all(isinstance(x, int) and not isinstance(x, bool) for x in (trained, total))
        if not counts or not 0 <= trained <= total:
            out.append(Check("coverage", False, f"{section}: no trained/total counts in the manifest"))
            continue
        share = trained / total if total else 1.0
        ok = share >= floor
        out.append(Check("coverage", ok, f"{section} {trained}/{total} trained ({share:.1%}) "
                                         f"{'>=' if ok else 'below the floor'} {floor:.1%}"))
    return out


def _not_worse(rule: str, manifest: Mapping[str, Any], latest: Mapping[str, Any] | None,
               tolerance: float) -> Check:
    path, _ = NOT_WORSE[rule]
    mine = _metric(manifest, path)
    if latest is None:
        return Check(rule, True, f"{_fmt(mine)}; no latest to compare with")
    theirs = _metric(latest, path)
    if theirs is None:
        return Check(rule, True, f"{_fmt(mine)}; latest {latest.get('version')} has no {rule} recorded")
    if mine is None:
        return Check(rule, False, f"none recorded, latest {latest.get('version')} has {theirs:.3f}")
    ok = mine >= theirs - tolerance
    return Check(rule, ok, f"{mine:.3f} vs latest {theirs:.3f} "
                           f"({'within' if ok else 'worse than'} the tolerance {tolerance:g})")


def _fmt(x: float | None) -> str:
    return "none recorded" if x is None else f"{x:.3f}"


def promotion_verdict(manifest: Mapping[str, Any], latest: Mapping[str, Any] | None, gate: Gate) -> Verdict:
    """The gate's verdict on a version's manifest against the current `latest` manifest (None: no latest)."""
    checks = [_validation(manifest), *_coverage(manifest, gate.floors)]
    for rule in NOT_WORSE:
        checks.append(_not_worse(rule, manifest, latest, gate.tolerances.get(rule, 0.0)))
    if gate.policy_size and manifest.get("kind") in POLICY_KINDS:
        checks.append(Check(POLICY_SIZE, False, "waiting for the size check of the policy retrained with it",
                            pending=True))
    return Verdict(tuple(checks), None if latest is None else str(latest.get("version")))
