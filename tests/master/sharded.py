"""A test-only registry with a fan-out: a corpus from C sources and IR triplets split over shard builds, merged,
published (the shape of the farm's triplet builders, small enough for a test)."""

from __future__ import annotations

from master.registry import SHARD, Builder, FanOut, IfSet, Param, Step

NAME = "sharded-dataset"
_SHARD = IfSet(SHARD, ("--shard", "{shard}"))


def registry(src: str) -> tuple[Builder, ...]:
    """`src`: the directory of C sources (the only choice of the `src` parameter)."""
    return (
        Builder(
            name=NAME,
            description="corpus from C sources, IR triplets at O0 and O2, split over shard builds, merged, published",
            steps=(
                Step("corpus", ("corpus", "sources", "{src}", "-o", "corpus", "-j", "1", _SHARD)),
                Step("triplets", ("triplets", "ir", "corpus", "-o", "dataset", "-j", "1", _SHARD)),
                Step("publish", ("dataset", "publish", "dataset"),
                     capture=(("dataset", "dataset"),)),
            ),
            params=(Param("src", src, choices=(src,)),),
            fan_out=FanOut(steps=("corpus", "triplets"), most=3),
            notify=(),
        ),
    )
