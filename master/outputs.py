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
RETRAINED = (("vocab_version", r"^(?:ir|mir) (\S+) \((?:already )?published\)$"),)
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
#: `vocab retrain --wait`: "ir 20261123-llvm22.1.8-ir-d75-46d617adc845 (published)"
_VOCAB_LINE = r"^(?P<kind>ir|mir) (?P<version>\S+) \((?P<what>(?:already )?published)\)$"
RETRAINED_SAID = (Summary(_VOCAB_LINE, "{what} {version}"),)
VOCAB_LINKS = (Link("vocabulary", _VOCAB_LINE, "vocab/{kind}/{version}/"),)
POLICY_SAID = (Summary(r"^policy (?P<advisor>\S+) (?P<version>\S+) \((?P<what>(?:already )?published)",
                       "{what} {version}"),)
POLICY_LINKS = (Link("policies", r"^policy \S+ \S+ \((?:already )?published", "policies/"),)
LLVM_SAID = (Summary(r"^LLVM at (?P<rev>\S+): (?P<where>.+)$", "LLVM at {rev}: {where}"),)
#: `regress run`: "verdict: zlib text +1.39% REGRESSION" (regression/report.py's headline), and the report's
#: first line "mlgo-farm regression run RUN on builder B: VERDICT", which names its page on the dashboard.
_RUN_LINE = r"^mlgo-farm regression run (?P<run>\S+) on builder (?P<builder>\S+): "
REGRESS_SAID = (Summary(r"^verdict: (?P<verdict>.+)$", "{verdict}"),)
REGRESS_LINKS = (Link("report", _RUN_LINE, "store/regression/{builder}/{run}/index.html"),
                 Link("history", _RUN_LINE, "regression/{builder}/"))
