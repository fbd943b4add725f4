"""The corpora and datasets the benches measure on, made once and cached under the bench's work directory."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from farm.jsonio import load_file


def debian_corpus(package: str, work: Path, toolchain) -> Path:
    """`WORK/corpus-PACKAGE`: the Debian source package compiled as its recipe says (the source kept under
    `WORK/debsrc`); made on the first run, reused after."""
    from workers import corpus

    out = Path(work) / f"corpus-{package}"
    if not (out / corpus.DESCRIPTION).is_file():
        corpus.from_debian(package, out, toolchain, Path(work) / "debsrc")
    return out


def ir_dataset(package: str, work: Path, toolchain) -> Path:
    """`WORK/dataset-ir-PACKAGE`: the IR triplet dataset of `debian_corpus(package)`, made by the farm's own step."""
    from workers.triplets import build_dataset

    out = Path(work) / f"dataset-ir-{package}"
    if not (out / "manifest.json").is_file():
        build_dataset(debian_corpus(package, work, toolchain), out, "ir", toolchain)
    return out


def merged_corpus(out: Path, corpora: Mapping[str, Path]) -> Path:
    """One corpus `out` of several packages' corpora (hard links; each module's name prefixed with its package), made
    once."""
    from workers.corpus import DESCRIPTION

    if (out / DESCRIPTION).is_file():
        return out
    modules = []
    for package, one in corpora.items():
        for name in load_file(one / DESCRIPTION)["modules"]:
            for ext in (".bc", ".cmd"):
                dst = out / package / f"{name}{ext}"
                dst.parent.mkdir(parents=True, exist_ok=True)
                if not dst.exists():
                    os.link(one / f"{name}{ext}", dst)
            modules.append(f"{package}/{name}")
    desc = {"modules": sorted(modules), "has_thinlto": False, "lineage": None,
            "source": "merged: " + " ".join(corpora)}
    (out / DESCRIPTION).write_text(json.dumps(desc, indent=2) + "\n")
    return out
