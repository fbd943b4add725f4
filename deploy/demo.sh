#!/usr/bin/env bash
# The main job on embedded defaults (one machine, everything on loopback, store under var/store):
# bring the stack up, force the nightly pipeline on the local worker (IR and MIR triplets from the
# Debian zlib sources, which trigger the Celery vocabulary retraining; the IR vocabulary's publish
# trains the inliner-for-size policy with it (the `demo` recipe of policytrain/trainer.py: a few small
# packages; the nightly one trains on all of policytrain/splitdata.py), whose size check against the
# heuristic on packages it never saw promotes it or holds it back, and the inliner-for-size
# regression builder then judges the published policy, store:latest). The vocabulary does not wait
# for that policy to beat the heuristic: it becomes `latest` on its own checks (nothing in force on a
# fresh store) or when its policy is not worse than the in-force vocabulary's (vocabgen/gate.py). Then
# run the heuristic control builder, wait for every build, print where the results are (an IR and a
# MIR vocabulary `latest`) and the ML policy's verdict, bring the stack down.
# At demo scale (the vocabularies' `demo` recipe, MIR at one -march level); the nightly keeps its full scale.
# Exits non-zero if any build failed or a vocabulary kind has no `latest`. Run it through `make demo`
# (which runs deploy/setup.sh first).
set -euo pipefail
cd "$(dirname "$0")/.."
mf=.venv/bin/mlgo-farm
package=${MLGO_FARM_DEMO_PACKAGE:-zlib}
timeout=${MLGO_FARM_DEMO_TIMEOUT:-2700}
# the regression benchmark built from that package (lua5.4's is called lua); none: zlib's
bench=$(.venv/bin/python -c "import sys; from regression.benchmarks import BENCHMARKS as B; \
print(next((b.name for b in B.values() if b.package == sys.argv[1]), 'zlib'))" "$package")

# the policy the IR vocabulary's publish trains: the demo's small recipe unless the caller chose one
export MLGO_FARM_POLICY_RECIPE=${MLGO_FARM_POLICY_RECIPE:-demo}
# ... a C recipe, so its size check builds C programs (the nightly's C++ policy is checked on C++ ones)
export MLGO_FARM_GATE_POLICY_BENCHMARKS=${MLGO_FARM_GATE_POLICY_BENCHMARKS:-zlib,bzip2}
# the vocabularies' demo recipe (vocabgen/params.py RECIPES: a tenth of the nightly's epochs), and MIR read at one
# x86-64 level, not the nightly's four (triplets-mir's `march`): every stage of the nightly, at demo scale
export MLGO_FARM_VOCAB_RECIPE=${MLGO_FARM_VOCAB_RECIPE:-demo}
march=${MLGO_FARM_DEMO_MARCH:-x86-64}

down() { echo "== stack down"; $mf stack down || true; }
trap down EXIT

