"""One model answer with its accounting: the record the client returns and the cache stores."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass
class LLMReply:
    text: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    cached: bool = False
    usage_estimated: bool = False  # the server reported no usage; counts are ~4 chars/token

    def to_dict(self) -> dict:
        return asdict(self)
