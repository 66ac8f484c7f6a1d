"""Views of R³'s own output kinds: the reviewers invited, one review, a round's end."""

from __future__ import annotations

from typing import Any

import streamlit as st

from agents.pipelines.r3.outputs import Review, ReviewerInvitation, Revision
from agents.db.sqltext import format_sql

from . import view
from .parts import (badge, cell, markdown_table, prose, remark, render_sql_change, round_prefix,
                    text)


def verdict_badge(verdict: Any) -> str:
    word = str(verdict or "").strip()
    return badge(word or "no verdict", "green" if word.lower().startswith("approve") else "orange")


@view(ReviewerInvitation.kind)
def render_invitation(invitation: ReviewerInvitation) -> None:
    """The reviewer personas the model invited for this database and SQL."""
    reviewers, requested = invitation.reviewers, invitation.requested
    of = f" of {requested} asked for" if requested and requested != len(reviewers) else ""
    st.markdown(f"**{len(reviewers)} reviewer(s) invited**{of}")
    if all(_named_by_expertise(r.get("name"), r.get("expertise")) for r in reviewers):
        markdown_table(["reviewer (named by expertise)"],
                       [[cell(r.get("expertise", ""))] for r in reviewers])
    else:  # a run stored before reviewers were named by their expertise
        markdown_table(["reviewer", "expertise"],
                       [[cell(r.get("name", "")), cell(r.get("expertise", ""))]
                        for r in reviewers])


def _named_by_expertise(name: Any, expertise: Any) -> bool:
    name, expertise = str(name or ""), str(expertise or "")
    base = name.split(" (")[0].rstrip("…")
    return bool(base) and expertise.startswith(base)


@view(Review.kind)
def render_review(review: Review) -> None:
    """One reviewer: verdict, expertise and comment."""
    who = review.expertise or review.reviewer or ""
    named = (f" ({text(review.reviewer)})" if review.reviewer and review.expertise
             and not _named_by_expertise(review.reviewer, review.expertise) else "")
    st.markdown(f"{round_prefix(review.round)}{verdict_badge(review.verdict)} "
                f"**{text(who)}**{named}")
    if review.comment:
        st.markdown(f"> {remark(review.comment)}")


@view(Revision.kind)
def render_revision(revision: Revision) -> None:
    """One round's end: the reviewers' comments, the writer's rebuttal and the SQL diff."""
    comments = revision.comments
    if revision.round:
        st.markdown(f"**Round {revision.round}** · {len(comments)} review(s)")
    for c in comments:
        who = c.get("expertise") or c.get("reviewer") or "reviewer"
        st.markdown(f"- {verdict_badge(c.get('verdict'))} **{text(who)}**: "
                    f"{remark(c.get('comment')) or '(no comment)'}")
    if revision.rebuttal:
        st.markdown(f"**Writer's rebuttal:** {prose(revision.rebuttal)}")
    if revision.consensus:
        st.markdown(f"{badge('consensus', 'green')} The writer keeps the same SQL: the loop ends.")
        st.code(format_sql(revision.sql_after or revision.sql_before), language="sql",
                wrap_lines=True)
        return
    if revision.diff:
        st.markdown(f"{badge('revised', 'orange')} The next round reviews the new SQL.")
        st.code(revision.diff, language="diff", wrap_lines=True)
        with st.expander("SQL before and after"):
            render_sql_change(revision.sql_before, revision.sql_after)
    else:
        render_sql_change(revision.sql_before, revision.sql_after)
