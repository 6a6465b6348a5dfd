"""Ports for stacks started on the fly (tests, benchmarks): free, distinct, and never ones
an outgoing connection may take before the listener binds them."""

from __future__ import annotations

import socket

from vsr_extproc.demo.stack import _ephemeral_floor, free_port


def test_free_ports_are_distinct_bindable_and_below_the_ephemeral_range() -> None:
    ports = [free_port() for _ in range(50)]
    assert len(set(ports)) == len(ports)
    assert all(port < _ephemeral_floor() for port in ports)
    for port in ports[:5]:
        with socket.socket() as listener:
            listener.bind(("127.0.0.1", port))  # free when handed out
