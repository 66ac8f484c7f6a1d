"""Post-hoc SQL rules: the checks and rewrites the engine applies around a pipeline's own agents
(an execution hint, a repair ending, an agreement check, the final answer). Each is declared once
in :mod:`agents.rules.registry` with its kind, hook, switch, default and origin."""
