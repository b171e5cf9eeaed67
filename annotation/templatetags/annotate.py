from __future__ import annotations

from django import template

from annotation.markdown import render_answer, render_markdown
from annotation.markdown_cjk import text_lang as guess_lang

register = template.Library()


@register.filter(name="markdown")
def markdown_filter(text: str | None):
    """Untrusted text as safe HTML: Markdown without raw HTML, sanitised."""
    return render_markdown(text)


@register.filter(name="answer")
def answer_filter(text: str | None, empty_label: str):
    """An LLM answer as safe HTML, or `empty_label` when it shows nothing."""
    return render_answer(text, empty_label)


@register.filter
def stars(n: int) -> str:
    return "★" * int(n)


@register.filter
def text_lang(text: str | None) -> str:
    """The `lang` of a question or answer ("zh", "en", ...), guessed from its script."""
    return guess_lang(text)
