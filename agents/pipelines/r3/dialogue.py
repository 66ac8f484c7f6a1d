"""The SQL-Writer's truncated dialogue history H.

The paper keeps one conversation with the writer: H = [(x, S), y], then every execution error and
every set of reviews is appended, and the writer answers in that context. The history is cut when
the prompt would outgrow the model's context; here the cut is explicit: the first prompt (question,
schema, examples) always stays, and only the last ``turns`` exchanges after it are kept.

Only the exchanges are stored in ``ctx.data`` (the first prompt is rebuilt from the run's inputs),
so each step snapshot stays small and a resumed run sees exactly the same conversation.
"""

from __future__ import annotations


def writer_messages(first_prompt: str, dialogue: list[dict], new_message: str,
                    turns: int) -> list[dict]:
    """Messages for the writer's next answer: the first prompt, kept turns, the new message.

    ``dialogue`` alternates ``assistant, user, assistant, user, ...`` and starts with the writer's
    first answer. A turn is one writer answer plus the message that followed it; the new message
    closes the last turn, so at least the writer's latest answer is always kept.
    """
    exchanges = dialogue + [{"role": "user", "content": new_message}]
    pairs = [exchanges[i:i + 2] for i in range(0, len(exchanges), 2)]
    kept = [m for pair in pairs[-max(1, turns):] for m in pair]
    return [{"role": "user", "content": first_prompt}] + kept


def extend(dialogue: list[dict], new_message: str, answer: str) -> list[dict]:
    """The dialogue after the writer answered ``new_message`` with ``answer``."""
    return dialogue + [{"role": "user", "content": new_message},
                       {"role": "assistant", "content": answer}]
