"""A store as the demo and the nightly leave it, for the pages that must agree with the CLI (issue 48, item 6): two
trained inline policies (what policyhost/release.py `_trained_metrics` records: no agreement, a held-out `.text`
table) whose gate recorded the size check's figure, one `latest` and one candidate held back by it; and a MIR
vocabulary whose coverage counts composed entities (vocabgen/compose.py) beside the trained and the filler ones."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from farm.objectstore import FileStore
from tests.master.test_dashboard_policies import MODELS, VA, VB, manifest

MIR = "20260215-llvm22.1.8-mir-d4-cccccccccccc"
#: The MIR coverage of a demo: per section trained, composed and total (filler is the rest)
MIR_COVERAGE = {"Opcodes": {"trained": 396, "composed": 5908, "total": 6868},
                "CommonOperands": {"trained": 4, "composed": 0, "total": 4},
                "PhysicalRegisters": {"trained": 60, "composed": 2000, "total": 2100},
                "VirtualRegisters": {"trained": 10, "composed": 30, "total": 40}}

#: bzip2 in the held-out table: its linked files (libbz2 and the programs) smaller, the sum of its shipped objects
#: bigger; zlib an exact tie as shown (1.00003)
HELDOUT = [
    {"package": "zlib", "modules": 33, "heuristic": 162176, "policy": 162181, "ratio": 162181 / 162176, "failed": []},
    {"package": "bzip2", "modules": 13, "heuristic": 84001, "policy": 84090, "ratio": 84090 / 84001, "failed": [],
     "shipped": {"modules": 7, "heuristic": 60000, "policy": 60100, "ratio": 60100 / 60000},
     "linked": {"modules": 7, "heuristic": 70000, "policy": 69930, "ratio": 69930 / 70000,
                "outputs": {"libbz2.so.1.0": [50000, 49950], "bzip2": [20000, 19980]}}},
]


def trained_manifest(version: str, when: str, geomean: float | None) -> dict:
    m = manifest(version, 0.0, 0, when)
    m["kind"] = "exploration + weighted behavioural cloning + evolution strategies (policytrain/trainer.py)"
    m["training"]["splits"] = {"train": ["libzstd"], "validation": ["xz-utils"],
                               "evaluation": ["zlib", "bzip2"]}
    m["metrics"] = {"validation_ratio": 0.9572, "validation_worst": 0.9910, "validation_packages": {"xz-utils": 0.9572},
                    "chosen": "es step 4", "heldout_geomean": geomean, "heldout_worst": 1.00003,
                    "heldout_all_geomean": 1.0005, "heldout": HELDOUT,
                    "history": [{"stage": "bc", "round": 1, "validation": 0.9614},
                                {"stage": "es", "step": 4, "validation": 0.9572}]}
    return m


def size_gate(value: float, ok: bool, against: str | None) -> dict:
    """The gate as publishing records it once the size check settled (farm/artifacts/verdict.py `to_dict`)."""
    detail = (f".text against the heuristic: bzip2 {value:.4f}x (20,300 vs 20,000 bytes); geomean {value:.4f}x: "
              + ("below 0.9950x, none above 1.0100x" if ok else "not below 0.9950x"))
    return {"passed": ok, "against": against, "reasons": [] if ok else [f"policy_size: {detail}"], "pending": [],
            "checks": [{"rule": "validation", "ok": True, "detail": "passed"},
                       {"rule": "policy_size", "ok": ok, "detail": detail, "value": value}]}


def add_trained(root: Path) -> tuple[dict, dict]:
    """Two trained policies (VA latest, passed at 0.9871x; VB candidate, failed at 1.0150x) and a MIR vocabulary
    with composed entities into the store at `root` (after tests.master.test_dashboard.populate)."""
    store = FileStore(root)
    ma = trained_manifest(VA, "2026-02-10T00:00:00Z", 0.9637)
    mb = trained_manifest(VB, "2026-03-01T00:00:00Z", 1.0021)
    entries = []
    for m, state, gate in ((ma, "latest", size_gate(0.9871, True, None)),
                           (mb, "candidate", size_gate(1.0150, False, VA))):
        store.put(f"policies/inline/{m['version']}/model.onnx", MODELS[m["version"]])
        store.put(f"policies/inline/{m['version']}/manifest.json", json.dumps(m).encode())
        entries.append({"advisor": "inline", "version": m["version"], "sha256": m["sha256"],
                        "vocab_version": m["vocab_version"], "dataset_id": m["training"]["dataset_id"],
                        "llvm_version": "22.1.8", "llvm_commit": None, "published_at": m["published_at"],
                        "heldout_agreement": None, "heldout_majority_baseline": None,
                        "validation_ratio": 0.9572, "heldout_geomean": m["metrics"]["heldout_geomean"],
                        "state": state, "gate": gate})
    store.put("policies/index.json", json.dumps({"format": 1, "versions": entries}).encode())
    store.put("policies/inline/latest.json", json.dumps({"advisor": "inline", "version": VA}).encode())

    data = b'{"Opcodes": {}}'
    index = json.loads((root / "vocab" / "index.json").read_bytes())
    index["versions"].append({"kind": "mir", "version": MIR, "sha256": hashlib.sha256(data).hexdigest(),
                              "dimension": 4, "state": "latest", "published_at": "2026-02-15T00:00:00Z",
                              "llvm_version": "22.1.8", "mrr": 0.3, "hits_at_10": 0.8,
                              "coverage": {s: {**c, "composed_keys": []} for s, c in MIR_COVERAGE.items()},
                              "dataset_id": "mir-00000000000000aa"})
    store.put("vocab/index.json", json.dumps(index).encode())
    store.put(f"vocab/mir/{MIR}/vocab.json", data)
    store.put("vocab/mir/latest.json", json.dumps({"kind": "mir", "version": MIR}).encode())
    return ma, mb
