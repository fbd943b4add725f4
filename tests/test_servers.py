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
