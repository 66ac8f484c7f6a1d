"""The Ask page leads with the answer and says what the answer's review found: a question the
database cannot answer as a plain statement, a doubtful result with its reason and a repair,
an empty result explained, the values behind a ranking beside its rows."""

from __future__ import annotations

from app_helpers import errors
from ask_page import ask

ORDERED = ("SELECT c.name FROM categories c JOIN products p ON p.category_id = c.category_id "
           "GROUP BY c.category_id ORDER BY COUNT(*) DESC LIMIT 3")


def headings(at) -> list[str]:
    return [s.value for s in at.subheader]


def test_the_answer_comes_before_the_agent_steps(app, app_env):
    app_env.push(f"```sql\n{ORDERED}\n```")
    ask(app, "Which 3 categories have the most products?")
    assert errors(app) == []
    shown = headings(app)
    assert shown.index("Answer") < shown.index("Agent steps")
    # the ranking's counts are shown beside the names; the answer's SQL is unchanged
    [table] = [d.value for d in app.dataframe if "COUNT(*)" in list(d.value.columns)]
    assert list(table.columns) == ["name", "COUNT(*)"] and len(table) == 3
    assert any("the values it was ranked or filtered by" in c.value for c in app.caption)
    assert app.session_state["ask_run"].final_sql == ORDERED


def test_an_unanswerable_question_is_a_plain_statement(app, app_env, monkeypatch):
    monkeypatch.setenv("STUDIO_ANSWERABILITY", "on")
    app_env.push("no")
    ask(app, "how many dinosaurs are there")
    assert errors(app) == [] and not app.exception
    [statement] = [i.value for i in app.info if "no data about dinosaurs" in i.value]
    assert "its tables are about categories" in statement
    assert not [t for t in app.text_area if t.key and t.key.startswith("sql_")]


def test_a_doubtful_result_says_why_and_offers_the_top_k(app, app_env):
    app_env.push("```sql\nSELECT name FROM products ORDER BY price DESC LIMIT 5\n```")
    ask(app, "List the 3 most expensive products")
    [doubt] = [w.value for w in app.warning if "may not answer the question" in w.value]
    assert "top 3" in doubt
    [fix] = [b for b in app.button if b.key and b.key.startswith("shape_fix_")]
    fix.click().run()
    box = [t for t in app.text_area if t.key and t.key.startswith("sql_")][0]
    assert box.value.rstrip().endswith("LIMIT 3")


def test_an_empty_result_says_what_the_data_holds(app, app_env):
    app_env.push("```sql\nSELECT order_id FROM orders WHERE strftime('%Y', order_date) = "
                 "'1999'\n```")
    ask(app, "Which orders were placed in 1999?")
    [note] = [i.value for i in app.info if "No rows" in i.value]
    assert "order\\_date holds values from" in note or "order_date holds values from" in note
