"""Validation before publishing: schema, one dimension, finite values, full coverage, LLVM loads it, sane magnitudes.

"LLVM loads it" means `llvm-ir2vec embeddings` with the vocabulary gives every function of the
sample modules a non-zero, finite vector (IR), or at least one machine function such a vector
(MIR: LLVM 22.1's MIR2Vec crashes on functions that use class-less physical registers such as
`$mxcsr`; those functions are listed in the report, and a vocabulary on which no function loads
fails). Finite values in the file are not enough: LLVM sums them over a function's instructions,
so a vocabulary of 1e308s gives `inf` for every function. LLVM's own output is therefore read
(`inf`, `nan` included) and checked before the magnitude bound (vocabfile.MAX_ABS), so the error
says what LLVM makes of such a file.
"""

from __future__ import annotations

import math
import re
import tempfile
from pathlib import Path
from typing import Any

from farm.errors import InputError, ToolError
from farm.toolchain import Toolchain
from farm.vocabfile import ValidationError, check_coverage, check_magnitude, check_schema, parse, sha256
from vocabgen import layout
from vocabgen.dataset import check_kind

SAMPLES = Path(__file__).parent / "samples"
_FUNC = re.compile(r"^(?:Function|MIR2Vec embeddings for machine function):?\s*(\S+?):?\s*$")
_VEC = re.compile(r"\[([^\]]*)\]")


def sample_sources() -> list[Path]:
    return sorted(SAMPLES.glob("*.c"))


def compile_samples(kind: str, toolchain: Toolchain, work: Path, sources: list[Path] | None = None) -> list[Path]:
    """Sample modules as LLVM IR bitcode (ir) or post-allocation MIR (mir)."""
    from workers import mir as mir_fix

    out = []
    for src in sources or sample_sources():
        bc = work / f"{src.stem}.bc"
        toolchain.run("clang", ["-O2", "-c", "-emit-llvm", src, "-o", bc], subject=src.name)
        if kind == "ir":
            out.append(bc)
            continue
        raw = work / f"{src.stem}.raw.mir"
        toolchain.run("llc", ["-O2", f"-stop-after={mir_fix.STOP_AFTER}", bc, "-o", raw], subject=src.name)
        fixed = work / f"{src.stem}.mir"
        fixed.write_text(mir_fix.sanitize(raw.read_text()))
        out.append(fixed)
    return out


def llvm_entities(kind: str, toolchain: Toolchain, mir_sample: Path | None = None) -> list[str]:
    """Every entity LLVM knows (`llvm-ir2vec entities`; MIR needs a MIR file for the target)."""
    args = ["entities"] if kind == "ir" else ["entities", "--mode=mir", str(mir_sample)]
    text = toolchain.run("llvm-ir2vec", args, timeout=120).stdout.decode()
    return [ln.split("\t")[0] for ln in text.splitlines()[1:] if ln.strip()]


def _floats(text: str, where: str) -> list[float]:
    """The numbers LLVM printed; `inf`, `-inf` and `nan` (LLVM prints them so) are kept as such."""
    try:
        return [float(x) for x in text.split()]
    except ValueError:
        raise ValidationError(f"unreadable vector in {where}: [{' '.join(text.split())[:80]}]") from None


def parse_embeddings(text: str) -> dict[str, list[float]]:
    """Function name -> vector from `llvm-ir2vec embeddings --level=func` output."""
    out: dict[str, list[float]] = {}
    name = None
    for line in text.splitlines():
        m = _FUNC.match(line.strip())
        if m:
            name = m.group(1)
            continue
        v = _VEC.search(line)
        if v and name is not None:
            out[name] = _floats(v.group(1), f"llvm-ir2vec embeddings output for {name}")
            name = None
    return out


def _names(functions: list[str]) -> str:
    return ", ".join(functions[:3]) + (f" and {len(functions) - 3} more" if len(functions) > 3 else "")


