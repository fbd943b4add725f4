"""An output that names a device or a FIFO is written to (or refused in one line), never replaced by a regular file:
`vocab download -o /dev/null` as root once renamed a temporary file over the device. Tried on real special files made
in a private directory (the tests run as root, so mknod works), with the real `vocab download` verb."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from farm.atomic import write_atomic
from farm.cli import main
from farm.errors import FarmError

NULL = os.makedev(1, 3)  # /dev/null's numbers: writing there is harmless


@pytest.fixture
def private(tmp_path: Path) -> Path:
    """A directory only root can enter, for the device nodes."""
    d = tmp_path / "private"
    d.mkdir(mode=0o700)
    return d


@pytest.fixture
def published() -> bytes:
    """A vocabulary in the embedded store (the tests' own var/), as `vocab download` finds it."""
    from farm.objectstore import store_from_settings
    from farm.signing import farm_key
    from tests.vocabgen.conftest import handmade_manifest, handmade_vocab
    from vocabgen import publish as pub

    data = handmade_vocab()
    pub.publish(store_from_settings(), data, handmade_manifest(data, farm_key()))
    return data


def _error(capsys: pytest.CaptureFixture) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("mlgo-farm: error: "), err
    return err[0].removeprefix("mlgo-farm: error: ")


def test_a_character_device_is_written_to_and_stays_a_device(private: Path, published: bytes,
                                                             capsys: pytest.CaptureFixture) -> None:
    null = private / "null"
    os.mknod(null, stat.S_IFCHR | 0o600, NULL)
    assert main(["vocab", "download", "--kind", "ir", "-o", str(null)]) == 0
    assert capsys.readouterr().out.strip() == f"-ir2vec-vocab-path={null}"
    write_atomic(null, b"more")
    st = os.stat(null)
    assert stat.S_ISCHR(st.st_mode) and st.st_rdev == NULL and stat.S_IMODE(st.st_mode) == 0o600
    assert [p.name for p in private.iterdir()] == ["null"], "no temporary left beside the device"


def test_a_fifo_is_written_to_its_reader_and_stays_a_fifo(private: Path, published: bytes) -> None:
    fifo = private / "pipe"
    os.mkfifo(fifo, 0o600)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader waiting before the writer comes
    try:
        assert main(["vocab", "download", "--kind", "ir", "-o", str(fifo)]) == 0  # fits in the pipe's buffer
        os.set_blocking(reader, True)
        got = b""
        while chunk := os.read(reader, 1 << 16):  # the writer has closed: the end is an end of file
            got += chunk
    finally:
        os.close(reader)
    assert got == published
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and [p.name for p in private.iterdir()] == ["pipe"]


def test_a_fifo_without_a_reader_is_one_line_not_a_hang(private: Path, published: bytes,
                                                        capsys: pytest.CaptureFixture) -> None:
    fifo = private / "pipe"
    os.mkfifo(fifo, 0o600)
    assert main(["vocab", "download", "--kind", "ir", "-o", str(fifo)]) == 1
    assert _error(capsys) == f"cannot write {fifo}: the FIFO has no reader"
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and [p.name for p in private.iterdir()] == ["pipe"]
    with pytest.raises(FarmError, match="the FIFO has no reader"):
        write_atomic(fifo, b"x")


@pytest.mark.parametrize("what", ["block device", "socket"])
def test_a_block_device_or_a_socket_is_refused_in_one_line(private: Path, published: bytes, what: str,
                                                           capsys: pytest.CaptureFixture) -> None:
    node = private / "node"
    if what == "block device":
        os.mknod(node, stat.S_IFBLK | 0o600, os.makedev(7, 255))  # never opened: refused on sight
        keep = None
    else:
        keep = socket.socket(socket.AF_UNIX)
        keep.bind(str(node))
    try:
        assert main(["vocab", "download", "--kind", "ir", "-o", str(node)]) == 2
        assert _error(capsys) == f"output {node} is a {what}: refusing to write to it (give a file name)"
        with pytest.raises(FarmError, match=f"is a {what}: refusing"):
            write_atomic(node, b"x")
        mode = os.stat(node).st_mode
        assert stat.S_ISBLK(mode) if what == "block device" else stat.S_ISSOCK(mode)
        assert [p.name for p in private.iterdir()] == ["node"]
    finally:
        if keep is not None:
            keep.close()
