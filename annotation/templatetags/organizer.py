"""Template helpers of the organizer pages (and the admin's import page)."""

from __future__ import annotations

import re

from django import template
from django.utils.translation import gettext_lazy as _

register = template.Library()

# What each flag of ranking/stats/annotator_flags.py means, in the page's language (docs/quality.md).
FLAG_LABELS = {
    "gold": _("gold items failed"),
    "attention": _("attention check failed"),
    "straight_lining": _("same answer again and again"),
    "too_fast": _("too fast"),
    "disagrees": _("disagrees with the others"),
    "repeat_skipped": _("hidden repeat skipped"),
}

# A flag as the page says it ("--rater-kind" -> "“rater kind”"), except where the text speaks of
# the command line itself: a flag after a command's name ("export_data --what generic") or one
# said to be the command line's ("--rubric KEY on the command line", "命令行中的 --rubric KEY").
_CLI_OPTION = re.compile(
    r"(?P<keep>\b[a-z]+_[a-z_]+ --[a-z][a-z-]*"
    r"|--[a-z][a-z-]*(?: [A-Z]+)? on the command line"
    r"|命令行中的 ?--[a-z][a-z-]*)"
    r"|--(?P<flag>[a-z][a-z-]*)"
)


@register.filter
def option_names(text: str) -> str:
    """Help written for the import command ("needs --rater-kind") in the words of a form
    ("needs “rater kind”"): pages show fields, not command-line flags."""
    return _CLI_OPTION.sub(_field_name, str(text))


def _field_name(m: re.Match[str]) -> str:
    if m.group("keep"):
        return m.group("keep")
    return "“" + m.group("flag").replace("-", " ") + "”"


@register.filter
def pool_label(code: str) -> str:
    """A rater pool's name in the page's language ("crowd" -> "众包"); unknown codes as given."""
    from annotation.models import Rater

    return str(dict(Rater.Pool.choices).get(code, code))


@register.filter
def flag_labels(codes: str) -> str:
    """The space-separated flag codes of the quality table in words, comma-separated."""
    return ", ".join(str(FLAG_LABELS.get(code, code)) for code in str(codes or "").split())
