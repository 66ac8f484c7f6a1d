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
