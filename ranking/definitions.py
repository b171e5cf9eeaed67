"""docs/statistics.md inside the app: the definition of every figure of the report, one click
away from it. Headings get the anchors GitHub gives them (``## Length bias (paper Table 3)`` ->
``#length-bias-paper-table-3``), so the report's sections link to their own definitions and the
links of docs/reports.md keep working on both sites.
"""

from __future__ import annotations

import html
import re

from django.utils.safestring import SafeString, mark_safe
from django.utils.text import Truncator

from annotation.markdown import render_document
from annotation.views.organizer.imports import document_text

# Where each section of the report is defined (the anchors of docs/statistics.md's headings;
# tests/reports/test_statistics_page.py checks that each one exists).
SECTION_ANCHORS = {
    "leaderboards": "rankings",
    "correlations": "rankings",
    "accuracy": "ground-truth-and-accuracy",
    "consistency": "consistency",
    "length-bias": "length-bias-paper-table-3",
    "gaps": "human-vs-judge-gaps-paper-tables-4-5",
    "discrimination": "discrimination",
    "hints": "hint-effect",
    "elo": "elo-stability-paper-figures-5-6-appendix",
    "agreement": "chance-corrected-agreement",
    "judge-agreement": "judge-vs-human-agreement-the-figures-judge-papers-report",
    "judge-assisted": "judge-assisted-estimates-with-valid-intervals-ppi-ppi-ppi_curve",
    "position": "position-bias-and-annotator-diagnostics",
    "annotators": "position-bias-and-annotator-diagnostics",
    "quality": "annotator-reliability-dawid-skene-and-a-bias--noise-model-rankingstatsreliabilitypy",
}

_HEADING = re.compile(r"<h([1-4])>(.*?)</h\1>", re.S)
_TAG = re.compile(r"<[^>]+>")


def slug(heading_html: str) -> str:
    """GitHub's anchor for a heading: its text in lower case, without punctuation (letters,
    digits, ``_`` and ``-`` stay), spaces turned into hyphens."""
    text = html.unescape(_TAG.sub("", heading_html)).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def statistics_document() -> tuple[SafeString, list[tuple[str, str]]]:
    """The rendered document with an ``id`` on every heading, and its table of contents
    (anchor, heading text) of the second-level headings."""
    rendered = str(render_document(document_text("statistics", "")))
    contents: list[tuple[str, str]] = []

    def anchor(match: re.Match[str]) -> str:
        level, inner = match.group(1), match.group(2)
        name = slug(inner)
        if level == "2":
            text = html.unescape(_TAG.sub("", inner))
            contents.append((name, Truncator(text).chars(90)))
        # The id is made of word characters and hyphens only: nothing to escape.
        return f'<h{level} id="{name}">{inner}</h{level}>'

    # Sanitised by render_document; only ids of word characters are added.
    return mark_safe(_HEADING.sub(anchor, rendered)), contents  # noqa: S308
