"""`policy retrain --wait --json` against a real Celery worker, Redis and S3: one object on stdout with the fields
the policy-retrain builder's step reads (master/outputs.py), the size check's outcome among them."""

from __future__ import annotations

import json
from pathlib import Path

from farm.artifacts import POLICIES
from master.registry import REGISTRY, by_name
from master.stepspec import StepOutput
from tests.policyhost.conftest import publish_vocab
from tests.policytrain.test_policy_celery import Farm, farm  # noqa: F401  (the fixture)


def test_policy_retrain_answers_in_json_what_its_step_reads(farm: Farm, ir2vec_vocab: Path) -> None:  # noqa: F811
    w = farm.worker("w1")
    vocab = publish_vocab(ir2vec_vocab.read_bytes())
    p = farm.cli("policy", "retrain", "--vocab", vocab, "--corpus", str(farm.sources), "--wait", "--timeout", "600",
                 "--json")
    assert p.returncode == 0, p.stderr + w.log()[-3000:]
    (line,) = p.stdout.splitlines()
    got = json.loads(line)
    latest = POLICIES.read_latest(farm.store, "inline")["version"]
    assert (got["advisor"], got["version"], got["created"], got["latest"]) == ("inline", latest, True, latest)
    assert got["size_check"]["ok"] is True and got["exit_code"] == 0
    assert "(published, size check passed: " in p.stderr  # the sentence, for the step's log
    said = StepOutput(by_name(REGISTRY)["policy-retrain-inline"].steps[0]).feed(p.stdout)
    assert said.properties(0) == {"policy_version": latest}
    assert said.summary() == f"published {latest}, size check passed"
    assert said.links() == [("policy", f"policies/inline/{latest}/"), ("policies", "policies/")]
