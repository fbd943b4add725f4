"""A trained eviction policy published like the inliner (policyhost/release.py, publish.py): `policy train-evict` ->
`policy publish --advisor regalloc` -> `store:latest` serving real compiles; a model published for the other advisor,
and a record signed by another farm, refused in one line."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from farm.toolchain import Toolchain
from policyhost import standalone

# the published policies' tests: one farm key for the module (the trained model's record is signed with it)
from tests.policyhost.test_policy_store import KEY, _one_signing_key, cli  # noqa: F401 - the autouse fixture
from tests.policytrain.evictsrc import write_sources


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory, toolchain: Toolchain) -> dict[str, Path]:
    """A smoke eviction policy trained by the CLI on one generated -O2 package, chosen on another."""
    from workers.corpus import from_sources

    tmp = tmp_path_factory.mktemp("evict-store")
    corpora = {n: from_sources(write_sources(tmp / f"{n}-src", files=2, seed=s), tmp / n, toolchain, jobs=2,
                               level="O2").path for n, s in (("alpha", 11), ("beta", 12))}
    model = tmp / "evict.onnx"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLGO_FARM_VOCAB_SIGNING_KEY", KEY)
        res = cli("policy", "train-evict", "--recipe", "smoke", "--train", f"alpha={corpora['alpha']}",
                  "--validation", f"beta={corpora['beta']}", "-o", str(model), timeout=600)
    assert res.returncode == 0, res.stderr
    return {"model": model, "src": tmp / "beta-src" / "m0.c"}


def test_an_eviction_policy_is_published_and_served_as_store_latest(trained: dict[str, Path], tmp_path: Path,
                                                                    toolchain: Toolchain) -> None:
    model = trained["model"]
    record = json.loads(model.with_suffix(".json").read_text())
    res = cli("policy", "publish", "--advisor", "regalloc", str(model))
    assert res.returncode == 0, res.stderr
    version = res.stdout.split()[2]
    assert res.stdout.strip() == f"policy regalloc {version} (published)"
    manifest = json.loads(cli("policy", "show", "--advisor", "regalloc").stdout)
    assert manifest["advisor"] == "regalloc" and manifest["version"] == version
    assert manifest["kind"].startswith("behavioural cloning of LLVM's eviction rule")
    assert manifest["metrics"]["validation_ratio"] == record["validation"]
    assert manifest["validation"]["ok"] and manifest["training"]["splits"] == {"train": ["alpha"],
                                                                               "validation": ["beta"]}
    assert "mask" not in manifest["features"] and "progress" in manifest["features"]
    assert manifest["weights"]["sha256"] == hashlib.sha256(model.with_suffix(".weights").read_bytes()).hexdigest()
    out = tmp_path / "m.o"
    res = cli("policy-cc", "--advisor", "regalloc", "--policy", "store:latest", "--", "clang-22", "-O2", "-c",
              str(trained["src"]), "-o", str(out), timeout=180)
    assert res.returncode == 0 and out.stat().st_size > 0, res.stderr
    # the native host, built as users build it, serves the published weights: the Python host's objects
    down = tmp_path / "down"
    res = cli("policy", "download", "--advisor", "regalloc", "-o", str(down / "model.onnx"))
    assert res.returncode == 0 and (down / "model.weights").is_file(), res.stderr
    exe = tmp_path / "mlgo-policy-host"
    subprocess.run([str(toolchain.path("clang")), "-O2", "-o", str(exe), str(standalone.NATIVE_SOURCE), "-lm"],
                   check=True)
    res = subprocess.run([str(exe), "--weights", str(down / "model.weights"), "--", "clang-22", "-O2", "-c",
                          str(trained["src"]), "-o", str(tmp_path / "n.o")], capture_output=True, text=True,
                         timeout=180)
    assert res.returncode == 0 and (tmp_path / "n.o").read_bytes() == out.read_bytes(), res.stderr
    # the inliner's store is another shelf: nothing of this advisor is in it
    assert version not in cli("policy", "list", "--advisor", "inline").stdout


def test_an_eviction_model_is_not_published_as_an_inliner_nor_with_another_farms_record(
        trained: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    res = cli("policy", "publish", "--advisor", "inline", str(trained["model"]))
    lines = res.stderr.strip().splitlines()
    assert res.returncode != 0 and len(lines) == 1 and "per inlining decision" in lines[0], res.stderr
    monkeypatch.setenv("MLGO_FARM_VOCAB_SIGNING_KEY", "another-farm")
    res = cli("policy", "publish", "--advisor", "regalloc", str(trained["model"]))
    lines = res.stderr.strip().splitlines()
    assert res.returncode != 0 and len(lines) == 1 and "signed with another farm key" in lines[0], res.stderr


def test_the_version_page_gives_lines_that_build_with_a_profile_and_the_native_host(trained: dict[str, Path],
                                                                                    tmp_path: Path,
                                                                                    toolchain: Toolchain) -> None:
    """The policy page's lines, run as written: the native host built, the program instrumented, trained, merged and
    built per file through the host with the profile; it computes what the plain build computes."""
    import html
    import shutil

    from farm.config import load_settings
    from master.dashboard.app import create_app
    from tests.conftest import CSRC
    from tests.docblocks import run_sh

    res = cli("policy", "publish", "--advisor", "regalloc", str(trained["model"]))  # published, or already
    assert res.returncode == 0, res.stderr
    version = res.stdout.split()[2]
    settings = load_settings()
    page = create_app(settings).test_client().get(f"/policies/regalloc/{version}/").get_data(as_text=True)

    def pre(pre_id: str) -> list[str]:
        return html.unescape(page.split(f'<pre id="{pre_id}">')[1].split("</pre>")[0]).splitlines()

    fetch, build = pre("evict-fetch"), pre("evict-pgo")
    weights_url = settings.buildbot.dashboard(f"store/policies/regalloc/{version}/model.weights")
    host_url = settings.buildbot.dashboard("policies/host/mlgo-policy-host.c")
    assert fetch[:4] == [f"curl -fsSLO {u}{ext}" for u in (weights_url, host_url) for ext in ("", ".sha256")]
    assert fetch[4] == "sha256sum -c model.weights.sha256 mlgo-policy-host.c.sha256"
    assert "--weights $mlgo/model.weights -- clang-22 -O2 -fprofile-use=prog.profdata" in build[1]
    # what the curl lines fetch, taken from the store and the checkout instead (no server here)
    where = tmp_path / "prog"
    shutil.copytree(CSRC, where)
    down = tmp_path / "mlgo"
    assert cli("policy", "download", "--advisor", "regalloc", "--version", version, "-o",
               str(down / "model.onnx")).returncode == 0
    shutil.copy(standalone.NATIVE_SOURCE, down)
    run_sh(f"cd {down}\n{fetch[5]}\n{fetch[6]}\ncd {where}\n" + "\n".join(build).replace("TRAINING-INPUT", "2000"),
           where, toolchain)
    assert (where / "prog.profdata").is_file() and len(list((where / "pgo").glob("*.o"))) == len(list(CSRC.glob("*.c")))
    run_sh("clang-22 -O2 *.c -o plain", where, toolchain)
    ran = [subprocess.run([str(where / p), "3000"], capture_output=True, text=True, timeout=120)
           for p in ("prog", "plain")]
    assert ran[0].returncode == ran[1].returncode == 0 and ran[0].stdout == ran[1].stdout
