"""Safe Markdown for untrusted text (questions, LLM answers, reference answers).

markdown-it-py with raw HTML disabled turns any `<tag>` in the source into escaped text; nh3 (the
Rust ammonia sanitiser) then keeps only an allow-list of tags and attributes as a second line of
defence, drops images (an annotator's browser fetches nothing a model wrote) and adds
rel="nofollow noopener noreferrer" to links. Emphasis next to Chinese full-width punctuation
(`**答案：**`) works through annotation/markdown_cjk.py.

The same answers are shown again and again (every item of a pairwise study pairs one answer with
several others), so each process keeps the sanitised HTML of recent texts, keyed by a hash of the
text: a page costs a dictionary look-up per answer instead of a parse and a clean. Only the output
of the full pipeline is kept, never anything unsanitised.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

import nh3
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

from annotation.markdown_cjk import cjk_friendly


def _parser(*, breaks: bool) -> MarkdownIt:
    options = {"html": False, "linkify": False, "typographer": False, "breaks": breaks}
    return MarkdownIt("commonmark", options).enable(["table", "strikethrough"]).use(cjk_friendly)


# Questions, answers and instructions keep every line break as written (`breaks`): a model's
# poem, its "天外世界：…\n地外世界：…" definitions or a list without Markdown markers are lines,
# and CommonMark would run them into one paragraph (docs/decisions/annotator-screens.md).
_md = _parser(breaks=True)
# Hard-wrapped Markdown documents (docs/import-formats.md on the import page) are not.
_md_document = _parser(breaks=False)

ALLOWED_TAGS = {
    "p", "br", "hr", "em", "strong", "del", "s", "code", "pre", "blockquote",
    "ul", "ol", "li", "h1", "h2", "h3", "h4", "h5", "h6",
    "table", "thead", "tbody", "tr", "th", "td", "a",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "code": {"class"},
    "ol": {"start"},
    "th": {"style"},
    "td": {"style"},
}


# What the per-process cache may hold, in characters of HTML (a few MB a process), and the longest
# text it keeps (a longer one is rare and rendered each time rather than pushing out many others).
CACHE_CHARS = 4_000_000
CACHE_TEXT_MAX = 200_000


class _RenderedCache:
    """Least recently used HTML by text hash, bounded by total characters; thread-safe (the app
    server runs threads)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.size = 0
        self._html: OrderedDict[bytes, str] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: bytes) -> str | None:
        with self._lock:
            html = self._html.get(key)
            if html is not None:
                self._html.move_to_end(key)
            return html

    def put(self, key: bytes, html: str) -> None:
        with self._lock:
            if key in self._html:
                return
            self._html[key] = html
            self.size += len(html)
            while self.size > self.limit:
                _, old = self._html.popitem(last=False)
                self.size -= len(old)

    def clear(self) -> None:
        with self._lock:
            self._html.clear()
            self.size = 0


_rendered = _RenderedCache(CACHE_CHARS)


def render_markdown(text: str | None) -> SafeString:
    text = text or ""
    if len(text) > CACHE_TEXT_MAX:
        return mark_safe(_render(text))  # noqa: S308 - sanitised by _render
    key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    html = _rendered.get(key)
    if html is None:
        html = _render(text)
        _rendered.put(key, html)
    return mark_safe(html)  # noqa: S308 - sanitised by _render


def render_answer(text: str | None, empty_label: str) -> SafeString:
    """An LLM answer as render_markdown shows it; an answer that shows nothing (empty, or only
    white space) says so in `empty_label` (plain text, escaped), so that an annotator can tell an
    empty answer from a page that failed to load and rate it as what it is."""
    html = render_markdown(text)
    if html.strip():
        return html
    return format_html('<p class="empty-answer">{}</p>', empty_label)


def render_document(text: str) -> SafeString:
    """A Markdown document of the project's own (hard-wrapped lines are one paragraph)."""
    return mark_safe(_render(text, _md_document))  # noqa: S308 - sanitised by _render


def _render(text: str, parser: MarkdownIt = _md) -> str:
    """Markdown without raw HTML, then nh3's allow-list: the only way text becomes HTML."""
    html = parser.render(text)
    return nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="nofollow noopener noreferrer",
        filter_style_properties={"text-align"},
        # A code block scrolls sideways inside its box: it must take the keyboard focus so it can
        # be scrolled without a mouse (WCAG 2.1.1; axe's scrollable-region-focusable).
        set_tag_attribute_values={"pre": {"tabindex": "0"}},
    )
