"""The review loop keeps what the user did: accepted answers on the run's record and in their
own list, edited steps shown against the model's state, original and resumed runs side by side,
outcomes that tell failing SQL apart, annotations that round-trip, failed edits that replace the
result, name hints for typed SQL and a run exported as a report."""

from __future__ import annotations

import csv
import io

from agents.db.database import open_database
from agents.store import Store, default_path
from ui.widgets.resume import selection_rows
from ui.widgets.run_export import report_text

from app_helpers import errors
from ask_page import DECOMPOSER, DECOMPOSER_REPLY, SELECTOR, SELECTOR_REPLY, TOP5, ask
from history_page import open_history, submit

CORRECTED = "SELECT name, price FROM products ORDER BY price DESC LIMIT 3"


def sql_key(at) -> str:
    return [t.key for t in at.text_area if t.key and t.key.startswith("sql_")][0]


def click(at, prefix: str):
    [b for b in at.button if b.key and b.key.startswith(prefix)][0].click().run()
    assert not at.exception, at.exception
    return at


def test_accepted_corrected_sql_is_on_the_runs_record_and_in_the_exports(app, app_env):
    app_env.push(f"```sql\n{TOP5}\n```")
    ask(app, "Three most expensive products?")
    run = app.session_state["ask_run"]
    app.text_area(key=sql_key(app)).input(CORRECTED)
    click(app, "accept_")
    assert any("Accepted" in s.value for s in app.success)
    open_history(app)
    listing = app.dataframe[0].value
    row = listing.set_index("run").loc[run.run_id]
    assert row["accepted"] == "yes" and "LIMIT 3" in row["accepted SQL"]
    # the run answered five rows to "three most": its outcome says the result is doubtful
    assert row["status"] == "done, result doubtful"
    app.selectbox(key="hist_accepted").select("not accepted").run()
    assert "No saved runs match" in " ".join(i.value for i in app.info)
    app.selectbox(key="hist_accepted").select("accepted").run()
    assert app.dataframe[0].value["run"].tolist() == [run.run_id]
    app.selectbox(key="hist_open").select(run.run_id).run()
    assert any("the user's corrected SQL" in s.value for s in app.success)
    assert any("LIMIT 3" in c.value for c in app.code)
    with Store(default_path()) as store:
        [exported] = list(csv.DictReader(io.StringIO(store.export_runs(fmt="csv"))))
    assert exported["accepted"] == "yes" and "LIMIT 3" in exported["accepted_sql"]
    assert "LIMIT 5" in exported["final_sql"] and exported["accepted_by"]


def test_accepted_answers_are_listed_per_database_and_can_be_removed(app, app_env):
    app_env.push(f"```sql\n{TOP5}\n```")
    ask(app, "Five most expensive products?")
    click(app, "accept_")
    open_history(app)
    assert app.tabs[1].label == "Accepted answers"
    pane = app.tabs[1]
    assert any("Five most expensive products?" in m.value for m in pane.markdown)
    assert any("LIMIT 5" in c.value for c in pane.code)
    assert any(len(d.value) == 5 for d in pane.dataframe)
    [remove] = [b for b in pane.button if b.key.startswith("accepted_remove_")]
    remove.click().run()
    assert any("Removed the accepted answer" in s.value for s in app.success)
    assert "No accepted answers yet" in " ".join(i.value for i in app.tabs[1].info)
    with Store(default_path()) as store:
        assert store.list_accepted() == []
        assert store.list_runs()[0]["accepted"] == "no"


def test_failing_final_sql_is_done_sql_fails_on_ask_and_history(app, app_env):
    app_env.push("```sql\nSELECT nme FROM products\n```")
    ask(app, "Product names?")
    assert any("done, SQL fails" in c.value for c in app.caption)
    [message] = errors(app)
    assert "done, SQL fails" in message and "no such column: nme" in message
    assert any(c.value.startswith("Hint:") and "name" in c.value for c in app.caption)
    open_history(app)
    assert app.dataframe[0].value["status"].tolist() == ["done, SQL fails"]
    app.selectbox(key="hist_outcome").select("done, SQL runs").run()
    assert "No saved runs match" in " ".join(i.value for i in app.info)


