"""The documentation keeps up with the code: the configuration reference is what farm/config.py's declarations
render (farm/configdoc.py), and every relative link of README.md, docs/*.md and deploy/README-many-machines.md
reaches a file, and a heading when it names one, as GitHub renders them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from farm import configdoc, envvalues
from farm.config import Settings, load_settings

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "deploy" / "README-many-machines.md"]
_FENCE = re.compile(r"^(```|~~~).*?^\1\s*$", re.S | re.M)
_CODE_SPAN = re.compile(r"(`+).+?\1", re.S)
_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped (`_` and `-` kept), spaces to `-`."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading anchors by its text
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for heading in _HEADING.findall(_FENCE.sub("", text)):
        s = slug(heading)
        n = seen.get(s, 0)
        seen[s] = n + 1
        found.add(s if n == 0 else f"{s}-{n}")
    return found


def broken_links(page: Path, root: Path = ROOT) -> list[str]:
    """The relative links of `page` (outside code) whose file, or heading, does not exist."""
    text = _CODE_SPAN.sub("", _FENCE.sub("", page.read_text(encoding="utf-8")))
    bad = []
    for target in _LINK.findall(text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:: not ours to check
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            bad.append(f"{page.relative_to(root)}: {target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest.read_text(encoding="utf-8")):
            bad.append(f"{page.relative_to(root)}: {target}: no heading #{anchor} in {dest.name}")
    return bad


def test_configuration_reference_is_what_the_declarations_render():
    page = ROOT / "docs" / "configuration.md"
    assert page.is_file(), "docs/configuration.md is missing: python -m farm.configdoc -o docs/configuration.md"
    assert page.read_text(encoding="utf-8") == configdoc.render(), (
        "docs/configuration.md is stale: run `python -m farm.configdoc -o docs/configuration.md`")


def test_every_setting_is_in_the_reference_with_its_variable_and_default():
    text = configdoc.render()
    for row in configdoc.settings_table():
        assert f"| `{row['key']}` | {row['type']} | " in text
        assert f"`{envvalues.env_key(row['section'], row['key'])}`" in text
    assert len(configdoc.settings_table()) == sum(
        len(type(getattr(Settings(), s))().__dataclass_fields__) for s in Settings().__dataclass_fields__)


def test_a_setting_without_a_description_is_an_error(monkeypatch):
    real = configdoc._comments
    monkeypatch.setattr(configdoc, "_comments", lambda src: {k: v for k, v in real(src).items()
                                                               if k != ("SMTPConfig", "recipients")})
    with pytest.raises(ValueError, match=r"\[smtp\] recipients has no"):
        configdoc.render()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page):
    assert broken_links(page) == []


def test_the_link_check_finds_a_missing_file_and_a_missing_heading(tmp_path):
    (tmp_path / "other.md").write_text("# The `[smtp]` section\n\n## Log in\n\n## Log in\n")
    page = tmp_path / "page.md"
    page.write_text("[a](other.md#the-smtp-section) [b](other.md#log-in-1) [c](other.md#nope) [d](gone.md)\n"
                    "`[e](also-gone.md)` [f](https://example.org/x) [g](#here)\n\n# Here\n"
                    "```\n[h](in-a-fence.md)\n```\n")
    assert broken_links(page, tmp_path) == ["page.md: other.md#nope: no heading #nope in other.md",
                                            "page.md: gone.md: no such file"]


def test_the_readme_is_a_front_door():
    """About 150 lines, and a new reader meets the two commands, the download, the login and the recipients."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 180, f"README.md has {len(lines)} lines: move detail into docs/"
    text = "\n".join(lines)
    for must in ("make demo", "make test", "sha256sum -c", "mlgo-cc.py", "www-admin-password", "recipients"):
        assert must in text, must


def test_the_readmes_mail_settings_are_settings(tmp_path):
    """The `[smtp]` example a reader copies into mlgo-farm.toml is read as written (a mistyped key: an error)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8").split("\n## Who gets mail\n", 1)[1]
    (tmp_path / "mlgo-farm.toml").write_text(text.split("```toml\n", 1)[1].split("```", 1)[0])
    settings = load_settings(tmp_path / "mlgo-farm.toml", env={})
    assert settings.smtp.recipient_list == ["mlgo-team@example.org", "oncall@example.org"]
    assert settings.buildbot.web_url.startswith("https://")
