"""MLGO warm start: behavioural cloning of LLVM's inlining heuristic, exported as an ONNX policy.

1. Log: compile every module of a training corpus at -Oz through the policy host with a
   recording policy that answers LLVM's default decision and keeps `(features, inlining_default)`.
2. Train: a small MLP (torch, fixed seed, one thread) on log-scaled, standardised features;
   whole modules are held out to measure agreement with the heuristic on code it never saw.
3. Export: `torch.onnx` (TorchScript exporter: no onnxscript needed) with one input per LLVM
   feature, so the model plugs straight into `policy-cc --policy MODEL.onnx`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import tempfile
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from farm import hold
from farm.atomic import write_atomic
from farm.errors import InputError
from farm.toolchain import Toolchain
from policyhost.launcher import run_compile
from policyhost.runnable import INLINE_DEFAULT, RecordingPolicy
from policytrain.problem import INLINE_SIZE

log = logging.getLogger(__name__)

OUTPUT_NAME = INLINE_SIZE.advice
#: width of the MLP's two hidden layers
HIDDEN = 64


@dataclass
class DecisionLog:
    """Logged decisions: one row per call site, columns laid out per feature (name, width)."""

    features: list[tuple[str, int, bool]]  # name, element count, is float
    x: np.ndarray  # (n, sum of widths) float64
    y: np.ndarray  # (n,) int64, LLVM's inlining_default
    module: np.ndarray  # (n,) int64 index into modules
    modules: list[str]
    skipped: list[dict[str, str]] = field(default_factory=list)

    def save(self, path: Path) -> None:
        meta = json.dumps({"features": self.features, "modules": self.modules, "skipped": self.skipped})
        with tempfile.NamedTemporaryFile(dir=Path(path).parent, suffix=".npz", delete=False) as f:
            np.savez_compressed(f, x=self.x, y=self.y, module=self.module, meta=np.array(meta))
        os.replace(f.name, path)

    @classmethod
    def load(cls, path: Path) -> DecisionLog:
        import zipfile
        import zlib

        try:
            with np.load(path) as z:
                meta = json.loads(str(z["meta"]))
                return cls([tuple(f) for f in meta["features"]], z["x"], z["y"], z["module"],
                           meta["modules"], meta["skipped"])
        except (OSError, KeyError, ValueError, TypeError, EOFError, zipfile.BadZipFile, zlib.error) as e:
            # a truncated or corrupt .npz fails inside zipfile or zlib, anything else inside json
            why = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
            raise InputError(f"{path} is not a decision log saved by --save-log: {why}") from None


def training_units(source: Path, out_dir: Path) -> list[tuple[str, list[str]]]:
    """(module name, compile command) per module: a corpus' bitcode, or each C file of a directory."""
    source = Path(source)
    if (source / "corpus_description.json").is_file():
        from policytrain.units import LEVEL
        from workers import corpus

        c = corpus.load(source)
        corpus.check_level(c, LEVEL, "the inliner's warm start")  # -O2 bitcode at -Oz is not a user's -Oz build
        mods = c.modules
        return [(m.name, ["clang", "-Oz", "-c", str(m.bitcode), "-o", str(out_dir / f"{i}.o")])
                for i, m in enumerate(mods)]
    if source.is_dir():
        files = sorted(source.rglob("*.c"))
        if files:
            return [(f.relative_to(source).as_posix(),
                     ["clang", "-Oz", "-c", f"-I{f.parent}", str(f), "-o", str(out_dir / f"{i}.o")])
                    for i, f in enumerate(files)]
    raise InputError(f"{source} is neither a corpus (corpus_description.json) nor a directory of C files")


def sample_units(units: list[tuple[str, list[str]]], most: int | None) -> list[tuple[str, list[str]]]:
    """At most `most` modules, chosen by the hash of their names: the same corpus gives the same sample."""
    from workers.corpus import sample_names

    if most is None or len(units) <= most:
        return units
    keep = sample_names((u[0] for u in units), most)
    return sorted(u for u in units if u[0] in keep)


