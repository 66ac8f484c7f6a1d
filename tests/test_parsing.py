"""Parsing model text the way small models actually write it."""

from __future__ import annotations

import pytest

from agents.core.engine import ParseError
from agents.llm.parsing import extract_json, extract_sql, extract_sql_blocks

# -- JSON -------------------------------------------------------------------------------------


@pytest.mark.parametrize("text, expected", [
    ('{"tables": ["singer"]}', {"tables": ["singer"]}),
    ('  [1, 2, 3]\n', [1, 2, 3]),
    ('```json\n{"a": 1}\n```', {"a": 1}),
    ('```JSON\n{"a": 1}\n```', {"a": 1}),
    ('```\n{"a": 1}\n```', {"a": 1}),
    ('Sure! Here is the result:\n{"a": {"b": [1, {"c": 2}]}}\nHope this helps.',
     {"a": {"b": [1, {"c": 2}]}}),
    ('{"a": [1, 2,], "b": 3,}', {"a": [1, 2], "b": 3}),
    ("{'singer': 'keep_all', 'concert': ['id', 'name']}",
     {"singer": "keep_all", "concert": ["id", "name"]}),
    ("{'name': 'O\\'Brien'}", {"name": "O'Brien"}),
    ('{"used": True, "skip": False, "x": None}', {"used": True, "skip": False, "x": None}),
    ('{"sql": "SELECT a FROM t WHERE c = \'x,}\'"}', {"sql": "SELECT a FROM t WHERE c = 'x,}'"}),
    ('{"quote": "she said \\"hi\\" {not json}"}', {"quote": 'she said "hi" {not json}'}),
    ('```json\n{"a": 1, "b": "unterminated fence"}', {"a": 1, "b": "unterminated fence"}),
    ('Draft:\n```json\n{"a": 1}\n```\nCorrected:\n```json\n{"a": 2}\n```', {"a": 2}),
    ('The set {x} is empty. Answer: {"k": null}', {"k": None}),
    ('{"text": "it\'s fine, really"}', {"text": "it's fine, really"}),
])
def test_extract_json_accepts(text, expected):
    assert extract_json(text) == expected


def test_trailing_comma_inside_a_string_is_kept():
    assert extract_json('{"a": "x,]", "b": [1,]}') == {"a": "x,]", "b": [1]}


def test_true_inside_a_string_is_not_rewritten():
    assert extract_json("{'a': 'True story', 'b': True}") == {"a": "True story", "b": True}


@pytest.mark.parametrize("text, fragment", [
    ("", "empty"),
    (None, "empty"),
    ("I don't know the answer.", "no JSON object found"),
    ('{"a": 1 "b": 2}', "invalid: Expecting ',' delimiter at line 1 column 9"),
    ('Here: {"a": [1, 2', "incomplete"),
    ('"just a string"', "no JSON object found"),
])
def test_extract_json_rejects_with_a_reason(text, fragment):
    with pytest.raises(ParseError) as info:
        extract_json(text)
    assert fragment in str(info.value)


def test_parse_error_is_a_value_error_for_the_engine():
    with pytest.raises(ValueError):
        extract_json("nothing")


# -- SQL --------------------------------------------------------------------------------------


