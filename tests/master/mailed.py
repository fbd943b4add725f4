"""A test-only registry for the mails: a nightly builder that follows LLVM (every minute, failing), a builder whose
failure changes cause from build to build, and a nightly-like regression builder with a what-if choice."""

from __future__ import annotations

from pathlib import Path

from farm.errors import EXIT_REGRESSION
from master.registry import Builder, Param, Step

CSRC = Path(__file__).resolve().parents[1] / "data" / "csrc"
#: A source directory no worker has: the LLVM follower's step fails with the verb's one error line.
MISSING = "/nonexistent/mlgo-farm-llvm-src"


def registry(src: str, *names: str) -> tuple[Builder, ...]:
    """The builders named (all when none); `src`: the directory `held-back` compiles (the test changes it)."""
    builders = (
        Builder(
            name="follows-llvm",
            description="follows [llvm] repo; fails every minute saying why",
            steps=(Step("corpus", ("corpus", "sources", MISSING, "-o", "corpus")),),
            nightly="* * * * *",
            follows_llvm=True,
            notify=("failing",),
        ),
        Builder(
            name="held-back",
            description="fails for whatever reason its source directory gives this time",
            steps=(Step("corpus", ("corpus", "sources", "{src}", "-o", "corpus", "-j", "1")),),
            params=(Param("src", src, choices=(src,)), Param("flavour", "a", choices=("a", "b"))),
            notify=("problem", "exception"),
        ),
        Builder(
            name="nightly-regress",
            description="the policy against the heuristic on the tests' C program; a regression mails itself",
            steps=(Step("regress", ("regress", "run", "--builder", "{buildername}", "--bench-dir", str(CSRC),
                                    "--bench-arg=20000", "--policy", "{policy}", "--advisor", "inline",
                                    "--repeats", "0", "--jobs", "2", "--no-publish", "--fail-on-regression"),
                        mails_itself=(EXIT_REGRESSION,)),),
            params=(Param("policy", "never", choices=("never", "heuristic")),),
            notify=("problem", "exception"),
        ),
    )
    return tuple(b for b in builders if not names or b.name in names)


def config(path: Path, src: str, *names: str) -> Path:
    """A master.cfg for those builders."""
    path.write_text("from master.buildmaster import build_config\nfrom tests.master.mailed import registry\n"
                    f"BuildmasterConfig = build_config(registry=registry({src!r}, *{names!r}))\n")
    return path
