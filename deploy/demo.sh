#!/usr/bin/env bash
# The main job on embedded defaults (one machine, everything on loopback, store under var/store):
# bring the stack up, force the nightly pipeline on the local worker (IR and MIR triplets from the
# Debian zlib sources, which trigger the Celery vocabulary retraining, and the inliner-for-size
# regression builder), wait for every build, print where the results are, bring the stack down.
# Exits non-zero if any build failed. Run it through `make demo` (which runs deploy/setup.sh first).
set -euo pipefail
cd "$(dirname "$0")/.."
mf=.venv/bin/mlgo-farm
package=${MLGO_FARM_DEMO_PACKAGE:-zlib}
timeout=${MLGO_FARM_DEMO_TIMEOUT:-2700}
# the regression benchmark built from that package (lua5.4's is called lua); none: zlib's
bench=$(.venv/bin/python -c "import sys; from regression.benchmarks import BENCHMARKS as B; \
print(next((b.name for b in B.values() if b.package == sys.argv[1]), 'zlib'))" "$package")

down() { echo "== stack down"; $mf stack down || true; }
trap down EXIT

echo "== stack up"
$mf stack up
echo "== forcing the nightly pipeline (corpus: Debian package $package)"
status=0
$mf master force triplets-ir triplets-mir regression-inliner-size \
  -p corpus_input="$package" -p bench="$bench" --reason "make demo" --wait --timeout "$timeout" || status=$?

echo "== results"
echo "object store: $(.venv/bin/python -c 'from farm.config import load_settings; print(load_settings().store_url)')"
mkdir -p var/demo
for kind in ir mir; do
  if flag=$($mf vocab download --kind "$kind" --version latest -o "var/demo/vocab-$kind.json"); then
    echo "vocabulary $kind (latest): var/demo/vocab-$kind.json; use with: $flag"
  else
    echo "vocabulary $kind: none published"
  fi
done
$mf regress history --builder regression-inliner-size --limit 1 || true
echo "Buildbot: all builds above (var/buildbot/master/state.sqlite); logs in var/log and var/buildbot"
if [ "$status" -ne 0 ]; then echo "demo: some builds FAILED (exit $status)" >&2; fi
exit "$status"
