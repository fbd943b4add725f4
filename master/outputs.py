"""What the registry's steps read from their verbs' answers (`--json`, farm/answer.py): which field becomes which
build property, the summary Buildbot shows for the finished step, and the dashboard pages it links.

Declarations only, beside the registry (which names them per step): the verbs print the facts as fields, so
rewording a sentence for people changes nothing here (tests/master/test_registry.py fills each declaration
from the answer its real verb gives).
"""

from __future__ import annotations

from master.stepspec import Link, Summary

# --- captured properties: (property, field of the answer) ---------------------------------------------
PUBLISHED = (("dataset", "dataset"),)  # `dataset publish`
LLVM_BUILT = (("llvm_bin", "bin_dir"), ("llvm_build", "build_dir"))  # `llvm-build`
RETRAINED = (("vocab_version", "version"),)  # `vocab retrain --wait`
REPORT = (("report", "report"),)  # `regress run`
POLICY = (("policy_version", "version"),)  # `policy retrain --wait`

# --- summaries (alternatives, the first the answer fills) and links ---------------------------------
_PUBLISHED = "{created:published|already published} {version}"
CORPUS_SAID = (Summary("{modules:,} modules, {skipped:,} skipped"),)
#: `triplets K`: a whole dataset, or in a shard build its part
TRIPLETS_SAID = (Summary("{unique:,} unique triplets ({skipped:,} skipped)"),
                 Summary("shard {shard}: {modules:,} modules, {raw:,} triplets"))
PUBLISHED_SAID = (Summary("published {dataset}"),)
DATASET_LINKS = (Link("dataset", "datasets/{kind}/{dataset}/"),)
#: `vocab retrain --wait`: published, or waiting for the policy retrained with it
RETRAINED_SAID = (Summary(_PUBLISHED + ", awaiting {awaiting[0]}"), Summary(_PUBLISHED))
VOCAB_LINKS = (Link("vocabulary", "vocab/{kind}/{version}/"),)
#: `policy retrain --wait`: with its size check's outcome
POLICY_SAID = (Summary(_PUBLISHED + ", size check {size_check[ok]:passed|FAILED}"), Summary(_PUBLISHED))
POLICY_LINKS = (Link("policy", "policies/{advisor}/{version}/"), Link("policies", "policies/"))
LLVM_SAID = (Summary("LLVM at {rev}: {bin_dir}"), Summary("LLVM at {rev}: configured in {build_dir}"))
#: `regress run`: its headline ("zlib text +1.39% REGRESSION"), its report's page and its builder's history
REGRESS_SAID = (Summary("{headline}"),)
REGRESS_LINKS = (Link("report", "store/regression/{builder}/{run_id}/index.html"),
                 Link("history", "regression/{builder}/"))
