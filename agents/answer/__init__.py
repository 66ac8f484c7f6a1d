"""What the studio says about an answer before a person trusts it.

A pipeline ends on SQL that runs; that is not the same as an answer to the question. The
checks here look at the question, the final SQL and its result together, after a run ends
(:func:`agents.answer.review.review_answer`, called by the engine for every pipeline), and
before it starts (:func:`agents.answer.answerability.unrelated_question`):

- whether the database can answer the question at all (:mod:`.answerability`);
- whether the result has the shape the question asks for (:mod:`.shape`);
- why a result is empty, and what the data holds instead (:mod:`.empty_result`);
- the values a ranking or a filter was decided on, shown beside the rows (:mod:`.behind`).

Each is a rule of :data:`agents.rules.registry.RULES`. The review only reports: the answer's
SQL, and what an evaluation scores, stay as the pipeline left them. The answerability check is
the exception: its model's "no" ends a run without SQL, which an evaluation scores as wrong
(it records whether the check ran, ``answer_checks`` in its manifest). Every query they run is
read-only, under the run's limits, and the whole review stops after a few seconds.
"""
