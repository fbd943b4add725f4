"""`vocab retrain --wait --json` against a real Celery worker, Redis and S3: one object on stdout with the fields
the vocab-retrain builders' step reads (master/outputs.py); without --json, the sentence it always printed."""

from __future__ import annotations

import json
import re

from farm.artifacts import VOCABULARIES
from master.registry import REGISTRY, by_name
from master.stepspec import StepOutput
from tests.vocabgen.test_celery import TINY_FLAGS, Farm, farm, workers  # noqa: F401  (fixtures)


def test_vocab_retrain_answers_in_json_what_its_step_reads(farm: Farm, workers) -> None:  # noqa: F811
    workers.append(farm.worker("w1"))
    p = farm.cli("vocab", "retrain", "--kind", "ir", "--wait", "--timeout", "180", *TINY_FLAGS, "--json")
    assert p.returncode == 0, p.stderr + workers[0].log()[-3000:]
    (line,) = p.stdout.splitlines()
    got = json.loads(line)
    version = VOCABULARIES.read_latest(farm.store, "ir")["version"]
    assert (got["kind"], got["version"], got["created"], got["state"], got["exit_code"]) == (
        "ir", version, True, "latest", 0)
    said = StepOutput(by_name(REGISTRY)["vocab-retrain-ir"].steps[0]).feed(p.stdout)
    assert said.properties(0) == {"vocab_version": version}
    assert said.summary() == f"published {version}"
    assert said.links() == [("vocabulary", f"vocab/ir/{version}/")]

    # without --json: the sentence, derived from the same fields, as it always was
    again = farm.cli("vocab", "retrain", "--kind", "ir", "--wait", "--timeout", "180", *TINY_FLAGS)
    first = re.match(r"ir (\S+) \((already )?published", again.stdout)
    assert again.returncode == 0 and first, again.stdout
    assert first.group(1) in {v["version"] for v in VOCABULARIES.read_index(farm.store)}
