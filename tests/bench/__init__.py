"""Tests of the benches' shared harness (bench/harness/) and the trainer's experiments (bench/policy_recipes.py)."""
