"""The run core: settings and paths, the typed step events, the engine that runs a pipeline's
declared step graph over plain state (and resumes it from any step), what a step sees, and the
worker thread the pages run jobs in. Everything else in :mod:`agents` builds on this layer."""
