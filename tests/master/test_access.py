"""Who may control the master, what a force may set, and which requests Buildbot may merge:
the rules, on hand-made inputs (tests/master/test_master_live.py checks them on a real master)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest
from buildbot.www.auth import UserPasswordAuth
from buildbot.www.authz.authz import Authz
from buildbot.www.authz.endpointmatchers import AnyControlEndpointMatcher
from buildbot.www.authz.roles import RolesFromUsername

from farm.config import load_settings
from farm.errors import FarmError, InputError
from master.buildmaster import OPERATOR, build_config
from master.collapse import build_inputs, collapse_requests, same_inputs
from master.forcing import Field, form_fields, plan
from master.layout import (
    PASSWORD_ENV,
    admin_password,
    admin_password_file,
    client_password,
    client_user,
    read_users,
    users_file,
    web_users,
)


def _settings(**buildbot):
    s = load_settings()
    return dataclasses.replace(s, buildbot=dataclasses.replace(s.buildbot, worker_password="pw", **buildbot))


def _write_users(path: Path, text: str, mode: int = 0o600) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.chmod(path, mode)
    return path


# -- logins -------------------------------------------------------------------------------------

def test_admin_password_is_generated_once_0600_and_never_in_the_repository():
    s = _settings()
    with pytest.raises(FarmError, match="no web admin password: set MLGO_FARM_BUILDBOT_ADMIN_PASSWORD"):
        admin_password(s)
    made = admin_password(s, create=True)
    path = admin_password_file(s)
    assert path.stat().st_mode & 0o777 == 0o600 and path.parent.stat().st_mode & 0o077 == 0
    assert admin_password(s, create=True) == made == admin_password(s)
    assert not str(path).startswith(str(Path(__file__).resolve().parents[2]))
    assert admin_password(_settings(admin_password="from-config")) == "from-config"


def test_more_users_come_from_a_private_file():
    s = _settings(admin_password="a")
    assert web_users(s) == {"admin": "a"}
    _write_users(users_file(s), "# operators\nalice:pw-a\n\n  bob:pw:with:colons\n")
    assert web_users(s) == {"admin": "a", "alice": "pw-a", "bob": "pw:with:colons"}
    _write_users(users_file(s), "alice:pw\n", mode=0o644)
    with pytest.raises(InputError, match="readable by others: chmod 600"):
        read_users(users_file(s))
    for bad, message in (("alice\n", ":1: expected name:password"), ("alice:\n", ":1: expected"),
                         ("-x:pw\n", ":1: expected"), ("a:1\na:2\n", ":2: user 'a' is listed twice"),
                         ("admin:pw\n", "'admin' is \\[buildbot\\] admin_user")):
        _write_users(users_file(s), bad)
        with pytest.raises(InputError, match=message):
            web_users(s)


def test_master_config_has_buildbot_auth_and_a_role_for_every_control_action():
    s = _settings(admin_password="a")
    _write_users(users_file(s), "alice:pw-a\n")
    www = build_config(s)["www"]
    auth, authz = www["auth"], www["authz"]
    assert isinstance(auth, UserPasswordAuth) and isinstance(authz, Authz)
    (checker,) = auth.checkers
    assert checker.users == {b"admin": b"a", b"alice": b"pw-a"}
    (rule,) = authz.allowRules
    assert isinstance(rule, AnyControlEndpointMatcher) and rule.role == OPERATOR and rule.defaultDeny
    (roles,) = authz.roleMatchers
    assert isinstance(roles, RolesFromUsername) and sorted(roles.usernames) == ["admin", "alice"]
    assert roles.getRolesFromUser({"username": "alice"}) == [OPERATOR]
    assert roles.getRolesFromUser({"anonymous": True}) == []


def test_the_client_login_comes_from_configuration_or_the_admin_secret(monkeypatch: pytest.MonkeyPatch):
    s = _settings(admin_password="a")
    assert (client_user(s), client_password(s, "admin")) == ("admin", "a")
    with pytest.raises(FarmError, match=f"no password for web user 'alice': set {PASSWORD_ENV}"):
        client_password(s, client_user(s, "alice"))
    with pytest.raises(FarmError, match="no password for web user 'admin'"):
        client_password(_settings(), "admin")  # nothing configured, nothing generated
    monkeypatch.setenv("MLGO_FARM_BUILDBOT_CLIENT_USER", "alice")
    monkeypatch.setenv(PASSWORD_ENV, "pw-a")
    remote = load_settings()
    assert (client_user(remote), client_password(remote, "alice")) == ("alice", "pw-a")
    assert client_user(remote, "bob") == "bob"


# -- what a force may set ----------------------------------------------------------------------

def _description(*fields: dict) -> dict:
    """A force scheduler as Buildbot 4.3 describes it over REST (`GET /api/v2/forceschedulers/NAME`)."""
    own = {"type": "nested", "fullName": None, "fields": [
        {"type": "username", "fullName": "username"}, {"type": "text", "fullName": "reason"},
        {"type": "int", "fullName": "priority"}]}
    source = {"type": "nested", "fullName": "", "fields": [{"type": "fixed", "fullName": "branch"}]}
    return {"all_fields": [own, source, *fields]}


TRIPLETS = form_fields(_description(
    {"type": "list", "fullName": "corpus_source", "choices": ["debian"], "strict": True, "regex": None},
    {"type": "list", "fullName": "corpus_input", "choices": ["zlib", "lua5.4"], "strict": True, "regex": None}))
LLVM = form_fields(_description({"type": "text", "fullName": "rev", "regex": r"(?!-)(?:[a-z]+)\Z"}))
REGRESS = form_fields(_description({"type": "list", "fullName": "bench", "choices": ["lua", "zlib"], "strict": True}))


def test_form_fields_are_the_properties_not_buildbots_own_fields():
    assert {
        "corpus_source": Field("corpus_source", ("debian",), True, None),
        "corpus_input": Field("corpus_input", ("zlib", "lua5.4"), True, None)} == TRIPLETS
    assert LLVM["rev"].regex == r"(?!-)(?:[a-z]+)\Z"
    assert form_fields(_description()) == {}


@pytest.mark.parametrize("forms, props, message", [
    ({"triplets-ir": TRIPLETS}, {"llvm_bin": "/tmp/x"}, "property 'llvm_bin' is not a parameter of triplets-ir "
                                                        "(parameters: corpus_input, corpus_source)"),
    ({"triplets-ir": TRIPLETS}, {"reason": "x"}, "'reason' is not a parameter"),
    ({"triplets-ir": TRIPLETS}, {"corpus_source": "--help"}, "triplets-ir: corpus_source='--help': a value may not"),
    ({"triplets-ir": TRIPLETS}, {"corpus_source": "build"}, "corpus_source='build' is not one of: debian"),
    ({"triplets-ir": TRIPLETS}, {"corpus_input": "/srv/src"}, "corpus_input='/srv/src' is not one of: zlib, lua5.4"),
    ({"triplets-ir": TRIPLETS}, {"corpus_input": ""}, "corpus_input='' is not one of"),
    ({"llvm-tot": LLVM}, {"rev": "Main"}, r"rev='Main' does not match (?!-)"),
    ({"a": TRIPLETS, "b": REGRESS}, {"bench": "bzip2"}, "b: bench='bzip2' is not one of: lua, zlib"),
])
def test_plan_refuses_undeclared_properties_and_values_outside_the_form(forms, props, message):
    with pytest.raises(InputError) as e:
        plan(forms, props)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_plan_sends_each_builder_the_properties_it_declares():
    got = plan({"triplets-ir": TRIPLETS, "regress": REGRESS, "llvm-tot": LLVM},
               {"corpus_input": "lua5.4", "bench": "lua", "rev": "main"})
    assert got == {"triplets-ir": {"corpus_input": "lua5.4"}, "regress": {"bench": "lua"}, "llvm-tot": {"rev": "main"}}
    assert plan({"farm-selftest": {}}, {}) == {"farm-selftest": {}}


# -- which requests Buildbot may merge ---------------------------------------------------------

def _props(**values) -> dict:
    """Buildset properties as the data API gives them: name -> (value, source)."""
    sources = {"owner": "Force Build Form", "reason": "Force Build Form", "scheduler": "Scheduler"}
    return {k: (v, sources.get(k, "Force Build Form")) for k, v in values.items()}


FORCED = _props(corpus_source="debian", corpus_input="zlib", owner="admin", reason="r", scheduler="force-triplets-ir")


@pytest.mark.parametrize("other, same", [
    (FORCED, True),
    ({**FORCED, "owner": ("alice", "Force Build Form"), "reason": ("again", "Force Build Form")}, True),
    ({**FORCED, "scheduler": ("nightly-triplets-ir", "Scheduler")}, True),
    ({**FORCED, "corpus_input": ("zlib", "Trigger")}, True),            # same value, whoever set it
    ({**FORCED, "corpus_input": ("lua5.4", "Force Build Form")}, False),
    ({**FORCED, "dataset": ("ir-0123456789abcdef", "Trigger")}, False),  # one more input
    ({**FORCED, "upstream_worker": ("big1", "Trigger")}, False),
])
def test_only_requests_with_the_same_build_inputs_may_merge(other, same):
    assert same_inputs(FORCED, other) is same
    assert same_inputs(other, FORCED) is same


def test_bookkeeping_is_left_out_of_the_build_inputs():
    assert build_inputs(FORCED) == {"corpus_source": "debian", "corpus_input": "zlib"}


def test_collapse_requests_is_the_master_wide_callable():
    c = build_config(_settings(admin_password="a"))
    assert c["collapseRequests"] is collapse_requests
