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


def test_a_port_whose_last_connections_wait_in_time_wait_is_free_again() -> None:
    from vsr_extproc.demo.stack import port_is_free

    port = free_port()
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", port))
    server.listen()
    client = socket.create_connection(("127.0.0.1", port))
    accepted, _ = server.accept()
    assert not port_is_free(port)  # listening
    accepted.close()  # the server side closes first: its end waits in TIME_WAIT
    client.close()
    server.close()
    # nothing listens; a restarted server (SO_REUSEADDR) could bind at once
    assert port_is_free(port)