echo "== stack up"
$mf stack up
echo "== forcing the nightly pipeline (corpus: Debian package $package)"
status=0
mkdir -p var/demo
# A regression verdict fails regression-inliner-size on purpose (--fail-on-regression): that is the ML
# policy's verdict, not a broken pipeline. Any other failed build still fails the demo.
# The policy this run trained, as its retrain step names it (policyhost/publish.py summary): a retrain that
# reproduces a model published before publishes nothing new, so "the newest policy" may be another one.
export TRAINED=""
# That policy's entry in `policy list --json` (the newest published if no step named one); nothing if none.
trained_policy() {
  $mf policy list --json 2>/dev/null | .venv/bin/python -c 'import json, os, sys
rows = json.load(sys.stdin)
mine = [e for e in rows if e["version"] == os.environ["TRAINED"]]
pick = mine or sorted(rows, key=lambda e: e.get("published_at") or "")[-1:]
print(json.dumps(pick[0]) if pick else "")'
}
force() {
  local log=var/demo/force.log rc=0 failed verdict v policy
  $mf master force "$@" --reason "make demo" --wait --timeout "$timeout" | tee "$log" || rc=${PIPESTATUS[0]}
  v=$(grep -oE 'policy inline [^ ]+ \(' "$log" | head -1 | cut -d' ' -f3 || true)
  if [ -n "$v" ]; then TRAINED=$v; fi
  failed=$(grep -E '^[a-z0-9-]+ #[0-9]+: ' "$log" | grep -v ': success ' | cut -d' ' -f1 | sort -u || true)
  verdict=$($mf regress history --builder regression-inliner-size --limit 1 --json 2>/dev/null \
    | .venv/bin/python -c 'import json, sys; r = json.load(sys.stdin); print(r[-1]["verdict"] if r else "")' \
    || true)
  if [ "$rc" -ne 0 ] && [ "$failed" = regression-inliner-size ] && [ "$verdict" = regression ]; then
    echo "demo: regression-inliner-size failed because the ML policy's verdict is REGRESSION (see below)"
    rc=0
  fi
  # The size check holding back a retrained policy fails policy-retrain-inline on purpose too: the policy
  # in force stays latest and is what the regression builders judge (its vocabulary is settled on its own rule).
  if [ "$rc" -ne 0 ] && [ "$failed" = policy-retrain-inline ] && policy=$(trained_policy) && [ -n "$policy" ] \
      && echo "$policy" | .venv/bin/python -c 'import json, sys; v = json.load(sys.stdin)
sys.exit(not any(c["rule"] == "policy_size" and not c["ok"] and not c.get("pending")
                 for c in (v.get("gate") or {}).get("checks", [])))'; then
    echo "demo: the trained policy failed its size check and stays a candidate (its numbers: policy list, and below)"
    rc=0
  fi
  if [ "$rc" -ne 0 ]; then status=$rc; fi
}
started=$(date +%s)
# triplets-ir -> vocab-retrain-ir -> policy-retrain-inline -> regression-inliner-size (store:latest, bench gperf)
force triplets-ir triplets-mir -p corpus_input="$package" -p march="$march"
echo "== pipeline done in $(( $(date +%s) - started ))s; the control run and the demo's own benchmark"
extra=()
# the triggered run judged gperf; the demo's own benchmark is judged too, when a policy is latest to judge (a
# held-back policy is no regression of a builder: its size check already said so, and the results below say it)
has_latest=$($mf policy list --advisor inline --json 2>/dev/null | .venv/bin/python -c 'import json, sys
print(any(e.get("state") == "latest" for e in json.load(sys.stdin)))' || echo False)
if [ "$bench" != gperf ] && [ "$has_latest" = True ]; then extra=(regression-inliner-size); fi
force regression-inliner-control "${extra[@]}" -p bench="$bench"

echo "== results"
echo "object store: $(.venv/bin/python -c 'from farm.config import load_settings; print(load_settings().store_url)')"
for kind in ir mir; do
  if flag=$($mf vocab download --kind "$kind" --version latest -o "var/demo/vocab-$kind.json"); then
    echo "vocabulary $kind (latest): var/demo/vocab-$kind.json; use with: $flag"
  else
    echo "vocabulary $kind: none latest (vocab list shows why)"
    $mf vocab list --kind "$kind" || true
    if [ "$status" -eq 0 ]; then status=1; fi
  fi
done
# asked of the index first, so that a demo whose policy was held back prints no error line, only what to do
latest_policy=$($mf policy list --advisor inline --json 2>/dev/null | .venv/bin/python -c 'import json, sys
print(next((e["version"] for e in json.load(sys.stdin) if e.get("state") == "latest"), ""))' || true)
if [ -n "$latest_policy" ] && $mf policy download -o var/demo/policy-inline.onnx >/dev/null; then
  echo "policy inline (latest): var/demo/policy-inline.onnx"
  $mf policy list --advisor inline 2>/dev/null || true
else
  held=$(trained_policy | .venv/bin/python -c 'import json, sys
t = sys.stdin.read().strip()
print(json.loads(t)["version"] if t else "")' || true)
  echo "policy inline: none latest (a policy becomes latest only by beating the heuristic on packages it never saw)"
  if [ -n "$held" ]; then
    echo "  the demo's small training gave $held, held back by its size check (below); to try it anyway:"
    echo "  $mf policy promote $held --reason 'try the demo policy'"
  fi
fi
echo "== control: the heuristic through the launcher (must be exactly 1.0000)"
$mf regress history --builder regression-inliner-control --limit 1 || true
echo "== the trained policy's size check (against the heuristic on packages it never trained on)"
policy=$(trained_policy || true)
if [ -n "$policy" ]; then
  echo "$policy" | .venv/bin/python -c 'import json, sys
v = json.load(sys.stdin)
checks = [c for c in (v.get("gate") or {}).get("checks", []) if c.get("rule") == "policy_size"]
print("%s: %s; %s" % (v["version"], v.get("state"), "; ".join(c["detail"] for c in checks) or "no size check"))' \
    || true
fi
echo "== verdict of the ML policy (store:latest, IR2Vec features from the vocabulary above)"
if $mf regress history --builder regression-inliner-size --limit 1 --json 2>/dev/null \
    | .venv/bin/python -c 'import json, sys; sys.exit(not json.load(sys.stdin))'; then
  $mf regress history --builder regression-inliner-size --limit 1 || true
  $mf regress report --builder regression-inliner-size || true
else
  echo "no published policy to judge: the size check above held the trained one back"
fi
echo "Buildbot: all builds above (var/buildbot/master/state.sqlite); logs in var/log and var/buildbot"
if [ "$status" -ne 0 ]; then echo "demo: some builds FAILED (exit $status)" >&2; fi
exit "$status"