def collect(source: Path, toolchain: Toolchain, *, jobs: int | None = None, vocab: str | None = None,
            timeout: float = 120, max_modules: int | None = None) -> DecisionLog:
    """Compile every training module (or a sample of `max_modules`) through the host with the recording policy."""
    with tempfile.TemporaryDirectory(prefix="mlgo-warmstart-") as tmp:
        units = sample_units(training_units(source, Path(tmp)), max_modules)

        def one(unit: tuple[str, list[str]]):
            rec = RecordingPolicy()
            outcome = run_compile(unit[1], rec, vocab=vocab, timeout=timeout, toolchain=toolchain)
            return unit[0], rec, outcome

        with ThreadPoolExecutor(jobs or os.cpu_count() or 1) as pool:
            results = list(pool.map(one, units))
    features: list[tuple[str, int, bool]] | None = None
    xs, ys, mods, names, skipped = [], [], [], [], []
    for name, rec, outcome in results:
        if not outcome.ok:
            skipped.append({"module": name, "reason": outcome.error or "failed"})
            continue
        if rec.header is None or not rec.rows:
            continue  # no call site to decide on
        feats = [(f.name, f.count, f.is_float) for f in rec.header.features if f.name != INLINE_DEFAULT]
        if features is None:
            features = feats
        elif feats != features:
            skipped.append({"module": name, "reason": "different feature set"})
            continue
        xs.append(np.asarray(rec.rows, dtype=np.float64))
        ys.append(np.asarray(rec.labels, dtype=np.int64))
        mods.append(np.full(len(rec.labels), len(names), dtype=np.int64))
        names.append(name)
    if features is None:
        first = skipped[0]["reason"] if skipped else "no module had a call site to decide on"
        raise InputError(f"no inlining decisions logged from {source}: {first}")
    log.info("logged %d decisions from %d modules (%d skipped)", sum(map(len, ys)), len(names), len(skipped))
    return DecisionLog(features, np.concatenate(xs), np.concatenate(ys), np.concatenate(mods), names, skipped)


