"""Fixtures of the end-to-end tier. Every port is ephemeral, so it runs beside a demo."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from stacks import demo_document, start_stack

from vsr_extproc.demo.stack import Stack


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    running = start_stack(demo_document(), tmp_path_factory.mktemp("stack"))
    yield running
    running.stop()


@pytest.fixture
def http(stack: Stack) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=stack.url, timeout=30.0) as client:
        yield client
