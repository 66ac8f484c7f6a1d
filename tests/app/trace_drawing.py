"""A pipeline's events drawn by ``render_trace`` as on the Ask page, in an AppTest script, and
the texts and code blocks of one drawn step, as the trace tests read them."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from app_helpers import TIMEOUT


def _draw_trace(events: list[dict]):
    """The AppTest script: one pipeline's events drawn as on the Ask page, steps expanded."""
    from agents.core.events import StepEvent
    from ui.trace import render_trace

    render_trace([StepEvent.from_dict(e) for e in events], expanded=True)


def draw(events: list[dict]) -> AppTest:
    at = AppTest.from_function(_draw_trace, default_timeout=TIMEOUT,
                               kwargs={"events": events}).run()
    assert not at.exception, at.exception
    assert len(at.status) == len(events)
    assert at.get("json") == []  # no step is a raw JSON dump
    return at


def texts(block) -> str:
    """Every markdown and caption text of one step block."""
    return "\n".join([m.value for m in block.markdown] + [c.value for c in block.caption])


def codes(block) -> list[tuple[str, str]]:
    """``(language, text)`` of the step's SQL and diff blocks (not the prompt and raw output)."""
    return [(c.proto.language, c.value) for c in block.code if c.proto.language != "plaintext"]
