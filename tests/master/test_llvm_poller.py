"""The master's change source for the LLVM its nightly LLVM builders follow ([llvm] repo, branch, poll_interval)."""

from __future__ import annotations

import pytest
from buildbot.changes.gitpoller import GitPoller
from buildbot.config.errors import ConfigErrors

from farm.config import load_settings
from farm.errors import FarmError
from master.buildmaster import build_config

PASSWORD = {"MLGO_FARM_BUILDBOT_WORKER_PASSWORD": "pw", "MLGO_FARM_BUILDBOT_ADMIN_PASSWORD": "pw"}


def test_the_nightly_llvm_builder_follows_the_configured_repository() -> None:
    c = build_config(load_settings(env={**PASSWORD, "MLGO_FARM_LLVM_REPO": "https://git.example.org/llvm.git",
                                        "MLGO_FARM_LLVM_BRANCH": "release/22.x"}))
    (poller,) = [s for s in c["change_source"] if isinstance(s, GitPoller)]
    args = poller._config_kwargs  # what Buildbot configures the service with
    assert poller._config_args == ("https://git.example.org/llvm.git",)
    assert (args["branches"], args["pollInterval"]) == (["release/22.x"], 600)
    nightly = {s.name: s._config_kwargs for s in c["schedulers"] if s.name.startswith("nightly-")}
    tot = nightly["nightly-llvm-tot"]
    assert tot["codebases"] == {"": {"repository": "https://git.example.org/llvm.git", "branch": "release/22.x"}}
    assert tot["createAbsoluteSourceStamps"]
    # the others build Debian's sources or the installed LLVM: their revision is what their steps say
    assert "codebases" not in nightly["nightly-triplets-ir"]
    off = build_config(load_settings(env={**PASSWORD, "MLGO_FARM_LLVM_POLL_INTERVAL": "0"}))
    assert not [s for s in off["change_source"] if isinstance(s, GitPoller)]
    assert "codebases" not in {s.name: s._config_kwargs for s in off["schedulers"]}["nightly-llvm-tot"]


@pytest.mark.parametrize("env, message", [
    ({"MLGO_FARM_LLVM_POLL_INTERVAL": "-1"}, "poll_interval must not be negative"),
    ({"MLGO_FARM_LLVM_REPO": ""}, "repo and branch must be set"),
])
def test_a_bad_poller_setting_is_one_line(env: dict[str, str], message: str) -> None:
    with pytest.raises((FarmError, ConfigErrors), match=message):
        load_settings(env={**PASSWORD, **env})


def test_a_nightly_llvm_build_builds_the_commit_its_source_stamp_names() -> None:
    from master.registry import REGISTRY, by_name, render_args

    step = by_name(REGISTRY)["llvm-tot"].steps[0]
    props = {"rev": "main", "revision": "0123456789abcdef0123456789abcdef01234567"}
    argv = render_args(step.args, props.get)
    assert argv[argv.index("--rev") + 1:] == ["main", "--rev", props["revision"]]  # the last --rev wins
    forced = render_args(step.args, {**props, "revision": ""}.get)  # a forced build's source stamp names none
    assert forced[forced.index("--rev"):] == ["--rev", "main"]
