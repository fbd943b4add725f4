"""The dataset pages: the published triplet datasets per kind, and one dataset with what was trained from it.

A dataset has no index and no timestamp of its own (the same corpus and LLVM give the same id and
the same bytes, workers/dataset.py), so the list is what the store holds under `datasets/{kind}/`
with a manifest, the one `latest.json` names first. What a person asks of a dataset is where it
came from (corpus, lineage, LLVM), how much of the corpus it used and why the rest was skipped,
and which vocabularies (and through them, which policies) were trained from it; the vocabulary
and policy indexes record the dataset id of each version, so that question is answered here
without anything new being written anywhere.
"""

from __future__ import annotations

import re
from typing import Any

from flask import Blueprint, abort, render_template

from farm.embeddings import KINDS
from master.dashboard import files, numbers
from master.dashboard.context import current_farm

#: A dataset id as the store can hold it (vocabgen/dataset.py's rule); `..` is refused separately.
ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")

bp = Blueprint("datasets", __name__)


def check_kind(kind: str) -> str:
    if kind not in KINDS:
        abort(404, description=f"no dataset kind {kind!r} (the farm has {', '.join(KINDS)})")
    return kind


def check_id(dataset_id: str) -> str:
    if dataset_id != "latest" and (not ID_PATTERN.match(dataset_id) or ".." in dataset_id):
        abort(404, description="not a dataset id")
    return dataset_id


def _number(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def facts(dataset_id: str, m: dict[str, Any], latest: str | None) -> dict[str, Any]:
    """What the list and the page show of one manifest; a hand-made or older manifest may lack any of it."""
    corpus = m.get("corpus") if isinstance(m.get("corpus"), dict) else {}
    llvm = m.get("llvm") if isinstance(m.get("llvm"), dict) else {}
    triplets = m.get("triplets") if isinstance(m.get("triplets"), dict) else {}
    mentioned = m.get("entities_mentioned") if isinstance(m.get("entities_mentioned"), dict) else {}
    sections = {s: v for s, v in mentioned.items() if isinstance(v, dict)}
    lineage = corpus.get("lineage")
    return {
        "id": dataset_id, "latest": dataset_id == latest,
        "modules_used": _number(m.get("modules_used")), "modules": _number(corpus.get("modules")),
        "raw": _number(triplets.get("raw")), "unique": _number(triplets.get("unique")),
        "mentioned": sum(_number(v.get("count")) or 0 for v in sections.values()) if sections else None,
        "mentionable": sum(_number(v.get("total")) or 0 for v in sections.values()) if sections else None,
        "sections": sections,
        "source": corpus.get("source"), "digest": corpus.get("digest"),
        "lineage": ", ".join(f"{k} {v}" for k, v in numbers.items(lineage)) or None, "lineage_record": lineage,
        "llvm_version": llvm.get("llvm_version"), "llvm_commit": llvm.get("llvm_commit"), "clang": llvm.get("clang"),
        "skipped": [s for s in m.get("skipped") or [] if isinstance(s, dict)],
        "partial": [s for s in m.get("partial") or [] if isinstance(s, dict)],
    }


def _datasets(farm, kind: str) -> list[dict[str, Any]]:
    latest = files.latest_dataset(farm.store, kind)
    rows = []
    for dataset_id in files.dataset_ids(farm.store, kind):
        try:
            rows.append(facts(dataset_id, files.dataset_manifest(farm.store, kind, dataset_id), latest))
        except files.NotServed:
            continue  # deleted since it was listed (a manifest that does not parse is a CorruptObject: one line)
    return sorted(rows, key=lambda r: (not r["latest"], r["id"]))


def trained_from(farm, kind: str, dataset_id: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The vocabulary versions whose lineage names the dataset, and the policies whose training does."""
    vocabs = [v for v in files.versions(farm.store, "vocab") if v.get("kind") == kind and
              v.get("dataset_id") == dataset_id and isinstance(v.get("version"), str)]
    policies = [p for p in files.versions(farm.store, "policies") if p.get("dataset_id") == dataset_id and
                isinstance(p.get("version"), str) and isinstance(p.get("advisor"), str)]
    newest = lambda v: str(v.get("published_at"))  # noqa: E731
    return sorted(vocabs, key=newest, reverse=True), sorted(policies, key=newest, reverse=True)


@bp.route("/datasets/")
def datasets():
    farm = current_farm()
    return render_template("datasets.html", kinds={k: _datasets(farm, k) for k in KINDS})


@bp.route("/datasets/<kind>/<dataset_id>/")
def dataset(kind: str, dataset_id: str):
    farm = current_farm()
    kind, dataset_id = check_kind(kind), check_id(dataset_id)
    latest = files.latest_dataset(farm.store, kind)
    if dataset_id == "latest":
        if latest is None:
            abort(404, description=f"no {kind} dataset published yet")
        dataset_id = latest
    try:
        m = files.dataset_manifest(farm.store, kind, dataset_id)
    except files.NotServed:
        abort(404, description=f"no published {kind} dataset {dataset_id}")
    vocabs, policies = trained_from(farm, kind, dataset_id)
    return render_template("dataset.html", kind=kind, d=facts(dataset_id, m, latest), m=m, vocabs=vocabs,
                           policies=policies, base=f"{files.DATASETS}/{kind}/{dataset_id}",
                           names=[*files.DATASET_FILES, files.DATASET_MANIFEST],
                           corrupt=farm.integrity(f"{files.DATASETS}/{kind}/{dataset_id}", files.DATASET_FILES))
