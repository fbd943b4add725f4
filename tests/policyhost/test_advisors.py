"""The advisor table: every built-in policy answers exactly one advisor, and the flags come from the record."""

from __future__ import annotations

import pytest

from farm.errors import InputError
from policyhost import advisors
from policyhost.launcher import interactive_flags
from policyhost.runnable import BUILTINS, check_advisor


def test_every_built_in_policy_is_declared_by_exactly_one_advisor() -> None:
    declared = [p for a in advisors.ADVISORS.values() for p in a.builtin_policies]
    assert sorted(declared) == sorted(BUILTINS) and len(set(declared)) == len(declared)
    for a in advisors.ADVISORS.values():
        assert a.default_policy in a.builtin_policies, a.name


def test_flags_are_the_records() -> None:
    assert interactive_flags("/tmp/ch", "inline", "/v.json") == [
        "-mllvm", "-enable-ml-inliner=release", "-mllvm", "-inliner-interactive-channel-base=/tmp/ch",
        "-mllvm", "-inliner-interactive-include-default",
        "-mllvm", "-ml-inliner-ir2vec-vocab-file=/v.json", "-mllvm", "-ir2vec-vocab-path=/v.json"]
    assert interactive_flags("/tmp/ch", "regalloc") == [
        "-mllvm", "-regalloc-enable-advisor=release", "-mllvm", "-regalloc-evict-interactive-channel-base=/tmp/ch"]
    with pytest.raises(InputError, match=r"^an IR2Vec vocabulary does not apply to the regalloc advisor$"):
        interactive_flags("/tmp/ch", "regalloc", "/v.json")
    with pytest.raises(InputError, match=r"^unknown advisor 'priority': use one of inline, regalloc$"):
        interactive_flags("/tmp/ch", "priority")


def test_policy_to_advisor_and_vocabulary_rules() -> None:
    assert advisors.for_policy("spill").name == "regalloc" and advisors.for_policy("never").name == "inline"
    assert advisors.for_policy("model.onnx").name == advisors.DEFAULT
    assert advisors.for_policy("spill", "inline").name == "inline"  # an explicit advisor wins (then checked)
    with pytest.raises(InputError, match=r"^policy spill answers the regalloc advisor, not inline \(built-in "
                                         r"inline policies: heuristic, never, always; or an \.onnx model\)$"):
        check_advisor("spill", "inline")
    with pytest.raises(InputError, match=r"does not apply to the regalloc advisor \(only to: inline\)$"):
        advisors.check_vocab_applies("regalloc")


def test_a_new_advisor_is_one_record() -> None:
    prio = advisors.Advisor(name="priority", description="regalloc priority",
                            enable_flag="-regalloc-enable-priority-advisor=release",
                            channel_flag="-regalloc-priority-interactive-channel-base", advice="priority",
                            builtin_policies=("default-priority",), default_policy="default-priority")
    assert prio.flags("/c") == ["-mllvm", "-regalloc-enable-priority-advisor=release",
                                "-mllvm", "-regalloc-priority-interactive-channel-base=/c"]
    assert not prio.takes_vocab
