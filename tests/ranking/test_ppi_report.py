"""The judge-assisted (PPI++) section through the user path: LLMEval-2 files imported with
`manage.py import_dataset`, humans on a random part of the answers, GPT-4 on all of them; then
the report page, the API and the downloads."""

from __future__ import annotations

import base64
import io
import json
import random
import re
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.models import LLM, Rater, Study
from ranking.stats.ppi_section import NOTE_FEW

from .conftest import page_charts

pytestmark = pytest.mark.django_db

FIXTURE_L2 = Path(settings.BASE_DIR) / "fixtures" / "llmeval-2"
SHARED_L2 = Path(settings.BASE_DIR).parent / "shared" / "data" / "llmeval-2"
GPT4 = "GPT-4 (LLMEval-2)"


def gpt4() -> str:
    """The judge as the report names raters: by pseudonym."""
    return Rater.objects.get(name=GPT4).pseudonym


def import_llmeval2(root: Path, tmp: Path, *, share: float, study: str, seed: int = 0) -> Study:
    """Import ``root``'s GPT-4 scores in full and the human scores of a random ``share`` of the
    answers (a copy of the files with the other records left out), as a user would."""
    human_dir = tmp / study / "results" / "human-score"
    human_dir.mkdir(parents=True)
    rng = random.Random(seed)
    for path in sorted((root / "results" / "human-score").glob("*_data.json")):
        records = json.loads(path.read_text(encoding="utf-8"))
        kept = [r for r in records if rng.random() < share]
        (human_dir / path.name).write_text(json.dumps(kept, ensure_ascii=False), encoding="utf-8")
    paths = [*sorted(human_dir.glob("*.json")), *sorted((root / "results" / "gpt-score").glob("*"))]
    call_command(
        "import_dataset",
        *map(str, paths),
        format="llmeval2-scores",
        study=study,
        user="alice",
        no_progress=True,
        stdout=io.StringIO(),
    )
    return Study.objects.get(name=study)


@pytest.fixture
def half_rated(organizer, tmp_path) -> Study:
    return import_llmeval2(FIXTURE_L2, tmp_path, share=0.5, study="Half rated by humans")


def report_url(study) -> str:
    return reverse("ranking:report", args=[study.pk])


def table_url(study, table: str) -> str:
    return reverse("ranking:api-report-table", args=[study.pk, table])


@pytest.fixture
def api(organizer) -> APIClient:
    c = APIClient()
    c.force_authenticate(organizer)
    return c


@pytest.mark.database_independent  # the page's wording and escaping: the same on any database
def test_the_report_shows_the_three_figures_side_by_side_and_the_chart(
    organizer_client, half_rated
):
    response = organizer_client.get(report_url(half_rated))
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="judge-assisted"' in html and 'href="#judge-assisted"' in html
    section = html[html.index('id="judge-assisted"') :]
    assert f"<strong>{gpt4()}</strong>" in section
    for header in ("Human only [95%]", "Judge only", "Judge-assisted [95%]", "Human ratings saved"):
        assert header in section
    # One overall row per model (20 in the fixture) with both intervals written out.
    overall = [row for row in section.split("<tr>") if "<td>overall</td>" in row]
    assert len(overall) == 20
    assert all(row.count("[") == 2 for row in overall)
    # Its chart comes with the page's others, into the section's empty place.
    assert '<div class="charts pending" id="charts-judge-assisted" data-loading=' in section
    [(src, alt)] = page_charts(organizer_client, half_rated)["judge-assisted"]
    assert alt.startswith("Interval width against human ratings spent")
    assert src.startswith("data:image/svg+xml;base64,")


@pytest.mark.database_independent  # PPI++ figures from the report frames (test_frames_copy)
def test_the_api_carries_the_table_with_no_nan(api, half_rated):
    response = api.get(table_url(half_rated, "ppi"))
    assert response.status_code == 200
    body = response.json()
    json.dumps(body, allow_nan=False)
    rows = [r for r in body["rows"] if r["criterion"] == "overall"]
    assert {r["judge"] for r in rows} == {gpt4()}
    assert all(r["default_judge"] for r in rows)
    for r in rows:
        assert r["n_human_items"] + r["n_judge_only_items"] == 30  # 30 answers per model
        assert r["ppi_low"] < r["ppi"] < r["ppi_high"]
        assert r["human_low"] < r["human"] < r["human_high"]
    assert sum(r["lam"] > 0 for r in rows) >= 15  # GPT-4 tracks the humans on most models
    curve = api.get(table_url(half_rated, "ppi_curve")).json()["rows"]
    assert {c["statistic"] for c in curve} == {"star_mean"} and len(curve) == 6


@pytest.mark.database_independent  # the page's wording and escaping: the same on any database
def test_the_judge_picker_ignores_hostile_values(organizer_client, half_rated):
    for value in ("<script>alert(1)</script>", "x\x00y", "٣", "j" * 5000, gpt4()):
        response = organizer_client.get(report_url(half_rated), {"ppi_judge": value})
        assert response.status_code == 200
        html = response.content.decode()
        assert "<script>alert(1)</script>" not in html
        assert f"<strong>{gpt4()}</strong>" in html  # the only judge, whatever was asked


