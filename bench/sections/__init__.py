"""The sections of the benchmark report, one module per scenario.

Each module holds its scenario's results as types (msgspec structs, read from what the
scenario recorded under its name in ``Context.results``, or from a run's ``results.json``),
its rows of the summary table and its section of docs/benchmarks.md; ``bench.report``
assembles the page from them, in the order of its ``SUMMARY`` and ``SECTIONS``.

To add a scenario's section: a module here that builds a ``Section`` (``base.py``) from its
result type and two functions, its rows and its section's lines; then its name in
``bench.report.SUMMARY`` (if it has rows) and ``bench.report.SECTIONS``, where it belongs.
"""
