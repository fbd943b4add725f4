"""deploy/demo.sh's `MLGO_FARM_*` exports are settings with values the farm accepts (a recipe that exists), and
its forced properties are parameters of the builders it forces with values they accept."""

from __future__ import annotations

import re
from pathlib import Path

from farm.config import NON_SETTING_VARIABLES, load_settings
from master.registry import REGISTRY, by_name
from policytrain.recipes import recipe as policy_recipe
from vocabgen.params import recipe as vocab_recipe

DEMO = Path(__file__).resolve().parents[2] / "deploy" / "demo.sh"
#: `export MLGO_FARM_X=${MLGO_FARM_X:-value}`: the demo's default, the caller's value first
EXPORT = re.compile(r"^export (MLGO_FARM_[A-Z_]+)=\$\{\1:-([^}]*)\}$", re.M)
#: `NAME=${MLGO_FARM_DEMO_X:-value}`: a demo knob's default
KNOB = re.compile(r"^([a-z_]+)=\$\{(MLGO_FARM_DEMO_[A-Z_]+):-([^}]*)\}$", re.M)


def _empty_config(tmp: Path) -> str:
    (tmp / "farm.toml").write_text("")
    return str(tmp / "farm.toml")


def _exports() -> dict[str, str]:
    return dict(EXPORT.findall(DEMO.read_text()))


def test_the_demo_exports_settings_the_farm_accepts(tmp_path: Path) -> None:
    exports = _exports()
    assert {"MLGO_FARM_POLICY_RECIPE", "MLGO_FARM_VOCAB_RECIPE"} <= set(exports)
    s = load_settings(env={"MLGO_FARM_CONFIG": _empty_config(tmp_path), **exports})
    assert s.vocab.recipe == exports["MLGO_FARM_VOCAB_RECIPE"] == "demo"
    assert s.policy.recipe == exports["MLGO_FARM_POLICY_RECIPE"] == "demo"
    vocab_recipe(s.vocab.recipe)
    policy_recipe(s.policy.recipe)
    assert not set(exports) & NON_SETTING_VARIABLES


def test_the_demo_forces_properties_its_builders_accept() -> None:
    text = DEMO.read_text()
    knobs = {var: (name, value) for name, var, value in KNOB.findall(text)}
    assert set(knobs) <= NON_SETTING_VARIABLES
    values = {name: value for name, value in knobs.values()}
    forced = re.search(r"^force (triplets-ir triplets-mir) (.*)$", text, re.M)
    assert forced, "demo.sh forces the two triplet builders"
    builders = [by_name(REGISTRY)[b] for b in forced[1].split()]
    props = dict(re.findall(r'-p (\w+)="\$(\w+)"', forced[2]))
    assert props == {"corpus_input": "package", "march": "march"}
    values["package"] = "zlib"  # MLGO_FARM_DEMO_PACKAGE's default
    for prop, var in props.items():
        declaring = [p for b in builders for p in b.parameters if p.name == prop]
        assert declaring and all(p.accepts(values[var]) for p in declaring), (prop, values[var])
    # the demo reads MIR at one level, the nightly's default all four
    assert values["march"] == "x86-64"
    assert next(p for p in by_name(REGISTRY)["triplets-mir"].parameters if p.name == "march").default.count(",") == 3
