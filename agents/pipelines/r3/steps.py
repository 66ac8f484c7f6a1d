"""The R³ steps: write, execute, fix, invite, review (one step per reviewer), revise.

Everything a later step needs lives in ``ctx.data`` (see :func:`initial_data`), so the run can be
resumed from any step, with the SQL or the personas edited. Step graph::

    write -> execute -(error)-> fix -> execute ...
             execute -(runs, no reviewers yet)-> invite -> review x n -> revise -> execute ...
    ends: revise returns the previous SQL unchanged (consensus, the paper's rule);
          every reviewer approves (if stop_on_approval); the round limit is reached;
          with revision_gate="execution", a revision that fails, or returns no rows where the
          SQL before it returned some, is not adopted and the SQL before it is final; with
          aggregate_gate, neither is one that newly takes columns from an arbitrary row.
"""

from __future__ import annotations

from pathlib import Path

from agents.core.engine import StepContext, StepError
from ...outputs import ExecutionCheck, SQLDraft, SQLRepair
from .. import fresh_writer
from .outputs import Review, ReviewerInvitation, Revision
from agents.llm.prompts import load, render

from . import dialogue
from .replies import (distinct_personas, parse_personas, parse_review, parse_writer_reply,
                      persona_label)
from agents.rules.name_context import name_error_context
from .gates import reject_revision
from .result_table import result_table
from agents.db.sqltext import same_sql, sql_diff
from agents.rules.repeat_retry import ask_unrepeated, failed_before
from agents.rules.runnable_ending import (HINT_PARAM, asks_model, repair_from_hint,
    runnable_ending)

HERE = Path(__file__).parent
WRITER_MAX_TOKENS = 700
REVIEW_MAX_TOKENS = 300
INVITE_MAX_TOKENS = 250
RESULT_ROWS = 5


def initial_data(ctx: StepContext) -> dict:
    return {
        "sql": None,             # the current SQL (what the run returns)
        "examples": [],          # [{"question", "sql"}] from the example bank
        "dialogue": [],          # writer history after its first prompt: assistant, user, ...
        "fix_attempts": 0,       # corrections of the current SQL's execution errors
        "last_error": None,
        "last_error_class": None,
        "result": None,          # {"sql", "ok", "table", "rows"}: the last execution, as
                                 # reviewers see it
        "failed_sqls": [],       # the SQL texts that failed to run in this run
        "revised_from": None,    # {"sql", "rows", "revision"}: the SQL a revision replaced,
                                 # until the revision is executed
        "personas": [],          # [{"name", "expertise"}]
        "round": 1,              # the review round in progress (1-based)
        "round_sql": None,       # the SQL the current round reviews
        "review_index": 0,       # the next reviewer to speak in this round
        "reviews": [],           # this round's reviews so far
        "rounds": [],            # finished rounds: sql_before, reviews, rebuttal, sql_after, diff
        "stop_reason": None,     # consensus | all_approved | max_rounds
    }


# -- shared prompt parts ----------------------------------------------------------------------

def schema_text(ctx: StepContext) -> str:
    return ctx.schema.render_ddl()


def evidence_block(ctx: StepContext, label: str) -> str:
    return f"{label} {ctx.evidence.strip()}\n" if (ctx.evidence or "").strip() else ""


# writer_style -> prompt file. "direct" is not the paper's: its first draft asks for the SQL
# alone, because on a 1.5B model the chain-of-thought draft scored well below a direct prompt.
WRITER_PROMPTS = {"cot": "writer_cot", "pot": "writer_pot", "direct": "writer_direct"}

# review_prompt -> reviewer system prompt. "strict" is not the paper's: on a 1.5B model the
# reviewers asked for a revision of right SQL about as often as of wrong SQL (a missing filter the
# question never asked for, style, an extra join or column), and the writer often obeyed; the
# strict prompt asks them to approve unless they can name a concrete error.
REVIEW_PROMPTS = {"paper": "reviewer_system", "strict": "reviewer_system_strict"}

# fix_prompt -> correction message. "tables" adds, for a name error, every table the SQL uses
# (with the names it gives them and all their columns) and which alias to write or table to join
# for the missing name: with the error and its hint alone, a 1.5B writer often returned the very
# SQL that had just failed.
FIX_PROMPTS = {"paper": "exec_error", "tables": "exec_error_tables"}


