"""Fixtures for the inference/evaluation tests: a scripted fake OpenAI-compatible server."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
for path in (str(HERE), str(REPO)):
    if path not in sys.path:
        sys.path.insert(0, path)

from fake_openai import FakeOpenAI  # noqa: E402


@pytest.fixture(scope="session")
def _fake_server() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def fake_llm(_fake_server: FakeOpenAI) -> Iterator[FakeOpenAI]:
    """The fake endpoint, reset to its default behaviour for each test."""
    _fake_server.reset()
    yield _fake_server
    _fake_server.reset()