def test_failed_edited_sql_replaces_the_result_and_gets_a_name_hint(app, app_env):
    app_env.push(f"```sql\n{TOP5}\n```")
    ask(app, "Five most expensive products?")
    key = sql_key(app)
    assert [b.label for b in app.get("download_button")][0] == "Download CSV"
    app.text_area(key=key).input("SELECT COUNT(*) AS n FROM prodcts")
    click(app, "run_sql_")
    [message] = errors(app)
    assert "no such table: prodcts" in message
    assert any(c.value.startswith("Hint:") and "products" in c.value for c in app.caption)
    assert not any(list(d.value.columns) == ["name", "price"] for d in app.dataframe)
    assert "Download CSV" not in [b.label for b in app.get("download_button")]
    # the failure stays in place on a later rerun of the pane
    app.run()
    assert any("Your edited SQL did not run" in e for e in errors(app))
    # SQL typed but not run: the result shown is marked as from the previous SQL
    app.text_area(key=key).input("SELECT COUNT(*) AS n FROM products")
    click(app, "run_sql_")
    app.text_area(key=key).input("SELECT 1 AS one").run()
    assert any("from the previous SQL" in w.value for w in app.warning)


def test_a_failing_column_offers_a_version_that_runs_and_puts_it_in_the_sql_box(app, app_env):
    app_env.push("```sql\nSELECT COUNT(*) FROM orders AS T1 WHERE T1.country = 'France'\n```")
    ask(app, "How many orders came from France?")
    assert any("no such column: T1.country" in e for e in errors(app))
    hint = [c.value for c in app.caption if c.value.startswith("Hint:")]
    assert hint and "Column country is in table customers" in hint[0]
    assert "A version that runs" not in hint[0]  # said once, below, with the query
    assert any("A version that runs, with T1.country written T2.country and customers joined"
               in c.value for c in app.caption)
    [offer] = [c.value for c in app.code if "JOIN customers AS T2" in c.value]
    key = sql_key(app)
    click(app, "rewrite_")
    assert app.text_area(key=key).value == offer
    # the error is the failing SQL's; the box now holds another, not run yet: its hint stays,
    # said to be about that SQL, and the offer is not made again
    assert any("not the one that failed: press 'Run edited SQL'" in i.value for i in app.info)
    assert any(c.value.startswith("Hint about the SQL that failed:") for c in app.caption)
    assert not [b for b in app.button if b.key and b.key.startswith("rewrite_")]
    click(app, "run_sql_")
    assert not errors(app)
    assert any("Showing the result of your edited SQL" in c.value for c in app.caption)
    assert app.dataframe[-1].value.iloc[0, 0] > 0


def test_a_final_sql_sqlglot_cannot_read_gets_its_hint_in_a_box_untouched(app, app_env):
    """The box holds the failing SQL as formatted; SQL that cannot be parsed is compared on its
    text, so the formatted copy must still count as the SQL that failed."""
    app_env.push("```sql\nselect nme from products where price > (select avg(price) from "
                 "products\n```")
    ask(app, "Which products cost more than average?")
    assert errors(app)
    assert not any("not the one that failed" in i.value for i in app.info)


