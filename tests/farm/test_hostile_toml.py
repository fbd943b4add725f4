"""Hostile numbers in the farm's TOML are one line (issue 35, item 6): `10**400` for a float setting (it parses, then
`float()` overflows: a 26-line OverflowError before), a 5,001-digit integer, an array 100,000 deep, through the one
TOML reader (farm/datafile.py) for the configuration, the regression rules and the data files alike. A bad
configuration file is bad input: exit 2 from the real `mlgo-farm`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from farm import datafile
from farm.config import load_settings
from farm.errors import InputError
from regression.rules import load_rules

HOSTILE = {  # the value, what the one line says of it ({key}: where it is)
    "10**400": ("1" + "0" * 400, "{key}: an integer of 401 digits, beyond TOML's 64 bits"),
    "2**63": (str(2 ** 63), "{key}: an integer of 19 digits, beyond TOML's 64 bits"),
    "5001 digits": ("1" * 5001, "Exceeds the limit (4300 digits) for integer string conversion: value has 5001 digits"),
    "100000 deep": ("[" * 100_000 + "]" * 100_000, "TOML nested too deeply to read"),
}


@pytest.mark.parametrize(("value", "says"), list(HOSTILE.values()), ids=list(HOSTILE))
def test_hostile_numbers_in_the_configuration_are_one_line_and_exit_2(tmp_path: Path, value: str, says: str) -> None:
    config = tmp_path / "farm.toml"
    config.write_text(f"[policy]\ntimeout = {value}\n")  # a float setting
    with pytest.raises(InputError) as e:
        load_settings(config, env={})
    assert str(e.value) == f"config {config}: {says.format(key='policy.timeout')}"
    res = subprocess.run([sys.executable, "-m", "farm.cli", "vocab", "list"], capture_output=True, text=True,
                         timeout=120, env={**os.environ, "MLGO_FARM_CONFIG": str(config)})
    assert (res.returncode, res.stderr) == (2, f"mlgo-farm: error: {e.value}\n")
    config.write_text(f"[policy]\ntimeout = {2 ** 63 - 1}\n")  # the largest TOML integer is still a setting
    assert load_settings(config, env={}).policy.timeout == float(2 ** 63 - 1)


@pytest.mark.parametrize(("value", "says"), list(HOSTILE.values()), ids=list(HOSTILE))
def test_the_rules_and_data_files_read_the_same_way(tmp_path: Path, value: str, says: str) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text(f"[text_size]\nthreshold_pct = {value}\n")
    says = says.format(key="text_size.threshold_pct")
    with pytest.raises(InputError) as e:
        load_rules(rules)
    assert str(e.value) == f"rules file {rules}: {says}"
    with pytest.raises(InputError) as e:
        datafile.read(rules)
    assert str(e.value) == f"{rules}: {says}"


def test_a_data_file_that_is_not_utf8_is_one_line(tmp_path: Path) -> None:
    data = tmp_path / "shipped.toml"
    data.write_bytes(b'[zlib]\nname = "caf\xe9"\n')
    with pytest.raises(InputError, match=r"shipped\.toml: not UTF-8 text \(invalid continuation byte at byte 18\)$"):
        datafile.read(data)


def test_a_rules_file_that_is_a_device_or_fifo_is_one_line(tmp_path: Path) -> None:
    """`--rules /dev/zero` read until MemoryError; a FIFO blocked. Read in a child whose address space is capped, so
    the old read fails there and not on this machine."""
    import resource

    fifo = tmp_path / "rules.fifo"
    os.mkfifo(fifo)
    cap = 1 << 30
    for path, kind in (("/dev/zero", "a device or socket"), (str(fifo), "a FIFO")):
        res = subprocess.run([sys.executable, "-c", "import sys\nfrom regression.rules import load_rules\n"
                              "from farm.errors import InputError\ntry:\n    load_rules(sys.argv[1])\n"
                              "except InputError as e:\n    print(e)\n", path], capture_output=True, text=True,
                             timeout=60, preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (cap, cap)))
        assert (res.returncode, res.stdout) == (0, f"rules file {path} is {kind}, not a regular file\n"), res.stderr