def check_finite(vectors: dict[str, list[float]], module: str) -> None:
    """LLVM's embeddings must be finite: `inf`/`nan` there means the vocabulary's values are far too large."""
    infinite = sorted(fn for fn, vec in vectors.items() if any(math.isinf(x) for x in vec))
    if infinite:
        raise ValidationError(f"LLVM gives infinite embeddings with this vocabulary ({_names(infinite)} in {module}): "
                              f"its values are far too large")
    nan = sorted(fn for fn, vec in vectors.items() if any(math.isnan(x) for x in vec))
    if nan:
        raise ValidationError(f"LLVM gives NaN embeddings with this vocabulary ({_names(nan)} in {module}): "
                              f"its values are far too large")


def _embed(kind: str, toolchain: Toolchain, vocab_path: Path, module: Path) -> dict[str, list[float]]:
    flag = "--ir2vec-vocab-path" if kind == "ir" else "--mir2vec-vocab-path"
    args = ([] if kind == "ir" else ["--mode=mir"]) + [f"{flag}={vocab_path}", "--level=func", str(module)]
    res = toolchain.run("llvm-ir2vec", ["embeddings", *args], timeout=300, subject=module.name)
    return parse_embeddings(res.stdout.decode(errors="replace"))


def _embed_mir_per_function(toolchain: Toolchain, vocab_path: Path, module: Path) -> tuple[dict, dict]:
    from workers import mir as mir_fix

    vectors: dict[str, list[float]] = {}
    crashed: dict[str, str] = {}
    for name, text in mir_fix.split_functions(module.read_text()):
        one = module.with_name(f"{module.stem}.{len(vectors) + len(crashed)}.mir")
        one.write_text(text)
        try:
            vectors.update(_embed("mir", toolchain, vocab_path, one))
        except ToolError as e:
            crashed[name] = str(e)
    return vectors, crashed


def llvm_loads(kind: str, vocab_path: Path, dim: int, toolchain: Toolchain, modules: list[Path]) -> list[dict]:
    """Embed each sample module with the vocabulary; fail unless LLVM gives non-zero vectors."""
    report = []
    for module in modules:
        crashed: dict[str, str] = {}
        try:
            vectors = _embed(kind, toolchain, vocab_path, module)
        except ToolError as e:
            if kind == "ir":
                raise ValidationError(f"LLVM could not load the vocabulary on {module.name}: {e}") from None
            vectors, crashed = _embed_mir_per_function(toolchain, vocab_path, module)
        if not vectors:
            detail = next(iter(crashed.values()), "no function embeddings in the output")
            raise ValidationError(f"LLVM gave no embeddings with the vocabulary on {module.name}: {detail}")
        for fn, vec in vectors.items():
            if len(vec) != dim:
                raise ValidationError(f"LLVM read dimension {len(vec)} for {fn} in {module.name}, expected {dim}")
        check_finite(vectors, module.name)
        zero = sorted(fn for fn, vec in vectors.items() if not any(abs(x) > 0 for x in vec))
        if zero:
            raise ValidationError(f"LLVM gave zero embeddings to {', '.join(zero)} in {module.name}")
        report.append({"module": module.name, "functions": len(vectors), "llvm_crashed": sorted(crashed)})
    return report


def llvm_printed_vocab(kind: str, vocab_path: Path, toolchain: Toolchain, work: Path) -> dict[str, list[float]]:
    """The vocabulary as LLVM itself reads it back (unit weights), keyed like `llvm-ir2vec entities`."""
    if kind == "ir":
        module = work / "empty.ll"
        module.write_text("define void @f() {\n  ret void\n}\n")
        args = ["opt", ["-passes=print<ir2vec-vocab>", f"-ir2vec-vocab-path={vocab_path}", "-ir2vec-opc-weight=1",
                        "-ir2vec-type-weight=1", "-ir2vec-arg-weight=1", "-disable-output", module]]
    else:
        module = work / "empty.ll"
        module.write_text("define i32 @f(i32 %a) {\n  ret i32 %a\n}\n")
        args = ["llc", ["-print-mir2vec-vocab", f"-mir2vec-vocab-path={vocab_path}", "-mir2vec-opc-weight=1",
                        "-mir2vec-common-operand-weight=1", "-mir2vec-reg-operand-weight=1", "-o", "/dev/null", module]]
    res = toolchain.run(args[0], args[1], timeout=300)
    out: dict[str, list[float]] = {}
    for line in (res.stderr + res.stdout).decode(errors="replace").splitlines():
        if line.startswith("Key: "):
            key, _, rest = line[5:].partition(":")
            v = _VEC.search(rest)
            if v:
                out[key.strip()] = _floats(v.group(1), f"LLVM's vocabulary printout for {key.strip()}")
    return out


