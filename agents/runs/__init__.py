"""Runs and sessions: what a run is told besides its question (hint, knowledge notes, the
previous question of a thread), several pipelines on one question and their candidates, the
answer in words, and a run as text or as a report. Runs persist in :mod:`agents.store`."""
