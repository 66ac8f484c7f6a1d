"""Which questions a sample may not draw: those a pipeline prompt quotes, and those of the
samples already read (``--exclude-sample``), so a new sample is one nobody studied."""

from __future__ import annotations

import argparse

from agents.cli.options import UsageError
from .dataset import DatasetError, SampleSpec
from .prompt_overlap import quoted_questions

def exclusion_of(dataset, args: argparse.Namespace) -> dict:
    """The questions no sample of this run may draw, and why: quoted in a prompt
    (``--exclude-quoted``) or drawn by an ``--exclude-sample`` (with the quoted ones left out
    of it too, so both samples are drawn from the same questions)."""
    try:
        specs = [SampleSpec.parse(text, args.sample) for text in args.exclude_sample]
    except DatasetError as exc:
        raise UsageError(f"--exclude-sample: {exc}") from None
    quoted = quoted_questions(dataset.questions) if args.exclude_quoted else []
    excluded = {hit.qid for hit in quoted}
    per_sample = {}
    for spec in specs:
        drawn = [q.qid for q in spec.draw(dataset.questions, exclude={h.qid for h in quoted})]
        per_sample[str(spec)] = len(drawn)
        excluded.update(drawn)
    return {"samples": [str(spec) for spec in specs], "per_sample": per_sample,
            "quoted": [hit.to_dict() for hit in quoted], "question_ids": sorted(excluded)}


def describe_exclusion(exclusion: dict) -> str:
    if not exclusion["question_ids"]:
        return ""
    parts = []
    if exclusion["quoted"]:
        ids = ", ".join(str(hit["qid"]) for hit in exclusion["quoted"])
        parts.append(f"{len(exclusion['quoted'])} quoted in a pipeline prompt ({ids})")
    parts += [f"{n} of sample {spec}" for spec, n in exclusion["per_sample"].items()]
    return f"{len(exclusion['question_ids'])} questions: " + "; ".join(parts)
