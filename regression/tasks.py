"""Celery: the size check that settles a retrained policy's state and its vocabulary's (regression/policygate.py).

`size_check` is the second link of the policy chain (pipeline/: policytrain.tasks.retrain, then this;
the policy side never imports this one). It takes the retrain's publish result, builds the gate's
benchmarks with the new policy and with the policy in force, and, under the farm's publish lock,
records the `policy_size` outcome on the policy (`POLICIES.settle`) and the IR vocabulary's own
`policy_size` rule on the vocabulary it was trained with (`VOCABULARIES.settle`), through each kind's
handle (farm/artifacts/shelf.py): each becomes `latest` when it holds (docs/artifacts.md). The two
differ: the policy must beat the heuristic (regression/policygate.py); the vocabulary only asks that
its policy is not worse than the one trained with the vocabulary in force (vocabgen/gate.py
`policy_not_worse`, `_vocab_check` here), so a good vocabulary is not kept back by one unlucky draw.

`deliver_alerts` is Celery beat's pass over the alerts' outbox (pipeline/ schedules it every `DELIVER_EVERY`
seconds): the pass itself, claim, send and retry, is regression/alerts/delivery.py's; its name stays this module's,
the name queued messages and the schedule carry. `sweep_unfinished` marks failed what runs left unfinished.

Idempotent with the chain's machinery (farm.celery_app.RELIABLE): a version whose rule is settled
is not measured again (the recorded outcome is returned), and measuring runs under a lock per
policy version, so the chain the vocabulary publish started and the one a builder started for the
same version measure once.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from farm.artifacts.verdict import POLICY_SIZE, Check
from farm.celery_app import RELIABLE, app
from regression.alerts.delivery import DELIVER_EVERY, MAIL_MOST

log = logging.getLogger(__name__)


def _recorded(entry: dict[str, Any] | None) -> Check | None:
    """The settled `policy_size` check of an index entry, None while pending or never gated."""
    for c in ((entry or {}).get("gate") or {}).get("checks") or ():
        if c.get("rule") == POLICY_SIZE and not c.get("pending"):
            return Check(POLICY_SIZE, c.get("ok") is True, str(c.get("detail", "")))
    return None


def _measured(settings, store, advisor: str, version: str, in_force: str | None) -> Check:
    """Build the gate's benchmarks with the heuristic, `version` and `in_force` (if any) and check their sizes."""
    from farm.toolchain import Toolchain
    from policyhost.published import resolve_published
    from policyhost.release import seen_packages
    from regression import policygate

    toolchain = Toolchain.from_settings(settings)
    policies, manifests = {}, {}
    for name in (version, in_force):
        if name is None:
            continue
        model, manifests[name], vocab = resolve_published(f"store:{name}", advisor, toolchain=toolchain)
        policies[name] = policygate.Policy(name, Path(model), Path(vocab) if vocab else None, advisor)
    trained_on = seen_packages(manifests[version])
    work = settings.var_dir / "policy" / "gate" / advisor / version
    g = settings.gate
    rows, broken, skipped = policygate.measure_sizes(
        toolchain, policygate.gate_benchmarks(g.policy_benchmarks), policies[version],
        policies.get(in_force), work / "build", settings.var_dir / "regression" / "sources", trained_on=trained_on)
    return policygate.check_sizes(rows, g.policy_bar, g.policy_cap, in_force, broken, skipped)


def _trained_with(store, advisor: str, vocab: str, other_than: str) -> str | None:
    """The policy of `advisor` trained with IR vocabulary `vocab` that a new one is compared with (not `other_than`):
    the policies' `latest` if it was, else the newest listed one (a candidate too: held back by its own size check,
    its held-out numbers still say what `vocab` gave the policy); None when none was."""
    from farm.artifacts import POLICIES

    latest = POLICIES.read_latest(store, advisor) or {}
    if latest.get("vocab_version") == vocab and latest.get("version") not in (None, other_than):
        return str(latest["version"])
    rows = [e for e in POLICIES.read_index(store)
            if e.get("advisor") == advisor and e.get("vocab_version") == vocab and e.get("version") != other_than]
    return str(max(rows, key=lambda e: str(e.get("published_at") or ""))["version"]) if rows else None


def _vocab_check(settings, store, advisor: str, version: str, manifest: dict[str, Any], vocab: str) -> Check:
    """The settled `policy_size` rule of IR vocabulary `vocab`, which policy `version` (its `manifest`) was trained
    with: that policy against the one trained with the IR vocabulary in force (vocabgen/gate.py `policy_not_worse`)."""
    from farm.artifacts import POLICIES, VOCABULARIES
    from vocabgen.gate import gate_from_settings, policy_not_worse

    in_force_vocab = (VOCABULARIES.read_latest(store, "ir") or {}).get("version")
    if in_force_vocab == vocab:
        in_force_vocab = None  # made `latest` by hand meanwhile: nothing else in force to compare with
    rival = _trained_with(store, advisor, in_force_vocab, version) if in_force_vocab else None
    return policy_not_worse(vocab, manifest, in_force_vocab,
                            POLICIES.show(store, advisor, rival) if rival else None,
                            gate_from_settings(settings).policy_tolerance)


