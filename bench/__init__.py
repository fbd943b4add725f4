"""Benchmarks run by hand, each against a named baseline in the same run (bench/README.md has their numbers).

Run from the repository's root as modules, e.g. `.venv/bin/python -m bench.bench_triplets --help`: the benches are a
package, so they import the farm, the shared harness (`bench.harness`) and the trainer's experiments
(`bench.policy_recipes`) without touching `sys.path`. Nothing in the farm's own packages imports `bench`, and no bench
imports `tests`.
"""
