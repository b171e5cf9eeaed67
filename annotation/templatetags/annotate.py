from __future__ import annotations

from django import template

from annotation.markdown import render_markdown

register = template.Library()


@register.filter(name="markdown")
def markdown_filter(text: str | None):
    """Untrusted text as safe HTML: Markdown without raw HTML, sanitised."""
    return render_markdown(text)


@register.filter
def stars(n: int) -> str:
    return "★" * int(n)
