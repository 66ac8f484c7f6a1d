"""The steps before the vote: value grounding, one candidate per generator, one repair each
(and one more for a candidate that runs but reads unrelated parts of the schema).

What a later step needs is in ``ctx.data`` (see :func:`initial_data`): the run order, what
grounding found, and per candidate its SQL, the model's raw answer, the examples its prompt
held and a short preview of its result; the vote's order of trust is read from the run's
parameters (:func:`~.generators.priority`). A repair rebuilds the candidate's prompt from
these and continues that conversation, so the server reuses the prompt it has just processed
and the model sees its own answer with the error.
"""

from __future__ import annotations

from pathlib import Path

from agents.core.engine import StepContext, StepError, UnparseableAnswer
from agents.db.exec_result import ExecResult
from ...outputs import SQLRepair
from agents.llm.parsing import extract_sql
from agents.llm.prompts import load, render
from agents.db.sqltext import same_sql
from agents.rules.runnable_ending import HINT_PARAM, asks_model, repair_from_hint
from agents.rules.unrelated_parts import unrelated_parts
from agents.runs.candidates import Candidate, run_candidate, settled
from agents.retrieval import grounding_step as grounding
from agents.retrieval.grounding_step import grounded_evidence
from ..r3 import steps as r3_steps
from .generators import WithParams, generator_for, plan, priority, sample_number
from .outputs import CandidateSQL
from .vote_rules import vote_rules

PREVIEW_ROWS = 5  # rows of each candidate's result kept in the state (the vote re-runs it)
HERE = Path(__file__).parent
PARTS_PARAM = "unrelated_parts"
PARTS_ERROR_CLASS = "UnrelatedParts"
PARTS_TOLD = "unrelated parts"  # a repair turn about SQL that runs (its "told")


def initial_data(ctx: StepContext) -> dict:
    order, _ = plan(ctx.params)
    if not order:
        raise ValueError("no generator to run: name one in generators or set samples above 0")
    return {
        "plan": order,          # candidate names in run order: cot, writer, sample1, ...
        "grounding": None,      # Grounding.to_dict() of the value lookup
        # {"name", "sql", "answer", "examples", "result", "repaired_from", "repair_turns"?,
        # "parts_told"?: told once of unrelated parts, "prompt"?: the prompt variant of a
        # writer with several}
        "candidates": [],
        "vote": None,           # the vote's groups and outcome (see voting.vote_step)
        "selection": None,      # the selection agent's options, choice and reasoning
        "chosen": None,         # the name of the candidate whose SQL is the answer
        "sql": None,            # the answer so far: the chosen SQL, or the leading candidate's
        "draft": None,          # the first candidate that ran: the page's draft answer
        "skipped": [],          # candidates not written because the vote was decided
    }


def first_step(ctx: StepContext) -> str:
    return "ground" if ctx.params["value_grounding"] else f"candidate:{ctx.data['plan'][0]}"


def next_after(ctx: StepContext, name: str) -> str:
    """The next candidate in the run order, or the vote after the last one -- or at once when
    ``stop_when_decided`` is on and the candidates so far decide the vote whatever the rest
    would return (:func:`agents.runs.candidates.settled`); the step's note says which were
    skipped and why."""
    order = ctx.data["plan"]
    at = order.index(name) + 1 if name in order else len(order)
    if at >= len(order):
        return "vote"
    remaining = len(order) - at
    ran = sum(1 for e in ctx.data["candidates"] if (e.get("result") or {}).get("ok"))
    # the leader needs more than the remaining and its share of all: if even every candidate
    # that ran could not make it, the results are not run again to find out
    could = ran > remaining and ran >= ctx.params["min_share"] * len(order)
    if ctx.params.get("stop_when_decided") and could:
        why = settled(current_candidates(ctx), remaining,
                      min_share=ctx.params["min_share"], **vote_rules(ctx))
        if why:
            ctx.data["skipped"] = list(order[at:])
            ctx.note(f"the vote is decided: {why}; not written: {', '.join(order[at:])}")
            return "vote"
    return f"candidate:{order[at]}"


