"""Benchmarks: `nox -s bench` runs them all and writes benchmarks/RESULTS.md."""
