"""Where the master and worker directories live, and the secrets they share: the worker password,
the web admin's password and the file of further web logins."""

from __future__ import annotations

import re
import secrets
from pathlib import Path

from farm.atomic import write_atomic
from farm.config import Settings
from farm.errors import FarmError, InputError
from farm.secrets import ensure_secret, secrets_dir

#: Where a remote `mlgo-farm master force` takes its web password from (never a command-line flag).
PASSWORD_ENV = "MLGO_FARM_BUILDBOT_CLIENT_PASSWORD"
_USER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def buildbot_dir(settings: Settings) -> Path:
    return settings.var_dir / "buildbot"


def master_dir(settings: Settings) -> Path:
    return Path(settings.buildbot.master_dir).absolute() if settings.buildbot.master_dir \
        else buildbot_dir(settings) / "master"


def worker_dir(settings: Settings, name: str | None = None) -> Path:
    if settings.buildbot.worker_dir and name in (None, settings.buildbot.worker_name):
        return Path(settings.buildbot.worker_dir).absolute()
    return buildbot_dir(settings) / f"worker-{name or settings.buildbot.worker_name}"


def password_file(settings: Settings) -> Path:
    return buildbot_dir(settings) / "worker-password"


def worker_password(settings: Settings, create: bool = False) -> str:
    """The configured password, else the generated one (made once, mode 0600, when `create`)."""
    if settings.buildbot.worker_password:
        return settings.buildbot.worker_password
    path = password_file(settings)
    if path.is_file():
        return path.read_text().strip()
    if not create:
        raise FarmError(f"no worker password: set MLGO_FARM_BUILDBOT_WORKER_PASSWORD or run "
                        f"`mlgo-farm master create` to generate {path}")
    value = secrets.token_urlsafe(18)
    write_atomic(path, value + "\n", mode=0o600)
    return value


def admin_password_file(settings: Settings) -> Path:
    return secrets_dir(settings.var_dir) / "www-admin-password"


def users_file(settings: Settings) -> Path:
    """More web logins, one `name:password` per line (mode 0600); the master reads it when it (re)configures."""
    return secrets_dir(settings.var_dir) / "www-users"


def admin_password(settings: Settings, create: bool = False) -> str:
    """The web admin's password: configured, else generated once into `admin_password_file` (0600)."""
    value = ensure_secret(admin_password_file(settings), settings.buildbot.admin_password, create=create)
    if not value:
        raise FarmError(f"no web admin password: set MLGO_FARM_BUILDBOT_ADMIN_PASSWORD or run "
                        f"`mlgo-farm master create` to generate {admin_password_file(settings)}")
    return value


def read_users(path: Path) -> dict[str, str]:
    """Logins listed in `path` (none when it does not exist); a file others may read is refused."""
    try:
        st = path.stat()
        text = path.read_text()
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as e:
        raise FarmError(f"cannot read web users file {path}: {getattr(e, 'strerror', None) or e}") from None
    if st.st_mode & 0o077:
        raise InputError(f"web users file {path} is readable by others: chmod 600 {path}")
    users: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, sep, password = line.strip().partition(":")
        if not sep or not _USER.match(name) or not password:
            raise InputError(f"{path}:{number}: expected name:password (name of letters, digits, '.', '_', '-')")
        if name in users:
            raise InputError(f"{path}:{number}: user {name!r} is listed twice")
        users[name] = password
    return users


def web_users(settings: Settings) -> dict[str, str]:
    """Every login the master accepts: the configured admin, then the users file."""
    admin = settings.buildbot.admin_user
    if not _USER.match(admin):
        raise InputError(f"[buildbot] admin_user {admin!r}: use letters, digits, '.', '_' and '-'")
    users = read_users(users_file(settings))
    if admin in users:
        raise InputError(f"{users_file(settings)}: {admin!r} is [buildbot] admin_user, whose password is "
                         f"configured or in {admin_password_file(settings)}; remove it from the file")
    return {admin: admin_password(settings), **users}


def client_user(settings: Settings, user: str | None = None) -> str:
    """The web login `mlgo-farm master force` uses: `--user`, else [buildbot] client_user, else admin_user."""
    return user or settings.buildbot.client_user or settings.buildbot.admin_user


def client_password(settings: Settings, user: str) -> str:
    """Its password: [buildbot] client_password (from the environment on a remote host), else, for the
    admin on the master's own machine, the configured or generated admin password."""
    bb = settings.buildbot
    if bb.client_password:
        return bb.client_password
    if user == bb.admin_user:
        value = ensure_secret(admin_password_file(settings), bb.admin_password, create=False)
        if value:
            return value
    raise FarmError(f"no password for web user {user!r}: set {PASSWORD_ENV}"
                    + (f" (or run this where {admin_password_file(settings)} is readable)"
                       if user == bb.admin_user else ""))
