"""Generated secrets: made once, private, stable; URLs that carry one are never shown with it."""

from __future__ import annotations

import stat
from pathlib import Path

from farm.secrets import ensure_secret, read_secret, redact


def test_generated_once_private_and_stable(tmp_path: Path) -> None:
    path = tmp_path / "var" / "secrets" / "redis-password"
    assert ensure_secret(path, create=False) is None and not path.exists()
    first = ensure_secret(path)
    assert first and len(first) >= 20
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert ensure_secret(path) == first == read_secret(path)
    assert ensure_secret(path, configured="from-config") == "from-config"  # the configuration wins
    assert ensure_secret(tmp_path / "other") != first


def test_redact_hides_every_password_in_a_message() -> None:
    msg = "cannot reach redis://:s3cr3t@127.0.0.1:6379/0 nor amqp://farm:pw%40x@host/ (see redis://127.0.0.1/1)"
    out = redact(msg)
    assert "s3cr3t" not in out and "pw%40x" not in out
    assert out == "cannot reach redis://:***@127.0.0.1:6379/0 nor amqp://farm:***@host/ (see redis://127.0.0.1/1)"


def test_redact_hides_up_to_the_last_at_of_a_url() -> None:
    """A raw `@` in a password used to print the rest of it (`u:***@ss@host`)."""
    assert redact("postgresql://farm:p@ss-Secret@h:5/db failed") == "postgresql://farm:***@h:5/db failed"
    # a raw `@` in the user too: nothing of the user information is shown
    assert redact("x postgresql://me@corp:Secret@h/db y") == "x postgresql://***@h/db y"
    assert redact("postgresql://me@corp@h/db") == "postgresql://***@h/db"
    # a plain user without a password, and a URL without user information, stay as they are
    assert redact("postgresql://farm@h/db and http://h:8010/x") == "postgresql://farm@h/db and http://h:8010/x"
