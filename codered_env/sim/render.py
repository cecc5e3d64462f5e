"""Compact text rendering of an observation for LLM prompts.

Everything a dispatcher needs, one line per entity, no JSON punctuation. Works on the
observation dict alone, so a client can render what a server sent. The lines themselves, keyed
by section and entity, come from ``render_lines`` (the data consumers use instead of this text).
"""

from __future__ import annotations

from typing import Any

from .derived import Derived
from .render_lines import lines_text, render_lines


def render_text(obs: dict[str, Any], derived: Derived | None = None) -> str:
    """The text of ``obs``; ``derived``: an episode's memo of the lines of the parts its views
    reuse (derived.py), turned here once per call: the same text, cheaper from step to step."""
    if derived is None:
        return lines_text(render_lines(obs))
    derived.turn()
    return lines_text(render_lines(obs, derived=derived))
