"""The words a judgement of a run is made of: verdicts, run sources and the error taxonomy.

Kept apart from the storage code because the History page and the annotation forms show these
lists to the user, and the store validates against the very same ones.
"""

from __future__ import annotations

from dataclasses import dataclass

SOURCES = ("app", "cli", "eval")
VERDICTS = ("correct", "incorrect", "unsure")
UNANNOTATED = "unannotated"  # a ``verdict`` filter value: runs nobody has judged yet


@dataclass(frozen=True)
class ErrorType:
    key: str
    label: str
    description: str


# Drawn from the error analyses of MAC-SQL, DEA-SQL and R3 (and DIN-SQL, which they build on).
ERROR_TYPES: dict[str, ErrorType] = {e.key: e for e in [
    ErrorType("schema_linking", "Schema linking",
              "Wrong table or column chosen, or a column taken from the wrong table."),
    ErrorType("join", "Join",
              "Missing, extra or wrong join, or an invented join condition."),
    ErrorType("aggregation_grouping", "Aggregation / grouping",
              "Wrong aggregate, GROUP BY, HAVING or ORDER BY (e.g. extremum questions)."),
    ErrorType("nesting_set_operation", "Nesting / set operation",
              "Subquery, IN / NOT IN, EXCEPT, UNION or INTERSECT used wrongly or missing."),
    ErrorType("value_mismatch", "Database value mismatch",
              "A filter value does not match how the value is stored (spelling, case, format)."),
    ErrorType("extra_missing_columns", "Extra / missing columns",
              "Selects columns the question did not ask for, or leaves requested ones out."),
    ErrorType("logic", "Logic",
              "The query runs but its reasoning is wrong (conditions, arithmetic, assumptions)."),
    ErrorType("question_ambiguity", "Question ambiguity",
              "The question allows several readings; the SQL answers a different one."),
    ErrorType("syntax_execution", "Syntax / execution",
              "The SQL does not run: syntax error, unknown function, other dialect, timeout."),
    ErrorType("other", "Other", "Anything the other types do not describe."),
]}
