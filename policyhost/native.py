"""The farm's own policy builds through the native host, as users off the farm build.

Why: the farm's lean launcher (policyhost/cc.py) starts a Python interpreter per compile and asks a shared `policy
serve` process; the native host (policyhost/standalone/mlgo-policy-host.c, one C file) starts in about a
millisecond and answers the compiler's channel itself (bench/README.md#bench_policy_native and
#bench_policy_build measure both against plain clang). It makes the same decisions as onnxruntime, bit for bit
(tests/policyhost/test_native_host.py), so a build through it is the build through the Python launcher.

Which builds take it: the inliner's, with a version the farm published that holds its weights: the cached model
`{version}.onnx` with `{version}.weights` beside it and the manifest `{version}.json` recording that file's sha256
(policyhost/publish.py `fetch_cached` puts them there, all checked against the signed manifest). Everything else
keeps the Python launcher: a built-in policy, an `.onnx` the farm did not publish (no weights can be trusted for
it), a version published before versions held weights, another advisor, a shared `--server`, `--stats` (the
native host keeps no statistics).

The host is built once per source and LLVM, with the farm's own clang (farm/toolchain.py), into
`<var>/cache/native-host/KEY/`: written under a temporary name and renamed, so two builds starting at once never
run a half-written binary, and a changed C file or another LLVM builds anew.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from farm import jsonio
from farm.errors import StoreError
from policyhost import advisors
from policyhost.standalone import NATIVE_NAME, NATIVE_SOURCE, native_source


def weights_for(model: str | os.PathLike, advisor: str = advisors.DEFAULT) -> Path | None:
    """The native weights of a cached published model (`{version}.weights` beside it, with the sha256 the cached
    manifest records), or None when this build keeps the Python launcher (see the module)."""
    if advisors.get(advisor).name != "inline" or not str(model).endswith(".onnx"):
        return None
    model = Path(model)
    weights, manifest_path = model.with_suffix(".weights"), model.with_suffix(".json")
    if not (weights.is_file() and manifest_path.is_file()):
        return None
    manifest = jsonio.loads(manifest_path.read_text(errors="replace"), f"policy manifest {manifest_path}", StoreError)
    record = manifest.get("weights") if isinstance(manifest, dict) else None
    if not (isinstance(record, dict) and isinstance(manifest.get("sha256"), str)):
        return None
    same = hashlib.sha256(model.read_bytes()).hexdigest() == manifest["sha256"] and \
        hashlib.sha256(weights.read_bytes()).hexdigest() == record.get("sha256")
    return weights if same else None


def native_host(settings, toolchain=None) -> Path:
    """The native host binary for this LLVM, built with its clang on first use (a ToolError, one line, if the
    C file does not build)."""
    from farm.toolchain import Toolchain

    toolchain = toolchain or Toolchain.from_settings(settings)
    source = native_source()
    key = hashlib.sha256(source + toolchain.clang_version.encode()).hexdigest()[:16]
    home = Path(settings.var_dir) / "cache" / "native-host" / key
    host = home / NATIVE_NAME
    if host.is_file() and os.access(host, os.X_OK):
        return host
    home.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{NATIVE_NAME}.", dir=home)
    os.close(fd)
    try:
        toolchain.run("clang", ["-O2", "-o", tmp, NATIVE_SOURCE, "-lm"], timeout=300, subject=NATIVE_SOURCE.name)
        os.chmod(tmp, 0o755)
        os.replace(tmp, host)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return host


def native_command(settings, policy: str, vocab: str | os.PathLike | None, timeout: float,
                   max_silence: float | None, advisor: str = advisors.DEFAULT) -> list[str] | None:
    """The native host's launcher prefix (ending in `--`) for a build with `policy` (a cached model's path, or
    `store:VERSION`, fetched and checked here once for the whole build), or None when it keeps the Python one."""
    from policyhost.published import resolve_published
    from policyhost.runnable import is_published

    model = policy
    if is_published(policy):
        if advisors.get(advisor).name != "inline":
            return None
        model, _, vocab = resolve_published(policy, advisor, vocab)
    weights = weights_for(model, advisor)
    if weights is None:
        return None
    host = native_host(settings)
    return [str(host), "--weights", str(weights), *(["--vocab", str(vocab)] if vocab else []),
            "--timeout", f"{timeout:g}", *(["--max-silence", f"{max_silence:g}"] if max_silence else []), "--"]
