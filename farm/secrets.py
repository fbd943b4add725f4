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
from typing import TYPE_CHECKING
from urllib.parse import quote, urlsplit, urlunsplit

from farm.atomic import write_atomic
from farm.errors import FarmError

if TYPE_CHECKING:
    from farm.config import Settings

#: A URL in a message: its scheme and what follows up to a blank or a quote. Its user information is everything up to
#: the last `@` of that, not the first: a password with a raw `@` (`u:p@ss@host`) must not leak what follows its `@`.
_URL = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)(?P<rest>[^\s'\"<>]*)", re.IGNORECASE)


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


def _hidden(m: re.Match[str]) -> str:
    userinfo, at, after = m["rest"].rpartition("@")
    if not at:
        return m[0]
    user, colon, _ = userinfo.partition(":")
    if "@" in user or (not colon and "@" in userinfo):
        return f"{m['scheme']}***@{after}"  # where the user ends and the password begins is anyone's guess
    return f"{m['scheme']}{user}:***@{after}" if colon else m[0]


def redact(text: str) -> str:
    """`text` with everything between each URL's `://` and its last `@` hidden but a plain user name
    (`scheme://user:***@host`): the one place the farm masks a URL for a message. The last `@`, because a raw one in
    a password (`u:p@ss@host`) would otherwise print the rest of it; a path's `@` hides more than needed, never less."""
    return _URL.sub(_hidden, str(text))


#: The generated password of the farm's own Redis (the single-machine stack's), under secrets_dir().
REDIS_PASSWORD_FILE = "redis-password"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def loopback_redis(url: str) -> tuple[str, int] | None:
    """Host and port when `url` names a Redis on this machine (the kind the stack starts and owns), else None."""
    u = urlsplit(url)
    if u.scheme not in ("redis", "rediss") or (u.hostname or "127.0.0.1") not in LOOPBACK_HOSTS:
        return None
    try:
        return u.hostname or "127.0.0.1", u.port or 6379
    except ValueError:
        raise FarmError(f"{redact(url)}: invalid port") from None


def redis_password(settings: Settings, create: bool = False) -> str | None:
    """`[celery] redis_password`, else the generated secret file (made here only when `create`: `stack up`)."""
    return ensure_secret(secrets_dir(settings.var_dir) / REDIS_PASSWORD_FILE, settings.celery.redis_password,
                         create=create)


def effective_redis_url(url: str, settings: Settings) -> str:
    """`url` as a client must use it: with the farm's Redis password when it names a loopback Redis without one.

    The configured URLs stay password-free (`redis://127.0.0.1:6379/0`), so the configuration
    file holds no secret and the same file works before and after `stack up` generates one;
    every process that talks to the farm's Redis (Celery app, publish lock, `vocab retrain`,
    the stack itself) goes through here and so agrees on the password. A URL that already
    carries a password, or names another host, is used as written.
    """
    if loopback_redis(url) is None:
        return url
    u = urlsplit(url)
    if u.password is not None:
        return url
    password = redis_password(settings)
    if not password:
        return url
    hostport = u.netloc.rpartition("@")[2]
    userinfo = f"{quote(u.username or '', safe='')}:{quote(password, safe='')}"
    return urlunsplit(u._replace(netloc=f"{userinfo}@{hostport}"))
