"""A run exported as a report (Markdown and HTML), edits shown as diffs against the model's own
state, and ``python -m agents run export``."""

from __future__ import annotations

import re

import pytest

from agents.cli import main as cli
from agents.db.database import open_database
from agents.core.engine import resume_run, run_to_end, start_run
from agents.pipelines import get_pipeline
from agents.runs.run_report import run_report, stored_run_report
from agents.core.state_diff import change_lines, original_states, state_changes
from agents.store import Store, default_path

TOP5 = "SELECT name, price FROM products ORDER BY price DESC LIMIT 5"
CHEAP = "SELECT name FROM products ORDER BY price ASC LIMIT 2"


@pytest.fixture
def runs(scripted_llm, llm, sample_dbs):
    """A baseline run, a run resumed from it with its SQL edited, both stored; the resumed one
    annotated and accepted."""
    scripted_llm.push(f"```sql\n{TOP5}\n```")
    pipeline = get_pipeline("baseline")
    with open_database(sample_dbs / "shop.sqlite") as db, Store(default_path()) as store:
        first = run_to_end(start_run(pipeline, "Five <b>priciest</b> | products?", db, llm))
        edited = {**first.events[0].data, "sql": CHEAP}
        second = run_to_end(resume_run(pipeline, first, 1, db, llm, data=edited))
        store.save_run(first)
        store.save_run(second)
        store.annotate(second.run_id, "incorrect", error_type="logic", faulty_step=0,
                       notes="asked for the `priciest`", author="kim")
        store.accept(second.run_id, second.question, TOP5, "shop",
                     result_preview=first.result, author="kim")
    return first, second


def test_state_changes_show_what_the_edit_changed(runs):
    first, second = runs
    with Store(default_path()) as store:
        originals = original_states(second, store.get_run)
    assert list(originals) == [0] and originals[0] == first.events[0].data
    [change] = state_changes(originals[0], second.events[0].data)
    assert change.key == "sql" and change.is_sql and change.kind == "changed"
    lines = change_lines(change)
    assert any(line.startswith("-") and "DESC" in line for line in lines)
    assert any(line.startswith("+") and "ASC" in line for line in lines)
    # formatting alone is not a change
    assert state_changes({"sql": TOP5}, {"sql": TOP5.lower().replace(" from", "\nfrom")}) == []


def test_markdown_report_has_every_step_sql_result_edit_and_annotation(runs):
    _, second = runs
    with Store(default_path()) as store:
        text = stored_run_report(store, second.run_id, "md")
    assert text.startswith(f"# Run {second.run_id}: Five \\<b\\>priciest\\</b\\> \\| products?")
    assert "### Step 1 · SQL Writer" in text
    assert "done, SQL runs" in text
    assert "```diff" in text and "+" in text and "ASC" in text
    assert "```sql" in text and "LIMIT 2" in text
    assert "| name |" in text  # the result preview as a table
    assert "**Verdict:** incorrect" in text and "Logic" in text
    assert "**Step at fault:** step 1 · SQL Writer" in text
    assert "\\`priciest\\`" in text  # notes are literal text
    assert "## Accepted answer" in text and "Accepted by kim" in text
    assert re.search(r"Accepted by kim at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\.", text)
    assert re.search(r"\*\*At:\*\* \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", text)


def test_html_report_is_a_standalone_escaped_page(runs):
    _, second = runs
    with Store(default_path()) as store:
        page = stored_run_report(store, second.run_id, "html")
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert "<b>priciest</b>" not in page and "&lt;b&gt;priciest&lt;/b&gt;" in page
    assert '<span class="add">' in page and "<table>" in page and "Step 1 · SQL Writer" in page


def test_a_failing_final_sql_is_reported_as_such(runs):
    first, _ = runs
    first.result = {"ok": False, "error": "no such column: nme", "error_class": "OperationalError",
                    "hint": "products has name"}
    text = run_report(first, "md")
    assert "done, SQL fails" in text and "no such column: nme" in text and "Not annotated." in text
    with pytest.raises(ValueError, match="format"):
        run_report(first, "pdf")


def test_a_repair_steps_error_is_reported_before_its_repair(runs):
    """A step that ran the SQL it was given and wrote another (a Refiner's repair): the error is
    that given SQL's and is told first; a step whose execution is of its own SQL is unchanged."""
    import copy

    first, _ = runs
    repair = copy.deepcopy(first)
    step = repair.events[0]
    step.sql = CHEAP
    step.execution = {"ok": False, "sql": "SELECT nme FROM products",
                      "error": "no such column: nme", "error_class": "OperationalError"}
    text = run_report(repair, "md")
    given = text.index("The SQL it was given fails (OperationalError): no such column: nme")
    assert given < text.index("LIMIT 2") and "The SQL fails (OperationalError)" not in text
    step.execution = {"ok": False, "sql": CHEAP, "error": "no such column: nme",
                      "error_class": "OperationalError"}
    text = run_report(repair, "md")
    assert text.index("The SQL fails (OperationalError): no such column: nme") > text.index(
        "LIMIT 2")


def test_a_step_cut_short_by_a_stop_is_reported_as_stopped(runs):
    import copy

    from agents.core.events import STOPPED
    from agents.runs.textview import render_event

    first, _ = runs
    stopped = copy.deepcopy(first)
    step = stopped.events[0]
    step.status, step.error, step.sql, step.execution = "error", STOPPED, None, None
    text = run_report(stopped, "md")
    assert "stopped · " in text and "Stopped by the user before this step ended." in text
    assert "Step failed" not in text
    assert "  STOPPED by the user" in render_event(step) and "FAILED" not in "".join(
        render_event(step))


def test_cli_exports_a_stored_run(runs, tmp_path, capsys):
    _, second = runs
    assert cli.main(["run", "export", second.run_id]) == 0
    assert "### Step 1 · SQL Writer" in capsys.readouterr().out
    out = tmp_path / "run.html"
    assert cli.main(["run", "export", second.run_id, "--format", "html", "--out", str(out)]) == 0
    assert out.read_text().startswith("<!DOCTYPE html>")


@pytest.mark.parametrize("argv, fragment", [
    (["run", "export", "nope"], "no stored run with id 'nope'"),
    (["run", "export", "x", "--store", "/nonexistent/studio.db"], "no run store"),
    (["run", "export", "x", "--format", "pdf"], "invalid choice"),
    (["run"], "choose an action"),
])
def test_cli_export_mistakes_are_one_line(runs, capsys, argv, fragment):
    assert cli.main(argv) != 0
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and fragment in err
    assert "Traceback" not in err


@pytest.mark.parametrize("text, escaped", [
    ("2026-11-27 10:00 UTC", "2026-11-27 10:00 UTC"),  # a date starts no block
    ("3.5 apples", "3.5 apples"),
    ("1. first", "1\\. first"),                         # would be a numbered item
    ("12) twelfth", "12\\) twelfth"),
    ("- dash", "\\- dash"),                             # a bullet
    ("# hash", "\\# hash"),                             # a heading
    ("a *b* `c` |d| <e>", "a \\*b\\* \\`c\\` \\|d\\| \\<e\\>"),
])
def test_markdown_text_is_escaped_only_where_it_would_be_read_as_markup(text, escaped):
    from agents.runs.run_report import md_escape
    assert md_escape(text) == escaped
