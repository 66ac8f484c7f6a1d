"""A realistic two-step run, built directly from the event records, for the store's tests."""

from __future__ import annotations

from agents.core.events import LLMCall, Run, StepEvent


def make_run(question="How many orders were cancelled?", *, db_name="shop", pipeline="mac_sql",
             status="done", sql="SELECT COUNT(*) FROM orders WHERE status = 'cancelled'",
             started_at=1_700_000_000.0, **kw) -> Run:
    """A realistic two-step run built directly from the event records."""
    selector = StepEvent(
        index=0, step="select", agent="Selector", title="Pick tables",
        inputs={"tables": ["orders", "customers"]},
        parsed={"tables": [{"table": "orders", "decision": "keep_all", "kept": [], "dropped": []}],
                "used": True},
        calls=[LLMCall(messages=[{"role": "user", "content": "Which tables?"}],
                       raw='{"orders": "keep_all"}', model="m", prompt_tokens=120,
                       completion_tokens=9, seconds=0.8)],
        seconds=0.9, next_step="generate", data={"selection": {"orders": "keep_all"}},
        started_at=started_at)
    generator = StepEvent(
        index=1, step="generate", agent="Decomposer", sql=sql,
        parsed={"sub_questions": [{"question": question, "sql": sql}]},
        execution={"ok": True, "sql": sql, "columns": ["n"], "rows": [[93]], "row_count": 1,
                   "truncated": False, "seconds": 0.01, "error": None, "error_class": None},
        calls=[LLMCall(messages=[{"role": "user", "content": "Write SQL"}], raw="```sql\nbad\n```",
                       prompt_tokens=200, completion_tokens=30, seconds=1.5, error="no SQL found"),
               LLMCall(messages=[{"role": "user", "content": "Write SQL again"}], raw=sql,
                       prompt_tokens=230, completion_tokens=20, seconds=1.1)],
        notes=["retried once"], seconds=2.7, data={"selection": {"orders": "keep_all"}, "sql": sql},
        started_at=started_at + 1)
    return Run(pipeline=pipeline, question=question, db_name=db_name, evidence="cancelled = status",
               params={"max_rows": 50}, model="qwen", events=[selector, generator], status=status,
               final_sql=sql, result={"ok": True, "row_count": 1, "columns": ["n"], "rows": [[93]]},
               started_at=started_at, finished_at=started_at + 4.2, **kw)
