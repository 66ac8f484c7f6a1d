"""The vote over the candidates' results, and the selection agent for an undecided vote.

The vote is :func:`agents.runs.candidates.vote`: candidates whose results are equal under the
evaluation metric's rule form a group, candidates that did not run (an error, a timeout, no
SQL) join none, and the largest group wins when it is clearly the largest and holds at least
``min_share`` of all candidates; with ``data_first`` a result holding no data (no rows, or
NULLs only) is set aside while another result holds some. Otherwise (a tie, or a weak winner) the selection agent reads
the question, the schema and the leading groups' SQL with a preview of their results, and
picks one; a small model judges better between a few concrete results than it writes SQL, and
it is asked only for the questions the vote leaves open.
"""

from __future__ import annotations

import string
from pathlib import Path

from agents.runs.candidates import Candidate, vote
from agents.core.engine import ParseError, StepContext, StepError, UnparseableAnswer
from agents.llm.parsing import extract_json
from agents.llm.prompts import load, render
from ..baseline import question_text
from ..common import user_message
from agents.retrieval.grounding_step import grounded_evidence
from ..r3.result_table import result_table
from .generators import priority, schema_text
from .outputs import CandidateVote, Selection
from .steps import PREVIEW_ROWS, current_candidates
from .vote_rules import vote_rules

HERE = Path(__file__).parent
MAX_OPTIONS = 4      # groups shown to the selection agent (the largest, then by priority)
SELECT_MAX_TOKENS = 300
LABELS = string.ascii_uppercase


def _group_summary(candidates: list[Candidate], group) -> dict:
    best = candidates[group.representative]
    result = best.result or {}
    return {"generators": list(group.generators), "size": group.size,
            "representative": best.generator, "sql": best.sql,
            "columns": list(result.get("columns") or []),
            "rows": list(result.get("rows") or [])[:PREVIEW_ROWS],
            "row_count": result.get("row_count"), "truncated": bool(result.get("truncated"))}


def _rows_text(group: dict) -> str:
    count = group.get("row_count")
    return "no rows" if count == 0 else f"{count} row(s)" if count is not None else "a result"


def draft_verdict(draft: str | None, groups: list[dict], chosen: int, total: int,
                  by: str) -> tuple[str | None, str | None]:
    """``(outcome, note)``: what became of the draft answer once group ``chosen`` of
    ``groups`` is the answer (``by``: "the vote", "the selection agent"). ``confirmed`` when
    the draft is in that group, ``replaced`` otherwise, with what changed and why."""
    if not draft or not groups:
        return None, None
    group = groups[chosen]
    if draft in group["generators"]:
        return "confirmed", (f"confirmed: {group['size']} of {total} candidates return the "
                             "same rows")
    own = next((g for g in groups if draft in g["generators"]), None)
    before = f"returned {_rows_text(own)}" if own else "no longer runs"
    others = ", ".join(group["generators"])
    return "replaced", (f"replaced: the draft ({draft}) {before}; {by} chose the answer of "
                        f"{others} ({group['size']} of {total} candidates), which returns "
                        f"{_rows_text(group)}")


def vote_step(ctx: StepContext) -> str | None:
    """Group the candidates by result; a decisive vote (or a lone result) is the answer."""
    data = ctx.data
    candidates = current_candidates(ctx)
    ctx.set_inputs(candidates=[c.generator for c in candidates], min_share=ctx.params["min_share"])
    trust = priority(ctx.params, data["plan"])
    outcome = vote(candidates, priority=trust, min_share=ctx.params["min_share"],
                   **vote_rules(ctx))
    groups = [_group_summary(candidates, g) for g in outcome.groups]
    failed = [{"generator": candidates[i].generator, "error_class": candidates[i].error_class,
               "error": (candidates[i].result or {}).get("error")} for i in outcome.failed]
    record = CandidateVote(groups=groups, failed=failed, total=len(candidates),
                           reason=outcome.reason, min_share=outcome.min_share,
                           contenders=list(outcome.contenders),
                           set_aside=list(outcome.set_aside) or None,
                           draft=data.get("draft"), skipped=list(data.get("skipped") or [])
                           or None)
    next_step = None
    if not groups:
        record.outcome = "none_ran"
        by_name = {c.generator: c for c in candidates}
        first = next((n for n in trust if n in by_name and by_name[n].sql), None)
        data["chosen"], data["sql"] = None, by_name[first].sql if first else None
    elif outcome.needs_selection:
        record.outcome, next_step = "selection", "select"
        data["sql"] = groups[0]["sql"]  # until the selection agent decides
    else:
        record.outcome = "decisive" if outcome.decisive else "only_result"
        record.chosen = groups[0]["representative"]
        data["chosen"], data["sql"] = record.chosen, groups[0]["sql"]
        record.draft_outcome, record.draft_note = draft_verdict(
            data.get("draft"), groups, 0, len(candidates), "the vote")
    data["vote"] = record.to_dict()
    ctx.set_output(record, sql=None if next_step else data["sql"])
    if not groups:
        kept = f"; the SQL of {first} is kept" if first else ""
        details = ", ".join(f"{f['generator']} ({f['error_class']})" for f in failed)
        raise StepError(f"none of the {len(candidates)} candidates ran: {details}{kept}")
    return next_step


