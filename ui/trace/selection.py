"""Views of the candidate-selection pipeline: each candidate with its generator, the groups and
the vote, and the selection agent's choice with its reasoning."""

from __future__ import annotations

import streamlit as st

from agents.outputs import Decomposition
from agents.pipelines.selection.outputs import CandidateSQL, CandidateVote, Selection
from agents.db.sqltext import format_sql
from ui.format import preview_frame

from . import view
from .common import render_decomposition
from .parts import badge, cell, markdown_table, name, names, prose, text


@view(CandidateSQL.kind)
def render_candidate(candidate: CandidateSQL) -> None:
    """Which generator wrote the candidate and how; whether it runs (its rows follow)."""
    bits = [f"**{text(candidate.generator)}**: {text(candidate.method)}"]
    if candidate.temperature:
        bits.append(f"temperature {candidate.temperature:g}")
    if candidate.examples is not None:
        bits.append(f"{candidate.examples} related example(s)")
    st.markdown(" · ".join(bits))
    if candidate.sub_questions:
        render_decomposition(Decomposition(sub_questions=candidate.sub_questions))
    if candidate.reasoning:
        st.markdown(f"**Reasoning:** {prose(candidate.reasoning)}")
    if candidate.ok:
        st.markdown(badge(f"runs: {candidate.rows} row(s)", "green"))
    elif candidate.error_class == "NoSQL":
        st.markdown(f"{badge('no SQL', 'red')} {text(candidate.error)}: this generator takes "
                    "no part in the vote.")
    else:
        st.markdown(f"{badge('fails', 'red')} ({text(candidate.error_class)}): "
                    f"{text(candidate.error)}")
        if candidate.hint:
            st.caption(f"Hint: {candidate.hint}")


_OUTCOMES = {"decisive": ("decisive", "green"), "only_result": ("the only result", "blue"),
             "selection": ("not decisive", "orange"), "none_ran": ("no candidate ran", "red")}


ONLY_DATA = "the only result with data"


def _result_summary(group: dict) -> str:
    count = group.get("row_count")
    more = "+" if group.get("truncated") else ""
    first = group.get("rows") or []
    shown = f": {cell(', '.join(map(str, first[0])))}" if first else ""
    return f"{count}{more} row(s){shown}" + (" …" if len(first) > 1 else "")


_DRAFT = {"confirmed": "green", "replaced": "orange"}


def _draft_line(outcome: str | None, note: str) -> str:
    """What became of the draft answer the page showed first: a badge and the reason."""
    return (f"{badge('draft ' + (outcome or ''), _DRAFT.get(outcome, 'gray'))} "
            f"{text(note.split(': ', 1)[-1])}")


@view(CandidateVote.kind)
def render_vote(vote: CandidateVote) -> None:
    """The groups of equal results, who did not run, and what the vote decided and why."""
    rows = []
    for n, group in enumerate(vote.groups):
        if vote.chosen and n == 0:
            mark = badge("winner", "green")
        elif n in vote.contenders:
            mark = badge("in contention", "orange")
        elif n in (vote.set_aside or ()):
            mark = badge("no data: set aside", "gray")
        else:
            mark = ""
        rows.append([str(n + 1), names(group.get("generators")),
                     f"{group.get('size')} of {vote.total}", _result_summary(group), mark])
    if rows:
        markdown_table(["group", "candidates", "votes", "result", ""], rows)
    if vote.failed:
        st.markdown("**Did not run:** " + ", ".join(
            f"{name(f.get('generator'))} ({text(f.get('error_class'))})" for f in vote.failed))
    label, colour = _OUTCOMES.get(vote.outcome, (vote.outcome, "gray"))
    reason = vote.reason
    # "the only result with data / that fits ... / the review does not doubt": the others were
    # set aside, so the share a decisive group needs does not apply
    only = vote.outcome == "only_result" and reason.startswith("the only result ")
    if only and reason.startswith(f"{ONLY_DATA}: "):  # the badge says it
        label, reason = ONLY_DATA, reason.removeprefix(f"{ONLY_DATA}: ")
    line = f"{badge(label, colour)} {text(reason)}"
    if vote.min_share is not None and vote.outcome != "none_ran" and not only:
        line += f" (a decisive group needs at least {vote.min_share:g} of all candidates)"
    if vote.chosen:
        line += f": the SQL of {name(vote.chosen)} is the answer."
    elif vote.contenders:
        line += (": the selection agent compares groups "
                 + ", ".join(str(i + 1) for i in vote.contenders) + ".")
    st.markdown(line)
    if vote.skipped:
        st.caption("Not written, the vote being decided without them: "
                   + ", ".join(name(n) for n in vote.skipped) + ".")
    if vote.draft_note:
        st.markdown(_draft_line(vote.draft_outcome, vote.draft_note))
    if vote.groups:
        with st.expander("Each group's SQL and first rows"):
            for n, group in enumerate(vote.groups, 1):
                st.markdown(f"**Group {n}** · {names(group.get('generators'))}")
                st.code(format_sql(group.get("sql")), language="sql", wrap_lines=True)
                _rows(group)


def _rows(result: dict) -> None:
    frame = preview_frame(result)
    if not frame.empty:
        st.dataframe(frame, hide_index=True, width="stretch")


@view(Selection.kind)
def render_selection_choice(selection: Selection) -> None:
    """The candidates the selection agent compared, its choice and its reasoning."""
    for option in selection.options:
        chosen = " " + badge("chosen", "green") if option.get("label") == selection.choice \
            else ""
        st.markdown(f"**Candidate {text(option.get('label'))}**{chosen} · "
                    f"{names(option.get('generators'))} · {option.get('row_count')} row(s)")
        st.code(format_sql(option.get("sql")), language="sql", wrap_lines=True)
        _rows(option)
    if selection.ballots:
        st.markdown("**Compared in several orders** (each candidate shown first once; the "
                    "pick made most often wins, a tie keeps the vote's order). Each look saw "
                    "the candidates relabelled A, B, … in the order given, and its reasoning "
                    "uses those letters; *picked* is the candidate's letter above:")
        st.dataframe([{"shown in the order": " ".join(b.get("order") or []),
                       "picked": b.get("choice") or "answer unusable",
                       "reasoning": b.get("reasoning") or ""} for b in selection.ballots],
                     hide_index=True, width="stretch")
    if selection.fallback:
        st.markdown(f"{badge('answer unusable', 'orange')} The agent's answer could not be "
                    f"used; the vote's leading group ({text(selection.choice)}) stands.")
    else:
        st.markdown(f"**Choice: {text(selection.choice)}**, the SQL of "
                    f"{name(selection.chosen)}")
    if selection.reasoning:
        st.markdown(f"**Reasoning:** {prose(selection.reasoning)}")
    if selection.draft_note:
        st.markdown(_draft_line(selection.draft_outcome, selection.draft_note))
