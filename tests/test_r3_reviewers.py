"""R³'s invitation and reviewers against the scripted OpenAI-compatible server: the personas
invited, what each reviewer is shown, and the paper's and the strict review prompt."""

from __future__ import annotations

from r3_script import QUESTION, REVIEWER, SQL_A, approve, invitation, requests_with, run, writer
from scripted_llm import last_user_message, prompt_text


# -- invitation and reviewers -----------------------------------------------------------------

def test_invitation_creates_n_reviewers_who_see_the_result_table(db, llm, scripted_llm):
    scripted_llm.push(writer(SQL_A), invitation(4), approve(), approve(), approve())
    result = run(db, llm, n_reviewers=3)

    invite = result.events[2]
    assert invite.agent == "Invitation"
    assert len(invite.parsed["reviewers"]) == 3  # the model offered 4: the first 3 are kept
    assert "invite 3 experts" in prompt_text(scripted_llm.requests[1])
    reviews = requests_with(scripted_llm, REVIEWER)
    assert len(reviews) == 3
    for i, req in enumerate(reviews, 1):
        user = last_user_message(req)
        assert "EXECUTION RESULT:\nname\nAnn\nCleo\n(2 rows)" in user
        assert SQL_A in user and QUESTION in user and "CREATE TABLE singer" in user
        assert user.rstrip().endswith(
            f"You are Expert number {i} in music data. Review the SQL from your expertise.")
    # the static instructions and the schema come first: one shared prefix for all reviewers
    firsts = {prompt_text(r)[:len(prompt_text(reviews[0])) - 80] for r in reviews}
    assert len(firsts) == 1
    assert result.events[-1].data["personas"] == invite.parsed["reviewers"]


def test_fewer_personas_than_asked_are_used_with_a_note(db, llm, scripted_llm):
    scripted_llm.push(writer(SQL_A), invitation(1), approve())
    result = run(db, llm, n_reviewers=3)
    assert result.status == "done"
    assert "3 reviewers were asked for, the model invited 1." in result.events[2].notes


# -- small-model variants ----------------------------------------------------------------------

STRICT = "Approve it unless you can name a concrete error"


def test_strict_review_prompt_is_a_switch_away_and_keeps_the_shared_user_prompt(
        db, llm, scripted_llm):
    scripted_llm.push(writer(SQL_A), invitation(2), approve(), approve())
    paper = run(db, llm, n_reviewers=2)
    paper_reviews = requests_with(scripted_llm, REVIEWER)
    assert STRICT not in paper_reviews[0]["messages"][0]["content"]
    assert [e.inputs["prompt"] for e in paper.events if e.step == "review"] == ["paper"] * 2

    scripted_llm.clear()
    scripted_llm.push(writer(SQL_A), invitation(2), approve(), approve())
    strict = run(db, llm, n_reviewers=2, review_prompt="strict")
    strict_reviews = requests_with(scripted_llm, REVIEWER)
    system = strict_reviews[0]["messages"][0]
    assert system["role"] == "system" and STRICT in system["content"]
    assert "the lack of a clause of your own speciality when the question does not need it" in (
        system["content"])
    # the user prompt (schema, question, SQL, execution result, persona last) is the paper's
    assert [last_user_message(r) for r in strict_reviews] == [
        last_user_message(r) for r in paper_reviews]
    assert [e.inputs["prompt"] for e in strict.events if e.step == "review"] == ["strict"] * 2
    assert strict.final_sql == SQL_A and strict.events[-1].data["stop_reason"] == "all_approved"