def options_text(options: list[dict], total: int) -> str:
    """The candidates as the selection agent reads them: label, support, SQL, result."""
    parts = []
    for option in options:
        support = f"written by {option['size']} of the {total} generators"
        parts.append(f"Candidate {option['label']} ({support}):\n```sql\n{option['sql']}\n```\n"
                     f"Result:\n{result_table({'ok': True, **option}, PREVIEW_ROWS)}")
    return "\n\n".join(parts)


def parse_choice(text: str, labels: list[str]) -> dict:
    """``{"choice": label, "reasoning": text}`` from the agent's JSON answer."""
    value = extract_json(text)
    if not isinstance(value, dict):
        raise ParseError('answer with one JSON object {"reasoning": "...", "choice": "A"}')
    choice = str(value.get("choice") or value.get("candidate") or "").strip().upper()
    choice = choice.removeprefix("CANDIDATE").strip(" .:)(")
    if choice not in labels:
        raise ParseError(f"the choice must be one of {', '.join(labels)}, not {choice!r}")
    return {"choice": choice, "reasoning": str(value.get("reasoning") or "").strip()}


def tally(ballots: list[dict], labels: list[str]) -> str | None:
    """The label picked most often by usable ballots; a tie goes to the label the vote ranks
    first (``labels`` are in the vote's order). None when no ballot was usable."""
    counts = {label: 0 for label in labels}
    for ballot in ballots:
        if ballot.get("choice") in counts:
            counts[ballot["choice"]] += 1
    best = max(counts.values(), default=0)
    return next((label for label in labels if counts[label] == best), None) if best else None


def select(ctx: StepContext) -> None:
    """The selection agent compares the leading groups and picks one; when its answer cannot
    be used even after a retry, the vote's leading group stands.

    With ``select_orders`` above 1 it compares them again with the candidates rotated (each
    candidate shown first once, up to that many times), and the candidate picked most often
    wins, a tie going to the vote's order. A small model often picks whichever candidate comes
    first; rotating the order makes that habit cancel out instead of deciding, and keeps only
    a preference that holds whatever the order.
    """
    data = ctx.data
    vote_record = data.get("vote") or {}
    groups = vote_record.get("groups") or []
    contenders = [i for i in vote_record.get("contenders") or [] if 0 <= i < len(groups)]
    if len(contenders) < 2:
        raise StepError("the vote left fewer than two groups to choose between")
    options = [{"label": LABELS[n], "group": i, **groups[i]}
               for n, i in enumerate(contenders[:MAX_OPTIONS])]
    labels = [o["label"] for o in options]
    ctx.set_inputs(candidates=[f"{o['label']}: {', '.join(o['generators'])}" for o in options])
    answer_schema = {"type": "object", "required": ["reasoning", "choice"], "properties": {
        "reasoning": {"type": "string"}, "choice": {"type": "string", "enum": labels}}}
    orders = max(1, min(int(ctx.params.get("select_orders") or 1), len(options)))
    template, schema = load(str(HERE), "select"), schema_text(ctx)
    question = question_text(ctx.question, grounded_evidence(ctx.evidence, data.get("grounding")))
    ballots: list[dict] = []
    for shift in range(orders):
        shown = options[shift:] + options[:shift]
        relabelled = [{**o, "label": labels[n]} for n, o in enumerate(shown)]
        prompt = render(template, schema=schema, question=question,
                        candidates=options_text(relabelled, vote_record.get("total") or 0))
        ballot = {"order": [o["label"] for o in shown], "choice": None, "reasoning": None}
        try:
            answer = ctx.ask(user_message(prompt),
                             parse=lambda text: parse_choice(text, labels),
                             json_schema=answer_schema, max_tokens=SELECT_MAX_TOKENS)
            ballot["choice"] = shown[labels.index(answer["choice"])]["label"]
            ballot["reasoning"] = answer["reasoning"] or None
        except UnparseableAnswer as exc:
            ballot["error"] = str(exc)
        ballots.append(ballot)
    choice = tally(ballots, labels)
    fallback = choice is None
    if fallback:
        choice = labels[0]
        why = ballots[-1].get("error", "")
        ctx.note(f"the selection agent's answer could not be used ({why}); the vote's leading "
                 f"group {choice} stands")
    elif orders > 1:
        picks = ", ".join(f"{b['choice'] or '-'} (shown {''.join(b['order'])})" for b in ballots)
        ctx.note(f"compared in {orders} orders, picked {picks}: {choice} wins")
    reasoning = next((b["reasoning"] for b in ballots if b["choice"] == choice), None)
    option = options[labels.index(choice)]
    data["chosen"], data["sql"] = option["representative"], option["sql"]
    shown_keys = ("label", "generators", "sql", "columns", "rows", "row_count")
    outcome, note = draft_verdict(data.get("draft"), groups, option["group"],
                                  vote_record.get("total") or 0, "the selection agent")
    record = Selection(options=[{k: o[k] for k in shown_keys} for o in options],
                       choice=choice, chosen=option["representative"],
                       reasoning=None if fallback else reasoning, fallback=fallback,
                       ballots=ballots if orders > 1 else None, draft_outcome=outcome,
                       draft_note=note)
    data["selection"] = record.to_dict()
    ctx.set_output(record, sql=option["sql"])
    return None
