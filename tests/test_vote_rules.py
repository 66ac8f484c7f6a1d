"""The vote's answer-review rules: a result that does not fit the question's shape is set aside
while another fits (``shape_first``), an empty result is never decisive while some candidates
did not run (``empty_not_decisive``), and a result the answer review's lints doubt is set aside
while another is not (``doubt_last``)."""

from __future__ import annotations

from agents.answer.shape import fits_question
from agents.pipelines.selection import PIPELINE
from agents.rules.registry import rule
from agents.runs.candidates import Candidate, settled, vote


def ran(name: str, rows, sql: str = "SELECT 1") -> Candidate:
    return Candidate(name, sql, {"ok": True, "rows": [list(r) for r in rows],
                                 "row_count": len(rows), "columns": ["x"]})


def failed(name: str) -> Candidate:
    return Candidate(name, "SELECT nope", {"ok": False, "error": "no such column: nope"})


def test_a_result_that_does_not_fit_is_set_aside_while_another_fits():
    many = [(n,) for n in range(6)]
    candidates = [ran("a", many), ran("b", many), ran("c", [(6,)])]
    fits = fits_question("How many orders are there?")
    plain = vote(candidates, ["a", "b", "c"])
    assert plain.decisive and plain.groups[0].generators == ["a", "b"]
    shaped = vote(candidates, ["a", "b", "c"], fits=fits)
    assert shaped.groups[0].generators == ["c"]
    assert "not fitting the question's shape set aside" in shaped.reason
    assert shaped.set_aside == [] and shaped.groups[1].generators == ["a", "b"]


def test_when_nothing_fits_the_vote_is_as_before():
    many = [(n,) for n in range(6)]
    candidates = [ran("a", many), ran("b", many)]
    fits = fits_question("How many orders are there?")
    assert vote(candidates, ["a", "b"], fits=fits).groups[0].generators == ["a", "b"]


def test_an_empty_result_is_not_decisive_while_others_did_not_run():
    candidates = [ran("a", []), ran("b", []), failed("c"), failed("d")]
    before = vote(candidates, ["a", "b", "c", "d"], min_share=0.5)
    assert before.decisive
    after = vote(candidates, ["a", "b", "c", "d"], min_share=0.5, empty_not_decisive=True)
    assert not after.decisive
    assert "only 2 of 4 candidates ran" in after.reason


def test_the_vote_says_how_many_candidates_ran():
    candidates = [ran("a", [(1,)]), ran("b", [(1,)]), failed("c")]
    outcome = vote(candidates, ["a", "b", "c"], min_share=0.5)
    assert outcome.decisive and "(2 of 3 ran)" in outcome.reason


def test_the_early_stop_waits_for_a_leader_that_does_not_fit_or_holds_nothing():
    many = [(n,) for n in range(6)]
    fits = fits_question("How many orders are there?")
    leaders = [ran("a", many), ran("b", many)]
    assert settled(leaders, 1, min_share=0.5)
    assert settled(leaders, 1, min_share=0.5, fits=fits) is None
    empty = [ran("a", []), ran("b", [])]
    assert settled(empty, 1, min_share=0.5, empty_not_decisive=True) is None


def test_the_rules_are_declared_and_replays_keep_them_off():
    for name in ("shape_first", "empty_not_decisive"):  # doubt_last: below
        declared = rule(name)
        assert declared.switch == name and name in PIPELINE.rules
        assert PIPELINE.replay_defaults()[name] is False
        assert PIPELINE.resolve_params({})[name] is True


def _minutes_db(tmp_path):
    import sqlite3

    from agents.db.database import open_database

    path = tmp_path / "calls.sqlite"
    with sqlite3.connect(path) as conn:
        conn.executescript("CREATE TABLE calls (id INTEGER PRIMARY KEY, duration_ms INTEGER);"
                           "INSERT INTO calls (duration_ms) VALUES (60000), (120000);")
    return open_database(path)


def test_a_result_the_review_doubts_is_set_aside_while_another_is_not(tmp_path):
    """``doubt_last``: two writers leave milliseconds where minutes are asked; the one that
    converts wins, and the vote says why. Off (the default) the majority wins as before."""
    from agents.pipelines.selection.vote_rules import rules_for

    db = _minutes_db(tmp_path)
    question = "What is the total duration of all calls in minutes?"
    raw = "SELECT SUM(duration_ms) FROM calls"
    converted = "SELECT SUM(duration_ms) / 60000.0 FROM calls"
    candidates = [ran("a", [(180000,)], raw), ran("b", [(180000,)], raw),
                  ran("c", [(3.0,)], converted)]
    plain = vote(candidates, ["a", "b", "c"], **rules_for({}, question, db))
    assert plain.decisive and plain.groups[0].generators == ["a", "b"]
    rules = rules_for({"doubt_last": True}, question, db)
    doubting = vote(candidates, ["a", "b", "c"], **rules)
    assert doubting.groups[0].generators == ["c"] and doubting.chosen().sql == converted
    assert "the answer review doubts set aside" in doubting.reason
    # the early stop waits while the leader is doubted, and not once it is not
    assert settled(candidates[:2], 1, min_share=0.5, **rules) is None
    assert settled([candidates[2], ran("d", [(3.0,)], converted)], 1, min_share=0.5, **rules)
    # one member that converts clears its group: joining a group never makes it doubted
    mixed = [ran("a", [(3.0,)], raw.replace("SUM(duration_ms)", "SUM(duration_ms) * 1")),
             ran("b", [(3.0,)], converted), ran("c", [(180000,)], raw)]
    assert vote(mixed, ["a", "b", "c"], **rules).groups[0].generators == ["a", "b"]
    # with every result doubted, the vote is as before
    alone = vote(candidates[:2], ["a", "b"], **rules)
    assert alone.decisive and alone.groups[0].generators == ["a", "b"]


def test_doubt_last_is_declared_off_by_default_and_needs_the_database():
    from agents.pipelines.selection.vote_rules import rules_for

    declared = rule("doubt_last")
    assert declared.switch == "doubt_last" and "doubt_last" in PIPELINE.rules
    assert PIPELINE.resolve_params({})["doubt_last"] is False
    assert rules_for({"doubt_last": True}, "How many?", None)["doubted"] is None


def test_a_run_reads_doubt_last_from_its_parameters_and_database(tmp_path):
    """What the vote step and the early stop take from a run: the run's database and time
    limit, so the lints judge the candidates on the file they ran on."""
    from types import SimpleNamespace

    from agents.pipelines.selection.vote_rules import vote_rules

    db = _minutes_db(tmp_path)
    ctx = SimpleNamespace(params={"doubt_last": True}, question="Total call minutes?", db=db,
                          limits=SimpleNamespace(timeout=5.0))
    doubted = vote_rules(ctx)["doubted"]
    assert doubted(ran("a", [(180000,)], "SELECT SUM(duration_ms) FROM calls"))
    assert not doubted(ran("b", [(3.0,)], "SELECT SUM(duration_ms) / 60000.0 FROM calls"))
    assert not doubted(failed("c"))
    ctx.params = {}
    assert vote_rules(ctx)["doubted"] is None
