"""A size check that holds a policy back (`policy retrain --wait` exits 12) is mailed, with its numbers as the cause,
even when the builder's previous build failed too (Buildbot's "problem" mode alone stays silent then).

Everything is real: a Buildbot master and worker, redis-server, a Celery worker, moto's S3 server, the policy
training (the smallest recipe) and the size check on the tests' C program, and the SMTP sink."""

from __future__ import annotations

import shutil
from pathlib import Path

from master.registry import Builder, Step
from tests.master.test_mails_live import _body, _field, _finished, _mails_of, _show, _subject
from tests.master.test_master_live import live  # noqa: F401  (the real master and worker)
from tests.policyhost.conftest import ir2vec_vocab, publish_vocab  # noqa: F401
from tests.policytrain.test_policy_celery import Farm, farm  # noqa: F401
from tests.servers import wait_until

BUILDER = Builder(
    name="policy-retrain-inline",
    description="the registry's policy retrain, on the tests' generated C sources",
    steps=(Step("retrain", ("policy", "retrain", "--corpus", "{sources}", "--wait", "--timeout", "600"),
                timeout=900),),
    notify=("problem", "exception"),  # as the registry's
)


def _config(path: Path, sources: Path) -> Path:
    path.write_text(
        "import dataclasses\nfrom master.buildmaster import build_config\nfrom master.registry import Param\n"
        "from tests.master.test_size_check_mail import BUILDER\n"
        f"SOURCES = Param('sources', {str(sources)!r}, choices=({str(sources)!r},))\n"
        "BuildmasterConfig = build_config(registry=(dataclasses.replace(BUILDER, params=(SOURCES,)),))\n")
    return path


def test_a_size_check_that_holds_a_policy_back_is_mailed_after_another_failure(
        farm: Farm, ir2vec_vocab: Path, live, tmp_path: Path) -> None:  # noqa: F811
    start, box = live
    sources = tmp_path / "training-sources"  # not there yet: the first build fails with the verb's error line
    api = start(_config(tmp_path / "retrain.cfg", sources))

    api.force(BUILDER.name)
    (first,) = _finished(api, BUILDER.name, 1)
    assert first.result == "failure"
    (mail,) = wait_until(lambda: _mails_of(box, BUILDER.name), 120, "the first failure's mail")
    first_cause = _field(_body(mail), "Cause")
    assert first_cause == f"training corpus {sources} is not a directory"

    shutil.copytree(farm.sources, sources)
    publish_vocab(ir2vec_vocab.read_bytes())
    farm.worker("w1", extra_env={"MLGO_FARM_GATE_POLICY_MARGIN": "50"})  # a 50 % margin no policy reaches
    api.force(BUILDER.name)
    _, held = _finished(api, BUILDER.name, 2, timeout=900)
    assert held.result == "failure"
    wait_until(lambda: len(_mails_of(box, BUILDER.name)) == 2, 120, "the size check's mail")
    mail = _mails_of(box, BUILDER.name)[1]
    _show("a size check that held a policy back (exit 12)", mail)
    body = _body(mail)
    cause = _field(body, "Cause")
    assert cause.startswith("policy inline ") and "size check FAILED: .text against the heuristic: csrc " in cause
    assert "; latest stays at none;" in cause, cause
    assert _subject(mail).startswith(f"[mlgo-farm] {BUILDER.name} #{held.number} failed: policy inline ")
    assert _field(body, "Previous") == f"#{first.number} failure: {first_cause}"
    todo = body.split("What to do:\n", 1)[1]
    assert todo.lstrip().startswith("Nothing to roll back: the new policy stays a candidate and `latest`")
