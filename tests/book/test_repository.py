"""The header's repository button: it links the real course repository, or -- when no real URL is
known (the placeholder of _config.yml, no COURSE_REPOSITORY_URL, not in GitHub Actions) -- it is
not there at all, so a reader never meets a link that leads nowhere."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
import yaml

from coursebook import sphinxext as S

PLACEHOLDER = "https://github.com/OWNER/tilelang-course"


@pytest.fixture(autouse=True)
def _no_repository_env(monkeypatch):
    for k in ("COURSE_REPOSITORY_URL", "GITHUB_ACTIONS", "GITHUB_REPOSITORY", "GITHUB_SERVER_URL"):
        monkeypatch.delenv(k, raising=False)


@pytest.mark.parametrize("url", [PLACEHOLDER, "", "   ", "https://github.com/<owner>/tilelang-course",
                                 "https://github.com/USER/x", "http://github.com/tile-ai/tilelang",
                                 "github.com/tile-ai/tilelang", "https://example.com/a/b", "https://github.com/tile-ai"])
def test_placeholders_are_recognised(url):
    assert S.is_placeholder_url(url)


@pytest.mark.parametrize("url", ["https://github.com/tile-ai/tilelang", "https://gitlab.com/a-b/c.git",
                                 "https://github.example.org/course/tilelang-course/"])
def test_real_urls_are_kept(url):
    assert not S.is_placeholder_url(url)
    assert S.repository_url(url) == url


def test_the_override_order(monkeypatch):
    assert S.repository_url(PLACEHOLDER) == "", "the bare placeholder is no link"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_REPOSITORY", "someone/tilelang-course")
    assert S.repository_url(PLACEHOLDER) == "https://github.com/someone/tilelang-course"
    monkeypatch.setenv("COURSE_REPOSITORY_URL", "https://gitlab.com/team/course")
    assert S.repository_url(PLACEHOLDER) == "https://gitlab.com/team/course"
    monkeypatch.setenv("COURSE_REPOSITORY_URL", "https://github.com/OWNER/x")
    monkeypatch.delenv("GITHUB_ACTIONS")
    assert S.repository_url(PLACEHOLDER) == "", "a placeholder given by the environment is still no link"


def _config(url):
    return SimpleNamespace(html_theme_options={"repository_url": url, "use_repository_button": True,
                                               "use_download_button": True})


def test_config_hides_the_button_without_a_real_url():
    config = _config(PLACEHOLDER)
    S._repository_from_environment(config)
    opts = config.html_theme_options
    assert "repository_url" not in opts and opts["use_repository_button"] is False
    assert opts["use_download_button"] is True, "the download button stays"


def test_config_links_a_real_url(monkeypatch):
    config = _config(PLACEHOLDER)
    monkeypatch.setenv("COURSE_REPOSITORY_URL", "https://github.com/someone/tilelang-course")
    S._repository_from_environment(config)
    assert config.html_theme_options["repository_url"] == "https://github.com/someone/tilelang-course"
    assert config.html_theme_options["use_repository_button"] is True


def test_the_book_config_names_the_repository_once(repo_root):
    """_config.yml is the one place; whatever it holds, the hook above decides what a reader sees."""
    config = yaml.safe_load((repo_root / "_config.yml").read_text(encoding="utf-8"))
    assert config["html"]["use_repository_button"] is True
    assert config["repository"]["url"].startswith("https://")
