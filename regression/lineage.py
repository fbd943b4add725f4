"""What a run used, named so that history can tell runs apart: the policy version, the vocabulary
version and the LLVM build.

A published policy (`store:VERSION`) is recorded by its version, a model file by name and content
digest, a built-in by name. A vocabulary downloaded from the store by its version, a local one by
the manifest beside it or its digest. LLVM by its commit when it was built from source, else by the
Debian package and version of its clang (Debian's clang-22 has no commit), so no row of history
says "commit unknown".
"""

from __future__ import annotations

import functools
import hashlib
import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from regression.request import RunRequest


def _digest(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12]


def resolve_policy(req: RunRequest) -> tuple[RunRequest, str | None]:
    """A `store:VERSION` policy as its cached, checked model and its own vocabulary; and its version.

    Resolved once per run, so every compile uses the same version even if a newer one is published
    meanwhile. Other policies pass unchanged (version None).
    """
    import dataclasses

    from policyhost.published import resolve_published
    from policyhost.runnable import is_published

    if not is_published(req.policy):
        return req, None
    path, manifest, _ = resolve_published(req.policy, req.advisor_name, req.vocab)
    vocab = req.vocab or (f"store:{manifest['vocab_version']}" if manifest.get("vocab_version") else None)
    return dataclasses.replace(req, policy=path, vocab=vocab), manifest["version"]


def fetch_urls(req: RunRequest, cache: Path | None = None) -> tuple[RunRequest, str | None]:
    """A policy or vocabulary given by http(s) URL (a command from a mail or a page, run anywhere the master's URL
    reaches) as its checked local copy (farm/artifacts/remote.py); and the policy's version when its manifest
    names one. The vocabulary a URL policy was trained with is not implied: the command names it by URL too."""
    import dataclasses

    from farm.artifacts import remote
    from farm.config import load_settings

    if not (remote.is_url(req.policy) or remote.is_url(req.vocab)):
        return req, None
    cache = load_settings().var_dir / "cache" / "url" if cache is None else cache
    policy, version = req.policy, None
    if remote.is_url(req.policy):
        path, manifest = remote.fetch(req.policy, req.policy_sha256, cache / "policies", "model.onnx")
        policy, version = str(path), (manifest or {}).get("version")
    vocab = req.vocab
    if remote.is_url(req.vocab):
        vocab = remote.fetch(str(req.vocab), req.vocab_sha256, cache / "vocab", "vocab.json")[0]
    return dataclasses.replace(req, policy=policy, vocab=vocab), version if isinstance(version, str) else None


def policy_id(policy: str) -> str:
    """Built-in policies by name; a model file by name and content digest."""
    p = Path(policy)
    return f"{p.stem}-{_digest(p)}" if p.suffix == ".onnx" and p.is_file() else policy


def vocab_version(vocab: Path | None) -> str | None:
    """The farm's version of a downloaded vocabulary (its manifest beside it), else a content digest. A version
    that is not a plain version name (`../../tmp/x`, from a hand-made or hostile manifest) is no version: it would
    reach the report and the history."""
    from farm.artifacts.kinds import check_version_name
    from farm.errors import InputError
    from farm.jsonio import load_file

    if vocab is None:
        return None
    manifest = Path(vocab).with_name("manifest.json")
    if manifest.is_file():
        try:  # the farm's one reader: hostile numbers and nesting are its InputError
            version = check_version_name(load_file(manifest).get("version"))
        except (AttributeError, TypeError, InputError):
            version = None
        if version and version != "latest":
            return version
    return f"sha256-{_digest(vocab)}"


def resolve_vocab(vocab: str | Path | None, advisor: str) -> tuple[Path | None, str | None]:
    """The vocabulary file (policyhost's one resolver) and its version, so every compile of the run uses one file."""
    from policyhost.launcher import resolve_vocab as fetch

    path = fetch(vocab, advisor)
    if path is None:
        return None, None
    return path, path.stem if str(vocab).startswith("store:") else vocab_version(path)  # cached as <version>.json


@functools.cache
def package_version(binary: str) -> str | None:
    """`PACKAGE VERSION` of the Debian package that installed `binary` (None when dpkg does not know it)."""
    dpkg = shutil.which("dpkg-query")
    if dpkg is None:
        return None
    path = str(Path(binary).resolve())
    try:
        owner = subprocess.run([dpkg, "-S", path], capture_output=True, text=True, timeout=30)
        if owner.returncode != 0 or ":" not in owner.stdout:
            return None
        package = owner.stdout.split(":", 1)[0].strip()
        version = subprocess.run([dpkg, "-W", "-f=${Version}", package], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{package} {version.stdout.strip()}" if version.returncode == 0 and version.stdout.strip() else None


def llvm_package(toolchain) -> str | None:
    """The package of the toolchain's clang, for rows whose LLVM has no commit."""
    return package_version(str(toolchain.path("clang")))
