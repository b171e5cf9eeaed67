"""The per-process cache of rendered Markdown: a repeated text is rendered once, what comes back
from the cache is the sanitised HTML (never the raw text), and the cache stays within its size."""

from __future__ import annotations

import pytest

from annotation import markdown
from annotation.markdown import render_markdown

HOSTILE = "**bold** <script>alert(1)</script> [x](javascript:alert(1)) <img src=x onerror=y>"


@pytest.fixture
def renders(monkeypatch):
    """A fresh cache, and the list of texts the full pipeline actually rendered."""
    monkeypatch.setattr(markdown, "_rendered", markdown._RenderedCache(markdown.CACHE_CHARS))
    seen: list[str] = []
    real = markdown._render

    def counting(text: str) -> str:
        seen.append(text)
        return real(text)

    monkeypatch.setattr(markdown, "_render", counting)
    return seen


def test_a_repeated_text_is_rendered_once_and_served_sanitised_from_the_cache(renders):
    first = render_markdown(HOSTILE)
    second = render_markdown(HOSTILE)
    assert renders == [HOSTILE]
    assert second == first
    for html in (first, second):
        assert "<strong>bold</strong>" in html
        assert "<script" not in html and "<img" not in html and 'href="javascript' not in html
        assert "&lt;script&gt;" in html


def test_different_texts_get_their_own_html(renders):
    assert render_markdown("*one*") == "<p><em>one</em></p>\n"
    assert render_markdown("*two*") == "<p><em>two</em></p>\n"
    assert render_markdown(None) == render_markdown("") == ""
    assert renders == ["*one*", "*two*", ""]


def test_the_cache_drops_the_least_recently_used_html_beyond_its_size(monkeypatch, renders):
    # Each of these renders to 16 characters: room for two.
    monkeypatch.setattr(markdown, "_rendered", markdown._RenderedCache(40))
    render_markdown("*aaa*")
    render_markdown("*bbb*")
    render_markdown("*aaa*")  # used again: now bbb is the oldest
    render_markdown("*ccc*")
    assert markdown._rendered.size <= 40
    renders.clear()
    render_markdown("*aaa*")
    render_markdown("*bbb*")
    assert renders == ["*bbb*"]


def test_a_very_long_text_is_rendered_each_time_and_not_kept(monkeypatch, renders):
    monkeypatch.setattr(markdown, "CACHE_TEXT_MAX", 10)
    long = "x" * 11
    render_markdown(long)
    render_markdown(long)
    assert renders == [long, long]
    assert markdown._rendered.size == 0
