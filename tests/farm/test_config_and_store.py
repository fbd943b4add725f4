"""Configuration layering and the embedded (directory) object store."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from farm.atomic import atomic_dir, check_writable, write_atomic
from farm.config import load_settings
from farm.errors import FarmError, InputError, StoreError
from farm.objectstore import FileStore, MissingObject, open_store
from tests import tmpfs


def test_file_then_env_override(tmp_path: Path) -> None:
    cfg = tmp_path / "farm.toml"
    cfg.write_text('[store]\nurl = "s3://bucket/pre"\n[smtp]\nport = 2525\n')
    s = load_settings(cfg, env={"MLGO_FARM_SMTP_PORT": "1025", "MLGO_FARM_SMTP_STARTTLS": "yes"})
    assert s.store.url == "s3://bucket/pre"
    assert s.smtp.port == 1025 and s.smtp.starttls is True
    assert s.llvm.bin_dir == "/usr/lib/llvm-22/bin"


def test_unknown_config_key_is_an_error(tmp_path: Path) -> None:
    cfg = tmp_path / "farm.toml"
    cfg.write_text("[store]\nbuckett = 'x'\n")
    with pytest.raises(FarmError, match=r"unknown key\(s\) in \[store\]: buckett"):
        load_settings(cfg, env={})


def test_embedded_store_default_is_under_var(tmp_path: Path) -> None:
    s = load_settings(tmp_path / "none.toml", env={"MLGO_FARM_PATHS_VAR_DIR": str(tmp_path / "v")})
    assert s.store_url == (tmp_path / "v" / "store").as_uri()


def test_file_store_roundtrip_and_keys(tmp_path: Path) -> None:
    st = open_store((tmp_path / "st").as_uri())
    assert isinstance(st, FileStore)
    st.put("vocab/ir/v1/vocab.json", b"{}")
    st.put("vocab/index.json", b"[]")
    assert st.get("vocab/ir/v1/vocab.json") == b"{}"
    assert st.list("vocab/ir/") == ["vocab/ir/v1/vocab.json"]
    assert st.exists("vocab/index.json") and not st.exists("vocab/nope")
    with pytest.raises(MissingObject):
        st.get("vocab/nope")
    for bad in ("../etc/passwd", "/abs", "a/../b", "a//b", "a b"):
        with pytest.raises(InputError, match="invalid object key"):
            st.put(bad, b"x")


def test_atomic_dir_leaves_nothing_on_failure(tmp_path: Path) -> None:
    target = tmp_path / "area" / "out"
    with pytest.raises(RuntimeError), atomic_dir(target, "whole.txt") as tmp:
        (tmp / "half.txt").write_text("half")
        raise RuntimeError("boom")
    assert list(target.parent.iterdir()) == []
    with atomic_dir(target, "whole.txt") as tmp:
        (tmp / "whole.txt").write_text("whole")
    assert [p.name for p in target.iterdir()] == ["whole.txt"]
    assert target.stat().st_mode & 0o777 == 0o755, "readable by others, unlike mkdtemp's private directory"
    with atomic_dir(target, "whole.txt") as tmp:  # an earlier output of the same kind is replaced
        (tmp / "whole.txt").write_text("again")
    assert (target / "whole.txt").read_text() == "again"
    assert sorted(p.name for p in target.parent.iterdir()) == ["out"]


def test_atomic_dir_never_replaces_what_it_did_not_write(tmp_path: Path) -> None:
    """A mistyped -o: unrelated files are refused, left as they were, and nothing is left beside them."""
    area = tmp_path / "area"
    unrelated = area / "home"
    unrelated.mkdir(parents=True)
    (unrelated / "thesis.tex").write_text("years of work")
    a_file = area / "notes.txt"
    a_file.write_text("notes")
    for target, why in ((unrelated, "non-empty directory without manifest.json"), (a_file, "not a directory")):
        with pytest.raises(InputError, match="refusing to replace it") as e, atomic_dir(target, "manifest.json"):
            pass
        assert why in str(e.value)
    assert (unrelated / "thesis.tex").read_text() == "years of work" and a_file.read_text() == "notes"
    assert sorted(p.name for p in area.iterdir()) == ["home", "notes.txt"]


def test_unwritable_output_is_one_line_even_for_root(tmp_path: Path) -> None:
    """/proc refuses new files whatever the user: the probe catches what os.access (always yes for root) misses."""
    with pytest.raises(FarmError, match=r"^output directory /proc is not writable: ") as e, \
            atomic_dir(Path("/proc/mlgo-farm-out"), "manifest.json"):
        pass
    assert "\n" not in str(e.value)


def test_values_are_checked_against_their_setting(tmp_path: Path) -> None:
    s = load_settings(tmp_path / "none.toml", env={"MLGO_FARM_POLICY_TIMEOUT": "2.5"})
    assert s.policy.timeout == 2.5
    with pytest.raises(FarmError, match=r"^MLGO_FARM_SMTP_PORT='twenty-five': expected an integer$"):
        load_settings(tmp_path / "none.toml", env={"MLGO_FARM_SMTP_PORT": "twenty-five"})
    cfg = tmp_path / "farm.toml"
    cfg.write_text('[smtp]\nport = "25"\n')
    with pytest.raises(FarmError, match=r"\[smtp\] port: expected int, got '25'"):
        load_settings(cfg, env={})
    cfg.write_text("[policy]\ntimeout = 30\n")
    assert load_settings(cfg, env={}).policy.timeout == 30.0


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


def test_outputs_are_world_readable_whatever_the_umask(tmp_path: Path) -> None:
    """Objects and files 0644, the directories made for them 0755: a web server (another user) serves them."""
    old = os.umask(0o077)  # a hardened service's umask; mkstemp alone gives 0600 anyway
    try:
        store = FileStore(tmp_path / "store")
        store.put("vocab/ir/v1/vocab.json", b"{}")
        write_atomic(tmp_path / "dl" / "deep" / "vocab.json", b"{}")
        with atomic_dir(tmp_path / "out", "m") as tmp:
            write_atomic(tmp / "m", "x")
        write_atomic(tmp_path / "secret", "s", mode=0o600)
    finally:
        os.umask(old)
    for d in ("store", "store/vocab", "store/vocab/ir", "store/vocab/ir/v1", "dl", "dl/deep", "out"):
        assert _mode(tmp_path / d) == 0o755, d
    for f in ("store/vocab/ir/v1/vocab.json", "dl/deep/vocab.json", "out/m"):
        assert _mode(tmp_path / f) == 0o644, f
    assert _mode(tmp_path / "secret") == 0o600


@pytest.fixture
def full(tmp_path: Path):
    """A real 256 KiB tmpfs; `tmpfs.fill` takes its space in the test."""
    with tmpfs.mounted(tmp_path / "fs", "256k") as fs:
        yield fs


def test_a_full_disk_is_one_line_naming_the_path_and_leaves_nothing(full: Path) -> None:
    store = FileStore(full / "store")
    store.put("vocab/index.json", b"old index")
    write_atomic(full / "kept.json", b"old")
    tmpfs.fill(full, 0)
    big = b"x" * 3 * tmpfs.page_size(full)

    with pytest.raises(StoreError, match=rf"^cannot write {full}/store/vocab/index\.json: no space left on device$"):
        store.put("vocab/index.json", big)
    with pytest.raises(FarmError, match=rf"^cannot write {full}/kept\.json: no space left on device$"):
        write_atomic(full / "kept.json", big)
    with pytest.raises(FarmError, match=rf"^cannot write output {full}/out: no space left on device$"), \
            atomic_dir(full / "out", "manifest.json") as tmp:
        (tmp / "manifest.json").write_bytes(big)
    with pytest.raises(FarmError, match=rf"^output directory {full} is not writable: no space left on device$"):
        check_writable(full / "new" / "dir")

    assert store.get("vocab/index.json") == b"old index" and (full / "kept.json").read_bytes() == b"old"
    leftovers = sorted(str(p.relative_to(full)) for p in full.rglob("*") if not p.name.startswith("filler-"))
    assert leftovers == ["kept.json", "store", "store/vocab", "store/vocab/index.json"], "no temporary left behind"
    tmpfs.unfill(full)
    store.put("vocab/index.json", big)
    assert store.get("vocab/index.json") == big
