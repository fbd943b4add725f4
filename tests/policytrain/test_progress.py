"""`policy train` and `policy heldout` say how far they are (issue 39, item 2): the packages' stages, the training's
rounds and ES steps, the held-out packages, each as stage, done/total and elapsed lines on stderr (farm/progress.py),
never on stdout, where the verb's answer and `--json` go. Real `mlgo-farm` processes on one-module -Oz corpora."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from farm.toolchain import Toolchain
from policytrain import corpora as run_corpora  # (`corpora` is the fixture below)

MLGO_FARM = str(Path(sys.executable).with_name("mlgo-farm"))
#: a progress line: stage, done/total, elapsed, and an estimate while work is left
LINE = re.compile(r"^(?P<stage>[^:]+: [^:]+): (?P<done>\d+)/(?P<total>\d+) done, \d+m\d\ds(, about \d+m\d\ds left)?$")


@pytest.fixture(scope="module")
def corpora(tmp_path_factory: pytest.TempPathFactory, toolchain: Toolchain) -> dict[str, Path]:
    from workers.corpus import from_sources

    tmp = tmp_path_factory.mktemp("corpora")
    out = {}
    for name, body in (("one", "static int k(int a) { return a + 1; }\nint f(int b) { return k(b) * k(b + 1); }\n"),
                       ("two", "int g(int y) { return y - 1; }\n"), ("three", "int h(int z) { return z << 2; }\n")):
        (tmp / f"{name}-src").mkdir()
        (tmp / f"{name}-src" / f"{name}.c").write_text(body)
        out[name] = from_sources(tmp / f"{name}-src", tmp / name, toolchain, jobs=1, level="Oz").path
    return out


def _stages(stderr: str) -> dict[str, list[tuple[int, int]]]:
    """Each stage's (done, total) in the order printed; every line of stderr must be a progress line."""
    found: dict[str, list[tuple[int, int]]] = {}
    for line in stderr.splitlines():
        m = LINE.match(line)
        assert m, f"not a progress line: {line!r}"
        assert ("about" in line) == (int(m["done"]) < int(m["total"])), line  # an estimate while work is left
        found.setdefault(m["stage"], []).append((int(m["done"]), int(m["total"])))
    return found


def test_train_then_heldout_show_their_stages_on_stderr_only(corpora: dict[str, Path], tmp_path: Path) -> None:
    model = tmp_path / "out.onnx"
    res = subprocess.run([MLGO_FARM, "policy", "train", "--recipe", "smoke", "--train", f"a={corpora['one']}",
                          "--validation", f"b={corpora['two']}", "--evaluation", f"c={corpora['three']}",
                          "-o", str(model), "--jobs", "1"], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res
    # smoke: one round and one ES step, a line each; then the one evaluation package
    assert _stages(res.stderr) == {"policy train: training (rounds and ES steps)": [(1, 2), (2, 2)],
                                   "policy train: held-out packages measured": [(1, 1)]}
    assert "round 1/1: explored 1 modules" in res.stdout and "done, " not in res.stdout

    res = subprocess.run([MLGO_FARM, "policy", "heldout", str(model), "--evaluation", f"c={corpora['three']}",
                          "--json", "--jobs", "1"], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res
    assert [r["package"] for r in json.loads(res.stdout)["packages"]] == ["c"]  # stdout is the JSON alone
    assert _stages(res.stderr) == {"policy heldout: held-out packages measured": [(1, 1)]}


def test_the_packages_stages_count_each_debian_package(monkeypatch, tmp_path: Path, capsys) -> None:
    """Fetching the sources and compiling the corpora (minutes for the nightly's 40 packages) are two stages, a line
    per package; a package given as a directory is not counted."""
    from workers import debsrc

    fetched: list[str] = []
    monkeypatch.setattr(debsrc, "fetch_source", lambda name, dest: fetched.append(name))
    run_corpora.fetch_sources(["zlib", "bzip2"], tmp_path, "policy train")
    given = run_corpora.Package("d", ())
    monkeypatch.setattr(run_corpora, "package_corpus",
                        lambda spec, var, tc, most=None, thinlto=False: run_corpora.Package(spec, ()))
    got = run_corpora.corpora([[("zlib", None, 5), ("d", given, None)], [("bzip2", None, None)]], tmp_path, None,  # type: ignore[arg-type]
                              "policy train")
    assert fetched == ["zlib", "bzip2"] and [[p.name for p in g] for g in got] == [["zlib", "d"], ["bzip2"]]
    assert _stages(capsys.readouterr().err) == {"policy train: package sources fetched": [(1, 2), (2, 2)],
                                                "policy train: package corpora built": [(1, 2), (2, 2)]}