@pytest.mark.parametrize("text, expected", [
    ("```sql\nSELECT name FROM singer;\n```", "SELECT name FROM singer"),
    ("```SQL\nselect count(*) from t\n```", "select count(*) from t"),
    ("```sqlite\nSELECT 1 FROM t\n```", "SELECT 1 FROM t"),
    ("Draft:\n```sql\nSELECT 1;\n```\nFinal:\n```sql\nSELECT count(*) FROM singer "
     "WHERE age > 30;\n```", "SELECT count(*) FROM singer WHERE age > 30"),
    ("```\nSELECT * FROM t\n```", "SELECT * FROM t"),
    ("```SELECT * FROM t```", "SELECT * FROM t"),
    ("```sql SELECT * FROM t```", "SELECT * FROM t"),
    ("```sql\nSELECT a FROM t -- the a column\nWHERE b = 1; -- done\n```",
     "SELECT a FROM t\nWHERE b = 1"),
    ("```sql\n-- Count the singers\nSELECT count(*) FROM singer\n```",
     "SELECT count(*) FROM singer"),
    ("```sql\nSELECT name FROM t WHERE note = 'a -- b;c'\n```",
     "SELECT name FROM t WHERE note = 'a -- b;c'"),
    ("```sql\nSELECT a FROM t\nORDER BY a", "SELECT a FROM t\nORDER BY a"),  # cut-off fence
    ("```sql\nSELECT 1;\nSELECT 2;\n```", "SELECT 2"),
    ("SELECT name FROM singer WHERE age > 20", "SELECT name FROM singer WHERE age > 20"),
    ("The answer is:\nSELECT name\nFROM singer\nWHERE age > 20;\nThis returns the names.",
     "SELECT name\nFROM singer\nWHERE age > 20"),
    ("SQL: SELECT count(*) FROM t", "SELECT count(*) FROM t"),
    ("The query SELECT count(*) FROM t WHERE x = 'a;b'; counts the rows.",
     "SELECT count(*) FROM t WHERE x = 'a;b'"),
    ("SELECT a FROM t\nThis query selects every a from the table.", "SELECT a FROM t"),
    ("SELECT a FROM t\n\nExplanation: it selects a.", "SELECT a FROM t"),
    ("WITH big AS (SELECT * FROM t WHERE n > 5)\nSELECT count(*) FROM big;",
     "WITH big AS (SELECT * FROM t WHERE n > 5)\nSELECT count(*) FROM big"),
    ("SELECT name FROM t WHERE id IN (\n  SELECT id FROM u\n)",
     "SELECT name FROM t WHERE id IN (\n  SELECT id FROM u\n)"),
    ('{"sql": "SELECT 1 FROM t;"}', "SELECT 1 FROM t"),
    ('```json\n{"reasoning": "simple", "sql": "SELECT a FROM t"}\n```', "SELECT a FROM t"),
    ("I start with the singer table.\nSELECT name FROM singer", "SELECT name FROM singer"),
])
def test_extract_sql_accepts(text, expected):
    assert extract_sql(text) == expected


@pytest.mark.parametrize("text", [
    "", None, "I cannot answer that question.",
    "We start with the table of singers and then count them.",
    "```python\nprint('hello')\n```",
    "```sql\n-- nothing here\n```",
])
def test_extract_sql_raises_when_there_is_no_sql(text):
    with pytest.raises(ParseError, match="no SQL query found"):
        extract_sql(text)


def test_extract_sql_blocks_in_order():
    text = ("Candidate 1:\n```sql\nSELECT a FROM t;\n```\nCandidate 2:\n```sql\n"
            "SELECT b FROM t -- alt\n```\n```python\nx = 1\n```")
    assert extract_sql_blocks(text) == ["SELECT a FROM t", "SELECT b FROM t"]


def test_extract_sql_blocks_prefers_sql_fences_over_other_fences():
    text = "```\nSELECT untagged FROM t\n```\n```sql\nSELECT tagged FROM t\n```"
    assert extract_sql_blocks(text) == ["SELECT tagged FROM t"]


def test_extract_sql_blocks_empty_without_sql():
    assert extract_sql_blocks("just prose") == []
    assert extract_sql_blocks("") == []


@pytest.mark.parametrize("placeholder", ["None", "none;", "N/A", "NULL", "...", "-", "<SQL>"])
def test_a_placeholder_in_a_sql_block_is_not_a_statement(placeholder):
    text = (f"Sub question 1: How many cars?\nSQL\n```sql\nSELECT COUNT(*) FROM cars\n```\n"
            f"Sub question 2: None\nSQL\n```sql\n{placeholder}\n```\nQuestion Solved.")
    assert extract_sql_blocks(text) == ["SELECT COUNT(*) FROM cars"]
    assert extract_sql(text) == "SELECT COUNT(*) FROM cars"
    with pytest.raises(ParseError):
        extract_sql(f"```sql\n{placeholder}\n```")
