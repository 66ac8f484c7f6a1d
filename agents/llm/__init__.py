"""LLM access: the one ``openai``-SDK client (retries, streaming, structured output, accounting),
its response cache and request queue, the embedded model served on 127.0.0.1, prompt files, the
token estimate, and robust extraction of SQL and JSON from model text."""
