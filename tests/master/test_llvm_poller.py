"""The master's change source for the LLVM its nightly LLVM builders follow ([llvm] repo, branch, poll_interval)."""

from __future__ import annotations

from pathlib import Path

import pytest
from buildbot.changes.base import ReconfigurablePollingChangeSource as Polling
from buildbot.changes.gitpoller import GitPoller
from buildbot.changes.pb import PBChangeSource
from buildbot.config.errors import ConfigErrors

from farm.config import load_settings
from farm.errors import FarmError
from master.buildmaster import build_config
from master.schedulers import llvm_poller

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
    ({"MLGO_FARM_LLVM_REPO": "https://git.example.org/llvm.git", "MLGO_FARM_LLVM_BRANCH": " "},
     "branch must be set while repo is"),
])
def test_a_bad_poller_setting_is_one_line(env: dict[str, str], message: str) -> None:
    with pytest.raises((FarmError, ConfigErrors), match=message):
        load_settings(env={**PASSWORD, **env})


def test_the_default_settings_poll_no_remote_repository(tmp_path: Path) -> None:
    """The embedded default names no repository: a master (the single-machine stack's too) reaches out to nothing;
    the only change source is the one that listens (`buildbot sendchange`)."""
    s = load_settings(tmp_path / "none.toml", env=PASSWORD)
    c = build_config(s)
    assert not [cs for cs in c["change_source"] if isinstance(cs, Polling)], c["change_source"]
    assert (s.llvm.repo, s.llvm.polls) == ("", False)
    assert all(isinstance(cs, PBChangeSource) for cs in c["change_source"])
    nightly = {sch.name: sch._config_kwargs for sch in c["schedulers"] if sch.name.startswith("nightly-")}
    assert "codebases" not in nightly["nightly-llvm-tot"]
    assert llvm_poller("", "main", 600) == []


def test_a_nightly_llvm_build_builds_the_commit_its_source_stamp_names() -> None:
    from master.registry import REGISTRY, by_name
    from master.stepspec import render_args

    step = by_name(REGISTRY)["llvm-tot"].steps[0]
    props = {"rev": "main", "revision": "0123456789abcdef0123456789abcdef01234567"}
    argv = render_args(step.args, props.get)
    assert argv[argv.index("--rev") + 1:] == ["main", "--rev", props["revision"]]  # the last --rev wins
    forced = render_args(step.args, {**props, "revision": ""}.get)  # a forced build's source stamp names none
    assert forced[forced.index("--rev"):] == ["--rev", "main"]