def first_writer_prompt(ctx: StepContext) -> str:
    """Prompt 1 (CoT) or Prompt 2 (PoT) of the paper, or the direct variant, with the k related
    examples."""
    examples = ctx.data.get("examples") or []
    related = ""
    if examples:
        related = "### RELATED SQL:\n" + "\n".join(
            f"QUESTION: {e['question']}\nSQL: {e['sql']}" for e in examples) + "\n"
    name = WRITER_PROMPTS.get(ctx.params["writer_style"], "writer_cot")
    return render(load(str(HERE), name), related_sql=related, schema=schema_text(ctx),
                  evidence=evidence_block(ctx, "### EVIDENCE:"), question=ctx.question)


def ask_writer(ctx: StepContext, new_message: str | None, temperature: float | None = None):
    """One writer answer in its truncated dialogue; returns the parsed reply and records it."""
    first = first_writer_prompt(ctx)
    if new_message is None:
        messages = [{"role": "user", "content": first}]
    else:
        messages = dialogue.writer_messages(first, ctx.data["dialogue"], new_message,
                                            ctx.params["history_turns"])
    reply, raw = ctx.ask(messages, parse=lambda text: (parse_writer_reply(text), text),
                         max_tokens=WRITER_MAX_TOKENS, temperature=temperature)
    if new_message is None:
        ctx.data["dialogue"] = [{"role": "assistant", "content": raw}]
    else:
        ctx.data["dialogue"] = dialogue.extend(ctx.data["dialogue"], new_message, raw)
    return reply


def start_round(data: dict) -> None:
    data["round_sql"] = data["sql"]
    data["review_index"] = 0
    data["reviews"] = []


# -- steps ------------------------------------------------------------------------------------

def write(ctx: StepContext) -> str:
    """SQL-Writer, task (1): y = SW(x, S), with k examples retrieved by question similarity."""
    ctx.data["examples"] = related_examples(ctx)
    ctx.set_inputs(question=ctx.question, style=ctx.params["writer_style"],
                   examples=[e["question"] for e in ctx.data["examples"]])
    reply = ask_writer(ctx, None)
    ctx.data["sql"] = reply.sql
    ctx.data["fix_attempts"] = 0
    ctx.set_output(SQLDraft(sql=reply.sql, reasoning=reply.text, style=ctx.params["writer_style"],
                            examples=len(ctx.data["examples"])), sql=reply.sql)
    return "execute"


def related_examples(ctx: StepContext) -> list[dict]:
    """The k bank examples whose question is most like this one (the paper's k-shot)."""
    k = ctx.params["k"]
    bank = ctx.services.get("examples")
    if k <= 0:
        ctx.note("k = 0: zero-shot, no related examples.")
        return []
    if bank is None or not len(bank):
        ctx.note("No example bank (or an empty one) is available: the writer runs zero-shot.")
        return []
    exclude = ctx.db.name if ctx.params["exclude_same_db_examples"] else None
    found = bank.search(ctx.question, k=k, exclude_db=exclude, schema=ctx.schema)
    if not found:
        ctx.note("The example bank found no related example: the writer runs zero-shot.")
    return [{"question": e.question, "sql": " ".join(e.sql.split())} for e in found[:k]]


def execute(ctx: StepContext) -> str | None:
    """Task (2): the SQL must run; an error goes back to the writer through its history."""
    data = ctx.data
    sql = data.get("sql")
    if not sql:
        raise StepError("there is no SQL to execute")
    ctx.set_inputs(sql=sql, round=data["round"], name_rewrite=ctx.params["name_rewrite"])
    result = ctx.execute(sql)
    revised_from, data["revised_from"] = data.get("revised_from"), None
    if revised_from and same_sql(sql, revised_from["revision"]):
        gates = {name: ctx.params[name] for name in ("revision_gate", "aggregate_gate")
                 if ctx.params[name] not in ("paper", False)}
        if gates:
            ctx.set_inputs(**gates)
            if reject_revision(ctx, result, revised_from):
                return None
    written = {}
    if not result.ok:
        data["failed_sqls"] = data.get("failed_sqls", []) + [sql]
        data["fix_attempts"] = data.get("fix_attempts", 0) + 1
        data["last_error"] = result.feedback()
        data["last_error_class"] = result.error_class
        ctx.set_output(ExecutionCheck(ok=False, error=result.error,
                                      error_class=result.error_class,
                                      attempt=data["fix_attempts"]))
        limit = ctx.params["max_fix_attempts"]
        if data["fix_attempts"] <= limit:
            return "fix"
        ending = runnable_ending(ctx, result)
        if ending is None:
            failure = f"the SQL still fails after {limit} correction(s): {result.error}"
            afresh = fresh_writer.hand_over(ctx, result, failure)
            if afresh:
                return afresh
            raise StepError(failure)
        sql, result, written = ending
        data["sql"] = sql
    data["result"] = {"sql": sql, "ok": True, "table": result_table(result, RESULT_ROWS),
                      "rows": result.row_count}
    data["fix_attempts"] = 0
    data["last_error"] = data["last_error_class"] = None
    ctx.set_output(ExecutionCheck(ok=True, rows=result.row_count, round=data["round"], **written),
                   sql=sql if written else None)
    if not data.get("personas"):
        return "invite"
    if data["round"] > ctx.params["max_rounds"]:
        data["stop_reason"] = "max_rounds"
        ctx.note(f"Round limit ({ctx.params['max_rounds']}) reached: this SQL is final.")
        return None
    start_round(data)
    return "review"


