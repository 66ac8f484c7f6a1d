"""Self-correction (Section 2.4, Appendix B.4): a checklist of the errors the model makes most.

Extra columns, ambiguous columns, columns of the wrong table, join conditions that are not
foreign keys, needless LEFT JOIN and GROUP BY / ORDER BY mistakes. A correction that no longer
runs while the SQL before it ran is not taken (the SQL before it is kept and the reason noted).
"""

from __future__ import annotations

from agents.core.engine import StepContext
from .outputs import SelfCorrection
from agents.llm.prompts import load
from agents.db.sqltext import same_sql
from .shared import (HERE, SQL_ANSWER_SCHEMA, foreign_key_lines, hint_text, parse_sql, prompt, 
                     table_info, working_schema)

MAX_TOKENS = 400


def checklist() -> tuple[str, ...]:
    """The checklist items of the self-correction prompt, as the model reads them (numbered
    ``1) ...`` lines), so a view can show the checklist the SQL was checked against."""
    items = []
    for line in load(str(HERE), "self_correction").splitlines():
        number, _, item = line.partition(")")
        if number.strip().isdigit() and item.strip():
            items.append(item.strip())
    return tuple(i for i in items if not i.lower().startswith("database scheme"))


def run(ctx: StepContext) -> str:
    before = ctx.data.get("sql")
    if not ctx.params["self_correction"]:
        ctx.skip("self-correction is off")
        return "active_learning"
    if not before:
        ctx.skip("no SQL to correct")
        return "active_learning"
    schema = working_schema(ctx)
    ctx.set_inputs(sql=before, tables=schema.table_names())
    after = ctx.ask(prompt("self_correction", table_info=table_info(schema),
                           foreign_keys=", ".join(foreign_key_lines(schema)) or "None",
                           question=ctx.question.strip(), hint=hint_text(ctx.evidence), sql=before),
                    parse=parse_sql, json_schema=SQL_ANSWER_SCHEMA,
                        max_tokens=MAX_TOKENS)
    parsed = {"sql_before": before, "sql_after": after, "changed": False}
    if same_sql(before, after):
        ctx.note("no issue found: the SQL is unchanged")
        ctx.execute(before)
    else:
        result = ctx.execute(after)
        if not result.ok and ctx.db.execute(before, timeout=ctx.limits.timeout,
                                            max_rows=1).ok:
            ctx.note(f"the corrected SQL fails ({result.error}); the SQL before it is kept")
            parsed["kept_before"] = True
            ctx.execute(before)
        else:
            parsed["changed"] = True
            ctx.data["sql"] = after
    ctx.set_output(SelfCorrection(**parsed), sql=ctx.data["sql"])
    return "active_learning"
