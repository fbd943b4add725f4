"""policytrain/overlap.py: code that packages of different splits share is found, and each such pair is a decision."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from farm.errors import InputError
from policytrain import overlap, splitdata

MLGO_FARM = str(Path(sys.executable).with_name("mlgo-farm"))

#: thirty code lines of a function, long enough to count
BODY = "".join(f"    total_of_the_frames += compute_the_weight(frame_{i}, scale_{i});\n" for i in range(30))


def _source(package: str, split: str, text: str, path: str = "a.c") -> overlap.Source:
    return overlap.Source(package, split, path, overlap.code_lines(text))


def test_code_lines_leave_out_comments_layout_and_short_lines() -> None:
    text = ("/* a licence\n   of two lines that are long enough */\nint x;  // short\n"
            "static int   the_function_name(int argument)   {\n// a comment line that is long enough to count\n"
            "  return another_function_name(argument);  /* trailing */\n}\n")
    assert overlap.code_lines(text) == {"static int the_function_name(int argument) {",
                                        "return another_function_name(argument);"}


def test_a_copy_across_splits_is_found_and_a_copy_within_a_split_is_not() -> None:
    reflowed = "/* reflowed */\n" + BODY.replace("    ", "\t")
    files = [_source("alpha", "train", BODY), _source("beta", "evaluation", reflowed, "lib/copy.c"),
             _source("gamma", "train", BODY), _source("delta", "train", "int unrelated_but_long_enough_name;\n")]
    found = overlap.overlaps(files)
    assert {(o.a.package, o.b.package) for o in found} == {("alpha", "beta"), ("beta", "gamma")}
    o = found[0]
    assert o.shared == 30 and o.fraction == 1.0 and o.packages == {"alpha", "beta"}
    assert o.said() == "train alpha:a.c ~ evaluation beta:lib/copy.c: 30 code lines shared, 100% of the smaller file"


def test_boilerplate_and_a_few_shared_lines_are_not_an_overlap() -> None:
    few = "".join(BODY.splitlines(keepends=True)[:overlap.MIN_SHARED - 1])
    assert overlap.overlaps([_source("alpha", "train", few), _source("beta", "evaluation", few)]) == []
    # lines in more than MAX_PACKAGES packages (a licence, common includes) say nothing about copying
    everyone = [_source(f"p{i}", ("train", "evaluation")[i % 2], BODY) for i in range(overlap.MAX_PACKAGES + 1)]
    assert overlap.overlaps(everyone) == []
    # a small file wholly inside a big one overlaps; a big file sharing a small part of itself does not
    big = BODY + "".join(f"    unrelated_statement_number_{i}(argument);\n" for i in range(100))
    assert len(overlap.overlaps([_source("alpha", "train", BODY), _source("beta", "evaluation", big)])) == 1
    half = "".join(BODY.splitlines(keepends=True)[:25])
    assert overlap.overlaps([_source("alpha", "train", half + big[len(BODY):]),
                             _source("beta", "evaluation", half + big[len(BODY):].replace("unrelated", "other"))]) \
        == []


def test_only_what_the_recipe_compiles_counts(tmp_path: Path) -> None:
    """openjpeg2 ships copies of zlib, lcms2 and libpng under thirdparty/ that its build leaves alone: they are not
    its code as far as a corpus goes; quilt's backups of patched files (.pc/) are not either."""
    tree = tmp_path / "openjpeg2-2.5.0"
    for rel in ("src/lib/openjp2/j2k.c", "src/lib/openjp2/j2k.h", "src/lib/openjp2/bench_dwt.c",
                "thirdparty/libz/inflate.c", "src/lib/openjp2/.pc/p/old.h", "debian/x.h"):
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(BODY)
    assert overlap.compiled("openjpeg2", tree) == ["src/lib/openjp2/j2k.c", "src/lib/openjp2/j2k.h"]
    files = overlap.of_splits({"train": ("openjpeg2",)}, lambda package: tree)
    assert [(f.package, f.split, f.path) for f in files] == [("openjpeg2", "train", "src/lib/openjp2/j2k.c"),
                                                             ("openjpeg2", "train", "src/lib/openjp2/j2k.h")]


