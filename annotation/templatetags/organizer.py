"""Template helpers of the organizer pages (and the admin's import page)."""

from __future__ import annotations

import re

from django import template

register = template.Library()

_CLI_OPTION = re.compile(r"--([a-z][a-z-]*)")


@register.filter
def option_names(text: str) -> str:
    """Help written for the import command ("needs --rater-kind") in the words of a form
    ("needs “rater kind”"): pages show fields, not command-line flags."""
    return _CLI_OPTION.sub(lambda m: "“" + m.group(1).replace("-", " ") + "”", str(text))
