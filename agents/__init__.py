"""Text-to-SQL Agent Studio engine: LLM agents that turn a question about a SQLite database
into SQL. This package never imports streamlit; the app, the CLI and the evaluation harness
all consume the same step events (see :mod:`agents.core.events` and :mod:`agents.core.engine`)."""

__version__ = "0.1.0"