def split(dlog: DecisionLog, holdout: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Boolean masks (train, test): whole modules held out, or decisions when there are too few modules."""
    n_mod = len(dlog.modules)
    rng = random.Random(seed)
    if n_mod >= 3:
        order = list(range(n_mod))
        rng.shuffle(order)
        k = min(n_mod - 1, max(1, round(holdout * n_mod)))
        test = np.isin(dlog.module, order[:k])
    else:
        idx = list(range(len(dlog.y)))
        rng.shuffle(idx)
        test = np.zeros(len(dlog.y), dtype=bool)
        test[idx[: max(1, round(holdout * len(idx)))]] = True
    return ~test, test


def _build_model(dlog: DecisionLog, train_x: np.ndarray, hidden: int):
    import torch

    scaled = np.sign(train_x) * np.log1p(np.abs(train_x))
    mean = torch.tensor(scaled.mean(axis=0), dtype=torch.float32)
    std = torch.tensor(np.where(scaled.std(axis=0) > 1e-6, scaled.std(axis=0), 1.0), dtype=torch.float32)
    widths = [w for _, w, _ in dlog.features]

    class ClonedHeuristic(torch.nn.Module):
        """Raw LLVM features (one tensor each, batch first) to two logits: [no inline, inline]."""

        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("mean", mean)
            self.register_buffer("std", std)
            self.net = torch.nn.Sequential(
                torch.nn.Linear(sum(widths), hidden), torch.nn.ReLU(),
                torch.nn.Linear(hidden, hidden), torch.nn.ReLU(),
                torch.nn.Linear(hidden, 2),
            )

        def forward(self, *feats):
            x = torch.cat([f.reshape(f.shape[0], -1).to(torch.float32) for f in feats], dim=1)
            x = torch.sign(x) * torch.log1p(torch.abs(x))
            return self.net((x - self.mean) / self.std)

    return ClonedHeuristic()


def _columns(dlog: DecisionLog, x: np.ndarray) -> list[np.ndarray]:
    """Split the row matrix back into one array per feature, in LLVM's dtype."""
    out, pos = [], 0
    for _, w, is_float in dlog.features:
        out.append(x[:, pos:pos + w].astype(np.float32 if is_float else np.int64))
        pos += w
    return out


def train(dlog: DecisionLog, *, seed: int = 0, epochs: int = 60, holdout: float = 0.2, hidden: int = HIDDEN,
          batch: int = 256):
    """Fit the MLP; return (model, metrics) with agreement on the held-out part."""
    import torch

    torch.manual_seed(seed)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    tr, te = split(dlog, holdout, seed)
    if tr.sum() == 0 or te.sum() == 0:
        raise InputError(f"too few decisions to train and hold out ({len(dlog.y)} logged)")
    model = _build_model(dlog, dlog.x[tr], hidden)
    cols = [torch.from_numpy(c) for c in _columns(dlog, dlog.x)]
    y = torch.from_numpy(dlog.y)
    train_idx = torch.from_numpy(np.flatnonzero(tr))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(seed)
    loss_fn = torch.nn.CrossEntropyLoss()
    model.train()
    for _ in range(epochs):
        perm = train_idx[torch.randperm(len(train_idx), generator=gen)]
        for b in perm.split(batch):
            opt.zero_grad()
            loss = loss_fn(model(*[c[b] for c in cols]), y[b])
            loss.backward()
            opt.step()
        hold.checkpoint("policy training")  # tests only (farm/hold.py); returns at once otherwise
    model.eval()
    with torch.no_grad():
        pred = model(*cols).argmax(dim=1).numpy()
    metrics = {
        "decisions": len(dlog.y),
        "modules": len(dlog.modules),
        "train_decisions": int(tr.sum()),
        "heldout_decisions": int(te.sum()),
        "heldout_modules": sorted({dlog.modules[i] for i in dlog.module[te]}) if len(dlog.modules) >= 3 else [],
        "train_agreement": float((pred[tr] == dlog.y[tr]).mean()),
        "heldout_agreement": float((pred[te] == dlog.y[te]).mean()),
        # what always answering the held-out majority would score: the bar the model must clear
        "heldout_majority_baseline": float(max(dlog.y[te].mean(), 1 - dlog.y[te].mean())),
        "inline_rate": float(dlog.y.mean()),
    }
    return model, metrics


def export_onnx(model, dlog: DecisionLog, path: Path, metadata: dict[str, str]) -> None:
    """Write the model with one input per LLVM feature; atomically, and checked by onnx."""
    import onnx
    import torch

    names = [n for n, _, _ in dlog.features]
    example = tuple(torch.from_numpy(c[:1]) for c in _columns(dlog, dlog.x))
    axes = {n: {0: "batch"} for n in [*names, OUTPUT_NAME]}
    path = Path(path)
    with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
        raw = Path(tmp) / "model.onnx"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(model, example, str(raw), input_names=names, output_names=[OUTPUT_NAME],
                              dynamic_axes=axes, dynamo=False)
        m = onnx.load(str(raw))
        for k, v in metadata.items():
            m.metadata_props.add(key=k, value=str(v))
        onnx.checker.check_model(m)
        write_atomic(path, m.SerializeToString())


def onnx_agreement(path: Path, dlog: DecisionLog) -> float:
    """Agreement of the exported model (run by onnxruntime) with the heuristic on every logged decision."""
    import onnxruntime as ort

    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    feeds = dict(zip([n for n, _, _ in dlog.features], _columns(dlog, dlog.x), strict=True))
    logits = sess.run([OUTPUT_NAME], feeds)[0]
    return float((logits.argmax(axis=1) == dlog.y).mean())


def train_from(source: Path, output: Path, toolchain: Toolchain, *, seed: int = 0, epochs: int = 60,
               holdout: float = 0.2, jobs: int | None = None, vocab: str | None = None,
               save_log: Path | None = None, max_modules: int | None = None,
               vocab_version: str | None = None, key: bytes | None = None) -> dict:
    """Log (or load) decisions, train, export MODEL.onnx and MODEL.json; return the metrics.

    MODEL.json is signed with the farm's key over its claims and the model's bytes
    (farm/signing.py): publishing takes metrics and lineage only from a record this farm's
    training wrote for exactly this model (policyhost/release.py).
    """
    from farm.signing import farm_key, sign

    output = Path(output)
    if output.suffix != ".onnx":
        raise InputError(f"output {output} must end in .onnx")
    if Path(source).suffix == ".npz":
        dlog = DecisionLog.load(Path(source))
    else:
        dlog = collect(Path(source), toolchain, jobs=jobs, vocab=vocab, max_modules=max_modules)
        if save_log:
            dlog.save(save_log)
    model, metrics = train(dlog, seed=seed, epochs=epochs, holdout=holdout)
    digest = hashlib.sha256(dlog.x.tobytes() + dlog.y.tobytes()).hexdigest()[:16]
    meta = {"mlgo.kind": INLINE_SIZE.warm_kind, "mlgo.advice": INLINE_SIZE.advice, "mlgo.seed": str(seed),
            "mlgo.log_digest": digest, "mlgo.heldout_agreement": f"{metrics['heldout_agreement']:.4f}"}
    output.parent.mkdir(parents=True, exist_ok=True)
    export_onnx(model, dlog, output, meta)
    metrics["onnx_agreement_all"] = onnx_agreement(output, dlog)
    result = {"model": str(output), "source": str(source), "seed": seed, "epochs": epochs, "holdout": holdout,
              "hidden": HIDDEN, "vocab": str(vocab) if vocab else None, "vocab_version": vocab_version,
              "log_digest": digest, "features": [n for n, _, _ in dlog.features],
              "skipped": dlog.skipped, "llvm": toolchain.describe(), **metrics}
    result = sign(output.read_bytes(), result, farm_key() if key is None else key)
    write_atomic(output.with_suffix(".json"), json.dumps(result, indent=2) + "\n")
    return result
