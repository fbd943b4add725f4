"""Buildbot's mails about farm builds, received over real SMTP from a real master and worker: each says the cause,
the revision and what to do; a what-if build mails nobody; a failure after a failure of another cause mails; a
GitPoller on a local llvm-project gives the nightly LLVM builds a revision and the console view its changes."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from email.message import Message
from pathlib import Path

import pytest

from farm.config import load_settings
from master.layout import master_dir
from master.rest import MasterAPI
from regression.history import History
from tests.master import mailed
from tests.master.test_master_live import live  # noqa: F401  (the real master and worker)
from tests.regression.conftest import delivered
from tests.servers import MailBox, wait_until


def _body(m: Message) -> str:
    return m.get_payload(decode=True).decode().replace("\r\n", "\n")


def _subject(m: Message) -> str:
    return " ".join(str(m["Subject"]).split())


def _show(what: str, m: Message) -> None:
    """The mail as received (pytest -s shows it)."""
    print(f"\n===== {what} =====\nSubject: {_subject(m)}\nTo: {m['To']}\n\n{_body(m)}")


def _field(body: str, name: str) -> str:
    return next(ln for ln in body.splitlines() if ln.startswith(f"{name}:")).split(":", 1)[1].strip()


def _finished(api: MasterAPI, builder: str, count: int, timeout: float = 300):
    """The first `count` finished builds of `builder`, oldest first."""
    def done():
        builds = [b for b in api.builds_after(0) if b.builder == builder and b.result != "running"]
        return builds[:count] if len(builds) >= count else None

    return wait_until(done, timeout, f"{count} finished {builder} builds")


def _mails_of(box: MailBox, builder: str) -> list[Message]:
    return [m for m in box.messages if f" {builder} #" in _subject(m)]


def test_failure_mails_say_cause_revision_and_what_to_do_and_a_new_cause_mails_again(live, tmp_path):  # noqa: F811
    start, box = live
    src = tmp_path / "src"  # missing, then empty, then with a file that does not compile
    api = start(mailed.config(tmp_path / "mailed.cfg", str(src), "held-back"))

    api.force("held-back")  # the builder's first build fails: mailed ("problem" alone would wait for a success)
    (first,) = _finished(api, "held-back", 1)
    (mail,) = wait_until(lambda: _mails_of(box, "held-back"), 120, "the first failure's mail")
    _show("a failed build (Buildbot's mail)", mail)
    body = _body(mail)
    cause = f"source {src} does not exist"
    assert _subject(mail) == f"[mlgo-farm] held-back #{first.number} failed: {cause}"
    assert _field(body, "Cause") == cause
    assert _field(body, "Revision") == (f"none in its source stamp (a forced or triggered build); its inputs: "
                                        f"flavour=a, src={src}")
    assert _field(body, "Build") == first.url
    assert _field(body, "Log") == f"{first.url}/steps/1/logs/stdio"
    assert _field(body, "Started by") == "forced by admin" and _field(body, "Previous") == "none (its first build)"
    todo = body.split("What to do:\n", 1)[1].split("\n\n", 1)[0].strip()
    assert todo.startswith(f"Read the step's log ({first.url}/steps/1/logs/stdio)")
    assert todo.endswith(f"mlgo-farm master force held-back --url {api.base}")
    assert mail["To"] == "farm-ops@example.org"

    src.mkdir()  # another cause: a failure after a failure is news when it fails for another reason
    api.force("held-back")
    _finished(api, "held-back", 2)
    wait_until(lambda: len(_mails_of(box, "held-back")) == 2, 120, "the second failure's mail")
    again = _mails_of(box, "held-back")[1]
    _show("a failure after a failure with another cause", again)
    assert _field(_body(again), "Cause") == f"no C/C++ sources found in {src}"
    assert _field(_body(again), "Previous") == f"#{first.number} failure: {cause}"

    api.force("held-back")  # the same cause again: no mail
    api.force("held-back", {"flavour": "b"})  # a what-if: no mail whatever it says
    _finished(api, "held-back", 4)
    (src / "bad.c").write_text("int broken(\n")
    api.force("held-back")  # a third cause: mailed, after (and so as the witness of) the two silent ones
    builds = _finished(api, "held-back", 5)
    wait_until(lambda: len(_mails_of(box, "held-back")) >= 3, 120, "the third cause's mail")
    api.wait_idle(timeout=120, poll=0.25)
    numbers = [int(_subject(m).split("#")[1].split()[0]) for m in _mails_of(box, "held-back")]
    assert numbers == [builds[0].number, builds[1].number, builds[4].number], [_subject(m) for m in box.messages]
    what_if = api.get(f"builds/{builds[3].buildid}/properties")["properties"][0]
    assert what_if["what_if"] == ["flavour=b", "Force Build Form"]


def test_a_what_if_force_mails_nobody_and_stays_out_of_the_nightly_history(live, tmp_path):  # noqa: F811
    """The nightly regresses (the farm's alert: one mail); a force with policy=heuristic is a what-if: no
    "recovered" to the list, and the next regular build is no new transition, so no second REGRESSION."""
    start, box = live
    api = start(mailed.config(tmp_path / "regress.cfg", str(tmp_path), "nightly-regress"))
    api.force("nightly-regress")
    (bad,) = _finished(api, "nightly-regress", 1, timeout=600)
    assert bad.result == "failure"
    (alert,) = delivered(box)  # the run queued it; Celery beat's delivery sends it
    _show("the farm's regression alert", alert)
    assert _subject(alert).startswith("[mlgo-farm] REGRESSION: nightly-regress: ")

    api.force("nightly-regress", {"policy": "heuristic"})
    api.force("nightly-regress")
    _, what_if, again = _finished(api, "nightly-regress", 3, timeout=900)
    assert (what_if.result, again.result) == ("success", "failure")
    api.wait_idle(timeout=120, poll=0.25)
    # the farm queues its alerts (the beat delivers them), and Buildbot leaves both builds to it
    assert [_subject(m) for m in delivered(box)] == [_subject(alert)]
    history = History(load_settings().var_dir / "regression" / "history.sqlite")
    assert [r.verdict for r in history.runs("nightly-regress")] == ["regression", "regression"]
    assert [(r.verdict, r.policy_id) for r in history.runs("nightly-regress.what-if")] == [("ok", "heuristic")]


def _git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "LLVM Dev", "GIT_AUTHOR_EMAIL": "dev@llvm.example", "GIT_COMMITTER_NAME": "LLVM Dev",
           "GIT_COMMITTER_EMAIL": "dev@llvm.example", "PATH": "/usr/bin:/bin", "HOME": str(repo.parent)}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


def _polled(s) -> bool:
    """The poller's first poll is recorded (it notes where the branch stands; commits after it are changes)."""
    db = master_dir(s) / "state.sqlite"
    if not db.exists():
        return False
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as c:
        rows = c.execute("SELECT value_json FROM object_state WHERE name = 'lastRev'").fetchall()
    return any(json.loads(v).get("main") for (v,) in rows)


@pytest.mark.slow
def test_a_git_poller_gives_the_nightly_llvm_builds_a_revision_and_the_console_its_changes(
        live, tmp_path, monkeypatch: pytest.MonkeyPatch):  # noqa: F811
    repo = tmp_path / "llvm-project"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "[LLVM] the commit the poller finds")
    monkeypatch.setenv("MLGO_FARM_LLVM_REPO", str(repo))
    monkeypatch.setenv("MLGO_FARM_LLVM_POLL_INTERVAL", "1")
    start, box = live
    api = start(mailed.config(tmp_path / "llvm.cfg", str(tmp_path), "follows-llvm"))
    s = load_settings()
    wait_until(lambda: _polled(s), 120, "the poller's first poll")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "[InlineCost] the commit of the night")
    rev = _git(repo, "rev-parse", "HEAD")

    (change,) = wait_until(lambda: api.get("changes")["changes"], 120, "the polled change")
    assert (change["revision"], change["branch"], change["repository"]) == (rev, "main", str(repo))
    assert change["author"] == "LLVM Dev <dev@llvm.example>" and change["project"] == "llvm-project"

    def built() -> list:
        """Finished nightly builds whose source stamp is the polled commit (the console lists them under it)."""
        return api.get(f"changes/{change['changeid']}/builds", complete="true")["builds"]

    build = wait_until(built, 300, "a nightly build of the polled commit")[0]  # the nightly fires every minute
    (br,) = api.get(f"buildrequests/{build['buildrequestid']}")["buildrequests"]
    (bs,) = api.get(f"buildsets/{br['buildsetid']}")["buildsets"]
    assert [(ss["revision"], ss["repository"], ss["branch"]) for ss in bs["sourcestamps"]] == [(rev, str(repo), "main")]
    assert api.get(f"builds/{build['buildid']}/properties")["properties"][0]["revision"][0] == rev

    def mailed_build() -> list[Message]:
        return [m for m in box.messages if _subject(m).startswith(f"[mlgo-farm] follows-llvm #{build['number']} ")]

    (mail,) = wait_until(mailed_build, 120, "the nightly build's mail")
    _show("a failed nightly build of an LLVM commit", mail)
    body = _body(mail)
    assert _field(body, "Revision") == f"{rev} ({repo} main)"
    assert _field(body, "Cause") == f"source {mailed.MISSING} does not exist"
    assert _field(body, "Started by") == "the nightly schedule (changes by LLVM Dev <dev@llvm.example>)"