def test_others_cannot_see_the_section(client, other_organizer, half_rated):
    anonymous = client.get(report_url(half_rated))
    assert anonymous.status_code == 302 and "login" in anonymous["Location"]
    assert APIClient().get(table_url(half_rated, "ppi")).status_code in (401, 403)
    client.force_login(other_organizer)
    assert client.get(report_url(half_rated)).status_code == 404
    outsider = APIClient()
    outsider.force_authenticate(other_organizer)
    assert outsider.get(table_url(half_rated, "ppi")).status_code == 404


@pytest.mark.database_independent  # the page's wording and escaping: the same on any database
def test_a_tiny_study_says_not_enough_data(organizer_client, api, star_study):
    html = organizer_client.get(report_url(star_study.study)).content.decode()
    section = html[html.index('id="judge-assisted"') :]
    assert "not enough data: fewer than 10 items" in section
    body = api.get(table_url(star_study.study, "ppi")).json()
    json.dumps(body, allow_nan=False)
    assert body["rows"] and all(r["note"] == NOTE_FEW.format(n=10) for r in body["rows"])
    assert all(r["ppi_low"] is None for r in body["rows"])


@pytest.mark.database_independent  # the page's wording and escaping: the same on any database
def test_hostile_model_names_are_escaped_on_the_page_the_chart_and_the_csv(
    organizer_client, half_rated
):
    name = LLM.objects.order_by("name").first().name
    LLM.objects.filter(name=name).update(name='=HYPERLINK("http://evil","<b>x</b>")')
    response = organizer_client.get(report_url(half_rated))
    html = response.content.decode()
    section = html[html.index('id="judge-assisted"') :]
    assert "<b>x</b>" not in section and "&lt;b&gt;x&lt;/b&gt;" in section
    [(uri, _alt)] = page_charts(organizer_client, half_rated)["judge-assisted"]
    svg = base64.b64decode(uri.split(",", 1)[1]).decode()
    ET.fromstring(svg)  # well-formed
    url = reverse("ranking:report-download", args=[half_rated.pk, "csv"])
    text = zipfile.ZipFile(io.BytesIO(organizer_client.get(url).content)).read("ppi.csv").decode()
    assert "HYPERLINK" in text and not re.search(r"(^|,)=HYPERLINK", text, re.M)


@pytest.mark.slow
@pytest.mark.database_independent  # the full import is checked on PostgreSQL by test_full_llmeval2
@pytest.mark.skipif(not (SHARED_L2 / "results").is_dir(), reason=f"no full data at {SHARED_L2}")
def test_llmeval2_with_a_fifth_of_the_human_scores(organizer, tmp_path, api):
    """Humans on 20% of the 9,600 answers: the combined interval covers the full-human mean for
    most models and is narrower than the human-only interval from the same 20%."""
    full = import_llmeval2(SHARED_L2, tmp_path, share=1.0, study="All human scores")
    fifth = import_llmeval2(SHARED_L2, tmp_path, share=0.2, study="A fifth", seed=1)

    def overall(study):
        rows = api.get(table_url(study, "ppi")).json()["rows"]
        return {r["model"]: r for r in rows if r["criterion"] == "overall"}

    truth, sub = overall(full), overall(fifth)
    assert len(sub) == 20
    covered = [sub[m]["ppi_low"] <= truth[m]["human"] <= sub[m]["ppi_high"] for m in sub]
    narrower = [
        sub[m]["ppi_high"] - sub[m]["ppi_low"] < sub[m]["human_high"] - sub[m]["human_low"]
        for m in sub
    ]
    assert sum(covered) >= 18, sum(covered)
    assert sum(narrower) >= 18, sum(narrower)


def test_with_two_judges_the_links_switch_between_them(rf):
    from ranking.services import StudyReport
    from ranking.stats.ppi_section import ppi_section
    from ranking.stats.synthetic import generate
    from ranking.templatetags.ranking_ppi import ppi_view

    s = generate(n_models=3, n_questions=30, n_pairs_per_question=3, n_crowd=5, n_public=5)
    report = StudyReport(study=None, filters=None, tables=ppi_section(s.star_df, s.pair_df))
    default = ppi_view({"request": rf.get("/")}, report)
    picked = ppi_view(
        {"request": rf.get("/", {"ppi_judge": "judge-star", "pool": "crowd"})}, report
    )
    # The pairwise judge has more ratings than the star judge: it is the default.
    assert (default["judge"], picked["judge"]) == ("judge-pair", "judge-star")
    assert [link["current"] for link in picked["links"]].count(True) == 1
    assert all("pool=crowd" in link["query"] for link in picked["links"])
    assert {row[0] for row in picked["table"].rows} == {"Mean stars"}
    assert {row[0] for row in default["table"].rows} == {"Win rate", "Bradley-Terry"}
