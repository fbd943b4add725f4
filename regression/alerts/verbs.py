"""`mlgo-farm regress alert list|show|set`: the alerts' records and their triage (regression/alerts/records.py);
`mlgo-farm regress alerts [--flush]`: their mails in the outbox, and a delivery pass now
(regression/alerts/delivery.py); `mlgo-farm regress bisect ID`: which changed input made the alert's builder regress
(regression/bisectrun.py), all here, or one step at a time (`--next`, `--rerun SPEC`, `--finish`) as the
`regression-bisect` builds drive it.

`regress alerts` (plural) is the mail outbox; `regress alert` the alerts themselves. Each `regress alert` and
`regress bisect` verb answers with sentences or, with `--json`, one object (farm/answer.py); a bad id or state is
one line and exit 2 (InputError).
"""

from __future__ import annotations

import argparse
import getpass
import os
import time
from collections.abc import Mapping
from typing import Any

from farm.answer import Answer, json_option
from farm.cli import record_id


def _history(args: argparse.Namespace):
    from regression.compare import open_history
    from regression.history import History

    return History(args.history) if args.history else open_history()


def _store(args: argparse.Namespace):
    from regression.alerts.records import AlertStore

    return AlertStore(_history(args))


def _triage_days() -> float:
    from farm.config import load_settings

    return load_settings().alerts.triage_days


def _when(t: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(t)) if t else "-"


def _line(a: Mapping[str, Any]) -> str:
    flag = " OVERDUE" if a["overdue"] else ""
    group = f" group #{a['group_id']}" if a["group_id"] else ""
    return (f"#{a['id']:<4} {a['kind']:<11} {a['state'] + flag:<22} {a['builder']}: bad {a['bad_run']}, good "
            f"{a['good_run'] or '-'}, since {_when(a['created'])}{group}")


def _list(args: argparse.Namespace) -> Answer:
    days = _triage_days()
    found = _store(args).alerts(state=args.state, builder=args.builder)
    fields = {"alerts": [a.as_json(days) for a in found], "triage_days": days}
    return Answer(fields, lambda f: "\n".join(_line(a) for a in f["alerts"]) or "no alerts")


def _inputs(inputs: Mapping[str, list]) -> str:
    return ", ".join(f"{k} {old or '-'} -> {new or '-'}" for k, (old, new) in inputs.items()) or "none known"


def _show_said(f: Mapping[str, Any]) -> str:
    a = f["alert"]
    lines = [_line(a), f"changed inputs: {_inputs(a['inputs'])}"]
    if a["closed_by"]:
        lines.append(f"closed by run {a['closed_by']}")
    if a["bisect"]:
        lines.append(f"bisect: {a['bisect']['sentence']}")
    lines.append("states:")
    lines += [f"  {_when(s['at'])}  {s['state']:<15} {s['who']}: {s['note']}" for s in f["states"]]
    return "\n".join(lines)


def _show(args: argparse.Namespace) -> Answer:
    store = _store(args)
    alert = store.get(args.id)
    return Answer({"alert": alert.as_json(_triage_days()), "states": [s.__dict__ for s in store.states(alert.id)]},
                  _show_said)


def _set(args: argparse.Namespace) -> Answer:
    store = _store(args)
    before = store.get(args.id)
    who = args.by or os.environ.get("USER") or getpass.getuser()
    after = store.set_state(args.id, args.state, who, args.note)
    fields = {"alert": after.as_json(_triage_days()), "was": before.state, "by": who, "note": args.note.strip()}
    return Answer(fields, lambda f: f"alert #{f['alert']['id']}: {f['was']} -> {f['alert']['state']} by {f['by']}: "
                                    f"{f['note']}")


def _outbox(args: argparse.Namespace) -> int:
    """`regress alerts`: every queued mail and how its delivery went; `--flush` a delivery pass first (exit 1 when
    a due mail is left)."""
    from farm.config import load_settings
    from regression.alerts.delivery import deliver_pending
    from regression.alerts.outbox import Outbox

    settings = load_settings()
    history = _history(args)
    if args.flush:
        d = deliver_pending(history, settings.smtp, held=args.held)
        print(f"sent {d.sent}, still pending {d.pending}")
        for e in d.errors:
            print(f"  {e}")
    now = time.time()
    outbox = Outbox(history)
    for m in outbox.messages():
        state = "sent" if m.sent else f"pending ({m.attempts} attempts; {m.last_error or 'not tried yet'})"
        if not m.sent and m.hold_until and m.hold_until > now:
            state += time.strftime(", held for its alert group until %H:%M UTC", time.gmtime(m.hold_until))
        print(f"{m.id:>4} {m.kind:<10} {m.builder}/{m.run_id} to {', '.join(m.recipients)}: {state}")
    return 1 if args.flush and outbox.messages(pending_only=True, due_only=not args.held) else 0


