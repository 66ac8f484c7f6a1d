"""Evaluation questions that a pipeline's own prompt already quotes.

The papers' prompts carry few-shot examples, and some of those are Spider dev questions (the
DEA-SQL classification prompt walks through one word for word). A pipeline whose prompt holds
a question and its reasoning is not being measured on that question, so an evaluation can
leave such questions out of every sample (``eval --exclude-quoted``).

A question counts as quoted when most of its word 4-grams (``min_share``, 0.8 by default)
appear in one prompt file: verbatim quotes, and near-verbatim ones with a word or two changed
("... singers from France?" quoted as "... singers from Chinese?"). A paraphrase shares far
fewer 4-grams and is not flagged. Words are compared case-folded, without punctuation.

``python -m agents.evaluation.prompt_overlap --data DIR`` lists what it finds.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable

from .dataset import DatasetError, Question, load_dataset

PIPELINES_DIR = Path(__file__).resolve().parents[1] / "pipelines"
NGRAM = 4
DEFAULT_MIN_SHARE = 0.8


@dataclass
class QuotedQuestion:
    """A question and the prompt file that holds most of it (``share`` 1.0: every 4-gram)."""

    qid: int
    db_id: str
    question: str
    source: str
    share: float

    def to_dict(self) -> dict:
        return asdict(self)


def prompt_texts(folder: Path | None = None) -> dict[str, str]:
    """Every ``<pipeline>/prompts/*.txt`` under ``folder`` (default: the pipelines' folder),
    keyed by its path from there."""
    folder = PIPELINES_DIR if folder is None else Path(folder)
    return {str(path.relative_to(folder)): path.read_text(encoding="utf-8")
            for path in sorted(folder.glob("*/prompts/*.txt"))}


def quoted_questions(questions: Iterable[Question], texts: dict[str, str] | None = None,
                     min_share: float = DEFAULT_MIN_SHARE) -> list[QuotedQuestion]:
    """The questions whose word 4-grams appear in one prompt text for at least ``min_share``.

    ``texts`` maps a name to a prompt's text (default: the pipelines' prompt files). A question
    shorter than four words counts only when it is a whole line or sentence of a prompt.
    """
    texts = prompt_texts() if texts is None else texts
    indexed = [(name, _grams(_words(text)), _sentences(text)) for name, text in texts.items()]
    found = []
    for q in questions:
        words = _words(q.question)
        if not words:
            continue
        grams = [tuple(words[i:i + NGRAM]) for i in range(len(words) - NGRAM + 1)]
        best = (0.0, "")
        for name, prompt_grams, sentences in indexed:
            if grams:
                share = sum(g in prompt_grams for g in grams) / len(grams)
            else:
                share = 1.0 if tuple(words) in sentences else 0.0
            best = max(best, (share, name), key=lambda b: b[0])
        if best[0] >= min_share:
            found.append(QuotedQuestion(q.qid, q.db_id, q.question, best[1],
                                        round(best[0], 3)))
    return found


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.casefold())


def _sentences(text: str) -> set[tuple[str, ...]]:
    """The words of each line or sentence, without a leading label such as "Q:"."""
    parts = re.split(r"[\n.?!]+", text)
    return {tuple(_words(re.sub(r"^\s*\w+\s*:", "", part))) for part in parts}


def _grams(words: list[str]) -> set[tuple[str, ...]]:
    return {tuple(words[i:i + NGRAM]) for i in range(len(words) - NGRAM + 1)}


def main(argv: list[str] | None = None) -> int:
    """List the dataset's questions quoted in the pipelines' prompts, one per line."""
    parser = argparse.ArgumentParser(
        prog="python -m agents.evaluation.prompt_overlap",
        description="List evaluation questions quoted (near-)verbatim in a pipeline prompt.")
    parser.add_argument("--data", required=True, help="dataset folder (or its questions file)")
    parser.add_argument("--min-share", type=float, default=DEFAULT_MIN_SHARE,
                        help="share of the question's word 4-grams a prompt must hold "
                             f"(default {DEFAULT_MIN_SHARE})")
    args = parser.parse_args(argv)
    try:
        dataset = load_dataset(args.data)
    except DatasetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    found = quoted_questions(dataset.questions + dataset.missing, min_share=args.min_share)
    for hit in found:
        print(f"{hit.qid}\t{hit.db_id}\t{hit.share:.2f}\t{hit.source}\t{hit.question}")
    print(f"{len(found)} of {dataset.total} questions quoted in a prompt", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
