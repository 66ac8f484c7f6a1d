"""MAC-SQL's Selector: cut a large schema down to the tables and columns the question needs.

The paper's prompt (Appendix A.1) asks for a JSON object ``{table: "keep_all" | "drop_all" |
[columns]}``. A small model's answer is not trusted blindly: names that are not in the schema are
dropped (and noted) so an invented column never reaches the Decomposer, a table the answer does
not mention is kept whole (losing a needed table costs more than a longer prompt), and the
primary- and foreign-key columns of a kept table stay so joins remain possible -- as in the
reference implementation. Pruning only saves prompt length, so an answer that cannot be read
even after the retry does not end the run: the Decomposer gets the whole schema.
"""

from __future__ import annotations

from pathlib import Path

from agents.core.engine import ParseError, StepContext, UnparseableAnswer
from ...outputs import SchemaSelection
from agents.llm.parsing import extract_json
from agents.llm.prompts import load, render
from ...retrieval import whole_schema_fit
from ..common import evidence_text, macsql_schema, schema_size, user_message
from agents.rules.demonstration import ignored_names, template
from .prompt_budget import RETRIEVAL

HERE = Path(__file__).parent

KEEP_ALL = "keep_all"
DROP_ALL = "drop_all"

# Permissive on purpose: any table name, each mapped to a word or a list of column names. The
# names themselves are checked against the schema afterwards, where they can be reported.
ANSWER_SCHEMA = {
    "type": "object",
    "additionalProperties": {
        "anyOf": [
            {"type": "string"},
            {"type": "array", "items": {"type": "string"}},
        ]
    },
}

