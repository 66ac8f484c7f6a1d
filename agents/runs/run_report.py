"""One run as a document to hand on: every step, its SQL and result preview, any edit, the
final answer, the accepted answer and the annotation, as Markdown or standalone HTML.

For slides and error reports a run has to leave the studio in a form people read, not a JSON
trace. The report is built once as a list of blocks (heading, paragraph, text, code, table) and
written by two small writers, so the Markdown and HTML versions never disagree. All text from
the question, the model and the database is escaped for the target format: a ``|`` in a value
cannot break a table, ``<script>`` in a column name stays text.
"""

from __future__ import annotations

import html
import re
from datetime import datetime, timezone
from typing import Any

from agents.core.events import Run, StepEvent
from agents.core.outcome import run_outcome
from agents.outputs.base import shows_sql
from agents.db.sqltext import format_sql, same_sql
from agents.core.state_diff import change_lines, original_states, state_changes
from agents.store.annotations import blamed_step_label
from agents.store.schema import parse_iso_utc
from agents.store.taxonomy import ERROR_TYPES

FORMATS = ("md", "html")
STEP_ROWS = 5  # rows shown of a step's own execution
RESULT_ROWS = 20  # rows shown of the final result
CELL_CHARS = 80

Block = tuple  # ("h", level, text) | ("p", text) | ("text", text) | ("code", lang, text)
#                | ("table", columns, rows) | ("kv", [(label, value)])


def run_report(run: Run, fmt: str = "md", *, annotation: dict | None = None,
               accepted: dict | None = None, originals: dict[int, dict | None] | None = None,
               blamed: str | None = None) -> str:
    """``run`` as Markdown (``fmt="md"``) or a standalone HTML page (``fmt="html"``).

    ``annotation`` is the run's latest annotation and ``blamed`` how its faulty step reads;
    ``accepted`` the accepted answer linked to it; ``originals`` the model's own state of each
    edited step (see :func:`agents.core.state_diff.original_states`).
    """
    if fmt not in FORMATS:
        raise ValueError(f"report format must be one of {', '.join(FORMATS)}; got {fmt!r}")
    blocks = report_blocks(run, annotation=annotation, accepted=accepted,
                           originals=originals or {}, blamed=blamed)
    return to_markdown(blocks) if fmt == "md" else to_html(blocks, title=run.question)


def stored_run_report(store, run_id: str, fmt: str = "md") -> str:
    """The report of a stored run with its annotation, accepted answer and edits; raises
    ``LookupError`` when the store has no such run."""
    run = store.get_run(run_id)
    if run is None:
        raise LookupError(f"there is no stored run with id {run_id!r}")
    info = store.run_info(run_id) or {}
    annotation = store.get_annotation(run_id)
    accepted = store.get_accepted(info["accepted_id"]) if info.get("accepted_id") else None
    return run_report(run, fmt, annotation=annotation, accepted=accepted,
                      originals=original_states(run, store.get_run),
                      blamed=blamed_step_label(annotation, run))


def report_blocks(run: Run, *, annotation: dict | None, accepted: dict | None,
                  originals: dict[int, dict | None], blamed: str | None) -> list[Block]:
    blocks: list[Block] = [("h", 1, f"Run {run.run_id}: {run.question}")]
    facts = [("Database", run.db_name), ("Pipeline", run.pipeline), ("Outcome", run_outcome(run)),
             ("Started", _when(run.started_at))]
    if run.evidence:
        facts.append(("Evidence", run.evidence))
    if run.model:
        facts.append(("Model", run.model))
    totals = run.totals()
    facts.append(("Cost", f"{totals['llm_calls']} model call(s), "
                          f"{run.prompt_tokens + run.completion_tokens:,} tokens, "
                          f"{totals['seconds']:.1f} s"))
    if run.parent_run_id:
        facts.append(("Resumed from", f"run {run.parent_run_id} at step "
                                      f"{(run.resumed_from or 0) + 1}"))
    if run.error:
        facts.append(("Error", run.error))
    blocks.append(("kv", facts))
    blocks.append(("h", 2, "Steps"))
    for event in run.events:
        blocks += _step_blocks(event, originals.get(event.index), event.index in originals)
    blocks.append(("h", 2, "Final answer"))
    if run.final_sql:
        blocks.append(("code", "sql", format_sql(run.final_sql)))
        blocks += _result_blocks(run.result, RESULT_ROWS)
    else:
        blocks.append(("p", "The run produced no SQL."))
    if accepted:
        blocks.append(("h", 2, "Accepted answer"))
        who = f" by {accepted['author']}" if accepted.get("author") else ""
        blocks.append(("p", f"Accepted{who} at {_stored_when(accepted.get('created_at'))}."))
        blocks.append(("code", "sql", format_sql(accepted.get("sql"))))
        blocks += _result_blocks(accepted.get("result_preview"), RESULT_ROWS)
    blocks.append(("h", 2, "Annotation"))
    if annotation:
        facts = [("Verdict", annotation.get("verdict") or "")]
        if annotation.get("error_type"):
            kind = ERROR_TYPES.get(annotation["error_type"])
            facts.append(("Error type", kind.label if kind else annotation["error_type"]))
        if blamed:
            facts.append(("Step at fault", blamed))
        if annotation.get("notes"):
            facts.append(("Notes", annotation["notes"]))
        if annotation.get("author"):
            facts.append(("By", annotation["author"]))
        facts.append(("At", _stored_when(annotation.get("created_at"))))
        blocks.append(("kv", facts))
        if annotation.get("corrected_sql"):
            blocks.append(("p", "Corrected SQL:"))
            blocks.append(("code", "sql", format_sql(annotation["corrected_sql"])))
    else:
        blocks.append(("p", "Not annotated."))
    return blocks