def test_an_undecided_pair_fails_in_one_line_and_a_decided_one_passes() -> None:
    found = overlap.overlaps([_source("alpha", "train", BODY), _source("beta", "evaluation", BODY),
                              _source("gamma", "validation", BODY)])
    decided = {frozenset(("alpha", "beta")): "why"}
    left = overlap.undecided(found, decided)
    assert {o.packages for o in left} == {frozenset(("alpha", "gamma")), frozenset(("beta", "gamma"))}
    with pytest.raises(InputError) as e:
        overlap.check(found, decided)
    assert str(e.value) == ("package splits: 2 pair(s) of packages share code with no decision in "
                            "policytrain/data/splits.toml [overlap]: alpha and gamma; beta and gamma")
    overlap.check(found, {**decided, frozenset(("alpha", "gamma")): "why", frozenset(("beta", "gamma")): "why"})


@pytest.mark.parametrize(("decided", "message"), [
    ({frozenset(("lz4", "zlib")): "both evaluation"}, "the overlap of lz4 and zlib needs two packages of different"),
    ({frozenset(("lz4", "nowhere")): "unknown"}, "the overlap of lz4 and nowhere needs"),
    ({frozenset(("libzstd", "lz4")): ""}, "the overlap of libzstd and lz4 needs two packages of different splits "
                                          "and a reason"),
])
def test_a_decision_that_is_not_one_fails_in_one_line(decided: dict, message: str) -> None:
    with pytest.raises(InputError) as e:
        splitdata.check(splitdata.SPLITS, overlaps=decided)
    assert message in str(e.value) and "\n" not in str(e.value)


@pytest.mark.slow
def test_the_declared_splits_share_no_code_without_a_decision(have_apt_source: bool) -> None:
    """The real check, on every package of the splits as Debian ships it (fetched into the test's own var directory,
    tests/conftest.py `_isolated_config`): each overlap it finds is one policytrain/data/splits.toml decided
    ([overlap]), and every decided pair still shares code (a stale decision would hide the next overlap between the
    same packages)."""
    if not have_apt_source:
        pytest.skip("needs apt-get source")
    run = subprocess.run([MLGO_FARM, "policy", "splits"], capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[:len(splitdata.SPLITS)] == [f"{name}: {', '.join(names)}" for name, names in splitdata.SPLITS.items()]
    assert not [line for line in lines if line.startswith("UNDECIDED")]
    decided = [line for line in lines if line.startswith("decided: ")]
    for pair in splitdata.OVERLAPS:
        assert any(all(f" {p}:" in line for p in pair) for line in decided), f"{sorted(pair)} share nothing now"


@pytest.mark.slow
def test_a_planned_split_is_checked_before_any_training(have_apt_source: bool) -> None:
    """`policy splits` takes the splits `policy train` would: PCRE's old series (pcre3) held out against the new one
    (pcre2) in training is refused in one line, as the training would be, and a package named in two splits first."""
    twice = subprocess.run([MLGO_FARM, "policy", "splits", "--train", "zlib", "--validation", "zlib"],
                           capture_output=True, text=True, timeout=60)
    assert twice.returncode == 2
    assert twice.stderr.strip() == "mlgo-farm: error: package zlib is in both the train and the validation split"
    if not have_apt_source:
        pytest.skip("needs apt-get source")
    run = subprocess.run([MLGO_FARM, "policy", "splits", "--train", "pcre2", "--validation", "jansson",
                          "--decision", "", "--evaluation", "pcre3"], capture_output=True, text=True, timeout=900)
    assert run.returncode == 2, run.stderr
    assert run.stdout.splitlines()[:4] == ["train: pcre2", "validation: jansson", "decision: ", "evaluation: pcre3"]
    assert "UNDECIDED: train pcre2:src/pcre2_jit_compile.c ~ evaluation pcre3:pcre_jit_compile.c" in run.stdout
    # hunspell's and pcre2's config.h (autoconf's HAVE_* block) were a decided overlap until libtar and htop joined the
    # evaluation split with config.h files of their own: in the declared splits the lines are boilerplate now and the
    # decision went stale (dropped), but a split without libtar and htop finds the two files again.
    assert run.stderr.strip() == ("mlgo-farm: error: package splits: 2 pair(s) of packages share code with no "
                                  "decision in policytrain/data/splits.toml [overlap]: hunspell and pcre2; "
                                  "pcre2 and pcre3")