def _to_bisect(store, which: str) -> int:
    """An alert's number, or `latest`: the newest open regression alert without a bisect (what a forced
    `regression-bisect` build does by default)."""
    from farm import ids
    from farm.errors import InputError
    from regression.alerts.records import OPEN, REGRESSION

    if which != "latest":
        try:
            return ids.record_id(which)
        except InputError as e:
            raise InputError(f"{e}, or latest") from None
    waiting = [a for a in store.alerts(kind=REGRESSION) if a.state in OPEN and a.bisect is None and a.good_run]
    if not waiting:
        raise InputError("no open regression alert waits for a bisect")
    return waiting[0].id


def _bisect(args: argparse.Namespace) -> Answer:
    from farm.config import load_settings
    from farm.toolchain import Toolchain
    from regression import bisectrun
    from regression.bisectllvm import farm_cache, farm_range

    store = _store(args)
    alert_id = _to_bisect(store, args.id)
    settings = load_settings()
    commits = farm_range(settings)  # an LLVM range is listed in a clone of [llvm] repo, when there is one
    if args.next:
        nxt = bisectrun.next_of(alert_id, store.history, commits)
        return Answer(nxt.as_json(), lambda f: f"alert #{f['alert']}: {f['sentence']} ({f['reruns']} re-runs made, "
                                               f"at most {f['most']})")
    if args.finish:
        found = bisectrun.finish(alert_id, store.history, settings, commits)
    else:
        host = Toolchain.from_settings(settings)
        here, cache = bisectrun.only(host), farm_cache(settings, host)
        toolchains = (lambda v: here(v) or cache.need(v)) if cache is not None else here
        if args.rerun:
            step = bisectrun.rerun(alert_id, args.rerun, store.history, settings, toolchains, commits)
            fields = {"alert": alert_id, "trial": args.rerun, "run_id": step.run_id, "verdict": step.verdict,
                      "error": step.error, "seconds": round(step.seconds, 1)}
            return Answer(fields, lambda f: f"alert #{f['alert']}: re-run {f['trial']} ({f['run_id']}): "
                                            f"{f['verdict'] or 'failed: ' + str(f['error'])}",
                          exit_code=1 if step.error else 0)
        found = bisectrun.run_bisect(alert_id, store.history, settings, host, toolchains, commits=commits)
    fields = {"alert": store.get(alert_id).as_json(_triage_days()), "culprit": found.culprit, "why": found.why,
              "commit": found.commit, "reruns": len(found.steps), "evidence": found.evidence,
              "sentence": found.sentence()}
    return Answer(fields, lambda f: f"alert #{f['alert']['id']}: {f['sentence']} ({f['reruns']} re-runs)")


def _spec(value: str) -> str:
    from regression.bisect import check_spec

    try:
        return check_spec(value)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def register(rsub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Add `regress alerts`, `regress alert list|show|set` and `regress bisect`."""
    from regression.alerts.records import IMPROVEMENT, STATES

    out = rsub.add_parser("alerts", parents=[common], help="show the alert outbox; --flush retries pending alerts")
    out.add_argument("--flush", action="store_true", help="try to send pending alerts now")
    out.add_argument("--held", action="store_true", help="with --flush: also the mails still held for their alert "
                     "group ([alerts] group_wait)")
    out.set_defaults(func=_outbox)

    al = rsub.add_parser("alert", help="regression alerts as records: list, show, set a state (triage)")
    asub = al.add_subparsers(dest="alert_verb", metavar="VERB", required=True)
    ls = asub.add_parser("list", parents=[common, json_option()], help="alerts, newest first (overdue flagged)")
    ls.add_argument("--state", choices=(*STATES, IMPROVEMENT), help="only alerts in this state")
    ls.add_argument("--builder", help="only this builder's alerts")
    ls.set_defaults(func=_list)
    show = asub.add_parser("show", parents=[common, json_option()], help="one alert: runs, changed inputs, states")
    show.add_argument("id", type=record_id, help="the alert's number")
    show.set_defaults(func=_show)
    st = asub.add_parser("set", parents=[common, json_option()], help="change an alert's state, with a note")
    st.add_argument("id", type=record_id, help="the alert's number")
    st.add_argument("state", help="untriaged, acknowledged, investigating, fixed, invalid or wontfix")
    st.add_argument("--note", required=True, help="why (kept in the alert's history of states)")
    st.add_argument("--by", help="who changes it (default: the login name)")
    st.set_defaults(func=_set)
    bi = rsub.add_parser("bisect", parents=[common, json_option()],
                         help="re-run an alert's bad comparison with each changed input swapped back: the culprit")
    bi.add_argument("id", metavar="ID", help="the alert's number, or latest (the newest open one not bisected yet)")
    step = bi.add_mutually_exclusive_group()
    step.add_argument("--next", action="store_true",
                      help="only say the next re-run to make (or that it is done), from the re-runs recorded so far")
    step.add_argument("--rerun", metavar="SPEC", type=_spec,
                      help="make that one re-run and record it: control, policy, vocab, bench, llvm or llvm=COMMIT")
    step.add_argument("--finish", action="store_true",
                      help="decide from the recorded re-runs, keep the outcome on the alert, mail the follow-up")
    bi.set_defaults(func=_bisect)
