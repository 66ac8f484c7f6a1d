"""Execution-accuracy evaluation: dataset loading and sampling, the test-suite metric, the
resumable harness that runs pipelines over questions, and the reports. The CLI command lives in
:mod:`agents.evaluation.command`; the Benchmark page reads what the harness writes."""
