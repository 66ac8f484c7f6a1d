"""Phrases that tell a pipeline's prompts apart, so a scripted model can answer each agent.

Each is a fragment of one prompt template in ``agents/pipelines/<name>/prompts/``; a test that
scripts replies by prompt uses these instead of copying the phrases.
"""

# DEA-SQL
DEA_ELEMENTS = "break down the requirements description into statistical elements"
DEA_FILTER = "You are a data analyst."
DEA_CLASSIFY = "classify it with two labels"
DEA_GENERATE = "Please think carefully about the related fields"
DEA_CORRECT = "fix the given SQLite QUERY for any issues"
DEA_ACTIVE = "Please determine the type of question"
DEA_REPAIR = "executing it failed with the error below"

# The one-prompt writer (baseline), MAC-SQL's Decomposer, R³'s SQL-Writer and its error message,
# and the candidate-selection agent
WRITER = "Write one SQLite query that answers the question about the database below"
MAC_DECOMPOSE = "Decompose the question into sub questions"
R3_WRITER = "help me write an SQL to answer the question"
R3_EXEC_ERROR = "failed with the error"
SELECT_CHOICE = "Decide which candidate answers the question correctly"
SELECT_PARTS = "runs, but "  # a candidate's repair told it reads unrelated parts of the schema
