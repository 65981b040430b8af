"""Benchmarks: run from the repository root as `python -m bench.NAME` (see each module's docstring)."""