def summary(advisor: str, version: str, created: bool, check: Check, latest: str | None, vocab: str | None,
            vocab_state: str | None, published_at: str | None = None) -> str:
    """One line: the policy, the check, where `latest` stands, and the vocabulary's state. A version this chain
    did not create says when it was published: on a fresh store the vocabulary chain's own retrain publishes the
    model a policy builder triggered by that vocabulary then reproduces, and a bare "already published" there
    reads as if the store were not fresh."""
    when = f" at {published_at.replace('T', ' ').replace('Z', ' UTC')}" if published_at else ""
    what = "published" if created else f"already published{when}"
    head = f"policy {advisor} {version} ({what}, size check {'passed' if check.ok else 'FAILED'}: {check.detail}"
    where = "now latest" if latest == version else f"latest stays at {latest or 'none'}"
    tail = f"; vocabulary ir {vocab} {vocab_state}" if vocab and vocab_state else ""
    return f"{head}; {where}{tail})"


# named as it was (`size_gate`): the name queued messages and workers of the previous release carry
@app.task(name="regression.tasks.size_gate", bind=True, **RELIABLE)
def size_check(self, published: dict[str, Any]) -> dict[str, Any]:
    """Settle `published` (policytrain.tasks.retrain's result); the outcome, states and a summary line."""
    from farm.artifacts import POLICIES, VOCABULARIES
    from farm.config import load_settings
    from farm.locks import dir_lock, publish_lock
    from farm.objectstore import store_from_settings

    s = load_settings()
    store = store_from_settings(s)
    advisor, version = str(published["advisor"]), str(published["version"])
    manifest = POLICIES.show(store, advisor, version)
    vocab = manifest.get("vocab_version")

    def entry() -> dict[str, Any] | None:
        return POLICIES.entry(store, advisor, version)

    with dir_lock(s.var_dir / "policy" / "gate" / advisor / f"{version}.lock"):
        check = _recorded(entry())
        if check is None and POLICY_SIZE in (((entry() or {}).get("gate") or {}).get("pending") or ()):
            in_force = (POLICIES.read_latest(store, advisor) or {}).get("version")
            check = _measured(s, store, advisor, version, None if in_force == version else in_force)
            with publish_lock(store, s.celery.broker_url, settings=s):
                POLICIES.settle(store, advisor, version, check)
                if vocab:
                    VOCABULARIES.settle(store, "ir", vocab, _vocab_check(s, store, advisor, version, manifest, vocab))
    if check is None:
        check = Check(POLICY_SIZE, True, "not gated (published without a pending size check)")
    latest = (POLICIES.read_latest(store, advisor) or {}).get("version")
    vocab_entry = VOCABULARIES.entry(store, "ir", vocab) if vocab else None
    vocab_state = (vocab_entry or {}).get("state")
    line = summary(advisor, version, bool(published.get("created")), check, latest, vocab, vocab_state,
                   manifest.get("published_at"))
    (log.info if check.ok else log.warning)("%s", line)
    return {**published, "state": (entry() or {}).get("state"), "latest": latest, "size_check": {
        "ok": check.ok, "detail": check.detail}, "vocab_state": vocab_state, "summary": line}


#: Seconds between two sweeps of the runs this host could not mark failed (regression/unfinished.py).
SWEEP_EVERY = 600.0


@app.task(name="regression.tasks.deliver_alerts", soft_time_limit=DELIVER_EVERY + MAIL_MOST + 60)
def deliver_alerts() -> dict[str, Any]:
    """One pass of the alerts' delivery (regression/alerts/delivery.py `deliver_due`)."""
    from farm.config import load_settings
    from regression.alerts.delivery import deliver_due

    return deliver_due(load_settings())


@app.task(name="regression.tasks.sweep_unfinished", soft_time_limit=SWEEP_EVERY)
def sweep_unfinished() -> dict[str, Any]:
    """Mark failed the runs this host spooled while the history was down (regression/unfinished.py), now that it
    is back; the next run on the host does the same. A history still down is logged and tried on the next sweep."""
    from farm.config import load_settings
    from farm.errors import FarmError
    from regression import unfinished
    from regression.compare import history_path
    from regression.history import History

    s = load_settings()
    if not any(unfinished.spool_dir(s).glob("*/*.json")):
        return {"failed": []}
    try:
        history = History.existing(history_path(s))
        done = unfinished.settle(history, s) if history is not None else []
    except FarmError as e:
        log.warning("unfinished runs not swept yet: %s", e)
        return {"failed": [], "error": str(e)}
    for name in done:
        log.warning("%s marked failed: the history was down when it ended", name)
    return {"failed": done}