def current_candidates(ctx: StepContext) -> list[Candidate]:
    """Every candidate so far with its whole result. Those that ran are run again (results
    are kept short in the state), as is any whose SQL was edited since it ran; the others keep
    their error."""
    found = []
    for entry in ctx.data["candidates"]:
        name, sql, result = entry["name"], entry.get("sql"), entry.get("result")
        stale = sql and (result is None or result.get("sql") != sql)
        if sql and (stale or result.get("ok")):
            found.append(run_candidate(ctx.db, name, sql, timeout=ctx.limits.timeout,
                                       max_rows=ctx.limits.max_rows))
        else:
            found.append(Candidate(generator=name, sql=sql, result=result))
    return found


def mark_draft(ctx: StepContext, name: str, record, result: ExecResult) -> None:
    """The first candidate whose SQL runs is the draft answer the page shows at once, marked as
    being checked; the vote later confirms or replaces it."""
    if result.ok and not ctx.data.get("draft"):
        ctx.data["draft"] = name
        record.draft = True


def entry_of(data: dict, name: str) -> dict:
    for entry in data["candidates"]:
        if entry["name"] == name:
            return entry
    raise StepError(f"there is no candidate {name!r} to repair")


def leading_sql(data: dict, params: dict) -> str | None:
    """The SQL of the most trusted candidate that runs so far (a run stopped before the vote
    still has an answer)."""
    ran = {e["name"]: e["sql"] for e in data["candidates"] if (e.get("result") or {}).get("ok")}
    return next((ran[name] for name in priority(params, data["plan"]) if name in ran), None)


def ground(ctx: StepContext) -> str:
    """Value grounding: the question's words and literals looked up in the stored values --
    in the tables and columns the Schema Retriever kept when the schema was cut to fit, the
    only ones the writers see."""
    grounding.ground(ctx, shown_to="every generator, with the question")
    return f"candidate:{ctx.data['plan'][0]}"


def _evidence(ctx: StepContext) -> str:
    return grounded_evidence(ctx.evidence, ctx.data.get("grounding"))


def _store(data: dict, entry: dict) -> None:
    """Put ``entry`` in the candidate list, in place of an earlier one of the same name."""
    for i, old in enumerate(data["candidates"]):
        if old["name"] == entry["name"]:
            data["candidates"][i] = entry
            return
    data["candidates"].append(entry)


def candidate(ctx: StepContext, name: str) -> str:
    """One generator writes its candidate; the candidate is executed read-only, and goes to a
    repair when it fails or reads unrelated parts of the database."""
    generator = generator_for(name)
    temperature = ctx.params["sample_temperature"] if generator.sampled else None
    examples = generator.examples(ctx) if generator.examples else []
    prompt = ctx.params[generator.prompt_param] if generator.prompt_param else None
    ctx.set_inputs(generator=generator.method, **({"temperature": temperature}
                                                   if temperature is not None else {}),
                   **({"prompt": prompt} if prompt else {}))
    entry = {"name": name, "sql": None, "answer": None, "examples": examples, "result": None,
             "repaired_from": None, **({"prompt": prompt} if prompt else {})}
    _store(ctx.data, entry)
    record = CandidateSQL(generator=name, method=generator.method, temperature=temperature,
                          examples=len(examples) if generator.examples else None)
    try:
        draft, raw = ctx.ask(generator.messages(ctx, _evidence(ctx), examples),
                             parse=lambda text: (generator.parse(text), text),
                             temperature=temperature, max_tokens=generator.max_tokens,
                             json_schema=generator.json_schema,
                             seed=sample_number(name) if generator.sampled else None)
    except UnparseableAnswer as exc:
        record.error, record.error_class = str(exc), "NoSQL"
        ctx.set_output(record)
        ctx.note(f"{name} wrote no usable SQL; it takes no part in the vote")
        return next_after(ctx, name)
    sql = draft["sql"]
    result = ctx.execute(sql)
    entry.update(sql=sql, answer=raw, result=result.preview(rows=PREVIEW_ROWS))
    ctx.data["sql"] = leading_sql(ctx.data, ctx.params)
    record.sub_questions = draft.get("sub_questions")
    record.reasoning = draft.get("reasoning")
    record.ok, record.error, record.error_class = result.ok, result.error, result.error_class
    record.hint = result.hint
    record.rows = result.row_count if result.ok else None
    mark_draft(ctx, name, record, result)
    ctx.set_output(record, sql=sql)
    if not result.ok and ctx.params["repair"]:
        return f"repair:{name}"
    if _flag_unrelated_parts(ctx, entry, sql, result):
        return f"repair:{name}"
    return next_after(ctx, name)


