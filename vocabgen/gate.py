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
  vocabulary is not worse than the policy retrained with the vocabulary in force (`policy_not_worse`).
  It is not asked to beat LLVM's heuristic: that is the policy's own size check
  (regression/policygate.py), which keeps a losing policy a candidate but no longer keeps its
  vocabulary back (the demo's small training ties the heuristic, and on a farm one unlucky policy
  draw held a good vocabulary back). `latest` of the vocabularies is what the nightly policy is
  retrained with, so a vocabulary that makes the policy worse than today's must not become it.
  It cannot be judged at publish time: the version is listed as a candidate with the rule
  *pending*, the policy chain retrains with it, and the size check's task (regression/tasks.py)
  settles the rule with `policy_not_worse` (`settled`), which moves `latest` if every rule now
  holds. With nothing in force (no `latest` IR vocabulary, no policy trained with it, or one
  that recorded no held-out table) there is nothing to compare: the rule passes saying so, and
  the vocabulary's own checks above decide.
  vocabgen never imports the policy or regression side: it judges the manifests they hand it.

Floors and tolerances come from the `[gate]` settings (farm/config.py, `MLGO_FARM_GATE_*`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from statistics import geometric_mean
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


#: Where a policy manifest records its held-out table (policyhost/release.py `_trained_metrics`): one row per
#: package the policy never trained on, `.text` policy / heuristic as `ratio` (all modules) and, when the package
#: declares the modules it ships, `shipped.ratio` (what the table judges: policytrain/heldout.py `judged`).
POLICY_HELDOUT: tuple[str, ...] = ("metrics", "heldout")


@dataclass(frozen=True)
class Gate:
    """Floors per (kind, section) as fractions in [0, 1]; tolerances per NOT_WORSE rule (absolute);
    `policy_size`: whether an IR version waits for the policy retrained with it (`policy_not_worse`), which may
    be worse than the in-force vocabulary's policy by `policy_tolerance` percent."""

    floors: Mapping[tuple[str, str], float] = field(default_factory=dict)
    tolerances: Mapping[str, float] = field(default_factory=dict)
    policy_size: bool = False
    policy_tolerance: float = 0.0


def gate_from_settings(settings=None) -> Gate:
    """The gate the `[gate]` settings declare (defaults in farm/config.py)."""
    from farm.config import load_settings

    g = (settings or load_settings()).gate
    return Gate(floors={where: float(getattr(g, name)) for name, where in FLOOR_SETTINGS.items()},
                tolerances={rule: float(getattr(g, key)) for rule, (_, key) in NOT_WORSE.items()},
                policy_size=bool(g.policy_size), policy_tolerance=float(g.policy_size_tolerance))


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


def heldout_ratios(policy: Mapping[str, Any] | None) -> dict[str, float]:
    """package -> the `.text` ratio against the heuristic a policy manifest's held-out table judges
    (`POLICY_HELDOUT`); packages without a ratio (a failed compile) are left out."""
    rows: Any = policy
    for key in POLICY_HELDOUT:
        rows = rows.get(key) if isinstance(rows, Mapping) else None
    out = {}
    for row in rows if isinstance(rows, list) else ():
        if not isinstance(row, Mapping) or not isinstance(row.get("package"), str):
            continue
        judged = row["shipped"] if isinstance(row.get("shipped"), Mapping) else row
        ratio = judged.get("ratio")
        if isinstance(ratio, int | float) and not isinstance(ratio, bool) and ratio > 0:
            out[row["package"]] = float(ratio)
    return out


def no_policy_trained(vocab: str, in_force_vocab: str | None, why: str) -> Check:
    """The settled `policy_size` rule of IR vocabulary `vocab` when no policy could be trained with it (`why`).

    There is no number to compare, and a failure is not a result: with an IR vocabulary in force the new one does
    not replace it on no evidence (it stays a candidate, saying why); with none in force there is nothing to
    protect and, as in `policy_not_worse`, the vocabulary's own checks decide."""
    if in_force_vocab is None or in_force_vocab == vocab:
        return Check(POLICY_SIZE, True, f"no policy could be trained with it ({why}); no IR vocabulary in force: "
                                        "its own checks decide")
    return Check(POLICY_SIZE, False, f"no policy could be trained with it: {why}; {in_force_vocab} stays in force")


def policy_not_worse(vocab: str, policy: Mapping[str, Any], in_force_vocab: str | None,
                     in_force: Mapping[str, Any] | None, tolerance: float) -> Check:
    """The settled `policy_size` rule of IR vocabulary `vocab`: `policy` (the manifest of the policy retrained with
    it) is not worse than `in_force` (the manifest of a policy retrained with `in_force_vocab`, the vocabulary in
    force; None: there is none, or no policy was trained with it, and the vocabulary's own checks decide).

    Compared on the held-out packages both recorded (`heldout_ratios`, the same packages for one recipe): the
    geomean of the new policy's `.text` ratios against the heuristic may exceed the in-force one's by at most
    `tolerance` percent, relative (`[gate] policy_size_tolerance`, 0.5 by default). That is the noise the size
    rules already accept (how far one benchmark may grow past the heuristic), and it is wider than what two draws
    of one recipe differ by (0.99193x against 0.99442x and 0.99398x on fourteen packages, policytrain/recipes.py),
    so an unlucky draw does not hold a vocabulary back while a vocabulary that costs the policy more than that
    does. Neither policy has to beat the heuristic. A new policy without a held-out table fails when the in-force
    one has one; no in-force table, or no package in common, leaves nothing to compare and passes saying so."""
    if in_force is None:
        why = ("no IR vocabulary in force" if in_force_vocab is None
               else f"no policy was trained with the vocabulary in force ({in_force_vocab})")
        return Check(POLICY_SIZE, True, f"{why}: its own checks decide")
    theirs_name = in_force.get("version")
    mine, theirs = heldout_ratios(policy), heldout_ratios(in_force)
    if not theirs:
        return Check(POLICY_SIZE, True, f"policy {theirs_name} (trained with {in_force_vocab}) recorded no held-out "
                                        "table: nothing to compare, its own checks decide")
    if not mine:
        return Check(POLICY_SIZE, False, f"policy {policy.get('version')} recorded no held-out table; policy "
                                         f"{theirs_name} (trained with {in_force_vocab}) did")
    common = sorted(set(mine) & set(theirs))
    if not common:
        return Check(POLICY_SIZE, True, f"policies {policy.get('version')} and {theirs_name} share no held-out "
                                        "package: nothing to compare, its own checks decide")
    g, g_in = geometric_mean([mine[p] for p in common]), geometric_mean([theirs[p] for p in common])
    bound = g_in * (1 + tolerance / 100)
    ok = g <= bound
    per = ", ".join(f"{p} {mine[p]:.4f}x vs {theirs[p]:.4f}x" for p in common)
    return Check(POLICY_SIZE, ok, f"policy {policy.get('version')} trained with {vocab}: held-out geomean {g:.4f}x "
                                  f"vs {g_in:.4f}x for policy {theirs_name} trained with {in_force_vocab} ({per}); "
                                  f"{'not worse than' if ok else 'worse than'} it by the tolerance {tolerance:g}%")
