"""The user's database and safe execution: read-only connections, the schema and its bounded
introspection, the SQL gate, query worker processes killed at their deadline, results within a
byte budget, WAL-mode files, SQL as text, and the list of saved databases."""
