"""Work every server process would otherwise do on its first requests, done once at start-up
(before gunicorn --preload forks the workers): compile the annotator templates, load the
translation catalogues and the adaptive engine an annotator's first submit calls (numpy; the
views load it lazily, config/lazy.py). Touches no database."""

from __future__ import annotations

from django.conf import settings
from django.template.loader import get_template
from django.utils import translation

TEMPLATES = (
    "annotation/annotate.html",
    "annotation/start.html",
    "annotation/done.html",
    "annotation/join.html",
    "annotation/message.html",
    "annotation/crowd_preview.html",
    "registration/login.html",
    "home.html",
)


def warm_up() -> None:
    for name in TEMPLATES:
        get_template(name)
    for code, _name in settings.LANGUAGES:
        with translation.override(code):
            translation.gettext("Submit")
    from annotation.markdown import render_markdown

    render_markdown("*warm*")
    from annotation import engine_adaptive

    engine_adaptive.note_submit  # noqa: B018 (the first attribute read executes the module)