def needs_selection(schema, max_avg_columns: int, max_columns: int) -> bool:
    """The reference implementation's rule: prune unless the schema is small on both counts."""
    tables, columns = schema_size(schema)
    if tables == 0:
        return False
    return not (columns // tables <= max_avg_columns and columns <= max_columns)


def parse_answer(text: str) -> dict:
    """The model's JSON object; anything else is a :class:`ParseError` fed back to the model."""
    value = extract_json(text)
    if not isinstance(value, dict) or not value:
        raise ParseError('expected a JSON object such as {"table": "keep_all", '
                         '"other": "drop_all", "third": ["column", ...]}')
    for table, decision in value.items():
        if isinstance(decision, str):
            continue
        if isinstance(decision, list) and all(isinstance(c, str) for c in decision):
            continue
        raise ParseError(f'the value for "{table}" must be "keep_all", "drop_all" or a list of '
                         f"column names")
    return value


def resolve(schema, answer: dict, demonstration: str = ""
            ) -> tuple[dict | None, list[dict], list[str]]:
    """Turn the model's answer into a schema selection.

    Returns ``(selection, rows, notes)``: ``selection`` maps each kept table to ``"keep_all"`` or
    its kept columns (schema spelling and order); ``rows`` is one record per schema table for the
    step's parsed output; ``notes`` explains every name that was ignored or defaulted, and says
    which ignored names came from ``demonstration`` (the prompt's worked example).
    """
    notes: list[str] = []
    decisions: dict[str, object] = {}
    unknown_tables: list[str] = []
    for raw_name, decision in answer.items():
        table = schema.table(_clean_name(raw_name))
        if table is None:
            unknown_tables.append(raw_name)
            continue
        decisions[table.name] = decision
    for raw_name in unknown_tables:
        notes += ignored_names([raw_name], "table", demonstration)

    selection: dict[str, object] = {}
    rows: list[dict] = []
    missing: list[str] = []
    for table in schema.tables:
        all_columns = [c.name for c in table.columns]
        decision = decisions.get(table.name)
        if decision is None:
            missing.append(table.name)
            decision = KEEP_ALL
        if isinstance(decision, str):
            word = decision.strip().lower()
            if word not in (KEEP_ALL, DROP_ALL):
                notes.append(f"{table.name}: unclear decision {decision!r}, kept all columns")
                word = KEEP_ALL
            kept = all_columns if word == KEEP_ALL else []
            label = word
        else:
            kept = _chosen_columns(table, decision, set(schema.key_columns(table.name)), notes,
                                   demonstration)
            label = "columns" if kept else DROP_ALL
        if kept:
            selection[table.name] = KEEP_ALL if label == KEEP_ALL else kept
        rows.append({"table": table.name, "decision": label, "kept": kept,
                     "dropped": [c for c in all_columns if c not in kept]})
    if missing:
        notes.append(f"not mentioned in the answer, kept whole: {', '.join(missing)}")
    if not selection:
        notes.append("the answer dropped every table; the whole schema is used instead")
        return None, rows, notes
    return selection, rows, notes


def _chosen_columns(table, names: list[str], keys: set[str], notes: list[str],
                    demonstration: str = "") -> list[str]:
    by_lower = {c.name.lower(): c.name for c in table.columns}
    wanted: set[str] = set()
    unknown: list[str] = []
    for raw in names:
        name = _clean_name(raw)
        if "." in name and name.lower() not in by_lower:
            prefix, _, rest = name.partition(".")
            if _clean_name(prefix).lower() == table.name.lower():
                name = _clean_name(rest)
        column = by_lower.get(name.lower())
        if column is None:
            unknown.append(raw)
        else:
            wanted.add(column)
    if unknown:
        notes += ignored_names(unknown, "column", demonstration, prefix=f"{table.name}: ")
    if not wanted:
        if names:  # only invented names: the model meant the table but named nothing real
            notes.append(f"{table.name}: no known column chosen, kept all columns")
            return [c.name for c in table.columns]
        return []
    added = sorted(k for k in keys if k not in wanted)
    if added:
        notes.append(f"{table.name}: kept key column(s) {', '.join(added)} for joins")
    return [c.name for c in table.columns if c.name in wanted or c.name in keys]


def _clean_name(name: str) -> str:
    return str(name).strip().strip("`\"'[]").strip()


def after_selector(ctx: StepContext) -> str:
    """Value grounding when the run asks for it, else the Decomposer."""
    return "ground" if ctx.params["value_grounding"] != "off" else "decomposer"


def run(ctx: StepContext) -> str:
    schema = ctx.schema
    tables, columns = schema_size(schema)
    ctx.set_inputs(tables=tables, columns=columns, mode=ctx.params["use_selector"])
    ctx.data["selection"] = None
    mode = ctx.params["use_selector"]
    if mode == "never":
        ctx.set_output(SchemaSelection(used=False))
        ctx.skip("the Selector is switched off (use_selector=never)")
        return after_selector(ctx)
    if mode == "auto" and not needs_selection(schema, ctx.params["selector_max_avg_columns"],
                                              ctx.params["selector_max_columns"]):
        ctx.set_output(SchemaSelection(used=False))
        ctx.skip(f"schema small: {tables} tables, {columns} columns")
        return after_selector(ctx)
    if mode == "context":
        # the large database the paper's Selector is for, whose schema "may surpass the
        # processing capacity of a LLM within a single api call": one retrieval had to cut to
        # fit the Decomposer's prompt, whose kept part the Selector then prunes
        tokens, budget = whole_schema_fit(ctx, RETRIEVAL)
        if tokens <= budget:
            ctx.set_output(SchemaSelection(used=False))
            ctx.skip(f"the whole schema fits the Decomposer's prompt ({tokens:,} of "
                     f"{budget:,} tokens): the Selector prunes only a schema that does not fit "
                     f"(use_selector=context)")
            return after_selector(ctx)

    desc_str, fk_str = macsql_schema(schema)
    prompt = render(load(str(HERE), "selector"), db_id=schema.db_name or ctx.db.name,
                    desc_str=desc_str, fk_str=fk_str, query=ctx.question.strip(),
                    evidence=evidence_text(ctx.evidence))
    try:
        answer = ctx.ask(user_message(prompt), parse=parse_answer, json_schema=ANSWER_SCHEMA)
    except UnparseableAnswer as exc:
        ctx.note(f"{exc}; the whole schema is used instead")
        ctx.set_output(SchemaSelection(used=False))
        return after_selector(ctx)
    demonstration = template(str(HERE), "selector").split("Here is a new example")[0]
    selection, rows, notes = resolve(schema, answer, demonstration)
    for note in notes:
        ctx.note(note)
    ctx.data["selection"] = selection
    ctx.set_output(SchemaSelection(tables=rows, used=True))
    return after_selector(ctx)