def correction_message(ctx: StepContext, sql: str, error: str) -> str:
    """The message that asks the writer to correct a failing SQL (``fix_prompt``)."""
    variant = ctx.params["fix_prompt"]
    if variant != "tables":
        return render(load(str(HERE), FIX_PROMPTS["paper"]), sql=sql, error=error)
    failed = ctx.data.get("failed_sqls") or []
    repeated = ("You gave this same SQL before and it failed then too: change what the error "
                "names.\n" if failed_before(sql, failed) else "")
    tables = name_error_context(error.split("\nHint:")[0], sql, ctx.schema)
    return render(load(str(HERE), FIX_PROMPTS["tables"]), sql=sql, error=error,
                  repeated=repeated, tables=tables)


def fix(ctx: StepContext) -> str:
    """The writer corrects the failing SQL, seeing the error appended to its dialogue; where
    the error's hint holds the version that runs (``repair_from_hint``), that version is the
    correction, unasked (the dialogue stays: the reviews' messages quote the SQL they judge)."""
    data = ctx.data
    before, error = data["sql"], data.get("last_error") or "unknown error"
    ctx.set_inputs(sql=before, error=error, attempt=data.get("fix_attempts", 1),
                   prompt=ctx.params["fix_prompt"], repair_from_hint=ctx.params[HINT_PARAM])
    written_error, _, hint = error.partition("\nHint: ")  # the feedback: error, then hint
    hinted = repair_from_hint(ctx, before, written_error, hint or None)
    if hinted is not None:  # no model call
        data["sql"] = hinted.sql
        ctx.set_output(SQLRepair(error=error, error_class=data.get("last_error_class"),
                                 sql_before=before, sql_after=hinted.sql, from_hint=True,
                                 attempt=data.get("fix_attempts", 1), rewrite=hinted.change),
                       sql=hinted.sql)
        return "execute"
    message = correction_message(ctx, before, error)
    history, dialogues = data["dialogue"], []

    def ask(temperature):
        data["dialogue"] = history  # a second try replaces the repeated answer
        answer = ask_writer(ctx, message, temperature)
        dialogues.append(data["dialogue"])
        return answer

    reply = ask_unrepeated(ctx, ask, lambda answer: answer.sql,
                           [before, *(data.get("failed_sqls") or [])],
                           keep_first=lambda: data.update(dialogue=dialogues[0]))
    data["sql"] = reply.sql
    ctx.set_output(SQLRepair(error=error, error_class=data.get("last_error_class"),
                             sql_before=before, sql_after=reply.sql,
                             attempt=data.get("fix_attempts", 1), reasoning=reply.text,
                             from_hint=asks_model(ctx)),
                   sql=reply.sql)
    return "execute"


def invite(ctx: StepContext) -> str:
    """Prompt 3: the model proposes n reviewer personas from the schema and the SQL."""
    data, n = ctx.data, ctx.params["n_reviewers"]
    ctx.set_inputs(sql=data["sql"], reviewers=n)
    prompt = render(load(str(HERE), "invitation"), n=n, schema=schema_text(ctx),
                    question=ctx.question, sql=data["sql"])
    personas = ctx.ask([{"role": "user", "content": prompt}], parse=parse_personas,
                       max_tokens=INVITE_MAX_TOKENS)
    personas, repeated = distinct_personas(personas)
    if repeated:
        ctx.note(f"The model invited the same expertise more than once "
                 f"({', '.join(map(repr, dict.fromkeys(repeated)))}); each expertise reviews "
                 "once, since a repeat would review the SQL exactly as the first.")
    if len(personas) > n:
        personas = personas[:n]
    elif len(personas) < n:
        ctx.note(f"{n} reviewers were asked for, the model invited {len(personas)}.")
    data["personas"] = personas
    ctx.set_output(ReviewerInvitation(reviewers=personas, requested=n))
    start_round(data)
    return "review"


