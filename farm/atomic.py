"""Write a file or a whole directory so that readers see all of it or none of it.

Outputs are for other users too (a web server serving the store runs as one): files are 0644 and
the directories made for them 0755 whatever the umask; only secrets pass a private mode. A full
disk or any other write failure is one line naming the path, and no temporary is left behind.

Atomic replacement is for regular files. An output that names a character device or a FIFO
(`-o /dev/null`, `-o /dev/stdout`, a named pipe a reader waits on) is written to, never replaced:
renaming over it would put a regular file where the device was (for root, in /dev too). A block
device or a socket is refused in one line: nothing the farm writes belongs on a disk's raw blocks.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from farm.errors import FarmError, InputError

#: errno values that mean "the disk (or the quota) is full": writing again later may succeed.
FULL = frozenset({errno.ENOSPC, errno.EDQUOT})
DIR_MODE = 0o755


def describe(e: OSError) -> str:
    """The reason of an OSError in a few words, without errno numbers or a traceback."""
    if e.errno == errno.ENOSPC:
        return "no space left on device"
    if e.errno == errno.EDQUOT:
        return "disk quota exceeded"
    return e.strerror or str(e)


def check_writable(parent: Path) -> None:
    """Prove a file could be written in `parent` before any work is done, leaving nothing behind.

    The nearest existing ancestor is probed with a real file holding one byte: os.access says yes
    to root, and an empty file still fits on a full disk (it needs no data block).
    """
    parent = where = Path(parent).absolute()
    while not where.exists() and where != where.parent:
        where = where.parent
    if not where.is_dir():
        raise FarmError(f"cannot create output directory {parent}: {where} is not a directory")
    try:
        fd, probe = tempfile.mkstemp(prefix=".probe.", dir=where)
    except OSError as e:
        raise _not_writable(where, e) from None
    try:
        os.write(fd, b"\0")
        os.fsync(fd)  # a file system that allocates late (NFS, ext4 delalloc) reports ENOSPC here
    except OSError as e:
        raise _not_writable(where, e) from None
    finally:
        os.close(fd)
        os.unlink(probe)


def _make_parent(parent: Path) -> None:
    """Create `parent` and its missing ancestors, each 0755 (mkdir alone would follow the umask)."""
    missing = []
    where = Path(parent)
    while not where.exists() and where != where.parent:
        missing.append(where)
        where = where.parent
    if not where.is_dir():
        raise FarmError(f"cannot create output directory {parent}: {where} is not a directory")
    try:
        for d in reversed(missing):
            try:
                d.mkdir()
            except FileExistsError:
                continue  # made by someone else meanwhile: not ours to change
            d.chmod(DIR_MODE)
    except OSError as e:
        raise FarmError(f"cannot create output directory {parent}: {describe(e)}") from None


def special_output(path: Path) -> str | None:
    """What kind of special file `path` is when it is one written to in place (a character device or a FIFO,
    symlinks followed), None for a regular file, a directory or a missing path; a block device, a socket or
    anything else special is refused in one line. Callers that prove a directory writable first skip that probe
    for these: writing to /dev/null needs no right to create files in /dev."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as e:
        raise FarmError(f"cannot write {path}: {describe(e)}") from None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    what = "block device" if stat.S_ISBLK(mode) else "socket" if stat.S_ISSOCK(mode) else "special file"
    raise InputError(f"output {path} is a {what}: refusing to write to it (give a file name)")


def check_output_file(path: Path) -> None:
    """Prove a file output could be written before any work is done: a character device or a FIFO is written in
    place (no file is created beside it), a block device or a socket is refused, any other path needs a writable
    directory."""
    path = Path(path).absolute()
    if special_output(path) is None:
        check_writable(path.parent)


def check_file_set(paths: Iterable[Path]) -> None:
    """Prove files written together (a model and its native weights, a model's record and arrays) could each be
    written before any is: every path a regular file or none yet, in a writable directory. A device or FIFO, which
    write_atomic writes in place, is refused for a set: the first file written and the next refused (a FIFO
    without a reader) left half a set, a `.onnx` beside no `.weights` or another model's."""
    paths = [Path(p).absolute() for p in paths]
    for path in paths:
        if path.is_dir():
            raise InputError(f"output {path} is a directory: give a file name")
        kind = special_output(path)  # a block device or a socket: refused there
        if kind is not None:
            raise InputError(f"output {path} is a {kind}: the files {', '.join(p.name for p in paths)} are "
                             "written together, each a regular file")
    for parent in dict.fromkeys(p.parent for p in paths):
        check_writable(parent)


