"""What the registry's steps read from the lines their verbs print: captured properties, the summary Buildbot
shows for the finished step, and the dashboard pages it links.

Declared as data beside the registry (which names them per step) and kept to the verbs' one-line
results, so a verb's wording and the pattern that reads it are checked together
(tests/master/test_registry.py feeds each pattern the line its verb prints).
"""

from __future__ import annotations

from master.stepspec import Link, Summary

# --- captured properties: (property, regex with one group); the last match wins --------------------
PUBLISHED = (("dataset", r"published dataset (\S+) to "),)
LLVM_BUILT = (("llvm_bin", r"LLVM at \S+: (\S+)$"), ("llvm_build", r"LLVM at \S+: (\S+)/bin$"))
RETRAINED = (("vocab_version", r"^(?:ir|mir) (\S+) \((?:already )?published(?:\)$|, awaiting )"),)
REPORT = (("report", r"^report: (\S+)"),)
POLICY = (("policy_version", r"^policy inline (\S+) \((?:already )?published"),)

# --- summaries and links ----------------------------------------------------------------------------
#: `corpus ...`: "corpus corpus: 287 modules, 1 skipped, digest 0123abcd..."
CORPUS_SAID = (Summary(r"^corpus \S+: (?P<modules>\d+) modules, (?P<skipped>\d+) skipped",
                       "{modules:,} modules, {skipped:,} skipped"),)
#: `triplets K ...`: the dataset line and one "  skipped MODULE (stage): reason" line per module it lost;
#: in a shard build, the part's line.
TRIPLETS_SAID = (
    Summary(r"^dataset \S+ in \S+: (?P<used>\d+)/(?P<modules>\d+) modules, (?P<raw>\d+) triplets -> "
            r"(?P<unique>\d+) unique", "{unique:,} unique triplets ({skipped:,} skipped)",
            counts=(("skipped", r"^  skipped "),)),
    Summary(r"^shard (?P<shard>\S+) in \S+: (?P<modules>\d+) modules, (?P<raw>\d+) triplets",
            "shard {shard}: {modules:,} modules, {raw:,} triplets"),
)
PUBLISHED_SAID = (Summary(r"^published dataset (?P<id>\S+) to ", "published {id}"),)
#: `dataset publish`: "published dataset ir-0123456789abcdef to file:///v/store/datasets/ir/ir-0123456789abcdef/"
#: (the store's URL, then the dataset's prefix, which names its kind)
DATASET_LINKS = (Link("dataset", r"^published dataset (?P<id>\S+) to \S*/datasets/(?P<kind>[a-z]+)/(?P=id)/$",
                      "datasets/{kind}/{id}/"),)
#: `vocab retrain --wait`: "ir 20261123-llvm22.1.8-ir-d75-46d617adc845 (published)"
#: or, waiting for the policy retrained with it: "ir V (published, awaiting policy_size; latest stays at U until then)"
_VOCAB_LINE = r"^(?P<kind>ir|mir) (?P<version>\S+) \((?P<what>(?:already )?published)(?:\)$|, awaiting )"
RETRAINED_SAID = (Summary(_VOCAB_LINE, "{what} {version}"),  # of two matches of one line, the later summary wins
                  Summary(_VOCAB_LINE + r"(?P<rule>\w+);", "{what} {version}, awaiting {rule}"))
VOCAB_LINKS = (Link("vocabulary", _VOCAB_LINE, "vocab/{kind}/{version}/"),)
#: `policy retrain --wait`: "policy inline V (published, size check passed: ...; now latest)"
POLICY_SAID = (Summary(r"^policy (?P<advisor>\S+) (?P<version>\S+) \((?P<what>(?:already )?published)",
                       "{what} {version}"),
               Summary(r"^policy \S+ (?P<version>\S+) \((?P<what>(?:already )?published), size check (?P<check>\w+):",
                       "{what} {version}, size check {check}"))
POLICY_LINKS = (Link("policy", r"^policy (?P<advisor>\S+) (?P<version>\S+) \((?:already )?published",
                     "policies/{advisor}/{version}/"),
                Link("policies", r"^policy \S+ \S+ \((?:already )?published", "policies/"))
LLVM_SAID = (Summary(r"^LLVM at (?P<rev>\S+): (?P<where>.+)$", "LLVM at {rev}: {where}"),)
#: `regress run`: "verdict: zlib text +1.39% REGRESSION" (regression/report.py's headline), and the report's
#: first line "mlgo-farm regression run RUN on builder B: VERDICT", which names its page on the dashboard.
_RUN_LINE = r"^mlgo-farm regression run (?P<run>\S+) on builder (?P<builder>\S+): "
REGRESS_SAID = (Summary(r"^verdict: (?P<verdict>.+)$", "{verdict}"),)
REGRESS_LINKS = (Link("report", _RUN_LINE, "store/regression/{builder}/{run}/index.html"),
                 Link("history", _RUN_LINE, "regression/{builder}/"))
