"""The CREATE TABLE layouts: the exact text each prompt shows, since benchmarks depend on it."""

import pytest

from agents.pipelines.baseline import ddl_with_examples
from agents.pipelines.deasql.shared import table_info
from agents.db.schema import Column, ForeignKey, Schema, Table
from agents.db.schema_ddl import DDLLayout, render_create_tables


def _schema(team_name: str = "team") -> Schema:
    team = Table(team_name, [Column("id", "INTEGER", primary_key=True, examples=[1, 2]),
                             Column("name", "TEXT", not_null=True,
                                    examples=["it's", "Real  Madrid", "x" * 31, "b", "c"])],
                 primary_key=["id"])
    player = Table("player", [Column("team_id", "INTEGER", primary_key=True, examples=[1]),
                              Column("shirt", "INTEGER", primary_key=True, examples=[7]),
                              Column("goals", "REAL", examples=[1.5])],
                   primary_key=["team_id", "shirt"])
    return Schema("club", [team, player], [ForeignKey("player", "team_id", team_name, "id")])


def test_the_plain_layout_writes_keys_as_constraints():
    assert _schema().render_ddl() == (
        "CREATE TABLE team (\n  id INTEGER,\n  name TEXT NOT NULL,\n  PRIMARY KEY (id)\n);\n\n"
        "CREATE TABLE player (\n  team_id INTEGER,\n  shirt INTEGER,\n  goals REAL,\n"
        "  PRIMARY KEY (team_id, shirt),\n  FOREIGN KEY (team_id) REFERENCES team (id)\n);")


def test_the_baseline_layout_comments_each_column_but_the_keys():
    assert ddl_with_examples(_schema()) == (
        "CREATE TABLE team (\n  id INTEGER PRIMARY KEY,\n"
        "  name TEXT -- e.g. \"it's\", 'Real Madrid', '" + "x" * 31 + "', 'b', 'c'\n);\n"
        "CREATE TABLE player (\n  team_id INTEGER,\n  shirt INTEGER,\n  goals REAL, -- e.g. 1.5\n"
        "  FOREIGN KEY (team_id) REFERENCES team(id),\n  PRIMARY KEY (team_id, shirt)\n);")


def test_the_deasql_layout_adds_short_text_values_after_each_statement():
    statements = table_info(_schema()).split("\n\n")
    assert statements[0].endswith(
        ");\n/* value examples: name: 'it''s', 'Real  Madrid', 'b' */")
    assert statements[1].endswith("REFERENCES team (id)\n);")  # no text values, no comment


def test_table_comments_are_left_out_when_a_statement_holds_a_blank_line():
    schema = _schema("te\n\nam")
    assert table_info(schema) == schema.render_ddl()
    assert "/* value examples" in render_create_tables(_schema(), DDLLayout(examples="table"))


def test_an_unknown_placement_of_examples_is_refused():
    with pytest.raises(ValueError):
        DDLLayout(examples="inline")