def _write_through(path: Path, raw: bytes, kind: str) -> None:
    """Write `raw` into the device or FIFO at `path` itself. A FIFO is opened without waiting: no reader is one
    line, not a process blocked for ever. The opened file is checked to be the special file seen (a regular
    file put there meanwhile is not half-written in place)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        if e.errno == errno.ENXIO and kind == "FIFO":
            raise FarmError(f"cannot write {path}: the FIFO has no reader") from None
        raise FarmError(f"cannot write {path}: {describe(e)}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not (stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)):
            raise FarmError(f"cannot write {path}: it changed while it was opened (no longer a {kind})")
        os.set_blocking(fd, True)
        view = memoryview(raw)
        while view:  # a pipe takes what fits in its buffer at a time
            view = view[os.write(fd, view):]
    except OSError as e:
        raise FarmError(f"cannot write {path}: {describe(e)}") from None
    finally:
        os.close(fd)


def _not_writable(where: Path, e: OSError) -> FarmError:
    return FarmError(f"output directory {where} is not writable: {describe(e)}")


def check_replaceable(target: Path, marker: str) -> None:
    """Refuse to replace anything but a missing path, an empty directory, or an earlier output holding `marker`."""
    target = Path(target)
    if not (target.exists() or target.is_symlink()):
        return
    if not target.is_dir() or target.is_symlink():
        raise InputError(f"output {target} exists and is not a directory: refusing to replace it")
    if any(target.iterdir()) and not (target / marker).is_file():
        raise InputError(f"output {target} is a non-empty directory without {marker} (not an earlier output "
                         f"of this kind): refusing to replace it")


@contextlib.contextmanager
def atomic_dir(target: Path, marker: str) -> Iterator[Path]:
    """Yield a temporary sibling of `target`; on success it replaces `target` in one rename.

    `target` must be missing, empty, or an earlier output of the same kind (it holds `marker`), so
    a mistyped `-o` never wipes unrelated files. A full disk while the body writes is one line
    naming `target`; the temporary is removed and `target` is left as it was.
    """
    target = Path(target).absolute()
    check_replaceable(target, marker)
    _make_parent(target.parent)
    try:  # the temporary directory is the writability probe
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    except OSError as e:
        raise _not_writable(target.parent, e) from None
    try:
        try:
            yield tmp
        except OSError as e:
            if e.errno not in FULL:
                raise
            raise FarmError(f"cannot write output {target}: {describe(e)}") from None
        tmp.chmod(DIR_MODE)  # mkdtemp makes it private; outputs are for other users (and web servers) too
        check_replaceable(target, marker)  # it may have appeared while we worked
        try:
            if target.exists():
                old = target.with_name(f".{target.name}.old.{os.getpid()}")
                target.rename(old)
                tmp.rename(target)
                shutil.rmtree(old, ignore_errors=True)
            else:
                tmp.rename(target)
        except OSError as e:
            raise FarmError(f"cannot move output into place at {target}: {describe(e)}") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def write_atomic(path: Path, data: bytes | str, mode: int = 0o644) -> None:
    """Write `data` to `path` through a temporary file and a rename; the file gets `mode`.

    The default is world-readable: stored objects, downloads and reports are for other users (a web
    server serving the store runs as one). Secrets pass 0o600; the mode is set before the rename,
    so a secret is never readable by others, not even for an instant. Any failure (a full disk
    above all) is a one-line FarmError naming `path`; `path` keeps its old content and the
    temporary is removed. A character device or a FIFO is written to in place (its mode untouched), never
    replaced by a regular file; a block device or a socket is refused (special_output).
    """
    path = Path(path)
    raw = data.encode() if isinstance(data, str) else data
    kind = special_output(path)
    if kind is not None:
        _write_through(path, raw, kind)
        return
    with atomic_file(path, mode) as f:
        f.write(raw)


@contextlib.contextmanager
def atomic_file(path: Path, mode: int = 0o644) -> Iterator[BinaryIO]:
    """write_atomic for bytes that arrive in pieces (a download streamed to disk, never whole in memory): the body
    writes the yielded file, `path` appears on success only. A write failure is one line naming `path`; any
    failure, the body's own included, removes the temporary and leaves `path` as it was. The body's errors should
    be the farm's own: an OSError out of it reads as a write failure."""
    path = Path(path)
    _make_parent(path.parent)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as e:
        raise _not_writable(path.parent, e) from None
    try:
        try:
            os.fchmod(fd, mode)
            with os.fdopen(fd, "wb") as f:
                yield f
            os.replace(tmp, path)
        except OSError as e:
            raise FarmError(f"cannot write {path}: {describe(e)}") from None
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
