"""The `selection` vote's own rules measured on recorded runs: each run's last vote held again
without the model with one rule turned the other way, the selection agent resumed only where
the new vote leaves another choice open.

``python bench/vote_rules.py --rule data_first --results bench/results/seed7-selection-fresh
--data ../shared/data/spider --out bench/results/data-first-seed7-selection.json``

``--rule`` names one of the vote's rules (:mod:`agents.pipelines.selection.vote_rules`):
``data_first`` (a result holding no data is set aside while another's holds some),
``shape_first`` (results of several rows are set aside where the question asks for one value
and another's has one), ``empty_not_decisive`` (a leading result holding no data is not
decisive while some candidates did not run) or ``doubt_last`` (results a lint of the answer
review doubts are set aside while another's is not). Each run's vote is held under the rules its
recorded parameters had (a rule newer than the run was off), then with ``--rule`` turned the
other way: on where the run had it off, off where it had it on.

Every input of the vote is in the recording: the groups, each with the SQL that stands for it
and its generators, and the candidates that did not run. So each run's last vote is held again
with the library's own ``vote`` on candidates rebuilt from it (the group's SQL executed again
on the file the question was asked on, once for each of its generators: members of a group
returned equal results, so the vote sees what it saw), first as recorded -- a replay that does
not give the recorded outcome is counted under ``mismatched`` and kept as it was -- then with
the rule turned:

- a vote that now settles on a group (decisive, or the only result with data) gives that
  group's SQL, scored with the evaluation's own scoring (the gold query on the question's own
  database, the prediction on the file it was asked on);
- a vote that leaves the same groups open keeps the selection agent's recorded choice (the same
  prompt at temperature 0);
- a vote that leaves other groups open needs the selection agent: such runs are listed under
  ``judged``, kept as they were in the replay's figure, and resumed from their vote step on the
  embedded model with ``--judged`` (the other options are then those of ``bench/reselect.py``,
  with ``--param <rule>=true`` or ``false``).

``doubt_last`` judges a group by its members' SQL, and the recording keeps one SQL a group:
every member is rebuilt with it, so a group with a member whose own SQL the lints would not
doubt may count as doubted here (the replay leans towards setting groups aside).

A vote the run stopped early (``stop_when_decided``) is held on the candidates that ran: the
ones it skipped were never written, so a turned rule that would have waited for them is
measured on fewer candidates than it would have had.

``--resumed`` lays a measurement of runs resumed since over the folder
(``bench/retrieval_reruns.py``, whose rows hold the resumed steps): their last vote is the
resumed one; one of them that would need the selection agent cannot be resumed (its state was
not recorded) and is listed under ``unknown``, kept as it was, as is a resumed run whose
measurement recorded only its final SQL and step names (``bench/reselect.py`` and the like).
Nothing is asserted: it is a measurement.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agents.runs.candidates import Candidate, Vote, vote  # noqa: E402
from agents.evaluation.harness import DatabasePool, EvalOptions, score  # noqa: E402
from agents.evaluation.resume_recorded import _manifest, main as resume_main  # noqa: E402
from agents.core.events import Run
from agents.pipelines.selection import PIPELINE  # noqa: E402
from agents.pipelines.selection.vote_rules import RULES, rules_for  # noqa: E402
from agents.pipelines.selection.generators import priority  # noqa: E402
from agents.core.step_context import ExecLimits

sys.path.insert(0, str(ROOT / "bench"))
from aggregate_gate import resumed_rows  # noqa: E402
from csma_rewrites import _database  # noqa: E402
from first_drafts import read_answers  # noqa: E402
from reselect import last_selection  # noqa: E402
from runnable_endings import ex_summary, ex_totals, replay_arguments, write_report  # noqa: E402


def last_vote(events: list[dict]) -> tuple[int, dict] | None:
    """The index and record of a run's last vote, or None."""
    found = [(i, e.get("parsed") or {}) for i, e in enumerate(events) if e.get("step") == "vote"]
    return found[-1] if found else None


def rules_of(params: dict, question: str, turned: str | None = None, db=None) -> dict:
    """The vote's rules as a run with ``params`` held them (``vote``'s keywords), with the rule
    ``turned`` the other way; ``db`` is the file the candidates ran on (``doubt_last`` reads
    it)."""
    if turned is not None:
        params = {**params, turned: not params.get(turned)}
    return rules_for(params, question, db)


def revote(record: dict, events: list[dict], params: dict, db,
           limits: ExecLimits, rule: str = "data_first",
           question: str = "") -> tuple[Vote, Vote]:
    """The run's last vote held again as recorded and with ``rule`` turned the other way."""
    recorded = last_vote(events)[1]
    plan = [str(e["step"]).split(":", 1)[1] for e in events
            if str(e.get("step", "")).startswith("candidate:")]
    candidates = []
    for group in recorded.get("groups") or []:
        result = db.execute(group["sql"], timeout=limits.timeout, max_rows=limits.max_rows)
        candidates += [Candidate.from_result(name, group["sql"], result)
                       for name in group["generators"]]
    candidates += [Candidate(f["generator"], None) for f in recorded.get("failed") or []]
    trust = priority(params, list(dict.fromkeys(plan)))
    share = float(recorded.get("min_share") or params.get("min_share") or 0.5)
    return (vote(candidates, priority=trust, min_share=share,
                 **rules_of(params, question, db=db)),
            vote(candidates, priority=trust, min_share=share,
                 **rules_of(params, question, rule, db=db)))


