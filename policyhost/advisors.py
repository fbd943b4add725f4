"""LLVM's MLGO advisors, declared once: everything the farm knows about driving each one.

An advisor is a decision point inside LLVM that can ask an external policy over the interactive
channel (the inliner; the register allocator's eviction advisor). What differs between them is
data: which `-mllvm` flags put it in interactive mode, the name of the advice it wants, which
feature carries LLVM's own default decision, which one masks the candidates it may choose,
whether an IR2Vec vocabulary feeds it, and the built-in policies that answer it. The launcher,
the host, the policies, the comparison and the Buildbot registry all read this table, so adding
an advisor (regalloc priority, a future IR2Vec-fed one) is one record here and its tests.

This module is on every compile's path (the lean launcher imports it), so it imports nothing
beyond the farm's error types.
"""

from __future__ import annotations

from farm.errors import InputError


class Advisor:
    """One MLGO advisor; see the module docstring for what each field is for."""

    __slots__ = ("advice", "builtin_policies", "channel_flag", "default_feature", "default_policy", "description",
                 "enable_flag", "extra_flags", "mask_feature", "name", "thinlto_backends", "vocab_flags")

    def __init__(self, *, name: str, description: str, enable_flag: str, channel_flag: str, advice: str,
                 extra_flags: tuple[str, ...] = (), default_feature: str | None = None,
                 mask_feature: str | None = None, vocab_flags: tuple[str, ...] = (),
                 builtin_policies: tuple[str, ...] = (), default_policy: str = "",
                 thinlto_backends: bool = True) -> None:
        self.name, self.description = name, description
        self.enable_flag, self.channel_flag, self.extra_flags = enable_flag, channel_flag, extra_flags
        self.advice, self.default_feature, self.mask_feature = advice, default_feature, mask_feature
        #: `-mllvm` options that hand the vocabulary to the advisor ({vocab} is its path); empty: none applies
        self.vocab_flags = vocab_flags
        self.builtin_policies, self.default_policy = builtin_policies, default_policy
        #: whether LLVM consults the advisor in a distributed ThinLTO backend (`clang -x ir -fthinlto-index=`)
        self.thinlto_backends = thinlto_backends

    @property
    def takes_vocab(self) -> bool:
        return bool(self.vocab_flags)

    def flags(self, channel_base: str, vocab: str | None = None) -> list[str]:
        """The `-mllvm` options for one compile whose channel pair is `channel_base`.{in,out}."""
        opts = [self.enable_flag, f"{self.channel_flag}={channel_base}", *self.extra_flags]
        if vocab is not None:
            if not self.takes_vocab:
                raise InputError(f"an IR2Vec vocabulary does not apply to the {self.name} advisor")
            opts += [f.format(vocab=vocab) for f in self.vocab_flags]
        return [x for o in opts for x in ("-mllvm", o)]


ADVISORS: dict[str, Advisor] = {a.name: a for a in (
    Advisor(
        name="inline",
        description="the inliner (size: -Oz)",
        enable_flag="-enable-ml-inliner=release",
        channel_flag="-inliner-interactive-channel-base",
        # LLVM's own decision travels with every observation: the `heuristic` policy answers it
        extra_flags=("-inliner-interactive-include-default",),
        advice="inlining_decision",
        default_feature="inlining_default",
        # 22.1.8: the inliner option turns the embedding features on; the vocabulary itself is read
        # from -ir2vec-vocab-path
        vocab_flags=("-ml-inliner-ir2vec-vocab-file={vocab}", "-ir2vec-vocab-path={vocab}"),
        builtin_policies=("heuristic", "never", "always"),
        default_policy="heuristic",
    ),
    Advisor(
        name="regalloc",
        description="the greedy register allocator's eviction advisor (speed: -O2)",
        enable_flag="-regalloc-enable-advisor=release",
        channel_flag="-regalloc-evict-interactive-channel-base",
        advice="index_to_evict",
        mask_feature="mask",
        builtin_policies=("spill",),
        default_policy="spill",
        # 22.1.8: a distributed ThinLTO backend builds the *default* eviction advisor even with the release flags and
        # a channel (`-mllvm -debug-pass=Structure` names it; the channel is never opened), while the same flags on a
        # per-file compile build the release one: a policy cannot act there (docs/policies.md)
        thinlto_backends=False,
    ),
)}

NAMES = tuple(ADVISORS)
#: the advisor a launcher drives when none is named
DEFAULT = NAMES[0]
#: the feature that marks which candidates an advisor may choose (the host enforces it for any policy)
MASK_FEATURES = frozenset(a.mask_feature for a in ADVISORS.values() if a.mask_feature)


def get(name: str) -> Advisor:
    """The advisor called `name`, or a one-line InputError."""
    try:
        return ADVISORS[name]
    except KeyError:
        raise InputError(f"unknown advisor {name!r}: use one of {', '.join(NAMES)}") from None


def check_vocab_applies(advisor: str) -> None:
    if not get(advisor).takes_vocab:
        takers = ", ".join(a.name for a in ADVISORS.values() if a.takes_vocab)
        raise InputError(f"an IR2Vec vocabulary does not apply to the {advisor} advisor (only to: {takers})")


def serving(policy: str) -> Advisor | None:
    """The advisor a built-in policy answers (None for a model file or an unknown name)."""
    return next((a for a in ADVISORS.values() if policy in a.builtin_policies), None)


def for_policy(policy: str, advisor: str | None = None) -> Advisor:
    """`advisor` if given, else the one a built-in policy answers, else the first (the inliner)."""
    if advisor is not None:
        return get(advisor)
    return serving(policy) or next(iter(ADVISORS.values()))
