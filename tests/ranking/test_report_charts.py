"""The report page's charts come in a request of their own (ranking/chart_groups.py): the page
has an empty place per group of charts and loads them with htmx once it is shown; opened
without JavaScript, the same address is a page of charts."""

from __future__ import annotations

import base64
import re
from urllib.parse import quote

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import translation
from django.utils.translation import gettext

from .conftest import page_charts

# database_independent: pages, permissions and cache keys: the same on any database.
pytestmark = [pytest.mark.django_db, pytest.mark.database_independent]


# An empty place for a group of charts, with what it says until they come.
PLACE = (
    r'<div class="charts pending" id="charts-([\w-]+)" data-loading="Drawing the charts…"></div>'
)


def charts_url(study) -> str:
    return reverse("ranking:report-charts", args=[study.pk])


def test_every_place_on_the_page_gets_its_charts_and_no_other(organizer_client, star_study):
    study = star_study.study
    html = organizer_client.get(reverse("ranking:report", args=[study.pk])).content.decode()
    places = set(re.findall(PLACE, html))
    charts = page_charts(organizer_client, study)
    assert set(charts) == places
    drawn = {group for group, figures in charts.items() if figures}
    # A star study: leaderboards, accuracy, consistency, the judge gaps, annotators, ...
    assert {"leaderboards", "accuracy", "consistency", "gaps", "annotators"} <= drawn
    for figures in charts.values():
        for src, alt in figures:
            assert src.startswith("data:image/svg+xml;base64,") and alt
    # Until they come, each place says so in the page's language.
    organizer_client.cookies["django_language"] = "zh-hans"
    chinese = organizer_client.get(reverse("ranking:report", args=[study.pk])).content.decode()
    assert chinese.count('data-loading="正在绘制图表…"') == len(places)


def test_the_charts_follow_the_pages_filters(organizer_client, star_study):
    study = star_study.study
    url = reverse("ranking:report", args=[study.pk])
    body = organizer_client.get(url, {"pool": "onsite"}, headers={"HX-Request": "true"})
    loader = re.search(r'id="report-charts-loader" hx-get="([^"]+)"', body.content.decode())
    assert loader and loader.group(1) == charts_url(study) + "?pool=onsite"
    everyone = page_charts(organizer_client, study)
    onsite = page_charts(organizer_client, study, {"pool": "onsite"})
    # The onsite rater alone: its own leaderboard, and too few raters for a box per pool.
    assert onsite["leaderboards"] and onsite["leaderboards"] != everyone["leaderboards"]
    assert everyone["accuracy"] and not onsite["accuracy"]


def test_without_javascript_the_address_is_a_page_of_charts(organizer_client, star_study):
    study = star_study.study
    html = organizer_client.get(reverse("ranking:report", args=[study.pk])).content.decode()
    noscript = "".join(re.findall(r"<noscript>(.*?)</noscript>", html, re.S))
    assert f'<p class="card"><a href="{charts_url(study)}">' in noscript
    # ... and the empty places do not say "drawing" without the script that fills them.
    assert ".charts.pending::before { display: none; }" in noscript
    response = organizer_client.get(charts_url(study))
    assert response.status_code == 200
    page = response.content.decode()
    assert "<html" in page and "hx-swap-oob" not in page
    assert '<section class="report-section" id="accuracy">' in page
    assert page.count('<figure><img src="data:image/svg+xml;base64,') >= 5
    assert "HX-Request" in response["Vary"]


def test_bad_filters_are_a_400_and_nothing_is_drawn(organizer_client, star_study):
    response = organizer_client.get(
        charts_url(star_study.study), {"start": "2024-03-05", "end": "2024-03-01"}
    )
    assert response.status_code == 400
    assert response["Content-Type"].startswith("text/plain")
    assert b"Invalid filters" in response.content


def test_another_organizers_study_is_a_404_and_strangers_log_in(other_organizer, star_study):
    c = Client()
    response = c.get(charts_url(star_study.study))
    assert response.status_code in (302, 403)
    # An expired session on an open report page: htmx is sent back to the login page, and from
    # there to the report (a 302 would be followed and its page dropped by the swaps).
    page = reverse("ranking:report", args=[star_study.study.pk]) + "?pool=crowd"
    hx = {"HX-Request": "true", "HX-Current-URL": f"http://testserver{page}"}
    response = c.get(charts_url(star_study.study), headers=hx)
    assert response.status_code == 200
    assert response["HX-Redirect"] == reverse("login") + "?next=" + quote(page, safe="/")
    c.force_login(other_organizer)
    assert c.get(charts_url(star_study.study)).status_code == 404
    assert c.get(charts_url(star_study.study), headers={"HX-Request": "true"}).status_code == 404


@pytest.mark.parametrize("lang", ["en", "zh-hans"])
def test_without_javascript_filters_that_leave_no_chart_say_so(organizer_client, star_study, lang):
    """Filters under which nothing can be drawn give a page that says so, not a bare title."""
    study = star_study.study
    empty = {"start": "2000-01-01", "end": "2000-01-02"}
    assert not any(page_charts(organizer_client, study, empty).values())
    response = organizer_client.get(charts_url(study), empty, headers={"Accept-Language": lang})
    assert response.status_code == 200
    page = response.content.decode()
    assert "<figure>" not in page and 'class="report-section"' not in page
    with translation.override(lang):
        said = gettext("No chart to draw under these filters.")
    assert said in page and (lang == "en" or not said.isascii())
    # With charts to draw, the page shows them and not the sentence.
    full = organizer_client.get(charts_url(study), headers={"Accept-Language": lang})
    assert "<figure>" in full.content.decode() and said not in full.content.decode()


@pytest.mark.parametrize("lang", ["en", "zh-hans"])
def test_the_position_bias_chart_names_its_rows_in_words(organizer_client, pair_study, lang):
    """Its rows read "rater_kind: human", "pool: crowd" (codes, in English on a Chinese page);
    they now say what the report's table says, in the page's language."""
    charts = page_charts(organizer_client, pair_study.study, lang=lang)
    [(src, _alt)] = charts["position"]
    svg = base64.b64decode(src.split(",", 1)[1]).decode()
    assert "rater_kind" not in svg
    assert lang == "en" or "pool: crowd" not in svg
    with translation.override(lang):
        rows = [
            f"{gettext('rater kind')}: {gettext('human')}",
            f"{gettext('pool')}: {gettext('crowd')}",
        ]
    for row in rows:
        assert row in svg
    assert lang == "en" or not rows[1].isascii()


CODES = re.compile(
    r">(?:[^<]*\b(?:rater_kind|group_by|task_type)\b|(?:pool|human|judge|all|onsite|crowd|public): |(?:all|onsite|crowd|public) / )"
)


@pytest.mark.parametrize("study", ["star_study", "pair_study"])
def test_no_chart_labels_its_rows_with_codes_on_the_chinese_page(organizer_client, study, request):
    """Length bias, discrimination, agreement, hints and position bias named their rows by the
    tables' codes ("pool: crowd", "human: task_type ...", "onsite / accuracy")."""
    built = request.getfixturevalue(study)
    charts = page_charts(organizer_client, built.study, lang="zh-hans")
    texts = []
    for figures in charts.values():
        for src, _alt in figures:
            texts.append(base64.b64decode(src.split(",", 1)[1]).decode())
    assert len(texts) >= 5
    coded = [m.group(0) for svg in texts for m in CODES.finditer(svg)]
    assert coded == []
