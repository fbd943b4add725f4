"""A policy the farm published (`store:VERSION`), loaded: resolved, fetched, checked; and `load_policy`, the one way
to load any policy a user names (a built-in, an ONNX model file, or a published one).

The policies themselves (built-ins, ONNX models, the model contract) are policyhost/runnable.py; a published
policy is fetched, checked against its manifest and against the features this LLVM sends (a probe compile:
release.py, launcher.py), which is why this module sits above those and runnable.py below them
(tests/test_layout.py: no file circles). Below this module a policy is loaded by its file (`runnable.local_policy`).
"""

from __future__ import annotations

import os

from farm.errors import InputError
from policyhost import advisors
from policyhost.runnable import Policy, is_published, local_policy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path


def resolve_published(spec: str, advisor: str = advisors.DEFAULT, vocab: str | os.PathLike | None = None,
                      toolchain=None) -> tuple[str, dict, str | os.PathLike | None]:
    """`store:VERSION` as (local model path, its manifest, the vocabulary to compile with).

    The model is downloaded into `<var>/cache/policies/` and its sha256 checked against the
    manifest on every use; its inputs must be the manifest's features and features this LLVM sends
    (a probe compile). A policy trained on IR2Vec features brings its vocabulary (`store:V` of the
    version it was trained with) unless `vocab` is given, and a given one must be that version.
    """
    from farm.config import load_settings
    from farm.objectstore import store_from_settings
    from policyhost import release
    from policyhost.publish import fetch_cached

    settings = load_settings()
    version = spec.removeprefix("store:") or "latest"
    path, manifest = fetch_cached(store_from_settings(settings), advisor, version,
                                  settings.var_dir / "cache" / "policies")
    inputs = release.model_inputs(path)
    if sorted(manifest.get("features") or []) != inputs:
        raise InputError(f"policy {manifest['version']}: the model's inputs are not the features its manifest lists")
    wanted = manifest.get("vocab_version")
    if wanted and vocab is None:
        vocab = f"store:{wanted}"
    vocab_file = None
    if vocab is not None:
        from policyhost.launcher import resolve_vocab

        vocab_file = resolve_vocab(vocab, advisor)
        if wanted and vocab_file.stem != wanted:
            raise InputError(f"policy {manifest['version']} was trained with vocabulary {wanted}, not "
                             f"{vocab_file.stem}: leave out --vocab to use its own")
    if toolchain is None:
        from farm.toolchain import Toolchain

        toolchain = Toolchain.from_settings(settings)
    release.check_features(manifest["version"], inputs, release.llvm_features(toolchain, advisor, vocab_file))
    return str(path), manifest, (str(vocab_file) if vocab_file is not None else None)


def load_policy(spec: str | Path) -> Policy:
    """A built-in policy by name, an ONNX model by path, or a published one (`store:VERSION`, resolved and
    checked); InputError if none."""
    text = os.fspath(spec)
    return local_policy(resolve_published(text)[0] if is_published(text) else text)
