"""The downloads: `store/KEY`, the store's published files in its own key layout, and `index.json`, every
published version with its absolute download URLs (what a script fetches first).

A section of its own (the Blueprint `downloads`) because it is what users without the farm depend on: the URL of a
file has the same shape as its S3 key, its ETag is its sha256 (computed once per object identity, Farm.digests) and
is checked again as the bytes are sent (stream.Checked: bytes that no longer hash to it are never sent whole), and
what may be served at all is master/dashboard/files.py's decision (published prefixes only; no staging, no
traversal).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import Any

from flask import Blueprint, Response, abort, request

from farm.artifacts.kinds import POLICY, VOCAB
from master.dashboard import files, stream
from master.dashboard.context import Farm, current_farm, json_answer

log = logging.getLogger(__name__)
#: Pages of the store (regression reports) may show images and inline style, never run a script.
STORE_HTML_CSP = "default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'"

bp = Blueprint("downloads", __name__)


def _forget(farm: Farm, blob: files.Blob) -> Callable[[], None]:
    """What a download does when its bytes turn out not to hash to its ETag: the digest remembered for their
    identity is dropped (the next request hashes them before it answers) and the master's log says so."""

    def forget() -> None:
        farm.digests.forget(blob.identity)
        log.warning("dashboard: %s no longer hashes to the digest remembered for it: download cut short", blob.identity)

    return forget


@bp.route("/store/<path:key>")
def download(key: str) -> Response:
    """The object streamed (stream.py), its sha256 as ETag (computed once per object, Farm.digests) and checked
    again on the way out (stream.Checked: bytes that no longer hash to it are never sent whole)."""
    farm = current_farm()
    try:
        got = files.serve(farm.store, key)
    except files.NotServed:
        abort(404)
    try:
        etag = farm.verified(got)
        if got.blob is None:
            resp = Response(got.data, content_type=got.content_type)
        else:
            checked = stream.Checked(got.blob.reader, etag, _forget(farm, got.blob))
            resp = Response(stream.Stream(checked, request.environ), content_type=got.content_type,
                            direct_passthrough=True)
            resp.content_length = got.blob.size
    except BaseException:
        got.close()
        raise
    resp.set_etag(etag)
    resp.headers["Cache-Control"] = "public, max-age=31536000, immutable" if got.immutable else "no-cache"
    resp.headers["X-Content-Type-Options"] = "nosniff"
    if got.version:
        resp.headers["X-Farm-Version"] = got.version
    if got.content_type.startswith("text/html"):
        resp.headers["Content-Security-Policy"] = STORE_HTML_CSP
    return resp.make_conditional(request)


@bp.route("/index.json")
def index_json() -> Response:
    return json_answer(download_index(current_farm()))


def download_index(farm: Farm) -> dict[str, Any]:
    """Every published version with its absolute download URLs (from `web_url`): what a script fetches first."""
    url = farm.public_url

    out: dict[str, Any] = {"format": 1}
    for declared in (VOCAB, POLICY):  # the kinds' declarations say which field groups their versions
        root, artifact = declared.root, files.ARTIFACTS[declared.root]
        kinds: dict[str, Any] = {}
        for v in files.versions(farm.store, root):
            kind, version = str(v.get(declared.group) or ""), str(v.get("version") or "")
            if not kind or not version:
                continue
            base = f"{root}/{kind}/{version}"
            entry = kinds.setdefault(kind, {"latest": None, "latest_url": url(f"{root}/{kind}/latest/{artifact}"),
                                            "versions": []})
            if v.get("state") == "latest":
                entry["latest"] = version
            entry["versions"].append({
                **{k: v.get(k) for k in ("version", "sha256", "dimension", "state", "llvm_version", "llvm_commit",
                                         "published_at", "dataset_id", "vocab_version") if k in v},
                "validated_with_llvm": files.validated_with(farm.store, root, kind, version),
                "url": url(f"{base}/{artifact}"), "sha256_url": url(f"{base}/{artifact}.sha256"),
                "manifest_url": url(f"{base}/manifest.json"),
            })
        for kind, entry in kinds.items():
            if entry["latest"] is None:
                with contextlib.suppress(files.NotServed):
                    entry["latest"] = files.latest_version(farm.store, root, kind)
        out[root] = kinds
    return out
