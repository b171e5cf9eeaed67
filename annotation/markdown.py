"""Safe Markdown for untrusted text (questions, LLM answers, reference answers).

markdown-it-py with raw HTML disabled turns any `<tag>` in the source into escaped text; nh3 (the
Rust ammonia sanitiser) then keeps only an allow-list of tags and attributes as a second line of
defence, drops images (an annotator's browser fetches nothing a model wrote) and adds
rel="nofollow noopener noreferrer" to links. Emphasis next to Chinese full-width punctuation
(`**答案：**`) works through annotation/markdown_cjk.py.
"""

from __future__ import annotations

import nh3
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

from annotation.markdown_cjk import cjk_friendly

_md = (
    MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    .enable(["table", "strikethrough"])
    .use(cjk_friendly)
)

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


def render_markdown(text: str | None) -> SafeString:
    html = _md.render(text or "")
    clean = nh3.clean(
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
    return mark_safe(clean)  # noqa: S308 - sanitised by nh3 just above
