"""What the benches share, so that each bench is only its measurement.

* `timing`: one command run to its end (`run`: wall, CPU and peak RSS of it and its descendants), or whatever runs
  inside a block (`Meter`); the farm's own Python process's peak (`farm_self_peak`).
* `compare`: baseline and ours alternated over N rounds (`alternate`), medians, the ratio of the medians and the
  median of each round's ratio (`compare`).
* `header`: the run's header line: date, host, cores, load average, commit, LLVM, Python.
* `corpora`: a Debian package's corpus and IR dataset cached under the bench's work directory, several corpora
  merged into one.
* `commands`: the farm's command niced and echoed, and the farm's CLI of this or another checkout.
* `loopback`: a scratch farm (own var directory, empty configuration, free master ports), a redis-server, waiting
  for a condition, ending a process.
* `policy`: the trainer set-up the policy benches share (settings, LLVM, the trainer's corpora and exploration
  cache, a thread fan-out, a Trainer on the declared splits, a policy replayed on a package against the
  heuristic) and `policy train` run with any recipe, the experiments of `bench/policy_recipes.py` included.

Every module imports only the standard library at the top, the farm lazily: a bench's child process may run
with another checkout of the farm first on its path (bench_explore_memory.py, bench_llvm_corpus.py --before).
"""

from __future__ import annotations

import sys
from pathlib import Path

#: The repository's root (benches run from it: `.venv/bin/python -m bench.bench_x`).
ROOT = Path(__file__).resolve().parents[2]
#: The farm's command beside this interpreter.
MLGO_FARM = str(Path(sys.executable).with_name("mlgo-farm"))
#: LLVM's in-tree IR2Vec vocabulary (75 dimensions), the baseline of the vocabulary benches.
LLVM_IR_VOCAB = ROOT / "bench" / "data" / "seedEmbeddingVocab75D.json"
