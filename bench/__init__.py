"""The referee's benchmarks: ``bench/run.py`` runs them and writes ``docs/benchmarks.md``.

A scenario is one module of ``bench.scenarios`` with one async entry function taking the
:class:`bench.context.Context`; ``bench.scenarios.SCENARIOS`` lists them in the order they run.
"""
