"""The best-ranked table's whole part of the schema, kept and written first.

Why: on a CPU most of a question's seconds go to reading the prompt, and the model server
reads only what its cache does not already hold -- the text after the longest beginning a
prompt shares with one it has read. Asked about a database within the budget, consecutive
questions send the same instructions and schema, so the server reads little more than the
question. Retrieval gives each question its own tables instead (one question about singers
keeps ``singer`` and ``song``, the next ``singer`` and ``concert``), so consecutive prompts part
early and are read almost whole: about twice the seconds of a question on the file with
distractors (``bench/README.md``).

A question about one application of a large file mostly ranks a table of that application
first, and the tables of one application are a part of the schema (:mod:`.parts`). Kept whole
and written first, in the database's order, that part is the same text for every such question,
so the server reads only the tables kept from elsewhere and the question. The cost is the part's
other tables: a few hundred tokens that the cache makes cheap after the first question, and
tables the question did not match that the model may read (on a database within the budget it
sees all of them anyway).

A part is completed only when it is small -- at most :data:`WHOLE_PART_SHARE` of the schema
budget -- and the whole selection still fits the budget; otherwise (a database that is one large
connected schema) retrieval keeps what it chose. A table no foreign key links to another is a
part of its own and has nothing to complete.

Nor is it completed when a kept table of another part scores close to the best one (at least
:data:`WHOLE_PART_MARGIN` of its score): the best part may then be the look-alike. Written
first and whole, a look-alike is what the small model reads first and answers from: asked on
Spider's dev databases merged with 793 empty distractor tables, with the part always completed,
`baseline` lost the questions about airlines whose best-ranked table was another flights
schema's ``routes`` part, with the same tables kept, only written in another order
(``bench/README.md``; the margin's measurements: ``bench/parameter-notes.md``).
"""

from __future__ import annotations

from agents.core.engine import STUDIO, ParamSpec
from .fit import Cost, Fit
from .outputs import WHOLE_PART as REASON
from .parts import Parts

PARAM = "keep_whole_part"
# The largest part completed, as a share of the schema budget: every part of Spider's merged
# dev databases is under it (the largest, 11 tables, about 1,600 tokens of a ~6,700 budget), and
# a part larger than that costs more to read the first time than its reuse saves.
WHOLE_PART_SHARE = 0.25
# Another part's best kept table scoring at least this share of the best table leaves the
# selection as it is (see above).
WHOLE_PART_MARGIN = 0.7


def whole_part(schema, parts: Parts, result: Fit, order: list[str], scores: dict[str, float],
               cost: Cost, budget: int, share: float = WHOLE_PART_SHARE,
               margin: float = WHOLE_PART_MARGIN) -> tuple[Fit, list[str]]:
    """``result`` with the whole part of its best-ranked kept table (first of ``order`` that
    was kept; ``scores`` are the ranking's) added, and that part's tables in the database's
    order (the tables to write first); ``result`` as it is and ``[]`` when there is nothing to
    complete, another part scores close to it, or it does not fit."""
    best = next((name for name in order if name in result.selection), None)
    # no table matched (kept in the database's order): there is no best part to speak of
    if best is None or best in parts.alone or scores.get(best, 0.0) <= 0:
        return result, []
    part = parts.of.get(best)
    rival = max((scores.get(name, 0.0) for name in result.selection
                 if parts.of.get(name, name) != part), default=0.0)
    if rival >= margin * scores.get(best, 0.0):
        return result, []
    members = [t.name for t in schema.tables if parts.of.get(t.name) == part]
    whole = dict.fromkeys(members, "keep_all")
    if len(members) < 2 or cost(schema.subset(whole)) > share * budget:
        return result, []
    selection = {**result.selection, **whole}
    tokens = cost(schema.subset(selection))
    if tokens > budget:
        return result, []
    reasons = {**result.reasons,
               **{name: REASON for name in members if name not in result.selection}}
    return Fit(selection=selection, reasons=reasons, tokens=tokens), members


def param_spec(default: bool):
    """The pipeline option; on by default only where a measurement chose it (``baseline``:
    ``bench/README.md``), so every other pipeline answers as it was measured until then."""
    return ParamSpec(PARAM, default, origin=STUDIO,
                     help="when retrieval cuts the schema, also keep the top table's whole "
                          "foreign-key part if small, first")
