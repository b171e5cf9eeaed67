"""Work every server process would otherwise do on its first requests, done once at start-up
(before gunicorn --preload forks the workers): compile the annotator templates, load the
translation catalogues, the adaptive engine an annotator's first submit calls (numpy; the
views load it lazily, config/lazy.py) and, unless WARM_REPORT_STACK is off, the statistics
stack the reports need. Touches no database."""

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
    if settings.WARM_REPORT_STACK:
        warm_report_stack()


def warm_report_stack() -> None:
    """Load what the first report, report download or report API call needs (the modules the
    views load lazily, config/lazy.py), so that no worker pays it on a researcher's request."""
    # Names, not modules: a module config/lazy.py registered runs on its first attribute read.
    from ranking.charts import Figure  # noqa: F401
    from ranking.services import report_build  # noqa: F401
    from ranking.stats.report import build_report  # noqa: F401