def _parts_problem(ctx: StepContext, entry: dict, sql: str) -> str | None:
    """What the candidate's generator is told when ``sql`` reads tables of parts of the
    database that no foreign key connects (:mod:`agents.rules.unrelated_parts`): with
    ``unrelated_parts`` on, once per candidate (``parts_told`` in its entry). The parts are
    those of the whole database, not of what retrieval kept. None otherwise."""
    if not ctx.params[PARTS_PARAM] or entry.get("parts_told"):
        return None
    found = unrelated_parts(sql, ctx.db.schema)
    return found.sentence() if found is not None else None


def _flag_unrelated_parts(ctx: StepContext, entry: dict, sql: str, result: ExecResult) -> bool:
    """Whether the candidate's SQL, which runs, goes to a repair for reading unrelated parts
    (:func:`_parts_problem`; only with ``repair`` on); the step's note says so."""
    if not (result.ok and ctx.params["repair"]):
        return False
    problem = _parts_problem(ctx, entry, sql)
    if problem is not None:
        ctx.note(f"the SQL runs, but {problem} It gets a repair told so.")
    return problem is not None


def repair(ctx: StepContext, name: str) -> str:
    """The candidate's generator sees its failing SQL with the error (and the hint naming the
    real tables and columns) in its own conversation, and writes the SQL once more. With
    ``repair_attempts`` above 1 a repaired SQL that fails with *another* error is repaired again
    in the same conversation: a repair that moves a column to the table the hint named often
    meets the next wrong name there (two look-alike tables, each with half of what the question
    needs); the same error again means the generator is stuck, so it stops there. A candidate
    whose SQL runs but reads unrelated parts of the schema (:func:`_parts_problem`) is told
    that instead of an error, once (:func:`_repaired_parts`). Where the error's hint already
    holds the version of the query that runs (``repair_from_hint``), that version is the repair
    and the generator is not asked (:func:`_repaired_from_hint`)."""
    entry = entry_of(ctx.data, name)
    before, failed = entry.get("sql"), ExecResult.from_dict(entry.get("result") or {"ok": False})
    problem = _parts_problem(ctx, entry, before) if before and failed.ok else None
    if not before or (failed.ok and not problem):
        raise StepError(f"candidate {name} has no failing SQL to repair, nor SQL reading "
                        f"unrelated parts of the database")
    generator = generator_for(name)
    error = problem or failed.feedback()
    turns = list(entry.get("repair_turns") or [])  # earlier repairs of this candidate
    attempt = len(turns) + 1
    ctx.set_inputs(sql=before, error=problem or failed.error,
                   **({"attempt": attempt} if turns else {}),
                   repair_from_hint=ctx.params[HINT_PARAM])
    hinted = None if problem else repair_from_hint(ctx, before, failed.error, failed.hint,
                                                   record=True)
    if hinted is not None:
        return _repaired_from_hint(ctx, name, entry, failed, hinted, attempt)
    written = (WithParams(ctx, **{generator.prompt_param: entry["prompt"]})
               if generator.prompt_param and entry.get("prompt") else ctx)
    messages = generator.messages(written, _evidence(ctx), entry.get("examples") or []) + [
        {"role": "assistant", "content": entry.get("answer") or
         f"```sql\n{turns[0]['sql'] if turns else before}\n```"}]
    for turn in turns:  # each earlier repair: what it was told and its own reply
        messages += [{"role": "user", "content": _repair_message(turn)},
                     {"role": "assistant", "content": turn["answer"]}]
    this_turn = {"sql": before, "error": error, "answer": None,
                 **({"told": PARTS_TOLD} if problem else {})}
    messages.append({"role": "user", "content": _repair_message(this_turn)})
    after, answer = ctx.ask(messages, parse=lambda text: (extract_sql(text).strip(), text),
                            max_tokens=generator.max_tokens)
    this_turn["answer"] = answer
    record = SQLRepair(error=problem or failed.error,
                       error_class=PARTS_ERROR_CLASS if problem else failed.error_class,
                       hint=None if problem else failed.hint, sql_before=before,
                       sql_after=after, attempt=attempt,
                       from_hint=None if problem else asks_model(ctx))
    if problem:
        return _repaired_parts(ctx, name, entry, record, turns + [this_turn])
    ctx.set_output(record, sql=after)
    if same_sql(after, before):
        ctx.note("the repair is the same SQL as before; the candidate keeps its error"
                 + (" and takes no part in the vote" if turns else ""))
        return next_after(ctx, name)
    result = ctx.execute(after)
    entry.update(sql=after, result=result.preview(rows=PREVIEW_ROWS), repaired_from=before,
                 repair_turns=turns + [this_turn])
    ctx.data["sql"] = leading_sql(ctx.data, ctx.params)
    if result.ok:
        mark_draft(ctx, name, record, result)
        if record.draft:
            ctx.set_output(record, sql=after)
        ctx.note(f"the repaired SQL runs and returns {result.row_count} row(s)")
        if _flag_unrelated_parts(ctx, entry, after, result):
            return f"repair:{name}"
        return next_after(ctx, name)
    if attempt < ctx.params["repair_attempts"] and result.error != failed.error:
        ctx.note(f"the repaired SQL fails on another error ({result.error}); it gets another "
                 f"repair")
        return f"repair:{name}"
    ctx.note(f"the repaired SQL fails too ({result.error_class}); {name} takes no part in "
             f"the vote")
    return next_after(ctx, name)


