"""A test-only registry: a small real dataset pipeline, a triggered follower, a failing builder and a
quick builder with a choice parameter (for request collapsing). Named for the trigger, not `pipeline`: that is the
farm's Celery package (pipeline/)."""

from __future__ import annotations

from pathlib import Path

from master.registry import Builder, Param, Step

CSRC = Path(__file__).resolve().parents[1] / "data" / "csrc"

PIPELINE = (
    Builder(
        name="make-dataset",
        description="corpus from the test C sources, IR triplets, publish",
        steps=(
            Step("corpus", ("corpus", "sources", "{src}", "-o", "corpus", "-j", "1")),
            Step("triplets", ("triplets", "ir", "corpus", "-o", "dataset", "-j", "1", "--opt-levels", "O0")),
            Step("publish", ("dataset", "publish", "dataset"), capture=(("dataset", "dataset"),)),
        ),
        params=(Param("src", str(CSRC), choices=(str(CSRC),)),),
        exports={"dataset": "{dataset}"},
        notify=(),
    ),
    Builder(
        name="use-dataset",
        description="triggered with the published dataset id",
        steps=(Step("toolchain", ("toolchain",)),),
        after=("make-dataset",),
        same_worker=True,
        notify=(),
    ),
    Builder(
        name="always-fails",
        description="a corpus from a directory that does not exist",
        steps=(Step("corpus", ("corpus", "sources", "/nonexistent/mlgo-farm-src", "-o", "corpus")),),
        notify=("failing",),
    ),
    Builder(
        name="flavoured",
        description="a quick build whose one parameter only changes its properties",
        steps=(Step("toolchain", ("toolchain",)),),
        params=(Param("flavour", "a", choices=("a", "b", "c")),),
        notify=(),
    ),
)
