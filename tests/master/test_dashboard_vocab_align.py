"""The vocabulary diff when the entities trained in both versions do not fix the alignment: the page says so and
ranks by raw drift, instead of showing one of the maps that fit equally well (which the CPU's BLAS kernel picked)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from farm.config import load_settings
from farm.objectstore import FileStore
from farm.vocabfile import dumps
from master.dashboard import vocabdiff
from master.dashboard.app import create_app
from tests.master.test_dashboard import V1, _manifest, _vocab, populate
from tests.vocabgen.test_compare import _plane_and_two
from vocabgen.compare import cosine_drift

V3 = "20260301-llvm22.1.8-ir-d4-dddddddddddd"


def _flattened() -> bytes:
    """V1 with its last coordinate zeroed: every vector of one version in a three-dimensional subspace, so the
    fourth axis of the map may keep or flip its sign and both fit the seven entities equally well."""
    return dumps({s: {k: [*v[:3], 0.0] for k, v in e.items()} for s, e in json.loads(_vocab()).items()})


def _diff_page(tmp_path: Path, a: str, vocabs: dict[str, bytes]) -> str:
    """The diff page from `a` to the last of `vocabs` (versions put next to populate()'s)."""
    populate(tmp_path / "store")
    store = FileStore(tmp_path / "store")
    for version, data in vocabs.items():
        store.put(f"vocab/ir/{version}/vocab.json", data)
        manifest = _manifest(version, data, {}, "2026-03-01T00:00:00Z", 0.4)
        store.put(f"vocab/ir/{version}/manifest.json", json.dumps(manifest).encode())
    c = create_app(load_settings(), store=store, history=tmp_path / "h.sqlite").test_client()
    return c.get(f"/vocab/ir/diff?a={a}&b={version}").get_data(as_text=True)


def test_a_diff_whose_anchors_leave_the_map_open_has_no_aligned_drift_and_says_so(tmp_path: Path):
    page = _diff_page(tmp_path, V1, {V3: _flattened()})
    assert "fitted on the 7 entities trained in both;" in page and "measured by the map the others" not in page
    note = page.split('<p id="unaligned">')[1].split("</p>")[0]
    assert note.startswith("Alignment was not possible: the 7\nentities trained in both do not fix the map"), note
    assert "mean aligned drift\n<b>-</b>" in page.split('<p id="overall">')[1].split("</p>")[0]
    rows = page.split('<table id="top">')[1].split("</table>")[0].split("<tr")[2:]
    cells = [r.split('<td class="num">') for r in rows]  # aligned drift, NN overlap, structure, raw drift
    assert len(rows) == 7 and all(c[1].startswith("-</td>") and not c[2].startswith("-") for c in cells), rows
    raw = [float(c[4].split("<")[0]) for c in cells]
    assert raw == sorted(raw, reverse=True), raw  # ranked by raw drift, the one measure left to rank by
    assert "cosine drift (1 - cos) between the two versions" in page.split('<div id="drift-plot">')[1]


def test_the_diff_reports_the_raw_drift_exactly_and_no_aligned_value_when_the_map_is_open():
    a = np.array([v for e in json.loads(_vocab()).values() for v in e.values()])
    b = a.copy()
    b[:, 3] = 0
    d = vocabdiff.diff(_vocab(), {}, _flattened(), {})
    assert d.anchors == 7 and not d.fixed and d.held_out == 0
    assert all(e.aligned is None for e in d.entities) and all(e.overlap is not None for e in d.entities)
    assert np.allclose([e.drift for e in d.entities], cosine_drift(a, b), rtol=0, atol=1e-12)
    assert [e.drift for e in d.top()] == sorted((e.drift for e in d.entities), reverse=True)


def test_anchors_the_others_cannot_fix_the_map_without_are_measured_by_the_map_of_all(tmp_path: Path):
    """Five of these seven vectors lie in one plane: each of the other two is needed to fix the map, so those two are
    measured by the map of all seven, the one answer there is (0 for a rotation)."""
    plane = _plane_and_two()
    names = [(s, k) for s, e in json.loads(_vocab()).items() for k in e]
    q = np.linalg.qr(np.random.default_rng(7).normal(size=(4, 4)))[0]

    def vocab(x: np.ndarray) -> bytes:
        out: dict[str, dict[str, list[float]]] = {}
        for (s, k), v in zip(names, x.tolist(), strict=True):
            out.setdefault(s, {})[k] = v
        return dumps(out)

    a, b = "20260301-llvm22.1.8-ir-d4-eeeeeeeeeeee", "20260401-llvm22.1.8-ir-d4-ffffffffffff"
    page = _diff_page(tmp_path, a, {a: vocab(plane), b: vocab(plane @ q)})
    assert ("fitted on the 7 entities trained in both (5 of them measured by the map the others fix, so that it does "
            "not bend to fit\nthem; the rest by the map of all, as without them the others leave it\nopen);") in page
    rows = page.split('<table id="top">')[1].split("</table>")[0].split("<tr")[2:]
    assert len(rows) == 7 and all('<td class="num">0.0000</td>' in r for r in rows) and 'id="unaligned"' not in page


def test_a_version_against_itself_draws_no_bars_of_rounding_noise() -> None:
    """The same vectors drift by 0 to ~1e-16; the chart says nothing moved instead of drawing full-length bars,
    and a real move is drawn from zero."""
    same = vocabdiff.diff(_vocab(), {}, _vocab(), {})
    assert all((t.aligned if t.aligned is not None else t.drift) < vocabdiff.NOISE for t in same.top())
    assert "no entity moved" in vocabdiff.plot_top(same)
    moved = vocabdiff.diff(_vocab(), {}, _flattened(), {})
    assert max(t.drift for t in moved.top()) >= vocabdiff.NOISE
    assert "no entity moved" not in vocabdiff.plot_top(moved)
