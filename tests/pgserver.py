"""A real PostgreSQL server for tests: Debian's binaries, a cluster made by initdb in a temporary directory,
`postgres` on 127.0.0.1 and a free port (its unix socket in that directory), password (scram) authentication
with a generated password, stopped and removed at the end. The system's cluster is never touched.

PostgreSQL refuses to run as root: under root, initdb and the server run as the `postgres` system user
(`runuser`), which owns the temporary directory. Readiness is `pg_ctl start -w` (it waits for the server's own
"ready" in postmaster.pid), bounded by a timeout; no sleeps.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.servers import free_port

#: The superuser initdb makes (the farm's URLs carry its name and password).
USER = "farm"
START_TIMEOUT = 60


def bin_dir() -> Path | None:
    """The newest installed PostgreSQL's binaries (Debian: /usr/lib/postgresql/VERSION/bin), or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    return Path(found[-1]).parent if found else None


@dataclass
class PgServer:
    port: int
    password: str
    host: str = "127.0.0.1"
    _names: Iterator[int] = field(default_factory=itertools.count)
    #: `pg_ctl` command lines (as the server's user) that stop the server and start it again: a history that goes
    #: down mid-run and comes back
    stop_argv: list[str] = field(default_factory=list)
    start_argv: list[str] = field(default_factory=list)

    def stop(self) -> None:
        _run(self.stop_argv, [])

    def start(self) -> None:
        _run(self.start_argv, [], timeout=START_TIMEOUT + 10)

    def url(self, database: str = "postgres", password: str | None = None) -> str:
        return f"postgresql+psycopg://{USER}:{self.password if password is None else password}@{self.host}:" \
               f"{self.port}/{database}"

    def create_database(self, prefix: str = "history") -> str:
        """A new empty database; returns its URL (with the password)."""
        import psycopg

        name = f"{prefix}_{next(self._names)}"
        with psycopg.connect(host=self.host, port=self.port, user=USER, password=self.password, dbname="postgres",
                             autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


def _run(argv: list[str], as_user: list[str], timeout: float = START_TIMEOUT) -> None:
    done = subprocess.run([*as_user, *argv], capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{Path(argv[0]).name} failed ({done.returncode}): {(done.stderr or done.stdout)[-2000:]}")


@contextlib.contextmanager
def postgres_server() -> Iterator[PgServer]:
    """A fresh cluster on loopback for the block; everything removed afterwards."""
    bins = bin_dir()
    if bins is None:
        raise RuntimeError("PostgreSQL's server is not installed (/usr/lib/postgresql/*/bin): run deploy/setup.sh")
    as_user: list[str] = []
    workdir = Path(tempfile.mkdtemp(prefix="mlgo-farm-pg-"))
    if os.geteuid() == 0:
        as_user = ["runuser", "-u", "postgres", "--"]
        owner = pwd.getpwnam("postgres")
        os.chown(workdir, owner.pw_uid, owner.pw_gid)
    data, password = workdir / "data", secrets.token_urlsafe(18)
    pwfile = workdir / "pw"
    pwfile.write_text(password + "\n")
    if as_user:
        os.chown(pwfile, owner.pw_uid, owner.pw_gid)
    os.chmod(pwfile, 0o600)
    port = free_port()
    started = False
    try:
        _run([str(bins / "initdb"), "-D", str(data), "-U", USER, f"--pwfile={pwfile}", "--auth=scram-sha-256",
              "--no-sync", "--no-locale", "-E", "UTF8"], as_user)
        options = (f"-c listen_addresses=127.0.0.1 -p {port} -k {workdir} -c fsync=off -c synchronous_commit=off"
                   " -c full_page_writes=off -c max_connections=200")
        start = [*as_user, str(bins / "pg_ctl"), "-D", str(data), "-l", str(workdir / "log"), "-o", options, "-w",
                 "-t", str(START_TIMEOUT), "start"]
        _run(start, [], timeout=START_TIMEOUT + 10)
        started = True
        _run([str(bins / "pg_isready"), "-h", "127.0.0.1", "-p", str(port), "-t", str(START_TIMEOUT)], [])
        yield PgServer(port, password, stop_argv=[*as_user, str(bins / "pg_ctl"), "-D", str(data), "-m", "fast", "-w",
                                                  "stop"], start_argv=start)
    finally:
        try:
            status = subprocess.run([*as_user, str(bins / "pg_ctl"), "-D", str(data), "status"], capture_output=True,
                                    timeout=START_TIMEOUT, check=False).returncode if started else 3
            if status != 3:  # 3: not running (a test stopped it)
                _run([str(bins / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"], as_user)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)


def complete_runs(url: str, builder: str, runs: int) -> None:
    """One builder's nights, for a process of its own (spawned: it imports only this module and the history)."""
    from regression.alerts.outbox import Mail, put
    from regression.history import History, Measurement

    h = History(url)
    for i in range(runs):
        run = h.start_run(f"r{i}", builder, llvm_version="22", llvm_commit="c", policy_id="p", vocab_version="v")
        h.add_measurements(run, [Measurement(f"m{j}", "module", "text_size", "policy", j) for j in range(20)])
        mail = Mail(run.run_id, builder, "regression", "farm@x", ["a@x"], f"Subject: {builder} {i}\n\n".encode())
        h.complete_run(run, "ok", None, record=lambda db, mail=mail: put(db, mail))
