"""The report links every section to its definition in docs/statistics.md, which the app serves
with GitHub's heading anchors."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from ranking.definitions import SECTION_ANCHORS, slug

# database_independent: a page of documentation: the same on any database.
pytestmark = [pytest.mark.django_db, pytest.mark.database_independent]


def test_slugs_are_githubs_heading_anchors():
    assert slug("Length bias (paper Table 3)") == "length-bias-paper-table-3"
    assert slug("Cohen's κ per rater pair (<code>kappa_pairs</code>)") == (
        "cohens-κ-per-rater-pair-kappa_pairs"
    )
    assert slug("a bias + noise model") == "a-bias--noise-model"


def test_every_section_links_to_a_heading_that_exists(organizer_client, star_study):
    page = organizer_client.get(reverse("ranking:statistics"))
    assert page.status_code == 200
    doc = page.content.decode()
    ids = set(re.findall(r'<h[1-4] id="([^"]+)"', doc))
    assert "chance-corrected-agreement" in ids and "ground-truth-and-accuracy" in ids
    assert set(SECTION_ANCHORS.values()) <= ids
    # The contents list the second-level headings, linked to their anchors.
    assert '<a href="#rankings">Rankings</a>' in doc

    report = organizer_client.get(reverse("ranking:report", args=[star_study.study.pk]))
    html = report.content.decode()
    base = reverse("ranking:statistics")
    assert f'href="{base}"' in html
    linked = set(re.findall(rf'class="definition" href="{re.escape(base)}#([^"]+)"', html))
    assert linked <= ids
    for section in ("accuracy", "agreement", "judge-agreement", "judge-assisted", "quality"):
        assert SECTION_ANCHORS[section] in linked
    # The judge-vs-human section (kappa per pair, confusion, accuracy variants) is in the nav.
    assert '<a href="#judge-agreement">' in html


def test_the_definitions_are_for_organizers_only(client, annotator_client):
    url = reverse("ranking:statistics")
    assert client.get(url).status_code in (302, 403)
    assert annotator_client.get(url).status_code in (302, 403)


def test_chinese_page_says_the_definitions_are_in_english(organizer_client):
    organizer_client.cookies["django_language"] = "zh-hans"
    html = organizer_client.get(reverse("ranking:statistics")).content.decode()
    assert "以下定义以英文撰写。" in html and "目录" in html
    assert '<article class="card md doc" id="definitions" lang="en">' in html


def test_every_link_of_the_definitions_goes_to_an_anchor_of_the_page(organizer_client):
    """docs/statistics.md names other documents as plain text (docs/quality.md): a Markdown link
    relative to docs/ (`[x](quality.md)`) would be a dead link on this page. Every link inside
    the definitions and the contents is an anchor of the page or a full http(s) address."""
    html = organizer_client.get(reverse("ranking:statistics")).content.decode()
    ids = set(re.findall(r'\bid="([^"]+)"', html))
    body = re.search(r'<nav class="card".*</article>', html, re.S)
    assert body is not None
    hrefs = re.findall(r'href="([^"]*)"', body.group(0))
    assert len(hrefs) > 10
    for href in hrefs:
        assert href[1:] in ids if href.startswith("#") else href.startswith("https://"), href