def _repaired_from_hint(ctx: StepContext, name: str, entry: dict, failed: ExecResult,
                        hinted, attempt: int) -> str:
    """The candidate's repair is the version of its SQL the error's hint holds, which runs
    (run again here under the run's limits): no model call, and no turn of its conversation
    (a later repair for unrelated parts is told the SQL it reads)."""
    before, result = entry["sql"], hinted.result
    record = SQLRepair(error=failed.error, error_class=failed.error_class, hint=failed.hint,
                       sql_before=before, sql_after=hinted.sql, attempt=attempt,
                       rewrite=hinted.change, from_hint=True)
    entry.update(sql=hinted.sql, result=result.preview(rows=PREVIEW_ROWS), repaired_from=before)
    ctx.data["sql"] = leading_sql(ctx.data, ctx.params)
    mark_draft(ctx, name, record, result)
    ctx.set_output(record, sql=hinted.sql)
    ctx.note(f"the hint's version of the SQL runs and returns {result.row_count} row(s)")
    if _flag_unrelated_parts(ctx, entry, hinted.sql, result):
        return f"repair:{name}"
    return next_after(ctx, name)


def _repair_message(turn: dict) -> str:
    """What a repair told the generator about ``turn["sql"]``: its error, or, for SQL that ran,
    why it reads the wrong tables."""
    if turn.get("told") == PARTS_TOLD:
        return render(load(str(HERE), "parts_error"), sql=turn["sql"], problem=turn["error"])
    return render(load(str(r3_steps.HERE), "exec_error"), sql=turn["sql"], error=turn["error"])


def _repaired_parts(ctx: StepContext, name: str, entry: dict, record: SQLRepair,
                    turns: list[dict]) -> str:
    """After the repair of a candidate that reads unrelated parts: the repaired SQL when it runs
    and reads one part, otherwise the SQL the candidate had, which runs (the trace shows both).
    The candidate is told once: whatever the repair wrote, it is not told again."""
    before, after = record.sql_before, record.sql_after
    entry["parts_told"] = True
    if same_sql(after, before):
        ctx.set_output(record, sql=before)
        ctx.note("the repair is the same SQL as before; the candidate keeps it")
        return next_after(ctx, name)
    result = ctx.execute(after)
    still = unrelated_parts(after, ctx.db.schema) if result.ok else None
    if result.ok and still is None:
        mark_draft(ctx, name, record, result)
        ctx.set_output(record, sql=after)
        entry.update(sql=after, result=result.preview(rows=PREVIEW_ROWS), repaired_from=before,
                     repair_turns=turns)
        ctx.data["sql"] = leading_sql(ctx.data, ctx.params)
        ctx.note(f"the repaired SQL reads tables of one part and returns {result.row_count} "
                 f"row(s)")
        return next_after(ctx, name)
    why = (f"fails ({result.error_class})" if not result.ok
           else "still reads tables of unrelated parts")
    ctx.set_output(record, sql=before)
    ctx.execute(before)  # the step ends on the SQL the candidate keeps
    ctx.note(f"the repaired SQL {why}: the candidate keeps the SQL it had, which runs")
    return next_after(ctx, name)
