"""The policy pages: all published versions, one version with where it came from and how it fared, a diff.

A policy version is only worth trusting with its lineage in view: the vocabulary its features
read, the dataset and corpus it was trained on, the LLVM that validated it, and what the nightly
regression builders measured when they ran it. The first three are in its manifest
(policyhost/publish.py); the last is in the regression history, whose runs record the policy's
version as their policy id (regression/lineage.py), so the page reads both and writes neither.
The promotion state and gate of an index entry are shown when the index carries them.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

from flask import Blueprint, Response, abort, render_template, request, url_for

from farm.artifacts.kinds import POLICY, POLICY_WEIGHTS, check_version_name
from farm.artifacts.verdict import POLICY_SIZE, Verdict, check_value
from farm.embeddings import KINDS
from farm.errors import FarmError, InputError, first_line
from master.dashboard import files, policydiff, trends
from master.dashboard.context import current_farm
from master.dashboard.numbers import DECIMALS
from master.dashboard.views_datasets import ID_PATTERN as DATASET_ID
from policyhost import advisors, standalone

ROOT = "policies"
MODEL = files.ARTIFACTS[ROOT]

bp = Blueprint("policies", __name__)


def _advisor(advisor: str) -> str:
    try:
        return advisors.get(advisor).name
    except InputError:
        abort(404, description=f"no advisor {advisor!r}")


def _version(farm, advisor: str, version: str) -> str:
    try:
        version = check_version_name(version)
        return files.latest_version(farm.store, ROOT, advisor) if version == "latest" else version
    except (InputError, files.NotServed):
        abort(404, description=f"no {advisor} policy version {version!r}")


def no_latest(farm, artifact, group: str, endpoint: str, **route: str) -> tuple[str, int]:
    """The 404 page of `.../latest/` while no version of `group` is latest: the store it looked in and, when a
    candidate waits, which one, why the gate held it back, the promote line and a link to its page (what the CLI's
    "nothing is latest" line says, farm/artifacts/versions.py `nothing_latest`)."""
    from farm.artifacts import handle

    waiting = handle(artifact).held_back(farm.store, group)
    link = url_for(endpoint, **route, version=waiting["version"]) if waiting else None
    return render_template("no_latest.html", noun=artifact.noun, group=group, store=farm.store.url, waiting=waiting,
                           link=link), 404


def rows(farm, advisor: str | None = None) -> list[dict[str, Any]]:
    """Index entries (of one advisor), newest first."""
    listed = [v for v in files.versions(farm.store, ROOT) if isinstance(v.get("version"), str) and
              isinstance(v.get("advisor"), str) and (advisor is None or v["advisor"] == advisor)]
    return sorted(listed, key=lambda v: str(v.get("published_at")), reverse=True)


def size_check(gate: Any) -> dict[str, Any] | None:
    """The gate's size check of an index entry as the list shows it (`policy list`'s SIZE_CHECK): the figure it
    judged (`value`, the geomean `.text` ratio on the size check's benchmarks), `state` ok / failed / pending, and its
    detail; None when the gate recorded no size check (a version published before it, or a hand-made entry)."""
    if not isinstance(gate, dict) or not isinstance(gate.get("checks"), list):
        return None
    check = next((c for c in Verdict.from_dict(gate).checks if c.rule == POLICY_SIZE), None)
    if check is None:
        return None
    state = "pending" if check.pending else "ok" if check.ok else "failed"
    return {"value": check_value(gate, POLICY_SIZE), "state": state, "detail": check.detail}


def _num(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None


def ratio_class(x: Any) -> str:
    """How a `.text` ratio (policy / heuristic) is coloured, judged as shown (four decimals): above 1.0000 is bigger
    than the heuristic (`regression`), below it smaller (`ok`), and a tie as shown is neither (`tie`)."""
    x = _num(x)
    if x is None:
        return ""
    shown = round(x, DECIMALS)
    return "regression" if shown > 1 else "ok" if shown < 1 else "tie"


def heldout_rows(packages: Any) -> list[dict[str, Any]]:
    """The trainer's held-out table (policytrain/heldout.py package rows) as the page shows it, one row per package
    and never a blank one: the figure that is judged (`judged`: the files it links, else its shipped modules, else all
    its modules), `objects` only where it differs from the judged one (the sum of the shipped objects beside linked
    files), and for a package without a ratio the one line why (its failed compiles or link)."""
    out: list[dict[str, Any]] = []
    for r in packages if isinstance(packages, list) else ():
        if not isinstance(r, dict):
            continue
        shipped = r.get("shipped") if isinstance(r.get("shipped"), dict) else None
        linked = r.get("linked") if isinstance(r.get("linked"), dict) else None
        objects = shipped or r
        judged = linked or objects
        failed = [str(f) for f in r.get("failed") or () if isinstance(r.get("failed"), list)]
        errors = r.get("errors") if isinstance(r.get("errors"), dict) else {}
        why = None
        if _num(judged.get("ratio")) is None:
            if failed:
                compiles = [f for f in failed if f != "(link)"]
                if compiles:
                    total = len(compiles) + int(_num(r.get("modules")) or 0)
                    why = (f"{len(compiles)} of {total} modules failed to compile ({compiles[0]}: "
                           f"{errors.get(compiles[0]) or 'no reason recorded'})")
                else:
                    why = f"the link failed: {errors.get('(link)') or 'no reason recorded'}"
            else:
                why = "no ratio recorded"
        out.append({
            "package": str(r.get("package") or "?"),
            "judged_by": ("linked files" if linked else "shipped objects" if shipped else
                          "all objects (no shipped list)"),
            "modules": judged.get("modules"), "heuristic": judged.get("heuristic"), "policy": judged.get("policy"),
            "ratio": _num(judged.get("ratio")), "class": ratio_class(judged.get("ratio")), "why": why,
            "objects": _num(objects.get("ratio")) if linked else None,
            "all_modules": r.get("modules"), "all_ratio": _num(r.get("ratio")),
        })
    return out


def vocab_kind(farm, version: Any) -> str | None:
    """The kind of the published vocabulary `version` (None when the index does not list it: no link)."""
    return next((v.get("kind") for v in files.versions(farm.store, "vocab")
                 if v.get("version") == version and v.get("kind") in KINDS), None)


def dataset_kind(farm, dataset_id: Any) -> str | None:
    """The kind under which dataset `dataset_id` is published (None: not published, no link)."""
    if not isinstance(dataset_id, str) or not DATASET_ID.match(dataset_id) or ".." in dataset_id:
        return None
    for kind in sorted(KINDS, key=lambda k: not dataset_id.startswith(f"{k}-")):
        try:
            files.dataset_manifest(farm.store, kind, dataset_id)
            return kind
        except files.NotServed:
            continue
    return None


def runs_with(farm, advisor: str, version: str) -> tuple[list, str | None]:
    """The regression runs that used this policy version, newest first, and None; or none and the one line why the
    history cannot say (the page is the store's, and shows the rest)."""
    try:
        history = trends.open_history(farm.history_path)
        if history is None:
            return [], None
        used = [r for r in history.runs() if r.policy_id == version and r.config.get("advisor", advisor) == advisor]
    except FarmError as e:
        return [], first_line(e)
    return list(reversed(used)), None


def _diff(farm, advisor: str, versions: tuple[str, str]) -> tuple[list[dict[str, Any]], policydiff.Diff, str | None]:
    """The manifests, the diff and its plot; the last two computed once per pair (published versions never change)."""
    try:
        manifests = [files.manifest(farm.store, ROOT, advisor, v) for v in versions]
    except files.NotServed:
        abort(404, description="no such policy version")

    def compute() -> tuple[policydiff.Diff, str | None]:
        try:
            data = [farm.read_verified(f"{ROOT}/{advisor}/{v}/{MODEL}") for v in versions]
        except files.NotServed:
            abort(404, description="no such policy version")
        d = policydiff.diff(data[0], manifests[0], data[1], manifests[1])
        return d, policydiff.plot_top(d) if d.top() else None

    key = ("policy", advisor, *(x for v, m in zip(versions, manifests, strict=True) for x in (v, m.get("sha256"))))
    return manifests, *farm.diffs.get(key, compute)


def training_curve(history: Any, title: str) -> str | None:
    """The trainer's record (policytrain/trainer.py) as an inline SVG: validation `.text` / heuristic per stage."""
    if not isinstance(history, list):
        return None
    points = [(i, float(h["validation"]), str(h.get("stage", "?"))) for i, h in enumerate(history)
              if isinstance(h, dict) and isinstance(h.get("validation"), (int, float))]
    if not points:
        return None
    from master.dashboard import svg

    fig, ax = svg.subplots(6.4, 2.6)
    for stage, marker, label in (("bc", "o", "weighted cloning round"), ("es", ".", "evolution strategies step"),
                                 ("average", "s", "the draws averaged")):
        xs = [i for i, _, s in points if s == stage]
        if xs:
            ax.plot(xs, [v for i, v, s in points if s == stage], marker, label=label)
    ax.plot([p[0] for p in points], [p[1] for p in points], "-", color="grey", linewidth=0.8)
    ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--", label="LLVM's heuristic")
    ax.set_xlabel("training stage")
    ax.set_ylabel("validation .text / heuristic")
    ax.legend(loc="best", fontsize="small")
    return svg.figure_svg(fig, title)


#: where the standalone policy host is served (the policy pages' "Use it" commands fetch it)
HOST_PATH = f"{ROOT}/host/{standalone.SERVED_NAME}"
#: where the native host's C file is served (the "Use it" lines of a version with `model.weights` build it)
NATIVE_PATH = f"{ROOT}/host/{standalone.NATIVE_SERVED_NAME}"
#: the native host's weights file of a version that holds them (policyhost/publish.py; its manifest records them)
WEIGHTS = POLICY_WEIGHTS


def has_weights(m: dict[str, Any]) -> bool:
    """Whether the version whose manifest is `m` holds the native host's weights: its manifest records them (a
    file stored beside without that record, before manifests held weights, is no part of the version)."""
    return WEIGHTS in POLICY.held(m)


def use_it(farm, advisor: str, version: str, m: dict[str, Any], vocab_kind: str | None) -> dict[str, Any] | None:
    """The shell lines that download this version, its vocabulary and the standalone host, check them and
    build with them (None: the standalone host does not drive this advisor); `native`, when the version holds
    `model.weights`, the lines of the native host (its C file fetched and built with the policy's clang, then
    `$mlgo/cc` written, a compiler shim make, ./configure with libtool and CMake take as the compiler). URLs
    come from `web_url`, the flags the host adds from policyhost/advisors.py (tests/policyhost/test_standalone.py
    keeps the host's copy equal)."""
    if advisor == "regalloc":
        return pgo_lines(farm, version, m)
    if advisor != standalone.ADVISOR:
        return None
    url = farm.settings.buildbot.dashboard
    model = f"{ROOT}/{advisor}/{version}/{MODEL}"
    vocab = m.get("vocab_version") if vocab_kind else None
    files_ = [(url(f"store/{model}"), MODEL)]
    if vocab:
        files_.append((url(f"store/vocab/{vocab_kind}/{vocab}/vocab.json"), "vocab.json"))
    files_.append((url(HOST_PATH), standalone.SERVED_NAME))
    fetch = [f"curl -fsSLO {u}{ext}" for u, _ in files_ for ext in ("", ".sha256")]
    fetch += ["sha256sum -c " + " ".join(f"{name}.sha256" for _, name in files_),
              "python3 -m venv venv && venv/bin/pip install numpy onnxruntime",
              "mlgo=$PWD  # where these files are"]
    major = str((m.get("llvm") or {}).get("llvm_version") or "").split(".")[0]
    clang = f"clang-{major}" if major.isdigit() else "clang"
    launcher = ["$mlgo/venv/bin/python", f"$mlgo/{standalone.SERVED_NAME}", "--model", f"$mlgo/{MODEL}",
                *(["--vocab", "$mlgo/vocab.json"] if vocab else []), "--"]
    flags = advisors.get(advisor).flags("BASE", "vocab.json" if vocab else None)
    native = None
    if has_weights(m):
        nfiles = [(url(f"store/{ROOT}/{advisor}/{version}/{WEIGHTS}"), WEIGHTS), *files_[1:-1],
                  (url(NATIVE_PATH), standalone.NATIVE_SERVED_NAME)]
        native = {"fetch": [f"curl -fsSLO {u}{ext}" for u, _ in nfiles for ext in ("", ".sha256")] +
                  ["sha256sum -c " + " ".join(f"{name}.sha256" for _, name in nfiles),
                   standalone.native_build(clang), "mlgo=$PWD  # where these files are",
                   # the compiler shim: one executable build systems take as the compiler (libtool, CMake)
                   standalone.native_shim(clang, bool(vocab), WEIGHTS)],
                  "make": 'make CC="$mlgo/cc" CFLAGS=-Oz',
                  "configure": './configure CC="$mlgo/cc" CFLAGS=-Oz && make',
                  "cmake": ['cmake -S . -B build -DCMAKE_C_COMPILER="$mlgo/cc" -DCMAKE_C_FLAGS=-Oz',
                            "cmake --build build"]}
    return {"native": native, "fetch": fetch, "clang": clang, "vocab": vocab,
            "vocab_missing": m.get("vocab_version") and not vocab,
            "make": f'make CC="{" ".join(launcher)} {clang}" CFLAGS=-Oz',
            "cmake": [f'cmake -S . -B build -DCMAKE_C_COMPILER={clang} -DCMAKE_C_FLAGS=-Oz '
                      f'-DCMAKE_C_COMPILER_LAUNCHER="{";".join(launcher)}"', "cmake --build build"],
            "flags": " ".join(flags)}


def pgo_lines(farm, version: str, m: dict[str, Any]) -> dict[str, Any] | None:
    """An eviction version's lines: fetch its weights and the native host, then build a program as speed users do,
    with a profile (instrument, run the training input, merge, build with it and the policy; per file: LLVM 22's
    ThinLTO backends never ask the eviction advisor). docs/policies.md has the same build with the farm
    (tests/policyhost/test_pgo_lines.py runs those; tests/master/test_dashboard_host.py these). None without
    weights: the standalone Python host does not drive eviction."""
    if not has_weights(m):
        return None
    url = farm.settings.buildbot.dashboard
    major = str((m.get("llvm") or {}).get("llvm_version") or "").split(".")[0]
    clang = f"clang-{major}" if major.isdigit() else "clang"
    profdata = f"llvm-profdata-{major}" if major.isdigit() else "llvm-profdata"
    files_ = [(url(f"store/{ROOT}/regalloc/{version}/{WEIGHTS}"), WEIGHTS),
              (url(NATIVE_PATH), standalone.NATIVE_SERVED_NAME)]
    fetch = [f"curl -fsSLO {u}{ext}" for u, _ in files_ for ext in ("", ".sha256")]
    fetch += ["sha256sum -c " + " ".join(f"{name}.sha256" for _, name in files_), standalone.native_build(clang),
              "mlgo=$PWD  # where these files are"]
    cc = f"$mlgo/{standalone.NATIVE_NAME} --weights $mlgo/{WEIGHTS} -- {clang}"
    build = [f"{clang} -O2 -fprofile-generate=gen *.c -o prog-gen && ./prog-gen TRAINING-INPUT && "
             f"{profdata} merge -o prog.profdata gen",
             f'mkdir -p pgo && for f in *.c; do {cc} -O2 -fprofile-use=prog.profdata -c $f -o pgo/${{f%.c}}.o; done',
             f"{clang} -fuse-ld=lld -O2 pgo/*.o -o prog"]
    return {"evict": True, "fetch": fetch, "clang": clang, "build": build,
            "make": f'make CC="{cc}" CFLAGS="-O2 -fprofile-use=$PWD/prog.profdata"'}


def _served(data: bytes, content_type: str) -> Response:
    resp = Response(data, content_type=content_type)
    resp.set_etag(hashlib.sha256(data).hexdigest())
    resp.headers["Cache-Control"] = "no-cache"  # a new farm may serve a newer host at the same URL
    return resp.make_conditional(request)


def _sha256_line(line: str) -> Response:
    resp = Response(line, content_type="text/plain; charset=utf-8")
    resp.headers["Cache-Control"] = "no-cache"
    return resp


@bp.route(f"/{HOST_PATH}")
def policy_host():
    """The standalone host (policyhost/standalone/mlgo_cc.py): what the "Use it" lines run."""
    return _served(standalone.source(), "text/x-python; charset=utf-8")


@bp.route(f"/{HOST_PATH}.sha256")
def policy_host_sha256():
    return _sha256_line(standalone.sha256_line())


@bp.route(f"/{NATIVE_PATH}")
def policy_native_host():
    """The native host's C file (policyhost/standalone/mlgo-policy-host.c): what the native "Use it" lines build."""
    return _served(standalone.native_source(), "text/x-c; charset=utf-8")


@bp.route(f"/{NATIVE_PATH}.sha256")
def policy_native_host_sha256():
    return _sha256_line(standalone.native_sha256_line())


@bp.route("/policies/")
def policies():
    listed = rows(current_farm())
    by_advisor: dict[str, list[dict[str, Any]]] = {}
    for v in listed:
        by_advisor.setdefault(v["advisor"], []).append(v)
    # the columns that decide `latest` (the held-out `.text`, the size check) for every version; agreement with the
    # heuristic only when a version records it (a warm start's: a trained policy has none)
    agreement = any(v.get("heldout_agreement") is not None for v in listed)
    return render_template("policies.html", rows=listed, by_advisor=by_advisor, size_check=size_check,
                           agreement=agreement)


@bp.route("/policies/<advisor>/<version>/")
def policy_version(advisor: str, version: str):
    farm = current_farm()
    advisor = _advisor(advisor)
    if version == "latest" and not farm.store.exists(POLICY.latest_key(advisor)):
        return no_latest(farm, POLICY, advisor, "policies.policy_version", advisor=advisor)
    version = _version(farm, advisor, version)
    try:
        m = files.manifest(farm.store, ROOT, advisor, version)
    except files.NotServed:
        abort(404, description=f"no {advisor} policy version {version}")
    entry = next((v for v in rows(farm, advisor) if v["version"] == version), {})
    training = m.get("training") if isinstance(m.get("training"), dict) else {}
    dataset_id = training.get("dataset_id") or entry.get("dataset_id")
    metrics = m.get("metrics") if isinstance(m.get("metrics"), dict) else {}
    curve = farm.diffs.get(("curve", advisor, version), lambda: training_curve(
        metrics.get("history"), f"{advisor} policy {version}: validation .text per training stage"))
    vkind = vocab_kind(farm, m.get("vocab_version"))
    integrity = farm.integrity(f"{ROOT}/{advisor}/{version}", POLICY.held(m))  # every file its manifest records
    return render_template(
        "policy_version.html", advisor=advisor, version=version, m=m, entry=entry, training=training, curve=curve,
        corrupt=integrity[MODEL], weights_corrupt=integrity.get(WEIGHTS),
        vocab_kind=vkind, dataset_id=dataset_id,
        dataset_kind=dataset_kind(farm, dataset_id), runs_and_why=runs_with(farm, advisor, version),
        use=use_it(farm, advisor, version, m, vkind), heldout=heldout_rows(metrics.get("heldout")),
        ratio_class=ratio_class, size_check=size_check,
        others=[v["version"] for v in rows(farm, advisor) if v["version"] != version])


@bp.route("/policies/<advisor>/diff")
def policy_diff(advisor: str):
    farm = current_farm()
    advisor = _advisor(advisor)
    listed = [v["version"] for v in rows(farm, advisor)]
    a = request.args.get("a") or (listed[1] if len(listed) > 1 else "")
    b = request.args.get("b") or (listed[0] if listed else "")
    if not a or not b:
        return render_template("policy_diff.html", advisor=advisor, listed=listed, a=a, b=b, d=None,
                               error="fewer than two versions are published")
    a, b = _version(farm, advisor, a), _version(farm, advisor, b)
    (ma, mb), d, plot = _diff(farm, advisor, (a, b))
    return render_template("policy_diff.html", advisor=advisor, listed=listed, a=a, b=b, d=d, error=None,
                           ma=ma, mb=mb, top=d.top(), plot=plot)
