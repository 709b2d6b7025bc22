"""Operator command-line tools: replay, audit, import, export and benchmarks."""
