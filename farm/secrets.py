"""The farm's generated secrets and the one way to show a URL that may carry one.

A secret is taken from the configuration (file or `MLGO_FARM_*` environment) when it is set
there, else generated once into `<var>/secrets/<name>` with mode 0600 and read back from
that file afterwards, so every process on the machine agrees on it without it ever being in
the repository, on a command line or in a log. `redact` is what every message that names a
URL goes through: a broker URL with a password must never be printed.
"""

from __future__ import annotations

import os
import re
import secrets as _random
from pathlib import Path

from farm.atomic import write_atomic
from farm.errors import FarmError

_USERINFO = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)(?P<user>[^:@/]*):(?P<password>[^@/]+)@", re.IGNORECASE)


def secrets_dir(var_dir: Path) -> Path:
    return Path(var_dir) / "secrets"


def read_secret(path: Path) -> str | None:
    """The secret stored at `path`, or None when there is none yet."""
    try:
        value = Path(path).read_text().strip()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as e:
        raise FarmError(f"cannot read secret file {path}: {getattr(e, 'strerror', None) or e}") from None
    return value or None


def ensure_secret(path: Path, configured: str = "", create: bool = True, nbytes: int = 18) -> str | None:
    """`configured` if set, else the secret at `path`, else (when `create`) a new one written there 0600."""
    if configured:
        return configured
    existing = read_secret(path)
    if existing or not create:
        return existing
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(path.parent, 0o700)
    value = _random.token_urlsafe(nbytes)
    write_atomic(path, value + "\n", mode=0o600)
    return value


def redact(text: str) -> str:
    """`text` with the password of every `scheme://user:password@` replaced by `***`."""
    return _USERINFO.sub(lambda m: f"{m['scheme']}{m['user']}:***@", str(text))
