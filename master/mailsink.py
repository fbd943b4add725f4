"""The single-machine stack's mail sink: an SMTP server on loopback that keeps every mail as an `.eml` file.

`mlgo-farm stack up` starts it (`python -m master.mailsink`, pid in `<var>/run/mailsink.pid`, log in
`<var>/log/mailsink.log`) when `[smtp] host` is a loopback address (the default, 127.0.0.1:8025) and
nothing else listens on `[smtp] port`; a real `[smtp] host` replaces it and no sink is started. Every message
it accepts is written atomically as `<var>/mail/<UTC timestamp>-<n>.eml` (the directory 0700, the files 0600),
with `Return-Path` and one `Delivered-To` per envelope recipient put before the message's own headers; the
dashboard's `mail/` page lists them. A message over MAX_BYTES is refused with SMTP's 552 (as soon as its
`MAIL FROM ... SIZE=` says so, else at the end of its data) and one log line; nothing of it is kept. SIGTERM
ends it. It speaks plain SMTP only (no STARTTLS, no AUTH): it listens on loopback and relays nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import logging
import os
import signal
import sys
import time
from pathlib import Path

from farm.atomic import write_atomic
from farm.config import Settings

log = logging.getLogger("mlgo-farm.mailsink")
#: The addresses `[smtp] host` may name for the stack to run the sink there.
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
#: The largest message the sink keeps (bytes of its data); a larger one is refused with 552.
MAX_BYTES = 10 * 1024 * 1024
SUFFIX = ".eml"


def wanted(s: Settings) -> bool:
    """Whether the stack runs the sink: `[smtp] host` on loopback and no TLS asked for (the sink speaks none)."""
    return s.smtp.host in LOOPBACK and not s.smtp.ssl and not s.smtp.starttls


def bind_host(s: Settings) -> str:
    return "127.0.0.1" if s.smtp.host == "localhost" else s.smtp.host


def mail_dir(s: Settings) -> Path:
    return s.var_dir / "mail"


def pidfile(s: Settings) -> Path:
    return s.var_dir / "run" / "mailsink.pid"


def private_dir(where: Path) -> Path:
    """`where`, made if missing, mode 0700 (the mails are for the farm's user only)."""
    where.mkdir(parents=True, exist_ok=True)
    where.chmod(0o700)
    return where


class Keeper:
    """aiosmtpd's handler: each message's data, with its envelope, into one new file of `where`."""

    def __init__(self, where: Path) -> None:
        self.where = private_dir(where)
        self.count = itertools.count(1)

    def path(self) -> Path:
        now = time.time_ns() // 1000  # microseconds: one reading for the seconds and their fraction
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now // 1_000_000)) + f".{now % 1_000_000:06d}Z"
        while True:  # one sink writes here; a name a previous sink left in the same microsecond is skipped
            path = self.where / f"{stamp}-{next(self.count)}{SUFFIX}"
            if not path.exists():
                return path

    def keep(self, sender: str, recipients: list[str], content: bytes) -> Path:
        head = [f"Return-Path: <{sender}>"] + [f"Delivered-To: {r}" for r in recipients]
        path = self.path()
        write_atomic(path, ("\r\n".join(head) + "\r\n").encode() + content, mode=0o600)
        return path

    async def handle_DATA(self, server, session, envelope) -> str:
        try:
            path = self.keep(envelope.mail_from or "", list(envelope.rcpt_tos), envelope.content)
        except Exception as e:  # a full disk: the client keeps the mail and tries again
            log.error("mail from %s not kept: %s", envelope.mail_from, e)
            return "451 Requested action aborted: the sink could not keep the message"
        log.info("kept mail from %s to %s as %s (%d bytes)", envelope.mail_from, ", ".join(envelope.rcpt_tos),
                 path.name, len(envelope.content))
        return "250 OK kept"


def _server_class():
    from aiosmtpd.smtp import SMTP

    class Refusing(SMTP):
        """aiosmtpd's server with one log line for each message refused for its size."""

        async def push(self, status: str) -> None:
            if status.startswith("552"):
                log.warning("refused a message over %d bytes from %s: %s", self.data_size_limit,
                            self.session.peer if self.session else "?", status)
            await super().push(status)

    return Refusing


async def serve(host: str, port: int, where: Path, max_bytes: int = MAX_BYTES,
                ready: asyncio.Event | None = None) -> None:
    """Keep mail on host:port until SIGTERM (or SIGINT) or the task is cancelled."""
    keeper, server_class = Keeper(where), _server_class()
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: server_class(keeper, data_size_limit=max_bytes, hostname="mlgo-farm-mailsink"), host, port)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    log.info("mail sink on %s:%d keeps mail in %s (at most %d bytes a message)", host, port, where, max_bytes)
    if ready is not None:
        ready.set()
    try:
        await stop.wait()
    finally:
        server.close()
        await server.wait_closed()
        log.info("mail sink stopped")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m master.mailsink", description=__doc__.splitlines()[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--dir", type=Path, required=True, help="where the .eml files go")
    p.add_argument("--max-bytes", type=int, default=MAX_BYTES)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(asctime)s %(message)s")
    logging.getLogger("mail.log").setLevel(logging.WARNING)  # aiosmtpd's own: lines per command, not per mail
    os.umask(0o077)
    try:
        asyncio.run(serve(args.host, args.port, args.dir, args.max_bytes))
    except OSError as e:  # the port taken, the directory unwritable
        log.error("mail sink not started: %s", e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
