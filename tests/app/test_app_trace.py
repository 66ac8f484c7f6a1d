"""The step renderers (one per agent, generic fallback) and session isolation."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from app_helpers import APP, TIMEOUT, sqlite_bytes


def _trace_script():
    """Draws one event of every agent shape the pipelines produce (run as an AppTest script)."""
    from agents.core.events import LLMCall, StepEvent
    from ui.trace import render_trace

    call = LLMCall(messages=[{"role": "user", "content": "PROMPT-TEXT"}], raw="RAW-ANSWER",
                   prompt_tokens=10, completion_tokens=5, seconds=0.5)
    shapes = [
        ("Selector", {"tables": [{"table": "orders", "decision": "columns", "kept": ["id"],
                                  "dropped": ["note"]}], "used": True}, None),
        ("Decomposer", {"sub_questions": [{"question": "SUB-Q", "sql": "SELECT 1"}]}, "SELECT 1"),
        ("Refiner", {"error": "no such table: x", "error_class": "OperationalError",
                     "hint": "REFINER-HINT", "sql_before": "SELECT * FROM x",
                     "sql_after": "SELECT * FROM y", "attempt": 1}, "SELECT * FROM y"),
        ("Information filter", {"tables": [], "used": False, "join_conditions": ["a.id = b.id"],
                                "key_info": {"metric": "revenue"}}, None),
        ("Classification & hint", {"label": "JOIN, NON-NESTED", "question_type": "join",
                                   "reasoning": "two tables"}, None),
        ("Reviewer: data analyst", {"round": 1, "reviewer": "Ana", "expertise": "analytics",
                                    "verdict": "revise", "comment": "REVIEW-COMMENT"}, None),
        ("Rebuttal/Revision", {"round": 1, "comments": [{"expertise": "analytics",
                                                         "verdict": "revise",
                                                         "comment": "c"}],
                               "rebuttal": "REBUTTAL", "sql_before": "SELECT 1",
                               "sql_after": "SELECT 2", "consensus": False}, "SELECT 2"),
        ("Schema owners", {"partition": "equal", "agents": [{"agent": "Agent 1",
                                                             "tables": ["a", "b"],
                                                             "columns": 4}]}, None),
        ("Agent 2", {"round": 1, "agent": "Agent 2", "verdict": "correct", "reason": "fine",
                     "execution": {"ok": True}, "sql": "SELECT 3"}, "SELECT 3"),
        ("Unknown agent", ["plain", "list"], None),
    ]
    events = [StepEvent(index=i, step=f"s{i}", agent=agent, title="", parsed=parsed, sql=sql,
                        calls=[call], seconds=1.0)
              for i, (agent, parsed, sql) in enumerate(shapes)]
    events[1].execution = {"ok": False, "error": "no such column: q", "error_class":
                           "OperationalError", "hint": "EXECUTION-HINT"}
    events.append(StepEvent(index=len(events), step="broken", agent="Selector", status="error",
                            error="STEP-FAILED", parsed={"unexpected": "shape"}))
    render_trace(events, expanded=True)


def test_every_agent_shape_renders_readably():
    at = AppTest.from_function(_trace_script, default_timeout=TIMEOUT).run()
    assert not at.exception, at.exception
    assert len(at.status) == 11
    assert [s.state for s in at.status][-1] == "error"
    assert at.status[-1].label.endswith("— failed")
    assert at.get("json") == []  # parsed output is never dumped as raw JSON
    text = " ".join(m.value for m in at.markdown)
    for expected in ("SUB-Q", "no such table: x", "JOIN, NON-NESTED", "REVIEW-COMMENT",
                     "REBUTTAL", "STEP-FAILED", "- plain", "no such column: q"):
        assert expected in text, expected
    captions = " ".join(c.value for c in at.caption)
    assert "Hint given with the error: REFINER-HINT" in captions
    assert "EXECUTION-HINT" in captions
    selector = " ".join(m.value for m in at.status[0].markdown)
    assert "| table | decision | kept columns | dropped columns |" in selector
    assert "keep some columns" in selector
    assert at.status[0].get("arrow_data_frame") == []  # no table with an inner scroll
    refiner_code = [c.value for c in at.status[2].code]
    assert any("FROM x" in c for c in refiner_code) and any("FROM y" in c for c in refiner_code)
    assert sum("SELECT 1" in c.value for c in at.status[1].code) == 1  # not shown twice
    prompt = at.status[0].expander[0]
    assert [c.value for c in prompt.code] == ["PROMPT-TEXT", "RAW-ANSWER"]


def test_two_sessions_do_not_see_each_others_uploads(app_env, tmp_path):
    first = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    second = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    data = sqlite_bytes(tmp_path, "CREATE TABLE secret (x INTEGER); INSERT INTO secret VALUES (1);")
    first.checkbox(key="keep_upload_ask").uncheck().run()  # kept uploads are shared on purpose
    first.file_uploader[0].set_value(("private.sqlite", data, "application/octet-stream")).run()
    assert "private (uploaded, this session only)" in first.selectbox(key="db_picker_ask").options
    second.run()
    assert not [o for o in second.selectbox(key="db_picker_ask").options if "private" in o]


def _stopped_script():
    from agents.core.events import STOPPED, StepEvent
    from ui.trace import render_trace

    render_trace([StepEvent(index=0, step="decompose", agent="Decomposer", title="Write SQL",
                            status="error", error=STOPPED)], expanded=True)


def test_a_step_cut_short_by_a_stop_says_so_not_that_it_failed():
    at = AppTest.from_function(_stopped_script, default_timeout=TIMEOUT).run()
    assert not at.exception, at.exception
    [status] = at.status
    assert status.label == "1. Decomposer: Write SQL — stopped by the user"
    text = " ".join(m.value for m in status.markdown)
    assert "Stopped by the user" in text and "Step failed" not in text


def test_sql_a_model_quotes_in_backticks_is_shown_as_code_and_the_rest_stays_literal():
    from ui.trace.parts import prose, remark, text

    comment = "Use ```sql SELECT name FROM t WHERE x = '$1'``` or `t.name`, not ![x](http://e)"
    assert remark(comment) == ("Use `SELECT name FROM t WHERE x = '$1'` or `t.name`, not "
                               "!\\[x\\](http\\://e)")  # md_text's escaping: no image
    assert prose("Fine.\n```sql\nSELECT 1\nFROM t\n```\n$cost$ stays") == (
        "Fine.  \n`SELECT 1 FROM t`  \n\\$cost\\$ stays")
    assert remark("a lone ` stays literal") == "a lone \\` stays literal"
    # a quoted identifier keeps its backticks inside a longer fence; a tag is no code
    assert remark("```sqlite SELECT `order` FROM t```") == "``SELECT `order` FROM t``"
    assert remark("``` ```") == ""
    # a database value or an error is shown literally, backticks and all
    assert text("the `x` value") == "the \\`x\\` value"