def _open(voted: Vote) -> list[list[str]]:
    return [voted.groups[i].generators for i in voted.contenders]


def _settled(voted: Vote) -> str | None:
    """The SQL the vote settles on, None when the selection agent decides."""
    if voted.needs_selection or voted.winner is None:
        return None
    return voted.chosen().sql


def matches_record(voted: Vote, recorded: dict) -> bool:
    groups = [g["generators"] for g in recorded.get("groups") or []]
    contenders = [groups[i] for i in recorded.get("contenders") or [] if 0 <= i < len(groups)]
    return [g.generators for g in voted.groups] == groups and _open(voted) == contenders


def ask_path(folder: str, given: str | None) -> str | None:
    """The file the folder's questions were asked on: ``given``, or its manifest's."""
    return given or _manifest(folder).get("ask_db")


def measure(folder: str, resumed: str | None, data: Path, asked_on: str | None,
            rule: str = "data_first") -> dict:
    _, answers = read_answers(folder, "selection")
    pool, options, limits = DatabasePool(), EvalOptions(), ExecLimits()
    laid_over = resumed_rows(resumed)
    rows, mismatched, judged, unknown = [], [], [], []
    for q, record in sorted(answers.items()):
        own = pool.get(str(data / "database" / record["db_id"] / f"{record['db_id']}.sqlite"))
        asked = pool.get(asked_on) if asked_on else own
        run = record.get("run") or {}
        events = run.get("events") or []
        later = laid_over.get(q)
        if later is not None and later.get("events") is not None:
            events = events[:later["from_index"]] + later["events"]
        sql = later["sql_after"] if later is not None else record.get("pred_sql")
        before = score(own, record["gold_sql"], sql, options, pred_db=asked)
        row = {"question_id": q, "resumed_before": later is not None,
               "before": bool(before["correct"]), "after": bool(before["correct"]),
               "sql_before": sql}
        rows.append(row)
        if later is not None and later.get("events") is None:
            if "vote" in (later.get("steps") or []):   # its vote was not recorded
                unknown.append(q)
                row["unknown"] = True
            continue
        if before.get("gold_error") or last_vote(events) is None:
            continue
        as_recorded, with_rule = revote(record, events, run.get("params") or {}, asked, limits,
                                        rule, run.get("question") or record.get("question") or "")
        if not matches_record(as_recorded, last_vote(events)[1]):
            mismatched.append(q)
            continue
        if (_settled(with_rule) or _open(with_rule)) == (
                _settled(as_recorded) or _open(as_recorded)):
            continue
        row["reason_after"] = with_rule.reason
        new_sql = _settled(with_rule)
        if new_sql is not None:
            after = score(own, record["gold_sql"], new_sql, options, pred_db=asked)
            row.update(after=bool(after["correct"]), sql_after=new_sql)
        elif later is not None:
            unknown.append(q)
            row["unknown"] = True
        else:
            judged.append(q)
            row["judged"] = True
    return {"pipeline": "selection", "rule": rule, "results": folder, "resumed": resumed,
            "ask_db": asked_on,
            "questions": len(rows), **ex_totals(rows),
            "settled": sum(1 for r in rows if "sql_after" in r), "judged": judged,
            "unknown": unknown, "mismatched": mismatched, "rows": rows}


def judged_vote(run: Run, rule: str = "data_first") -> int | None:
    """Where the new vote leaves other groups open for the selection agent: the run is resumed
    at its vote (``--judged``)."""
    db = _database(run.db_path) if run.db_path else None
    events = [e.to_dict() for e in run.events]
    found = last_vote(events)
    if db is None or found is None:
        return None
    as_recorded, with_rule = revote({}, events, run.params, db, ExecLimits(), rule,
                                    run.question)
    if not with_rule.needs_selection:
        return None
    return found[0] if _open(with_rule) != _open(as_recorded) else None


def judged_after(run: Run, index: int) -> dict:
    return {"vote": (run.events[index].parsed or {}).get("reason"),
            "selection": last_selection(run)}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--judged" in argv:
        argv.remove("--judged")
        picked = argparse.ArgumentParser(add_help=False)
        picked.add_argument("--rule", choices=RULES, default="data_first")
        known, argv = picked.parse_known_args(argv)
        return resume_main(argv, PIPELINE, lambda run: judged_vote(run, known.rule),
                           judged_after, __doc__.split("\n\n")[0])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    replay_arguments(parser, "a selection evaluation folder")
    parser.add_argument("--rule", choices=RULES, default="data_first",
                        help="the vote's rule turned the other way")
    parser.add_argument("--ask-db", default=None,
                        help="the file the folder's questions were asked on, where its "
                             "manifest's ask_db path is not there")
    args = parser.parse_args(argv)
    report = measure(args.results, args.resumed, Path(args.data),
                     ask_path(args.results, args.ask_db), args.rule)
    write_report(args.out, report)
    print(f"{args.rule} turned: {ex_summary('selection', args.results, report)}, "
          f"{report['settled']} vote(s) "
          f"settled otherwise, {len(report['judged'])} left to the selection agent (resume "
          f"them with --judged): {report['judged']}, {len(report['unknown'])} resumed run(s) "
          f"whose state was not recorded: {report['unknown']}, {len(report['mismatched'])} "
          f"vote(s) not replayed as recorded: {report['mismatched']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
