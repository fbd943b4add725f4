"""A real master and worker: the steps run their verbs with --json and the build's properties, summaries and links
come from the fields of the answers, including facts no sentence prints (the corpus's whole digest, a count)."""

from __future__ import annotations

import json
from pathlib import Path

from farm.config import load_settings
from master.factories import CAPTURED
from tests.conftest import CSRC
from tests.master.test_master_live import _properties, _wait_for_build, live  # noqa: F401  (the fixture)

CFG = """
from master import outputs
from master.buildmaster import build_config
from master.registry import CORPUS_REVISION, Builder, Param, Step
from tests.master.triggered import CSRC

ANSWERS = Builder(
    name="answers", description="corpus, triplets, publish: properties from the verbs' answers", notify=(),
    params=(Param("src", str(CSRC), choices=(str(CSRC),)),),
    steps=(
        Step("corpus", ("corpus", "sources", "{src}", "-o", "corpus", "-j", "1"),
             capture=(("corpus_digest", "digest"), ("corpus_modules", "modules")), summary=outputs.CORPUS_SAID),
        Step("triplets", ("triplets", "ir", "corpus", "-o", "dataset", "-j", "1", "--opt-levels", "O0"),
             summary=outputs.TRIPLETS_SAID),
        Step("publish", ("dataset", "publish", "dataset"), capture=outputs.PUBLISHED, summary=outputs.PUBLISHED_SAID,
             links=outputs.DATASET_LINKS),
    ),
)
# a Debian source package already unpacked where `apt-get source` would leave it (reused: no network)
DEBIAN = Builder(
    name="answers-debian", description="a Debian package's version as the build's revision", notify=(),
    steps=(
        Step("corpus", ("corpus", "debian", "mlgo-demo", "--debsrc", DEBSRC, "-o", "corpus", "-j", "1")),
        Step("triplets", ("triplets", "ir", "corpus", "-o", "dataset", "-j", "1", "--opt-levels", "O0")),
        Step("publish", ("dataset", "publish", "dataset"), capture=(*outputs.PUBLISHED, *CORPUS_REVISION)),
    ),
)
BuildmasterConfig = build_config(registry=(ANSWERS, DEBIAN))
"""


def test_a_builds_properties_come_from_the_fields_of_its_verbs_answers(live, tmp_path: Path) -> None:  # noqa: F811
    debsrc = tmp_path / "debsrc"
    (debsrc / "mlgo-demo-1.2" / "debian").mkdir(parents=True)
    (debsrc / "mlgo-demo-1.2" / "debian" / "changelog").write_text("mlgo-demo (1.2-3) unstable; urgency=low\n")
    (debsrc / "mlgo-demo-1.2" / "hash.c").write_text((CSRC / "hash.c").read_text())
    cfg = tmp_path / "answers.cfg"
    cfg.write_text(f"DEBSRC = {str(debsrc)!r}\n" + CFG)
    start, _ = live
    api = start(cfg)
    api.force("answers")
    build = _wait_for_build(api, "answers", after=0, timeout=300)
    assert build.result == "success", build.steps

    store = load_settings().var_dir / "store" / "datasets" / "ir"
    latest = json.loads((store / "latest.json").read_text())["id"]
    manifest = json.loads((store / latest / "manifest.json").read_text())
    (props,) = api.get(f"builds/{build.buildid}/properties")["properties"]
    # the whole digest (the sentence prints 16 digits) and a number, as the answer gave them
    assert props["corpus_digest"] == [manifest["corpus"]["digest"], CAPTURED]
    assert props["corpus_modules"] == [manifest["corpus"]["modules"], CAPTURED]
    assert props["dataset"] == [latest, CAPTURED]

    steps = {st["name"]: st for st in api.get(f"builds/{build.buildid}/steps")["steps"]}
    assert steps["triplets"]["state_string"] == (f"{manifest['triplets']['unique']:,} unique triplets "
                                                 f"({len(manifest['skipped'])} skipped)")
    assert steps["publish"]["state_string"] == f"published {latest}"
    assert [u["name"] for u in steps["publish"]["urls"]] == ["dataset"]
    for name in ("corpus", "triplets", "publish"):
        log = api.step_log_tail(build.buildid, name, lines=400)
        assert "b'--json']" in log, log[-2000:]  # the master asked for the answer
        assert '"exit_code": 0' in log  # and got it

    assert "got_revision" not in _properties(api, build.buildid)  # a directory of sources has no revision
    api.force("answers-debian")
    debian = _wait_for_build(api, "answers-debian", after=0, timeout=300)
    assert debian.result == "success", debian.steps
    # the package's Debian version is the build's revision, as the publish step's answer said it
    assert _properties(api, debian.buildid)["got_revision"] == "1.2-3"
