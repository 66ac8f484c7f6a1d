"""The first model request a pipeline would send, recorded instead of sent (shared by the
read-ahead and the schema-context tests)."""

from __future__ import annotations

from agents.core.config import Settings
from agents.core.engine import start_run
from agents.core.warmup import _RecordingClient


class LocalModel:
    """What the prompts are built for: the embedded model's settings (its context budget)."""
    settings = Settings(provider="local")
    model = "m"


def first_request(pipeline, db, question: str, *, params: dict | None = None) -> list[dict]:
    """The messages of ``pipeline``'s first model request for ``question`` on ``db``."""
    recorder = _RecordingClient(LocalModel())
    run = start_run(pipeline, question, db, recorder, params=params, answer_checks=False)
    for _ in run:
        if recorder.messages is not None:
            break
    run.close()
    return recorder.messages