def _step_blocks(event: StepEvent, original: dict | None, edited: bool) -> list[Block]:
    title = f"Step {event.index + 1} · {event.agent}"
    if event.title and event.title != event.agent:
        title += f": {event.title}"
    state = ("stopped" if event.stopped else
             {"error": "failed", "skipped": "skipped"}.get(event.status, "ok"))
    cost = (f"{len(event.calls)} model call(s), "
            f"{event.prompt_tokens + event.completion_tokens:,} tokens, " if event.calls else "")
    blocks: list[Block] = [("h", 3, title), ("p", f"{state} · {cost}{event.seconds:.1f} s")]
    if event.stopped:
        blocks.append(("p", "Stopped by the user before this step ended."))
    elif event.error:
        blocks.append(("p", f"Step failed: {event.error}"))
    blocks += [("p", f"Note: {note}") for note in event.notes]
    output = event.output
    # A repair step ran the SQL it was given and wrote another: that execution comes before
    # the repair, so an error is not read as the repaired SQL's.
    given = bool(event.execution and event.sql and event.execution.get("sql")
                 and not same_sql(event.execution["sql"], event.sql))
    if given:
        blocks += _result_blocks(event.execution, STEP_ROWS, of="The SQL it was given")
    if event.parsed not in (None, {}, []):
        lines = output.text_lines()
        if lines:
            blocks.append(("text", "\n".join(lines)))
    if event.sql and not shows_sql(output, event.sql):
        blocks.append(("code", "sql", format_sql(event.sql)))
    if event.execution and not given:
        blocks += _result_blocks(event.execution, STEP_ROWS)
    if edited:
        blocks += _edit_blocks(event, original)
    return blocks


def _edit_blocks(event: StepEvent, original: dict | None) -> list[Block]:
    if original is None:
        return [("p", "Edited by the user before the run went on; the model's own state is "
                      "no longer stored, so the edit cannot be compared.")]
    changes = state_changes(original, event.data)
    if not changes:
        return [("p", "Edited by the user before the run went on, without changing the state.")]
    blocks: list[Block] = [("p", "Edited by the user: the next step saw the edited state. "
                                 "Changes against the model's output:")]
    for change in changes:
        blocks.append(("code", "diff", "\n".join(change_lines(change))))
    return blocks


def _result_blocks(preview: dict | None, max_rows: int, of: str | None = None) -> list[Block]:
    """A result preview as blocks; ``of`` names the SQL it is the result of, where that is
    not the SQL shown just before it."""
    if not preview:
        return []
    if not preview.get("ok"):
        kind = f" ({preview['error_class']})" if preview.get("error_class") else ""
        blocks: list[Block] = [("p", f"{of or 'The SQL'} fails{kind}: "
                                     f"{preview.get('error') or 'error'}")]
        if preview.get("hint"):
            blocks.append(("p", f"Hint: {preview['hint']}"))
        return blocks
    rows = preview.get("rows") or []
    total = preview.get("row_count", len(rows))
    shown = rows[:max_rows]
    more = "+" if preview.get("truncated") else ""
    note = ((f"{of} returns " if of else "") + f"{total:,}{more} row(s)"
            + (f", the first {len(shown)} shown" if len(shown) < total else ""))
    blocks = [("p", note)]
    if preview.get("columns") and shown:
        blocks.append(("table", list(preview["columns"]), shown))
    return blocks