def check_llvm_reads_back(kind: str, vocab: dict, vocab_path: Path, toolchain: Toolchain, work: Path) -> int:
    """Every entry LLVM reads equals ours (to the two decimals it prints): right section, right key."""
    printed = llvm_printed_vocab(kind, vocab_path, toolchain, work)
    if not printed:
        raise ValidationError(f"LLVM printed no vocabulary entries for {vocab_path}")
    ours = {}
    for name, (section, key) in zip(printed, layout.placement(kind, list(printed)), strict=True):
        ours[name] = vocab.get(section, {}).get(key)
    for name, vec in printed.items():
        mine = ours[name]
        if mine is None or len(mine) != len(vec) or any(abs(a - b) > 0.0051 for a, b in zip(mine, vec, strict=True)):
            raise ValidationError(f"LLVM reads entity {name} differently from the file (wrong section or key)")
    return len(printed)


def check_known(vocab: dict[str, Any], known: dict[str, set[str]], where: str = "vocabulary") -> None:
    """Every key names an entity LLVM knows: LLVM ignores the others, so one is a typo or a wrong section.

    The counterpart of `check_coverage` (a missing entity reads as zeros; an unknown one is never read).
    """
    for section, keys in known.items():
        unknown = sorted(set(vocab.get(section, {})) - keys)
        if unknown:
            shown = ", ".join(unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
            raise ValidationError(f"{where}: {len(unknown)} entities of {section} are unknown to LLVM: {shown}")


def read_vocab_file(path: Path) -> bytes:
    """The bytes of a vocabulary file, or a one-line InputError (a directory, `/dev/zero` or a FIFO too)."""
    from farm.jsonio import read_file

    return read_file(path, f"vocabulary file {path}")


def validate_vocab(
    kind: str, vocab_path: Path, toolchain: Toolchain, samples: list[Path] | None = None
) -> dict[str, Any]:
    """Run every check; returns a report for the manifest (with the sha256 of the bytes checked) or raises."""
    check_kind(kind)
    vocab_path = Path(vocab_path)
    data = read_vocab_file(vocab_path)
    vocab = parse(data, str(vocab_path))
    dim = check_schema(kind, vocab, str(vocab_path))
    for sample in samples or []:
        if not Path(sample).is_file():
            raise InputError(f"sample module {sample} is not a file")
    toolchain.check("clang", "llvm-ir2vec", *(["llc"] if kind == "mir" else []))
    with tempfile.TemporaryDirectory(prefix="mlgo-farm-validate-") as tmp:
        modules = list(samples) if samples else compile_samples(kind, toolchain, Path(tmp))
        mir_entity_source = modules[0] if kind == "mir" else None
        names = llvm_entities(kind, toolchain, mir_entity_source)
        known = layout.entity_keys(kind, names)
        check_coverage(vocab, known, str(vocab_path))
        check_known(vocab, known, str(vocab_path))
        read_back = check_llvm_reads_back(kind, vocab, vocab_path, toolchain, Path(tmp))
        loads = llvm_loads(kind, vocab_path, dim, toolchain, modules)
    check_magnitude(vocab, str(vocab_path))  # after LLVM: for absurd values its verdict (inf) is the clearer error
    return {
        "ok": True,
        "sha256": sha256(data),
        "dimension": dim,
        "llvm_entities": len(names),
        "llvm_read_back": read_back,
        "llvm_version": toolchain.version,
        "samples": loads,
    }
