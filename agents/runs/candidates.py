"""Candidate queries from several generators, grouped by equal results, and the vote on them.

Several pipelines (or several samples of one) answer the same question; their queries are run
read-only and compared by what they return, not by how they are written. Candidates whose
results are equal under the evaluation metric's own rule
(:func:`agents.evaluation.metric.result_eq`: the same multiset of rows under some column
permutation, row order only when it is asked for) form one group, so a vote can never split
answers that execution accuracy would score the same. Execution-based voting is what
self-consistency does for text-to-SQL: independent mistakes rarely agree, right answers do.

The metric takes its row-order rule from the gold query's top-level ORDER BY. Between two
candidates there is no gold, so order counts only when *both* sort their output: an unsorted
query's row order is an accident of the plan and says nothing either way. Candidates that did
not run (no SQL, an error, a timeout) join no group but still count in the vote's total, so a
group that most generators failed to reach is a weak winner.

The largest group wins; equal sizes are ordered by the best priority among their generators.
The vote is *decisive* when the largest group is strictly larger than the next and holds at
least ``min_share`` of all candidates; otherwise the groups in contention are listed for a
selection agent to choose from.

Results without data agree too easily. A query that names a wrong value, filters on the wrong
column or joins through an empty or unrelated table returns nothing, and so do all its wrong
siblings: on a small model the candidates that miss often miss *together*, while the right
query finds rows. So, with ``data_first``, a result holding no value (no rows, or rows of NULLs
only -- what an aggregate over no rows returns) is set aside whenever another candidate's result
holds data: its group is listed after the groups with data, cannot win and is not in
contention, and its candidates count in the total as failed ones do. When no result holds data
the vote is held among the empty ones as before. Everything here is plain data with
``to_dict``/``from_dict``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

from agents.db import sqltext
from agents.evaluation.metric import order_matters

DEFAULT_MIN_SHARE = 0.5


@dataclass
class Candidate:
    """One generator's query and what it returned.

    ``result`` is an :meth:`ExecResult.preview <agents.db.safe_sql.ExecResult.preview>` dict with
    every row kept (None when the query was not executed).
    """

    generator: str
    sql: str | None
    result: dict | None = None

    @classmethod
    def from_result(cls, generator: str, sql: str | None, result) -> "Candidate":
        """Build from an ``ExecResult``, its preview dict, or None (not executed)."""
        if result is not None and not isinstance(result, dict):
            result = result.preview(rows=len(result.rows))
        return cls(generator=generator, sql=sql, result=result)

    @property
    def ok(self) -> bool:
        return bool(self.sql and self.sql.strip() and self.result and self.result.get("ok"))

    @property
    def rows(self) -> list[tuple]:
        return [tuple(row) for row in (self.result or {}).get("rows") or []]

    @property
    def error_class(self) -> str | None:
        """Why the candidate did not run ("NoSQL", "Timeout", ...), None when it ran."""
        if not (self.sql and self.sql.strip()):
            return "NoSQL"
        if self.result is None:
            return "NotExecuted"
        if self.result.get("ok"):
            return None
        return self.result.get("error_class") or "Error"

    def sorts_output(self) -> bool:
        """True when the query has a top-level ORDER BY (the metric's row-order rule)."""
        return bool(self.sql) and order_matters(self.sql)

    def to_dict(self) -> dict:
        return {"generator": self.generator, "sql": self.sql, "result": self.result}

    @classmethod
    def from_dict(cls, data: dict) -> "Candidate":
        return cls(generator=data["generator"], sql=data.get("sql"), result=data.get("result"))


def has_data(result: dict | None) -> bool:
    """True when a result (an execution preview, or a group summary with its first rows) holds
    at least one value that is not NULL: no rows, or NULLs only, mean nothing was found."""
    return any(value is not None for row in (result or {}).get("rows") or [] for value in row)


def run_candidate(db, generator: str, sql: str | None, *, timeout: float = 10.0,
                  max_rows: int = 1000) -> Candidate:
    """Execute ``sql`` read-only on ``db`` (a :class:`~agents.db.database.Database`)."""
    if not (sql and sql.strip()):
        return Candidate(generator=generator, sql=sql, result=None)
    return Candidate.from_result(generator, sql, db.execute(sql, timeout=timeout,
                                                            max_rows=max_rows))


def results_equal(a: Candidate, b: Candidate) -> bool:
    """True when two candidates that ran return the same result under the metric's rule.

    A result cut at the row cap is only compared with another cut result (the rows beyond the
    cap are unknown); row order counts when both queries sort their output.
    """
    return sqltext.results_equal(a.result, b.result, float_digits=None,
                                 order_matters=a.sorts_output() and b.sorts_output())


@dataclass
class CandidateGroup:
    """Candidates with equal results; ``members`` index the candidate list, best first."""

    members: list[int]
    generators: list[str]

    @property
    def size(self) -> int:
        return len(self.members)

    @property
    def representative(self) -> int:
        """The member whose query stands for the group (best generator priority)."""
        return self.members[0]

    def to_dict(self) -> dict:
        return {"members": list(self.members), "generators": list(self.generators),
                "size": self.size, "representative": self.representative}

    @classmethod
    def from_dict(cls, data: dict) -> "CandidateGroup":
        return cls(members=list(data["members"]), generators=list(data["generators"]))


def group_candidates(candidates: Sequence[Candidate],
                     priority: Iterable[str] | None = None) -> tuple[list[CandidateGroup],
                                                                      list[int]]:
    """Groups of equal results (largest first, then best priority) and the failed indices.

    ``priority`` lists generator names, most trusted first; generators it does not name come
    after, in candidate order. Each candidate is compared with each group's representative.
    """
    rank = _ranker(candidates, priority)
    order = sorted(range(len(candidates)), key=rank)
    groups: list[list[int]] = []
    failed: list[int] = []
    for index in order:
        candidate = candidates[index]
        if not candidate.ok:
            failed.append(index)
            continue
        for members in groups:
            if results_equal(candidates[members[0]], candidate):
                members.append(index)
                break
        else:
            groups.append([index])
    groups.sort(key=lambda members: (-len(members), rank(members[0])))
    return ([CandidateGroup(members=m, generators=[candidates[i].generator for i in m])
             for m in groups], sorted(failed))


def _ranker(candidates: Sequence[Candidate], priority: Iterable[str] | None):
    preferred = {name: n for n, name in enumerate(dict.fromkeys(priority or ()))}
    unknown = len(preferred)
    return lambda i: (preferred.get(candidates[i].generator, unknown), i)


@dataclass
class Vote:
    """The outcome of grouping: who agrees, whether that settles it, and what is left open.

    ``contenders`` index ``groups``: on a tie the groups of the largest size, when the winner
    is weak every group; empty when the vote is decisive or there is nothing to choose from.
    ``set_aside`` indexes the groups whose result holds no data, left out of the vote because
    another group's holds some (``data_first``); they come after every group with data.
    """

    candidates: list[Candidate]
    groups: list[CandidateGroup]
    failed: list[int]
    decisive: bool
    contenders: list[int] = field(default_factory=list)
    reason: str = ""
    min_share: float = DEFAULT_MIN_SHARE
    set_aside: list[int] = field(default_factory=list)

    @property
    def needs_selection(self) -> bool:
        """True when a selection agent should choose among :attr:`contenders`."""
        return len(self.contenders) > 1

    @property
    def winner(self) -> CandidateGroup | None:
        """The leading group (final only when :attr:`decisive`); None when nothing ran."""
        return self.groups[0] if self.groups else None

    def chosen(self, group_index: int = 0) -> Candidate | None:
        """The representative candidate of ``groups[group_index]`` (the winner by default)."""
        if not 0 <= group_index < len(self.groups):
            return None
        return self.candidates[self.groups[group_index].representative]

    def to_dict(self) -> dict:
        return {"candidates": [c.to_dict() for c in self.candidates],
                "groups": [g.to_dict() for g in self.groups], "failed": list(self.failed),
                "decisive": self.decisive, "needs_selection": self.needs_selection,
                "contenders": list(self.contenders), "reason": self.reason,
                "min_share": self.min_share, "set_aside": list(self.set_aside)}

    @classmethod
    def from_dict(cls, data: dict) -> "Vote":
        return cls(candidates=[Candidate.from_dict(c) for c in data["candidates"]],
                   groups=[CandidateGroup.from_dict(g) for g in data["groups"]],
                   failed=list(data.get("failed", [])), decisive=bool(data["decisive"]),
                   contenders=list(data.get("contenders", [])), reason=data.get("reason", ""),
                   min_share=float(data.get("min_share", DEFAULT_MIN_SHARE)),
                   set_aside=list(data.get("set_aside", [])))


def vote(candidates: Sequence[Candidate], priority: Iterable[str] | None = None, *,
         min_share: float = DEFAULT_MIN_SHARE, data_first: bool = False,
         fits: Callable[[dict | None], bool] | None = None,
         empty_not_decisive: bool = False,
         doubted: Callable[[Candidate], bool] | None = None) -> Vote:
    """Group ``candidates`` by result and decide whether the largest group settles it.

    Decisive: the largest group is strictly larger than the next one and holds at least
    ``min_share`` of all candidates (failed ones included). A tie leaves the tied groups in
    contention; a weak winner (below ``min_share``) leaves every group in contention. With
    ``data_first``, groups whose result holds no data are set aside while any group's result
    holds some (see the module's docstring). With ``fits`` (a result -> whether its shape fits
    the question, :mod:`agents.answer.shape`), groups whose result does not fit are set aside
    while another's does. With ``empty_not_decisive``, a leading result holding no data is
    never decisive while some candidates did not run: they might have found some. With
    ``doubted`` (a candidate -> whether a lint of the answer review doubts its SQL's result),
    groups in which every member's SQL is doubted are set aside while another group has a
    member that is not (members return equal rows by different SQL: one clear member clears
    the group, so a candidate joining a group never makes it doubted).
    """
    candidates = list(candidates)
    groups, failed = group_candidates(candidates, priority)
    total = len(candidates)
    result = Vote(candidates=candidates, groups=groups, failed=failed, decisive=False,
                  min_share=min_share)
    if not groups:
        result.reason = f"none of the {total} candidates ran"
        return result
    voting = groups
    if data_first:
        found = [g for g in groups if has_data(candidates[g.representative].result)]
        if found and len(found) < len(groups):
            voting = found
            result.groups = found + [g for g in groups if g not in found]
            result.set_aside = list(range(len(found), len(groups)))
    empty = sum(result.groups[n].size for n in result.set_aside)
    unfit = doubtful = 0
    if fits is not None:
        voting, unfit = _keep_first(result, voting,
                                    lambda g: fits(candidates[g.representative].result))
    if doubted is not None and len(voting) > 1:
        voting, doubtful = _keep_first(result, voting,
                                       lambda g: _clear(g, candidates, doubted))
    ran = total - len(failed)
    top = voting[0].size
    tied = [n for n, g in enumerate(voting) if g.size == top]
    share = top / total
    agree = f"{top} of {total} candidates agree"
    if len(tied) > 1:
        result.contenders = tied
        result.reason = f"tie: {len(tied)} groups of {top} (of {total} candidates)"
    elif share < min_share and (len(voting) > 1 or not (result.set_aside or unfit or doubtful)):
        result.contenders = list(range(len(voting))) if len(voting) > 1 else []
        result.reason = f"weak: {agree}, below the minimum share {min_share:g}"
    elif share < min_share:
        which = ("the answer review does not doubt" if doubtful else
                 "that fits the question's shape" if unfit else "with data")
        result.reason = f"the only result {which}: {top} of {total} candidates"
    elif empty_not_decisive and failed and not has_data(
            candidates[voting[0].representative].result):
        result.contenders = list(range(len(voting))) if len(voting) > 1 else []
        result.reason = (f"not decisive: {agree}, but their result holds no data and only "
                         f"{ran} of {total} candidates ran")
    else:
        result.decisive = True
        result.reason = agree
    if failed and "ran" not in result.reason:
        result.reason += f" ({ran} of {total} ran)"
    if unfit:
        result.reason += (f"; {unfit} result{'s' if unfit > 1 else ''} not fitting the "
                          "question's shape set aside")
    if doubtful:
        result.reason += (f"; {doubtful} result{'s' if doubtful > 1 else ''} the answer review "
                          "doubts set aside")
    if empty:
        result.reason += (f"; {empty} returned no data and {'is' if empty == 1 else 'are'} "
                          "set aside")
    return result


def _keep_first(result: Vote, voting: list[CandidateGroup],
                keep: Callable[[CandidateGroup], bool]) -> tuple[list[CandidateGroup], int]:
    """The voting groups ``keep`` passes, and how many it set aside -- while it passes some and
    not all (else the groups are left as they are). The kept groups lead ``result.groups``, so
    the voting groups stay its first ones; ``set_aside`` keeps naming the groups without data
    only."""
    kept = [g for g in voting if keep(g)]
    if not kept or len(kept) == len(voting):
        return voting, 0
    empties = [result.groups[n] for n in result.set_aside]
    result.groups = kept + [g for g in result.groups if g not in kept]
    result.set_aside = [n for n, g in enumerate(result.groups) if g in empties]
    return kept, len(voting) - len(kept)


def _clear(group: CandidateGroup, candidates: Sequence[Candidate],
           doubted: Callable[[Candidate], bool]) -> bool:
    """Whether some member of ``group`` is not doubted."""
    return any(not doubted(candidates[m]) for m in group.members)


def settled(candidates: Sequence[Candidate], remaining: int, *,
            min_share: float = DEFAULT_MIN_SHARE, data_first: bool = False,
            fits: Callable[[dict | None], bool] | None = None,
            empty_not_decisive: bool = False,
            doubted: Callable[[Candidate], bool] | None = None) -> str | None:
    """Why the vote over ``candidates`` plus ``remaining`` candidates not yet written is
    already decided whatever those return, or None when they could still change it.

    The largest group wins :func:`vote` when it stays strictly the largest and holds
    ``min_share`` of all candidates: so it is decided once the leader's share of the final
    total reaches ``min_share`` and the runner-up could not reach it even if every remaining
    candidate joined the runner-up. With ``data_first`` a leader without data is never
    settled (one remaining result with data would set it aside). The answer is the one the
    full vote would give: the same group, whichever remaining candidates join it (as in
    adaptive self-consistency, stopping when more samples cannot change the majority). A
    leader whose result does not fit the question's shape (``fits``), or holds no data
    (``empty_not_decisive``), or that the answer review doubts (``doubted``), is never settled
    either.
    """
    if remaining <= 0:
        return None
    groups, _ = group_candidates(list(candidates))
    if not groups:
        return None
    if data_first:
        groups = [g for g in groups if has_data(candidates[g.representative].result)]
        if not groups:  # one remaining result with data would set every group aside
            return None
    leader = candidates[groups[0].representative].result
    if (fits is not None and not fits(leader)) or (empty_not_decisive and not has_data(leader)):
        return None
    if doubted is not None and not _clear(groups[0], candidates, doubted):
        return None
    total = len(candidates) + remaining
    top = groups[0].size
    runner_up = groups[1].size if len(groups) > 1 else 0
    if top / total >= min_share and runner_up + remaining < top:
        return (f"{top} of {total} candidates agree already; the {remaining} not yet written "
                "could not change the vote")
    return None
