"""How a setting is named in the environment and how its text becomes a checked value.

`farm.config` reads the whole configuration with these rules; the per-compile launcher
(`policyhost.cc`) reads the one or two settings a compile needs with the same rules, without
importing `farm.config` (dataclasses, tomllib and pathlib would cost more than the launcher's
whole start-up). So there is one precedence (command line, then `MLGO_FARM_<SECTION>_<KEY>`,
then the TOML file, then the default) and one way to read each value. Imports only the farm's
error types.
"""

from __future__ import annotations

import math

from farm.errors import FarmError

PREFIX = "MLGO_FARM_"

#: Settings that must be positive (seconds, ports, counts); checked for file and environment alike.
POSITIVE = frozenset({("llvm", "min_major"), ("celery", "visibility_timeout"), ("celery", "staging_max_age"),
                      ("smtp", "port"), ("buildbot", "pb_port"), ("buildbot", "www_port"),
                      ("buildbot", "start_deadline"), ("buildbot", "client_reconnect"),
                      ("celery", "client_reconnect"), ("policy", "timeout"),
                      ("policy", "shared_idle_exit"), ("alerts", "triage_days"), ("regression", "page_timeout")})
NON_NEGATIVE = frozenset({("smtp", "retries"), ("alerts", "group_wait"), ("gate", "mrr_tolerance"),
                          ("gate", "hits_at_10_tolerance"),
                          ("gate", "analogy_tolerance"), ("policy", "retrain_time_limit")})
#: Directories with no "empty" default: an empty value would silently mean the current directory.
NON_EMPTY = frozenset({("paths", "var_dir"), ("llvm", "bin_dir")})
#: Settings that are fractions in [0, 1]: the promotion gate's coverage floors.
FRACTION = frozenset({("gate", "min_ir_opcodes"), ("gate", "min_ir_types"), ("gate", "min_ir_arguments"),
                      ("gate", "min_mir_opcodes"), ("gate", "min_mir_common_operands"),
                      ("gate", "min_mir_physical_registers"), ("gate", "min_mir_virtual_registers")})


def env_key(section: str, key: str) -> str:
    return f"{PREFIX}{section}_{key}".upper()


def coerce(value: str, like: object, key: str) -> object:
    """An environment variable's text as the type of the setting's default (`like`)."""
    if isinstance(like, bool):
        word = value.strip().lower()
        if word not in ("1", "true", "yes", "on", "0", "false", "no", "off", ""):
            raise FarmError(f"{key}={value!r}: expected true or false")
        return word in ("1", "true", "yes", "on")
    try:
        if isinstance(like, int):
            return int(value)
        if isinstance(like, float):
            return float(value)
    except ValueError:
        raise FarmError(f"{key}={value!r}: expected {'an integer' if isinstance(like, int) else 'a number'}") from None
    return value


def check_range(section: str, key: str, value: object, where: str, error: type[FarmError] = FarmError) -> object:
    """`value` if it is allowed for [section] key, else a one-line `error` naming `where` (the configuration file's
    values are bad input, InputError; an environment variable's stay a FarmError)."""
    if (section, key) in NON_EMPTY and isinstance(value, str) and not value.strip():
        raise error(f"{where}: must name a directory, got {value!r} (empty would mean the current directory)")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    if isinstance(value, float) and not math.isfinite(value):
        raise error(f"{where}: expected a finite number, got {value!r}")
    if (section, key) in POSITIVE and value <= 0:
        raise error(f"{where}: must be greater than 0, got {value!r}")
    if (section, key) in NON_NEGATIVE and value < 0:
        raise error(f"{where}: must not be negative, got {value!r}")
    if (section, key) in FRACTION and not 0 <= value <= 1:
        raise error(f"{where}: a fraction is 0..1, got {value!r}")
    if (key.endswith("_port") or key == "port") and value > 65535:
        raise error(f"{where}: a TCP port is 1..65535, got {value!r}")
    return value


def from_env(env, section: str, key: str, like: object) -> object | None:
    """The checked value of [section] key from `env`, or None when the variable is not set."""
    name = env_key(section, key)
    if name not in env:
        return None
    return check_range(section, key, coerce(env[name], like, name), name)
