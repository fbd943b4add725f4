"""The farm's home (issue 48, items 4 and 5): `var/` and the store are found from any directory, and a request for
`latest` that finds none says where it looked and, when a candidate waits, which one, why it was held back and the
promote line; the dashboard's `.../latest/` pages say the same on a 404 page. Real parts: the `mlgo-farm` entry
point run from another directory with a temporary configuration, and the dashboard through Flask's test client over
a FileStore holding a candidate."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from farm.artifacts import POLICIES, VOCABULARIES
from farm.artifacts.verdict import POLICY_SIZE, Check, Verdict
from farm.config import load_settings
from farm.errors import InputError
from farm.objectstore import FileStore, open_store

MLGO_FARM = str(Path(sys.executable).with_name("mlgo-farm"))
HELD = "geomean .text 1.0012x the heuristic on 3 benchmarks: above the bar 1.0000x"


def _held_back(record, baseline) -> Verdict:
    return Verdict((Check(POLICY_SIZE, False, HELD, value=1.0012),), None)


def publish_policy_candidate(store: FileStore, advisor: str = "inline") -> str:
    data = f"onnx bytes of a {advisor} policy".encode()
    manifest = {"advisor": advisor, "sha256": hashlib.sha256(data).hexdigest(), "llvm": {"llvm_version": "22.1.8"},
                "vocab_version": None, "metrics": {}}
    out = POLICIES.publish(store, {"model.onnx": data}, manifest, judge=_held_back, when=1.8e9)
    assert out["state"] == "candidate" and out["latest"] is None
    return out["version"]


def publish_vocab_candidate(store: FileStore) -> str:
    data = b'{"Opcodes": {"add": [0.5, 0.25]}}'
    manifest = {"kind": "ir", "dimension": 2, "sha256": hashlib.sha256(data).hexdigest(), "lineage": {}}
    out = VOCABULARIES.publish(store, {"vocab.json": data}, manifest, judge=_held_back, when=1.8e9)
    assert out["state"] == "candidate" and out["latest"] is None
    return out["version"]


def _farm_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLGO_FARM_")}
    env.update(MLGO_FARM_CACHE_ENABLED="false", MLGO_FARM_LLVM_POLL_INTERVAL="0", **extra)
    return env


def _error_line(res: subprocess.CompletedProcess) -> str:
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 6 and len(lines) == 1 and lines[0].startswith("mlgo-farm: error: "), res.stderr
    return lines[0].removeprefix("mlgo-farm: error: ")


def test_policy_download_from_another_directory_names_the_store_and_the_held_back_candidate(tmp_path: Path) -> None:
    """The configuration file sets `var_dir = "var"`: read against the file's directory, not the current one, so a
    `policy download` from elsewhere finds the store, and tells of the candidate instead of "nothing published"."""
    home, elsewhere = tmp_path / "farm", tmp_path / "elsewhere"
    home.mkdir()
    elsewhere.mkdir()
    (home / "mlgo-farm.toml").write_text('[paths]\nvar_dir = "var"\n')
    version = publish_policy_candidate(FileStore(home / "var" / "store"))
    res = subprocess.run([MLGO_FARM, "policy", "download", "-o", "p.onnx"], cwd=elsewhere, capture_output=True,
                         text=True, timeout=120, env=_farm_env(MLGO_FARM_CONFIG=str(home / "mlgo-farm.toml")))
    store = (home / "var" / "store").as_uri()
    assert _error_line(res) == (
        f"no inline policy is latest in {store}; the newest candidate {version} was held back ({POLICY_SIZE}: {HELD}): "
        f"mlgo-farm policy promote --advisor inline {version} --reason '...' makes it latest")
    assert not (elsewhere / "p.onnx").exists() and not (elsewhere / "var").exists()


def test_vocab_download_under_mlgo_farm_home_finds_its_var_and_says_a_candidate_waits(tmp_path: Path) -> None:
    """No MLGO_FARM_CONFIG: `$MLGO_FARM_HOME/mlgo-farm.toml` (absent here) and `$MLGO_FARM_HOME/var`, whatever the
    current directory; only a candidate vocabulary: its name, why, and the `vocab promote` line."""
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    elsewhere.mkdir()
    version = publish_vocab_candidate(FileStore(home / "var" / "store"))
    res = subprocess.run([MLGO_FARM, "vocab", "download", "--kind", "ir", "-o", "v.json"], cwd=elsewhere,
                         capture_output=True, text=True, timeout=120, env=_farm_env(MLGO_FARM_HOME=str(home)))
    assert _error_line(res) == (
        f"no ir vocabulary is latest in {(home / 'var' / 'store').as_uri()}; the newest candidate {version} was held "
        f"back ({POLICY_SIZE}: {HELD}): mlgo-farm vocab promote ir {version} --reason '...' makes it latest")
    empty = subprocess.run([MLGO_FARM, "vocab", "download", "--kind", "mir", "-o", "v.json"], cwd=elsewhere,
                           capture_output=True, text=True, timeout=120, env=_farm_env(MLGO_FARM_HOME=str(home)))
    assert _error_line(empty) == f"no mir vocabulary has been published to {(home / 'var' / 'store').as_uri()}"


def test_relative_paths_are_read_against_the_file_that_set_them_else_the_home(tmp_path: Path) -> None:
    from farm.config import farm_home

    conf = tmp_path / "conf" / "mlgo-farm.toml"
    conf.parent.mkdir()
    conf.write_text('[paths]\nvar_dir = "data/var"\n[store]\nurl = "file:objects"\n')
    s = load_settings(conf, env={})
    assert s.var_dir == tmp_path / "conf" / "data" / "var"
    assert s.store_url == (tmp_path / "conf" / "objects").as_uri()
    home = {"MLGO_FARM_HOME": str(tmp_path / "h")}
    assert farm_home(home) == tmp_path / "h"
    assert load_settings(tmp_path / "none.toml", env=home).var_dir == tmp_path / "h" / "var"
    assert load_settings(tmp_path / "none.toml", env=home).store_url == (tmp_path / "h" / "var" / "store").as_uri()
    over = load_settings(conf, env={**home, "MLGO_FARM_PATHS_VAR_DIR": "v2"})  # the environment: against the home
    assert over.var_dir == tmp_path / "h" / "v2"
    assert load_settings(None, env={}).var_dir == Path(__file__).resolve().parents[2] / "var"  # the checkout's
    with pytest.raises(InputError, match="not an absolute file URL"):
        open_store("file://var/store")


def test_latest_pages_without_a_latest_are_404_pages_naming_the_candidate(tmp_path: Path) -> None:
    from master.dashboard.app import create_app

    store = FileStore(tmp_path / "store")
    policy, vocab = publish_policy_candidate(store), publish_vocab_candidate(store)
    c = create_app(load_settings(), store=store, history=tmp_path / "history.sqlite").test_client()
    for path, version, promote, page in (
            ("/policies/inline/latest/", policy, f"mlgo-farm policy promote --advisor inline {policy} --reason",
             f"/policies/inline/{policy}/"),
            ("/vocab/ir/latest/", vocab, f"mlgo-farm vocab promote ir {vocab} --reason", f"/vocab/ir/{vocab}/")):
        r = c.get(path)
        text = r.get_data(as_text=True)
        assert r.status_code == 404 and r.content_type.startswith("text/html"), text
        assert f'<a id="candidate" href="{page}">{version}</a>' in text
        assert HELD in text and promote in text and store.url in text
    r = c.get("/policies/regalloc/latest/")
    text = r.get_data(as_text=True)
    assert r.status_code == 404 and f"No regalloc policy has been published to <code>{store.url}</code>" in text
