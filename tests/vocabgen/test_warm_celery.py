"""A retrain through the Celery chain starts from the latest version (vocabgen/warm.py), and says so in its manifest."""

from __future__ import annotations

import json
import re

from tests.vocabgen.test_celery import TINY_FLAGS, Farm, farm, workers  # noqa: F401  (the fixtures)

VERSION = re.compile(r"\d{8}-llvm\S+-ir-d8-[0-9a-f]{12}")


def _retrain(f: Farm, *flags: str) -> str:
    done = f.cli("vocab", "retrain", "--kind", "ir", "--wait", "--timeout", "180", *TINY_FLAGS, *flags)
    assert done.returncode == 0, done.stdout + done.stderr
    return VERSION.search(done.stdout).group(0)


def test_a_retrain_starts_from_the_latest_version_unless_told_not_to(farm: Farm, workers) -> None:  # noqa: F811
    workers.append(farm.worker("w1"))

    def manifest(version: str) -> dict:
        return json.loads(farm.cli("vocab", "show", "--kind", "ir", "--version", version).stdout)

    first = _retrain(farm)
    assert manifest(first)["warm_start"] == {"from": None, "reason": "no ir vocabulary is published yet"}
    second = _retrain(farm)
    m = manifest(second)
    assert second != first and m["parameters"]["warm_start"] is True
    assert m["warm_start"]["from"] == first and m["warm_start"]["sha256"] == manifest(first)["sha256"]
    assert 0 < m["warm_start"]["entities"] < m["warm_start"]["of"]
    # cold, the same recipe on the same dataset gives the first version's bytes again: publish finds it
    assert _retrain(farm, "--no-warm-start") == first
