"""The tests' own servers' ports: never one the kernel may give an outgoing connection meanwhile."""

from __future__ import annotations

import socket

from tests.servers import _EPHEMERAL, free_port


def test_free_ports_are_bindable_distinct_and_below_the_ephemeral_range():
    ports = [free_port() for _ in range(50)]
    assert len(set(ports)) == len(ports)
    assert all(10000 <= p < _EPHEMERAL.start for p in ports), ports
    with socket.socket() as s:
        s.bind(("127.0.0.1", ports[-1]))


def test_a_port_another_test_process_reserved_is_never_handed_out_here() -> None:
    """Two test suites on one machine: a port one process reserved is skipped by the other, even while no server
    listens on it yet (two `make test` side by side once started two masters on one port)."""
    import subprocess
    import sys

    from tests import servers

    code = ("import sys; from tests import servers; ports = [servers.free_port() for _ in range(300)]; "
            "print(' '.join(map(str, ports)), flush=True); sys.stdin.read()")
    other = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             cwd=str(servers.Path(__file__).resolve().parents[1]))
    try:
        theirs = set(map(int, other.stdout.readline().split()))
        assert len(theirs) == 300
        mine = {servers.free_port() for _ in range(300)}
        assert not mine & theirs
    finally:
        other.stdin.close()
        other.wait(timeout=60)
