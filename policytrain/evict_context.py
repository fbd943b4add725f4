"""MIR2Vec embeddings of the function an eviction decision is in: the one view of its code an eviction policy can
have with LLVM 22.1.8.

The issue asked for embeddings of each candidate live range's instructions. 22.1.8 cannot give them: the advisor's
`instructions`, `instructions_mapping`, `mbb_frequencies` and `mbb_mapping` features exist only in an LLVM built with
TFLite (`RA_EVICT_*_DEVELOPMENT_FEATURES`, MLRegallocEvictAdvisor.cpp), and Debian's clang-22 refuses
`-regalloc-enable-development-features`; the 21 release features say nothing about which instructions a candidate
covers. What the channel does say is the function: every decision comes after a `{"context": NAME}` line. So a
policy can read the embedding of the whole function, the same vector for all of that function's decisions.

The embedding is MIR2Vec's symbolic one (llvm/lib/CodeGen/MIR2Vec.cpp) with unit weights: per instruction, its
opcode's vector plus each operand's (a common operand kind, a physical register's class, a virtual register's
class), summed over the function; then scaled to unit length, so a policy sees the mix of the code, not its size
(size is in the features already). It is read off the MIR of the module allocated by LLVM's own advisor (stopped
after `virtregrewriter`, what the reward reads: policytrain/evict_reward.py), through the farm's MIR reader
(workers/mirtriplets.py, which does not crash where 22.1.8's `llvm-ir2vec` does). That MIR depends only on the
module and its flags, never on the policy, so the vector a decision sees is the same in training and in a build.
A function the reader cannot read, or one the vocabulary has no vector for, gets zeros (and is counted).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from farm.errors import InputError
from farm.toolchain import Toolchain


class FunctionEmbedder:
    """A MIR2Vec vocabulary (LLVM's JSON: Opcodes, CommonOperands, PhysicalRegisters, VirtualRegisters) applied to
    the functions of allocated MIR."""

    def __init__(self, vocab: Mapping[str, Mapping[str, list[float]]], name: str) -> None:
        self.vocab, self.name = vocab, name
        dims = {len(v) for sec in vocab.values() for v in sec.values()}
        if len(dims) != 1:
            raise InputError(f"MIR vocabulary {name}: vectors of {len(dims)} different lengths")
        self.dim = dims.pop()
        self._table: np.ndarray | None = None  # entity id -> vector, once the toolchain's entity list is known
        self._ids: object = None

    @classmethod
    def load(cls, path: str | Path) -> FunctionEmbedder:
        """A MIR2Vec vocabulary file, checked as the farm checks one it publishes (one line if it is not one)."""
        from farm import vocabfile

        p = Path(path)
        if not p.is_file():
            raise InputError(f"MIR vocabulary {p}: not a regular file")
        vocab = vocabfile.parse(p.read_bytes(), str(p))
        vocabfile.check_schema("mir", vocab, str(p))
        return cls(vocab, p.name)

    def _entity_table(self, ids) -> np.ndarray:
        from farm.embeddings import placement

        if self._table is None or self._ids is not ids:
            table = np.zeros((len(ids.names), self.dim))
            for i, (section, key) in enumerate(placement("mir", list(ids.names))):
                vec = self.vocab.get(section, {}).get(key)
                if vec is not None:
                    table[i] = vec
            self._table, self._ids = table, ids
        return self._table

    def embed(self, toolchain: Toolchain, mir_file: Path, timeout: float = 300) -> dict[str, np.ndarray]:
        """Function name -> unit-length embedding, for every function of an allocated MIR file the reader reads."""
        from workers import mirtriplets

        text = Path(mir_file).read_text(errors="replace")
        if "\nname:" not in text:  # a module of data only: nothing to embed (and llvm-ir2vec refuses to list)
            return {}
        ids = mirtriplets.vocabulary(toolchain, mir_file, timeout, subject=str(mir_file))
        table = self._entity_table(ids)
        out = {}
        for fn in mirtriplets.extract(ids, text).functions:
            out[fn.name] = unit(function_sum(fn.triplets, table))
        return out


def function_sum(triplets: list[tuple[int, int, int]], table: np.ndarray) -> np.ndarray:
    """Sum over a function's instructions of opcode + operand vectors, from its triplets: each `Next` triplet's head
    is an instruction's opcode and the last one's tail the final instruction's; each `Arg` triplet's tail is an
    operand (a one-instruction function has no `Next`: its opcode is its operands' head)."""
    from workers.mirtriplets import NEXT_RELATION

    total = np.zeros(table.shape[1])
    nexts = [t for t in triplets if t[2] == NEXT_RELATION]
    opcodes = [h for h, _, _ in nexts] + [nexts[-1][1]] if nexts else [triplets[0][0]] if triplets else []
    for i in opcodes:
        total += table[i]
    for _, tail, rel in triplets:
        if rel != NEXT_RELATION:
            total += table[tail]
    return total


def unit(v: np.ndarray) -> np.ndarray:
    n = float(np.linalg.norm(v))
    return v / n if n > 0 else v
