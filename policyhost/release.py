"""From a trained warm-start model to a publishable policy: validate it against LLVM, write its manifest.

Validation asks the three questions the nightly chain must answer before a policy reaches the
store: does onnxruntime load it (and onnx's checker accept it), does every input name a feature
this LLVM really sends (a probe compile through the policy host, with the policy's vocabulary when
it reads IR2Vec embeddings), and does it agree with the heuristic on held-out modules more often
than always answering the held-out majority would. The record carries the sha256 of the bytes it
checked; publishing requires it to match (policyhost/publish.py).
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from farm.errors import InputError, ValidationFailed, first_line
from farm.toolchain import Toolchain
from policyhost import advisors
from policyhost.publish import sha256, weights_record

if TYPE_CHECKING:
    from policyhost.protocol import Header, Observation
    from policyhost.runnable import OnnxPolicy

#: Per advisor, a source and the level that make LLVM open the advisor's channel and ask one decision: one call
#: site at -Oz for the inliner; for eviction, more values live across a call in a loop than x86-64 has registers.
_PROBES = {
    "inline": ("-Oz", "int g(int);\nstatic int f(int x) { return g(x) + g(x + 1); }\n"
                      "int h(int y) { return f(y) * 2; }\n"),
    "regalloc": ("-O2", "long g(long);\nlong h(long *p, int m) {\n"
                        + "  long " + ", ".join(f"v{i} = p[{i}]" for i in range(16)) + ";\n"
                        + "  for (int k = 0; k < m; k++) {\n"
                        + "".join(f"    v{i} = v{i} * {i + 3} + g(v{(i + 5) % 16} ^ k);\n" for i in range(16))
                        + "  }\n  return " + " ^ ".join(f"v{i}" for i in range(16)) + ";\n}\n"),
}
#: What a manifest records of a warm-start result (warmstart.train_from's dictionary).
_METRICS = ("decisions", "modules", "train_decisions", "heldout_decisions", "train_agreement",
            "heldout_agreement", "heldout_majority_baseline", "inline_rate", "onnx_agreement_all")
_PARAMETERS = ("seed", "epochs", "holdout", "hidden")
#: The kind policytrain/trainer.py writes (exploration, weighted cloning, evolution strategies) and what
#: its manifest records: `.text` ratios against the heuristic on packages it never trained on.
TRAINED = "inline-es"
#: The kind policytrain/evict_train.py writes: its ratio is RegAllocScore on the validation packages
EVICT_TRAINED = "regalloc-es"
_TRAINED_METRICS = ("validation", "chosen")
_KINDS = {TRAINED: "exploration + weighted behavioural cloning + evolution strategies (policytrain/trainer.py)",
          EVICT_TRAINED: "behavioural cloning of LLVM's eviction rule + evolution strategies on RegAllocScore "
                         "(policytrain/evict_train.py)",
          None: "warm-start (behavioural cloning of LLVM's heuristic)"}
#: the kinds whose record carries a validation ratio against the heuristic (and the splits it was measured on)
_RATIO_KINDS = (TRAINED, EVICT_TRAINED)


def llvm_features(toolchain: Toolchain, advisor: str = "inline", vocab: Path | None = None) -> list[str]:
    """The features this LLVM sends the advisor (its channel header), read from a real probe compile."""
    return [f.name for f in llvm_header(toolchain, advisor, vocab).features]


def llvm_header(toolchain: Toolchain, advisor: str = "inline", vocab: Path | None = None) -> Header:
    """The channel header this LLVM sends the advisor, read from a real probe compile."""
    return llvm_probe(toolchain, advisor, vocab)[0]


def llvm_probe(toolchain: Toolchain, advisor: str = "inline",
               vocab: Path | None = None) -> tuple[Header, Observation | None]:
    """The channel header this LLVM sends the advisor and the first observation it asks a decision on (None if it
    asked none), read from a real probe compile."""
    from policyhost.launcher import run_compile
    from policyhost.protocol import Observation
    from policyhost.runnable import RecordingPolicy, SpillPolicy

    class Probe(RecordingPolicy if advisor == "inline" else SpillPolicy):  # eviction sends no default to record
        first: Observation | None = None
        header: Header | None = None

        def bind(self, header: Header) -> None:
            super().bind(header)
            self.header = header

        def decide(self, obs: Observation) -> int:
            if self.first is None:  # a copy: the decoder's buffer is reused
                raw = None if obs.raw is None else bytes(obs.raw)
                self.first = Observation(obs.index, None, None if raw else dict(obs.features), raw, obs.header)
            return super().decide(obs)

    if advisor not in _PROBES:
        raise InputError(f"feature probe for the {advisor} advisor is not implemented")
    level, source = _PROBES[advisor]
    with tempfile.TemporaryDirectory(prefix="mlgo-probe-") as tmp:
        src = Path(tmp) / "probe.c"
        src.write_text(source)
        rec = Probe()
        outcome = run_compile(["clang", level, "-c", str(src), "-o", str(Path(tmp) / "probe.o")], rec,
                              vocab=vocab, toolchain=toolchain, advisor=advisor)
    if not outcome.ok or rec.header is None:
        raise InputError(f"cannot read LLVM's {advisor} features: {outcome.error or 'the compiler sent no header'}")
    return rec.header, rec.first


def run_once(policy: OnnxPolicy, header: Header, obs: Observation, seconds: float) -> None:
    """The model's advice on one real observation within `seconds`, or ValidationFailed: a model that never answers
    (an endless `Loop`) or answers NaN binds like any other, and was found only by the compiles it then failed.

    The run is in a thread the main thread waits for, so Ctrl-C and SIGTERM (which Python delivers to the main
    thread, between bytecodes) end the wait at once and stop the run (watchdog.Stop)."""
    import threading

    from policyhost.watchdog import Stop

    policy.time_limit, policy.stopping = seconds, Stop()
    policy.bind(header)  # again: this binding's run is the one the Stop stops
    done: list = []
    ended = threading.Event()  # not Thread.join: interrupted, 3.11's join marks a running thread as ended

    def run() -> None:
        try:
            done.append(policy.decide(obs))
        except Exception as e:
            done.append(e)
        finally:
            ended.set()

    threading.Thread(target=run, name="policy-probe", daemon=True).start()
    try:
        ended.wait()
    except BaseException:
        policy.stopping.set()
        ended.wait(5)  # the stopped run returns at once: leave no thread inside onnxruntime as the process exits
        raise
    if isinstance(done[0], Exception):
        raise ValidationFailed(f"{first_line(done[0])} (the probe compile's first decision)")


def model_inputs(model: Path) -> list[str]:
    from policyhost.runnable import OnnxPolicy

    return sorted(OnnxPolicy(model, strict=True).inputs)


def check_model(model: Path, toolchain: Toolchain | None, advisor: str = "inline",
                vocab: Path | None = None, run: float | None = None) -> tuple[OnnxPolicy, Header | None]:
    """The model loaded (onnx's checker too) and bound to the header this LLVM sends `advisor`.

    Binding checks what a compile would: every input a feature LLVM sends, in a shape it can be fed,
    and an output the advisor can use (ValidationFailed naming the first problem). With `run` (seconds: the
    `[policy] timeout` that bounds every run of a model), the model also answers the probe compile's first
    decision within it, finitely (`run_once`). Without a toolchain, or for an advisor with no probe compile, only
    the output is checked against the advisor: header None.
    """
    from policyhost.runnable import OnnxPolicy, check_output

    policy = OnnxPolicy(model, strict=True)
    if advisors.get(advisor).mask_feature is None or not policy.output[1].startswith("float"):
        try:  # scores for a masked advisor: their number is in the header
            check_output(policy.name, policy.output)
        except InputError as e:  # an output the advisor cannot use: the model fails validation
            raise ValidationFailed(str(e)) from None
    if toolchain is None or advisor not in _PROBES:
        return policy, None
    inputs = sorted(policy.inputs)
    if any(i.endswith("_embedding") for i in inputs) and vocab is None:
        raise InputError(f"policy {policy.name} reads IR2Vec embeddings: checking it needs its vocabulary")
    header, obs = llvm_probe(toolchain, advisor, vocab)
    check_features(policy.name, inputs, [f.name for f in header.features])
    try:
        policy.bind(header)
    except InputError as e:  # a shape LLVM cannot feed: the model fails validation, the command line was fine
        raise ValidationFailed(str(e)) from None
    if run is not None and obs is not None:
        run_once(policy, header, obs, run)
    return policy, header


def check_features(name: str, inputs: list[str], sent: list[str]) -> None:
    """Every model input is a feature LLVM sends; one line naming the first that is not."""
    missing = [i for i in inputs if i not in sent]
    if missing:
        hint = " (a vocabulary adds the *_embedding features)" if missing[0].endswith("_embedding") else ""
        raise ValidationFailed(f"policy {name} needs feature {missing[0]!r}, which this LLVM does not send{hint}"
                         f"{f' (and {len(missing) - 1} more)' if len(missing) > 1 else ''}")


def validate(model: Path, metrics: dict[str, Any], toolchain: Toolchain, advisor: str = "inline",
             vocab: Path | None = None) -> dict[str, Any]:
    """The validation record of `model` (ValidationFailed naming the first failed check)."""
    model = Path(model)
    from farm.config import load_settings

    _, header = check_model(model, toolchain, advisor, vocab, run=float(load_settings().policy.timeout))
    if header is None:
        raise InputError(f"feature probe for the {advisor} advisor is not implemented")
    sent = [f.name for f in header.features]
    if (metrics.get("kind") == EVICT_TRAINED) != (advisor == "regalloc"):
        raise ValidationFailed(f"policy {model.name} was trained as {metrics.get('kind')!r}, not for the {advisor} "
                               "advisor")
    if metrics.get("kind") in _RATIO_KINDS:
        ratio = metrics.get("validation")
        if not isinstance(ratio, (int, float)) or not 0 < ratio < float("inf"):
            raise ValidationFailed(f"policy {model.name} has no validation ratio to publish with ({ratio!r})")
        return {"ok": True, "sha256": sha256(model.read_bytes()), "inputs_match_llvm": True,
                "llvm_features": len(sent), "validation_ratio": ratio,
                "checked_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    agreement, baseline = metrics.get("heldout_agreement"), metrics.get("heldout_majority_baseline")
    if not isinstance(agreement, (int, float)) or not isinstance(baseline, (int, float)):
        raise ValidationFailed(f"policy {model.name} has no held-out agreement and majority baseline to check")
    if agreement <= baseline:
        raise ValidationFailed(f"policy {model.name} agrees with the heuristic on {agreement:.4f} of held-out "
                               f"decisions, no better than always answering the majority ({baseline:.4f}); not "
                               "published")
    return {"ok": True, "sha256": sha256(model.read_bytes()), "inputs_match_llvm": True,
            "llvm_features": len(sent), "heldout_agreement": agreement, "heldout_majority_baseline": baseline,
            "checked_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def manifest_for(model: Path, result: dict[str, Any], *, advisor: str = "inline",
                 vocab_version: str | None = None, training: dict[str, Any] | None = None,
                 validation: dict[str, Any], key: bytes | None = None, weights: bytes | None = None) -> dict[str, Any]:
    """The signed manifest of a trained model from warmstart.train_from's (checked) result and its validation; with
    `weights` (the native host's file of the same network), their record too, under the same signature."""
    from farm.signing import farm_key, sign

    advisors.get(advisor)
    data = Path(model).read_bytes()
    trained = result.get("kind") in _RATIO_KINDS
    return sign(data, {
        "format": 1,
        "advisor": advisor,
        "kind": _KINDS[result.get("kind") if trained else None],
        "sha256": sha256(data),
        "features": model_inputs(Path(model)),
        "vocab_version": vocab_version,
        "training": {"corpus": result.get("source"), "log_digest": result.get("log_digest"),
                     "skipped_modules": len(result.get("skipped") or []),
                     **({"splits": result.get("splits"), "modules": result.get("modules"),
                         "recipe": result.get("recipe")} if trained else {}),
                     **(training or {})},
        "parameters": (result.get("params") or {}) if trained else
                      {k: result.get(k) for k in _PARAMETERS if k in result},
        "metrics": _trained_metrics(result) if trained else
                   {k: result.get(k) for k in _METRICS if k in result},
        "llvm": {k: (result.get("llvm") or {}).get(k) for k in ("llvm_version", "llvm_commit", "clang")},
        "validation": validation,
        **({"weights": weights_record(weights)} if weights is not None else {}),
    }, farm_key() if key is None else key)


def _trained_metrics(result: dict[str, Any]) -> dict[str, Any]:
    """A trained policy's numbers: validation ratio, the held-out table, the training curve."""
    held = result.get("heldout") or {}
    return {"validation_ratio": result.get("validation"), "validation_worst": result.get("validation_worst"),
            "validation_packages": result.get("validation_packages"), "chosen": result.get("chosen"),
            "heldout_geomean": held.get("geomean"), "heldout_worst": held.get("worst"),
            "heldout_all_geomean": (held.get("all") or {}).get("geomean"),
            "heldout": held.get("packages"), "history": result.get("history")}


def record_beside(model: Path) -> dict[str, Any] | None:
    """The training record (MODEL.json) a trainer wrote beside MODEL.onnx, unverified; None when there is none."""
    path = Path(model).with_suffix(".json")
    try:
        result = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: not readable JSON: {e}") from None
    if not isinstance(result, dict):
        raise InputError(f"{path}: not a JSON object")
    return result


def read_result(model: Path, key: bytes | None = None) -> dict[str, Any]:
    """The MODEL.json `policy train-bc` wrote beside MODEL.onnx, its signature checked against the model's bytes."""
    from farm.signing import SignatureError, farm_key, verify

    path = Path(model).with_suffix(".json")
    result = record_beside(model)
    if result is None:
        raise InputError(f"{path} not found: publish a model `mlgo-farm policy train-bc` wrote (it writes both)")
    try:
        verify(Path(model).read_bytes(), result, farm_key() if key is None else key, what="policy")
    except SignatureError as e:
        raise SignatureError(f"{path}: {e}") from None
    return result


#: The splits whose packages a trained policy has seen: it trained on one and chose its checkpoint on the other.
SEEN_SPLITS = ("train", "validation")


def seen_packages(record: dict[str, Any]) -> list[str]:
    """The packages a policy trained or validated on, from its training record (`splits`) or its published
    manifest (`training.splits`): a size measured on them says how well it fits, not how it does on new code, so
    the size gate leaves them out and `policy heldout` refuses them."""
    splits = record.get("splits") or (record.get("training") or {}).get("splits") or {}
    return [p for part in SEEN_SPLITS for p in splits.get(part) or ()]