def review(ctx: StepContext) -> str | None:
    """One reviewer comments on the SQL and its execution result and gives a verdict."""
    data = ctx.data
    personas = data.get("personas") or []
    if not personas:
        raise StepError("there are no reviewers: run the Invitation step first")
    if data.get("round_sql") is not None and not same_sql(data["round_sql"], data["sql"]):
        ctx.note("The SQL changed since this round began: the round restarts with the first "
                 "reviewer.")
        start_round(data)
    index = min(data.get("review_index", 0), len(personas) - 1)
    persona = personas[index]
    label = persona_label(persona)
    ctx.set_agent(f"Reviewer: {label}")
    table = current_result_table(ctx)
    variant = ctx.params["review_prompt"]
    ctx.set_inputs(reviewer=persona["name"], expertise=persona["expertise"], sql=data["sql"],
                   round=data["round"], prompt=variant)
    system = load(str(HERE), REVIEW_PROMPTS[variant])
    user = render(load(str(HERE), "reviewer_user"), schema=schema_text(ctx),
                  evidence=evidence_block(ctx, "EVIDENCE:"), question=ctx.question,
                  sql=data["sql"], result=table, persona=persona["expertise"])
    verdict = ctx.ask([{"role": "system", "content": system}, {"role": "user", "content": user}],
                      parse=parse_review, max_tokens=REVIEW_MAX_TOKENS)
    entry = {"reviewer": persona["name"], "expertise": persona["expertise"],
             "verdict": verdict["verdict"], "comment": verdict["comment"]}
    data["reviews"] = data.get("reviews", [])[:index] + [entry]
    data["review_index"] = index + 1
    ctx.set_output(Review(round=data["round"], **entry))
    if data["review_index"] < len(personas):
        return "review"
    if ctx.params["stop_on_approval"] and all(r["verdict"] == "approve" for r in data["reviews"]):
        data["stop_reason"] = "all_approved"
        ctx.note("Every reviewer approves: the SQL is final.")
        return None
    return "revise"


def current_result_table(ctx: StepContext) -> str:
    """The execution result of the SQL under review (re-run when the SQL was edited)."""
    data = ctx.data
    cached = data.get("result") or {}
    if cached.get("sql") == data["sql"] and cached.get("table"):
        return cached["table"]
    result = ctx.execute(data["sql"])
    if not result.ok:
        raise StepError(f"the SQL under review does not run ({result.error}); correct it or "
                        "resume from the Execution step")
    data["result"] = {"sql": data["sql"], "ok": True, "table": result_table(result, RESULT_ROWS),
                      "rows": result.row_count}
    return data["result"]["table"]


def revise(ctx: StepContext) -> str | None:
    """Rebuttal or revision by the writer; an unchanged SQL is the consensus that ends R³."""
    data = ctx.data
    before = data["sql"]
    reviews = data.get("reviews") or []
    ctx.set_inputs(sql=before, round=data["round"], reviews=len(reviews))
    reviews_text = "\n\n".join(
        f"Reviewer ({r['expertise']}): {r['comment'] or 'no comment'}\nVerdict: {r['verdict']}"
        for r in reviews) or "(no reviews)"
    message = render(load(str(HERE), "revision"), sql=before, result=current_result_table(ctx),
                     reviews=reviews_text)
    reply = ask_writer(ctx, message)
    consensus = same_sql(before, reply.sql)
    diff = "" if consensus else sql_diff(before, reply.sql)
    record = {"round": data["round"], "comments": reviews, "rebuttal": reply.text,
              "sql_before": before, "sql_after": reply.sql, "diff": diff,
              "changed": not consensus, "consensus": consensus}
    data["rounds"] = data.get("rounds", []) + [record]
    ctx.set_output(Revision(**record), sql=before if consensus else reply.sql)
    if consensus:
        data["stop_reason"] = "consensus"
        ctx.note("The writer kept the same SQL as in the previous round: consensus.")
        return None
    cached = data.get("result") or {}
    data["revised_from"] = {"sql": before, "revision": reply.sql,
                            "rows": cached.get("rows") if cached.get("sql") == before else None}
    data["sql"] = reply.sql
    data["round"] += 1
    data["fix_attempts"] = 0
    return "execute"
