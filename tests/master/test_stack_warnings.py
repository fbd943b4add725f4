"""`stack up` warns about a configuration that works but misleads: mail recipients without `[buildbot] web_url`."""

from __future__ import annotations

from farm.config import load_settings
from master import stack


def test_recipients_without_web_url_is_a_warning_naming_the_loopback_links() -> None:
    (warning,) = stack.warnings(load_settings(env={"MLGO_FARM_SMTP_RECIPIENTS": "ops@example.org"}))
    assert "[buildbot] web_url is not" in warning and "http://127.0.0.1:8010/" in warning
    assert "MLGO_FARM_BUILDBOT_WEB_URL" in warning and "\n" not in warning
    assert stack.warnings(load_settings(env={"MLGO_FARM_SMTP_RECIPIENTS": "ops@example.org",
                                             "MLGO_FARM_BUILDBOT_WEB_URL": "https://farm.example.org/"})) == []
    assert stack.warnings(load_settings(env={})) == []  # nobody is mailed: nothing to mislead
