"""Helpers shared by the tests and the benchmarks (``tests/``, ``bench/``) for the real services."""
