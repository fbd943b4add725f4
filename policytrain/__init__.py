"""The inliner-for-size trainer: the problem, its recipes, the search, the learning, the Celery retrain.

It stands on the policy side (`policyhost/`: LLVM's interactive channel, the host, the launchers and policies),
which never imports it (tests/test_layout.py). What is specific to inlining for size is one record,
`problem.INLINE_SIZE`; the splits of Debian packages it trains, validates and is judged on are data
(`data/splits.toml`, read by `splitdata.py`); `recipes.RECIPES` holds what production runs (the experiments that
were measured and not adopted live beside their bench, `bench/policy_recipes.py`). Verbs: `mlgo-farm policy
train | heldout | splits | train-bc | retrain` (`cli.py`); the Celery retrain is `tasks.py`, its per-module fan-out
`fanout.py` (both keep the task names they were registered under in policyhost/, so queued messages still route).
"""
