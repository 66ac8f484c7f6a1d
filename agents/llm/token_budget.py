"""How many tokens a prompt takes, and whether it fits the model's context.

The embedded model's tokenizer is only reachable through its running server, and a remote
endpoint has none to ask, so prompts are measured with an estimate that errs on the long side:

- an ASCII digit is a token of its own (Qwen's tokenizer splits numbers into digits);
- a non-ASCII character counts as many tokens as it has UTF-8 bytes (the most a byte-level
  tokenizer can make of it);
- every other character counts 1/2.8 of a token;
- each message adds :data:`PER_MESSAGE` tokens and the chat template :data:`TEMPLATE`.

On the 3,474 prompts the Spider benchmarks sent to Qwen2.5-Coder-1.5B (bench/results, whose
records hold the server's own prompt token counts) this estimate is never below the real count
(at least 1.02 times it, median 1.36): a prompt it lets through fits, and one it stops would at
worst have been a long one (tests/test_retrieval.py checks the records). A third of a token per
character was enough until schemas retrieved from a merged database brought long runs of names,
e-mail addresses and phone numbers, which the tokenizer splits finer (0.97 of the real count).

A prompt fits when its tokens plus the tokens kept for the answer (the call's ``max_tokens``)
stay within the context (``n_ctx`` of the settings, :envvar:`STUDIO_N_CTX`), as llama.cpp
refuses a request whose prompt leaves no room to answer.
"""

from __future__ import annotations

import math

DIGIT_TOKENS = 1
CHARS_PER_TOKEN = 2.8
PER_MESSAGE = 5
TEMPLATE = 30
DEFAULT_CONTEXT = 8192
DEFAULT_ANSWER = 1024


def estimate_tokens(text: str) -> int:
    """Tokens ``text`` takes at most, as the estimate above counts them (0 for no text)."""
    if not text:
        return 0
    digits = sum(map(text.count, "0123456789"))
    narrow, wide = len(text), 0
    if not text.isascii():
        foreign = [ch for ch in text if not ch.isascii()]
        narrow -= len(foreign)
        wide = sum(len(ch.encode("utf-8", "surrogatepass")) for ch in foreign)
    other = narrow - digits
    return digits * DIGIT_TOKENS + wide + math.ceil(other / CHARS_PER_TOKEN)


def message_tokens(messages: list[dict]) -> int:
    """Tokens of a chat request's messages, the chat template included."""
    return TEMPLATE + sum(PER_MESSAGE + estimate_tokens(str(m.get("content") or ""))
                          for m in messages)


def context_size(llm) -> int:
    """The context of the model ``llm`` talks to, in tokens: the embedded server's ``n_ctx``,
    or ``remote_context`` for any other endpoint (whose size cannot be asked for)."""
    settings = getattr(llm, "settings", None)
    if getattr(settings, "provider", "local") not in ("local", None, ""):
        return int(getattr(settings, "remote_context", 0) or DEFAULT_CONTEXT)
    return int(getattr(settings, "n_ctx", 0) or DEFAULT_CONTEXT)


def context_setting(llm) -> str:
    """The setting (and its environment variable) that sets :func:`context_size` for ``llm``."""
    settings = getattr(llm, "settings", None)
    if getattr(settings, "provider", "local") not in ("local", None, ""):
        return "remote_context, STUDIO_REMOTE_CONTEXT"
    return "n_ctx, STUDIO_N_CTX"


def answer_tokens(llm, max_tokens: int | None = None) -> int:
    """Tokens kept free for the answer of one call: its ``max_tokens`` or the setting's."""
    if max_tokens is not None:
        return int(max_tokens)
    settings = getattr(llm, "settings", None)
    return int(getattr(settings, "max_tokens", 0) or DEFAULT_ANSWER)


def over_context(messages: list[dict], llm, max_tokens: int | None = None) -> str | None:
    """Why ``messages`` cannot be sent to ``llm`` (too long for its context), or None."""
    context = context_size(llm)
    answer = answer_tokens(llm, max_tokens)
    prompt = message_tokens(messages)
    if prompt + answer <= context:
        return None
    return (f"the prompt is about {prompt:,} tokens; with {answer:,} kept for the answer it does "
            f"not fit the model's context of {context:,} tokens, so it was not sent. Ask about "
            f"fewer tables or a shorter text, or raise the context ({context_setting(llm)})")