def _when(timestamp: float | None) -> str:
    if not timestamp:
        return "?"
    return datetime.fromtimestamp(timestamp, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _stored_when(text: str | None) -> str:
    """A time the store keeps as ISO text (``2026-11-29T00:36:06Z``) written as the report's
    other times are; text that is not such a time is kept as it is."""
    if not text:
        return "?"
    moment = parse_iso_utc(text)
    return (moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
            if moment is not None else str(text))


def _cell(value: Any) -> str:
    text = "NULL" if value is None else " ".join(str(value).split())
    return text if len(text) <= CELL_CHARS else text[: CELL_CHARS - 1] + "…"


# -- Markdown -----------------------------------------------------------------------------------

_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|~$])")
# What starts a block at the start of a line: a numbered item ("1." "2)"), a heading or
# setext underline ("#", "="), a bullet ("-", "+"). Digits before anything else ("2026-11-27")
# start nothing, so they are left as they are.
_MD_ORDERED = re.compile(r"^(\d+)([.)])(?=\s|$)")
_MD_BLOCK_START = re.compile(r"^([#=+-])")


def md_escape(text: Any) -> str:
    """Literal text in Markdown: no emphasis, link, HTML tag, math, heading, list or table cell
    break (whitespace is collapsed to one line)."""
    escaped = _MD_SPECIAL.sub(r"\\\1", " ".join(str(text).split()))
    return _MD_BLOCK_START.sub(r"\\\1", _MD_ORDERED.sub(r"\1\\\2", escaped))


def _fence(text: str) -> str:
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def to_markdown(blocks: list[Block]) -> str:
    out: list[str] = []
    for block in blocks:
        kind = block[0]
        if kind == "h":
            out.append(f"{'#' * block[1]} {md_escape(block[2])}")
        elif kind == "p":
            out.append(md_escape(block[1]))
        elif kind == "kv":
            out.append("\n".join(f"- **{md_escape(k)}:** {md_escape(v)}" for k, v in block[1]))
        elif kind in ("text", "code"):
            lang, body = ("", block[1]) if kind == "text" else (block[1], block[2])
            fence = _fence(body)
            out.append(f"{fence}{lang}\n{body}\n{fence}")
        elif kind == "table":
            columns, rows = block[1], block[2]
            lines = ["| " + " | ".join(md_escape(_cell(c)) for c in columns) + " |",
                     "|" + " --- |" * len(columns)]
            lines += ["| " + " | ".join(md_escape(_cell(v)) for v in row) + " |" for row in rows]
            out.append("\n".join(lines))
    return "\n\n".join(out) + "\n"


# -- HTML ---------------------------------------------------------------------------------------

_STYLE = """body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;
color:#222}pre{background:#f5f5f5;padding:.6rem;overflow-x:auto;white-space:pre-wrap}
table{border-collapse:collapse;margin:.4rem 0}td,th{border:1px solid #ccc;padding:.2rem .5rem;
text-align:left;font-size:.9rem}h3{margin-top:1.6rem}.del{color:#a00}.add{color:#070}"""


def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _diff_html(body: str) -> str:
    lines = []
    for line in body.splitlines():
        cls = "add" if line.startswith("+") and not line.startswith("+++") else \
            "del" if line.startswith("-") and not line.startswith("---") else ""
        lines.append(f'<span class="{cls}">{_esc(line)}</span>' if cls else _esc(line))
    return "\n".join(lines)


def to_html(blocks: list[Block], *, title: str) -> str:
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>{_esc(title)}</title><style>{_STYLE}</style></head><body>"]
    for block in blocks:
        kind = block[0]
        if kind == "h":
            out.append(f"<h{block[1]}>{_esc(block[2])}</h{block[1]}>")
        elif kind == "p":
            out.append(f"<p>{_esc(block[1])}</p>")
        elif kind == "kv":
            items = "".join(f"<li><strong>{_esc(k)}:</strong> {_esc(v)}</li>" for k, v in block[1])
            out.append(f"<ul>{items}</ul>")
        elif kind == "text":
            out.append(f"<pre>{_esc(block[1])}</pre>")
        elif kind == "code":
            body = _diff_html(block[2]) if block[1] == "diff" else _esc(block[2])
            out.append(f'<pre><code class="language-{_esc(block[1])}">{body}</code></pre>')
        elif kind == "table":
            head = "".join(f"<th>{_esc(_cell(c))}</th>" for c in block[1])
            rows = "".join("<tr>" + "".join(f"<td>{_esc(_cell(v))}</td>" for v in row) + "</tr>"
                           for row in block[2])
            out.append(f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"
