"""The vocabulary pages: every published version per kind, one version (its manifest, coverage, warm start and the
tool lines that read it), and the diff of two versions.

A version's page answers what a user of the vocabulary asks before downloading it: which LLVM validated it, how
much of LLVM's entities it trained (the rest is filler), where it started from, and the exact `opt` / `llc` /
`clang` lines that read it (tests/master/test_dashboard_vocab_use.py runs every line of a rendered page with LLVM 22).
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, abort, render_template, request

from farm.artifacts.kinds import VOCAB, check_version_name
from farm.errors import InputError
from master.dashboard import files, views_policies, vocabdiff
from master.dashboard.context import current_farm
from policyhost import advisors
from vocabgen.layout import SECTIONS

#: What each kind's vocabulary is read by: the tool lines the download page shows, from a C file `in.c` to the
#: embeddings (tests/master/test_dashboard_vocab_use.py runs every line of a rendered page with LLVM 22).
_BITCODE = ("your code as bitcode", "clang -O2 -c -emit-llvm in.c -o in.bc")
_FLAGS = {
    "ir": [_BITCODE,
           ("opt (print the embeddings)",
            "opt -passes='print<ir2vec>' -ir2vec-vocab-path={path} -disable-output in.bc"),
           ("llvm-ir2vec", "llvm-ir2vec embeddings --ir2vec-vocab-path={path} in.bc"),
           ("clang (for any pass that reads IR2Vec)", "clang -O2 -mllvm -ir2vec-vocab-path={path} -c in.c"),
           # the inliner's flags as the farm passes them (policyhost/advisors.py); Debian's clang has no built-in
           # model, so the inliner asks a policy host (mlgo-farm-cc, or the policy page's standalone host)
           ("the ML inliner's IR2Vec features (a policy host on BASE.in/BASE.out)",
            "clang -Oz " + " ".join(advisors.get("inline").flags("BASE", "{path}")) + " -c in.c")],
    # Not `llc -print-mir2vec`: LLVM 22.1's printer pass crashes (SIGSEGV) (docs/vocabularies.md#which-flags-use-it);
    # llvm-ir2vec embeds MIR written after register allocation (before it, 22.1 crashes on virtual registers).
    "mir": [_BITCODE,
            ("post-allocation MIR", "llc -O2 -stop-after=virtregrewriter in.bc -o in.mir"),
            ("llvm-ir2vec (print the embeddings)",
             "llvm-ir2vec embeddings --mode=mir --mir2vec-vocab-path={path} in.mir"),
            ("clang (for any pass that reads MIR2Vec)", "clang -O2 -mllvm -mir2vec-vocab-path={path} -c in.c")],
}

bp = Blueprint("vocab", __name__)


def _kind(kind: str) -> str:
    if kind not in SECTIONS:
        abort(404)
    return kind


def _version(version: str) -> str:
    try:
        return check_version_name(version)
    except InputError:
        abort(404)


def _warm_start(record: Any) -> dict[str, Any] | None:
    """The manifest's `warm_start` (vocabgen/warm.py) as the page shows it: `from` a version (`linked` when it is a
    version name, so a page links only what the store may hold) or `from: None` and the reason it started cold;
    None for a version published before the record existed."""
    if not isinstance(record, dict):
        return None
    source = record.get("from")
    try:
        linked = isinstance(source, str) and bool(check_version_name(source))
    except InputError:
        linked = False
    return {**record, "from": source if isinstance(source, str) else None, "linked": linked}


def _vocab_rows(farm, kind: str, validated: bool = False) -> list[dict[str, Any]]:
    """The index's entries of `kind`, newest first; `validated` adds the LLVM version that validated each
    (from its manifest: the index does not carry it)."""
    rows = [v for v in files.versions(farm.store, "vocab") if v.get("kind") == kind]
    rows.sort(key=lambda v: str(v.get("published_at")), reverse=True)
    if validated:
        rows = [{**v, "validated_with": files.validated_with(farm.store, "vocab", kind, str(v.get("version")))}
                for v in rows]
    return rows


def served_and_candidates(farm, kind: str) -> list[dict[str, Any]]:
    """What `latest/vocab.json` serves (the version its pointer names), then the candidates published after it:
    the overview's rows, so the version beside the "latest" link is the one the link gives."""
    rows = _vocab_rows(farm, kind)
    try:
        served = files.latest_version(farm.store, "vocab", kind)
    except files.NotServed:
        served = None
    latest = next((v for v in rows if v.get("version") == served), None)
    newer = [v for v in rows if v is not latest and v.get("state") == "candidate" and
             (latest is None or str(v.get("published_at")) > str(latest.get("published_at")))]
    return ([{**latest, "served": True}] if latest else []) + newer


@bp.route("/vocab/")
def vocab_index():
    farm = current_farm()
    return render_template("vocab_index.html", kinds={k: _vocab_rows(farm, k, validated=True) for k in SECTIONS})


@bp.route("/vocab/<kind>/<version>/")
def vocab_version(kind: str, version: str):
    farm = current_farm()
    kind, version = _kind(kind), _version(version)
    if version == "latest":
        if not farm.store.exists(VOCAB.latest_key(kind)):
            return views_policies.no_latest(farm, VOCAB, kind, "vocab.vocab_version", kind=kind)
        try:
            version = files.latest_version(farm.store, "vocab", kind)
        except files.NotServed:
            abort(404)
    try:
        manifest = files.manifest(farm.store, "vocab", kind, version)
    except files.NotServed:
        abort(404)
    entry = next((v for v in _vocab_rows(farm, kind) if v.get("version") == version), {})
    path = f"vocab-{kind}-{version}.json"
    return render_template("vocab_version.html", kind=kind, version=version, m=manifest, entry=entry,
                           corrupt=farm.integrity(f"vocab/{kind}/{version}", VOCAB.files)[VOCAB.files[0]],
                           warm=_warm_start(manifest.get("warm_start")),
                           flags=[(what, cmd.format(path=path)) for what, cmd in _FLAGS[kind]], local=path,
                           others=[v["version"] for v in _vocab_rows(farm, kind) if v.get("version") != version])


@bp.route("/vocab/<kind>/diff")
def vocab_diff(kind: str):
    farm = current_farm()
    kind = _kind(kind)
    listed = [v["version"] for v in _vocab_rows(farm, kind) if isinstance(v.get("version"), str)]
    a = request.args.get("a") or (listed[1] if len(listed) > 1 else "")
    b = request.args.get("b") or (listed[0] if listed else "")
    if not a or not b:
        return render_template("vocab_diff.html", kind=kind, listed=listed, a=a, b=b, d=None, plot=None,
                               error="fewer than two versions are published")
    a, b = _version(a), _version(b)
    try:
        manifests = [files.manifest(farm.store, "vocab", kind, v) for v in (a, b)]
    except files.NotServed:
        abort(404)

    def compute() -> tuple[vocabdiff.Diff, str | None]:
        try:
            data = [farm.read_verified(f"vocab/{kind}/{v}/vocab.json") for v in (a, b)]
        except files.NotServed:
            abort(404)
        d = vocabdiff.diff(data[0], manifests[0], data[1], manifests[1], (a, b))
        return d, vocabdiff.plot_top(d) if d.comparable else None

    # published versions never change: the diff (and its plot) of two of them is computed once
    d, plot = farm.diffs.get(("vocab", kind, a, manifests[0].get("sha256"), b, manifests[1].get("sha256")), compute)
    return render_template("vocab_diff.html", kind=kind, listed=listed, a=a, b=b, d=d, error=None,
                           plot=plot, top=d.top())