def test_annotation_round_trips_and_needs_a_verdict(app, app_env):
    app_env.when(SELECTOR, SELECTOR_REPLY).when(DECOMPOSER, DECOMPOSER_REPLY)
    ask(app, "Top five products by price?", "macsql", use_selector="always",
        value_grounding="off")
    run = app.session_state["ask_run"]
    open_history(app, run.run_id)
    form = app.get("form")[0]
    assert form.radio[0].value is None  # an unreviewed run has no verdict yet
    submit(app, notes="looked at it")
    assert errors(app) == ["Choose a verdict (correct, incorrect or unsure) before saving."]
    with Store(default_path()) as store:
        assert store.get_annotation(run.run_id) is None
    submit(app, verdict="incorrect", error_type="schema_linking", step=1, notes="wrong table")
    assert any("step 2 · Decomposer" in i.value for i in app.info)
    open_history(app, run.run_id)
    form = app.get("form")[0]
    assert form.radio[0].value == "incorrect"
    assert form.selectbox[0].value == "schema_linking"
    assert form.selectbox[1].value == 1
    assert form.selectbox[1].options[2].startswith("step 2 · Decomposer")
    submit(app, notes="wrong table, checked again")  # saved again without touching the step
    with Store(default_path()) as store:
        history = store.annotation_history(run.run_id)
    assert [(a["faulty_step_index"], a["error_type"]) for a in history] == [
        (1, "schema_linking"), (1, "schema_linking")]
    assert history[-1]["notes"] == "wrong table, checked again"


def test_edited_step_shows_its_diff_and_runs_open_side_by_side(app, app_env):
    app_env.when(SELECTOR, SELECTOR_REPLY).when(DECOMPOSER, DECOMPOSER_REPLY)
    ask(app, "Top five products by price?", "macsql", use_selector="always",
        value_grounding="off")
    first = app.session_state["ask_run"]
    [s for s in app.selectbox if s.key and s.key.startswith("resume_step_")][0].select(1).run()
    [r for r in app.radio if r.key and r.key.startswith("resume_mode_")][0].set_value("SQL").run()
    edited = "SELECT name FROM products ORDER BY price ASC LIMIT 2"
    [t for t in app.text_area if t.key.startswith("resume_sql_")][0].input(edited)
    click(app, "resume_go_")
    second = app.session_state["ask_run"]
    app.run()  # the finished run as the page draws it from then on
    decomposer = app.status[1]
    assert "edited" in decomposer.label
    assert any("the next step saw the edited state" in m.value for m in decomposer.markdown)
    before_after = [c.value for c in decomposer.code]
    assert any("DESC" in v for v in before_after) and any("ASC" in v for v in before_after)
    assert {"SQL before", "SQL after"} <= {c.value for c in decomposer.caption}
    open_history(app, second.run_id)
    assert any("edited state" in m.value for m in app.status[1].markdown)
    parent_button = [b for b in app.button if b.key == f"open_parent_{second.run_id}"]
    assert parent_button and first.run_id in parent_button[0].label
    app.toggle(key=f"hist_side_{second.run_id}").set_value(True).run()
    assert not app.exception
    assert {"Original run", "Resumed run"} <= {m.value.split("**")[1] for m in app.markdown
                                                if m.value.startswith("**")}
    assert len(app.status) == 6  # three steps on each side
    parent_button[0].click().run()
    assert app.selectbox(key="hist_open").value == first.run_id
    assert any(b.key == f"open_child_{second.run_id}" for b in app.button)


def test_selection_editor_lists_the_columns_the_trace_shows(sample_dbs):
    with open_database(sample_dbs / "shop.sqlite") as db:
        rows = selection_rows({"order_items": ["quantity"], "orders": "keep_all"},
                              db.schema.table_names(), db.schema).set_index("table")
    columns = rows.loc["order_items", "columns"].split(", ")
    assert "quantity" in columns and {"order_id", "product_id"} <= set(columns)
    assert rows.loc["orders", "columns"] == "all" and not rows.loc["products", "keep"]


def test_export_this_run_is_offered_and_reads_the_store(app, app_env):
    app_env.push(f"```sql\n{TOP5}\n```")
    ask(app, "Five most expensive products?")
    run = app.session_state["ask_run"]
    labels = [b.label for b in app.get("download_button")]
    assert "Export this run (Markdown)" in labels and "Export this run (HTML)" in labels
    open_history(app, run.run_id)
    submit(app, verdict="correct", notes="fine")
    text = report_text(run, "md")
    assert "### Step 1 · SQL Writer" in text and "LIMIT 5" in text
    assert "**Verdict:** correct" in text
    assert report_text(run, "html").startswith("<!DOCTYPE html>")
