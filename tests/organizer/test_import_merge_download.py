"""The in-app import (preview, errors per line, confirm), merging near-duplicate LLMs, and the raw
downloads (plain CSV and "Excel" CSV with a byte-order mark)."""

from __future__ import annotations

import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.catalogue import normalised_name
from annotation.models import LLM, Dataset, Question, Rater, Response, Study
from tests.engine.conftest import make_study


@pytest.fixture(autouse=True)
def _english():
    from django.utils import translation

    with translation.override("en"):
        yield


def jsonl(*records) -> bytes:
    return "\n".join(json.dumps(r, ensure_ascii=False) for r in records).encode("utf-8")


GOOD = jsonl(
    {"type": "question", "question_id": "q1", "text": "1+1=?", "kind": "objective"},
    {"type": "question", "question_id": "q2", "text": "写一首诗", "task_type": "写作"},
    {"type": "response", "question_id": "q1", "llm": "model-x", "text": "2"},
    {"type": "response", "question_id": "q1", "llm": "model-y", "text": "3"},
    {"type": "response", "question_id": "q2", "llm": "model-x", "text": "春眠不觉晓"},
)


def upload(client, content: bytes, name="mine.jsonl", **fields):
    data = {"format": "jsonl", "dataset": "my-data", **fields}
    data["files"] = SimpleUploadedFile(name, content, content_type="application/jsonl")
    return client.post(reverse("organize:import"), data)


def test_the_import_page_links_the_formats_without_command_line_flags(organizer_client):
    html = organizer_client.get(reverse("organize:import")).content.decode()
    assert reverse("organize:import_formats") in html
    assert "--rater" not in html and "--dataset" not in html
    doc = organizer_client.get(reverse("organize:import_formats")).content.decode()
    assert "<h3>" in doc and "your own data" in doc


def test_preview_counts_what_would_be_created_and_writes_nothing(organizer_client):
    response = upload(organizer_client, GOOD)
    html = response.content.decode()
    assert response.status_code == 200
    counts = dict(re.findall(r'data-entity="(\w+)"><td>\w+</td><td class="num">(\d+)', html))
    assert counts["questions"] == "2" and counts["responses"] == "3"
    assert counts["llms"] == "2" and counts["datasets"] == "1"
    assert not Dataset.objects.filter(name="my-data").exists()
    assert not Question.objects.exists()


def test_confirming_the_preview_imports_and_opens_a_new_study_on_the_data(
    organizer_client, organizer
):
    html = upload(organizer_client, GOOD).content.decode()
    token = re.search(r'name="token" value="([0-9a-f]+)"', html).group(1)
    response = organizer_client.post(
        reverse("organize:import_confirm"), {"token": token, "action": "import"}
    )
    dataset = Dataset.objects.get(name="my-data")
    assert response.status_code == 302
    assert response["Location"] == reverse("organize:study_new") + f"?dataset={dataset.pk}"
    assert Response.objects.filter(question__dataset=dataset).count() == 3
    # The staged files are gone: the same token cannot import twice.
    again = organizer_client.post(
        reverse("organize:import_confirm"), {"token": token, "action": "import"}, follow=True
    )
    assert "expired or was used already" in again.content.decode()


def test_after_importing_ratings_the_page_links_the_studies_that_hold_them(organizer_client):
    """The import lands on the new-study form, which said nothing of the closed study the
    ratings went to: a newcomer could not find them. A message now links each one's report."""
    ratings = [
        {"type": "pairwise", "question_id": "q1", "llm_a": "model-x", "llm_b": "model-y",
         "rater": "expert <b>1</b>", "choice": "a"},
    ]  # fmt: skip
    html = upload(organizer_client, GOOD + b"\n" + jsonl(*ratings)).content.decode()
    token = re.search(r'name="token" value="([0-9a-f]+)"', html).group(1)
    page = organizer_client.post(
        reverse("organize:import_confirm"), {"token": token, "action": "import"}, follow=True
    ).content.decode()
    study = Study.objects.get(name="my-data (imported pairwise ratings)")
    assert "Imported ratings are kept in closed studies of their own; reports: " in page
    link = f'<a href="{reverse("ranking:report", args=[study.pk])}">{study.name}</a>'
    assert link in page


def test_an_import_without_ratings_names_no_study(organizer_client):
    html = upload(organizer_client, GOOD).content.decode()
    token = re.search(r'name="token" value="([0-9a-f]+)"', html).group(1)
    page = organizer_client.post(
        reverse("organize:import_confirm"), {"token": token, "action": "import"}, follow=True
    ).content.decode()
    assert "rows added" in page and "closed studies of their own" not in page


def test_cancel_writes_nothing(organizer_client):
    html = upload(organizer_client, GOOD).content.decode()
    token = re.search(r'name="token" value="([0-9a-f]+)"', html).group(1)
    organizer_client.post(reverse("organize:import_confirm"), {"token": token, "action": "cancel"})
    assert not Dataset.objects.filter(name="my-data").exists()


def test_a_forged_token_imports_nothing(organizer_client):
    upload(organizer_client, GOOD)
    for token in ("../../etc", "0" * 32, ""):
        response = organizer_client.post(
            reverse("organize:import_confirm"), {"token": token, "action": "import"}
        )
        assert response.status_code == 302
    assert not Dataset.objects.filter(name="my-data").exists()


def test_errors_are_shown_by_file_and_line_and_nothing_is_written(organizer_client):
    bad = GOOD + b"\n[1, 2]\n"
    response = upload(organizer_client, bad)
    html = response.content.decode()
    assert response.status_code == 400
    assert 'id="import-errors"' in html and "mine.jsonl, line 6" in html
    assert 'id="import-preview"' not in html
    assert not Dataset.objects.filter(name="my-data").exists()


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"rater": "someone"}, "The jsonl format does not use this field"),
        ({"format": "nope"}, "Select a valid choice. nope is not one of the available choices"),
        ({"dataset": "x\x00y"}, "Null characters are not allowed"),
        ({"dataset": ""}, "Name the dataset: your own JSONL or CSV files need one."),
        ({"dataset": "  "}, "Name the dataset: your own JSONL or CSV files need one."),
    ],
)
def test_bad_options_are_400_with_a_message(organizer_client, fields, message):
    response = upload(organizer_client, GOOD, **fields)
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not Question.objects.exists()


@pytest.mark.parametrize(
    ("name", "fmt", "content"),
    [
        ("latin1.csv", "csv", "type,question_id,text\nquestion,q1,Caf\xe9\n".encode("latin-1")),
        (
            "latin1.jsonl",
            "jsonl",
            '{"type": "question", "question_id": "q1", "text": "\xe9"}'.encode("latin-1"),
        ),
    ],
)
def test_a_file_that_is_not_utf8_is_refused_with_how_to_fix_it(
    organizer_client, name, fmt, content
):
    response = upload(organizer_client, content, name=name, format=fmt)
    html = response.content.decode()
    assert response.status_code == 400
    assert f"{name}: the file is not UTF-8 text (byte 0xe9 cannot be read)" in html
    assert "save it as UTF-8" in html
    assert not Dataset.objects.filter(name="my-data").exists()


def test_a_raw_control_character_in_a_jsonl_text_says_how_to_write_it(organizer_client):
    raw = GOOD + b'\n{"type": "question", "question_id": "q9", "text": "tab\there"}'
    response = upload(organizer_client, raw)
    assert response.status_code == 400
    assert (
        "mine.jsonl, line 6: not valid JSON (Invalid control character, column 55; a tab, line "
        "break or NUL inside a text must be written as \\t, \\n, \\u0000)"
    ) in response.content.decode()
    assert not Question.objects.exists()


def test_a_question_id_used_twice_for_different_texts_is_refused(organizer_client):
    twice = GOOD + b"\n" + jsonl({"type": "question", "question_id": "q1", "text": "2+2=?"})
    response = upload(organizer_client, twice)
    assert response.status_code == 400
    assert "mine.jsonl, line 6: question id &#x27;q1&#x27; is used again for another text" in (
        response.content.decode()
    )
    assert not Question.objects.exists()
    same_again = GOOD + b"\n" + jsonl({"type": "question", "question_id": "q1", "text": "1+1=?"})
    assert upload(organizer_client, same_again).status_code == 200  # a repeated line is fine


def test_only_organizers_import(client, annotator_user):
    assert client.get(reverse("organize:import")).status_code == 302
    client.force_login(annotator_user)
    assert upload(client, GOOD).status_code == 403
    assert not Question.objects.exists()


# --- near-duplicate LLMs ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("GPT4", "gpt-4", True),
        ("GPT4", "GPT4.0", True),
        ("GPT-4", "ＧＰＴ－４", True),  # full-width
        ("gpt-3.5", "gpt-35", True),
        ("gpt-3.5", "gpt-4", False),
        ("GPT4", "GPT40", False),
        ("文心一言", "文心 一言", True),
    ],
)
def test_normalised_names(a, b, same):
    assert (normalised_name(a) == normalised_name(b)) is same


def dup_dataset(owner, *, clash=False) -> tuple[Dataset, LLM, LLM]:
    dataset = Dataset.objects.create(name="dups", owner=owner)
    gpt4, gpt40 = LLM.objects.create(name="GPT4"), LLM.objects.create(name="GPT4.0")
    for i in range(3):
        q = Question.objects.create(dataset=dataset, external_id=f"q{i}", text="?")
        Response.objects.create(question=q, llm=gpt4 if i < 2 else gpt40, text="a")
        if clash and i == 0:
            Response.objects.create(question=q, llm=gpt40, text="b")
    return dataset, gpt4, gpt40


def test_merging_moves_the_datasets_answers_after_confirmation(organizer_client, organizer):
    dataset, gpt4, gpt40 = dup_dataset(organizer)
    elsewhere = Dataset.objects.create(name="other")
    q = Question.objects.create(dataset=elsewhere, external_id="z", text="?")
    Response.objects.create(question=q, llm=gpt40, text="kept")
    listing = organizer_client.get(reverse("organize:dataset_llms", args=[dataset.pk]))
    assert "Merge GPT4.0 into GPT4" in listing.content.decode()
    url = reverse("organize:dataset_llm_merge", args=[dataset.pk])
    confirm = organizer_client.get(url, {"source": gpt40.pk, "target": gpt4.pk})
    assert "1 answer of dataset dups moves from GPT4.0 to GPT4" in confirm.content.decode()
    assert Response.objects.filter(llm=gpt40).count() == 2  # nothing moved yet
    organizer_client.post(url, {"source": gpt40.pk, "target": gpt4.pk, "confirm": "merge"})
    assert Response.objects.filter(question__dataset=dataset, llm=gpt4).count() == 3
    # Another dataset's answers by the same name are not this dataset's to change.
    assert Response.objects.get(question=q).llm == gpt40


def test_merging_follows_the_datasets_studies(organizer):
    from annotation.catalogue import llm_merge

    dataset, gpt4, gpt40 = dup_dataset(organizer)
    study = make_study(owner=organizer)
    Study.objects.filter(pk=study.pk).update(
        dataset=dataset, selection={"llms": ["GPT4", "GPT4.0"]}
    )
    llm_merge(dataset=dataset, source=gpt40, target=gpt4, user=organizer)
    study.refresh_from_db()
    assert study.selection["llms"] == ["GPT4"]
    assert not LLM.objects.filter(name="GPT4.0").exists()  # nothing refers to it any more


def test_merging_is_refused_when_both_answered_one_question(organizer_client, organizer):
    dataset, gpt4, gpt40 = dup_dataset(organizer, clash=True)
    url = reverse("organize:dataset_llm_merge", args=[dataset.pk])
    page = organizer_client.get(url, {"source": gpt40.pk, "target": gpt4.pk}).content.decode()
    assert "Refused: both names answered 1 question" in page
    response = organizer_client.post(
        url, {"source": gpt40.pk, "target": gpt4.pk, "confirm": "merge"}, follow=True
    )
    assert "both answered question(s) q0" in response.content.decode()
    assert Response.objects.filter(llm=gpt40).count() == 2


def test_nobody_but_an_administrator_merges_in_the_shared_catalogue(client, organizer):
    dataset, gpt4, gpt40 = dup_dataset(None)  # no owner: every organizer reads it
    client.force_login(organizer)
    url = reverse("organize:dataset_llm_merge", args=[dataset.pk])
    page = client.get(url, {"source": gpt40.pk, "target": gpt4.pk}).content.decode()
    assert "Only the dataset's owner" in page
    response = client.post(url, {"source": gpt40.pk, "target": gpt4.pk, "confirm": "merge"})
    assert response.status_code == 403
    assert Response.objects.filter(llm=gpt40).count() == 1


def test_another_organizers_dataset_is_not_found(client, organizer, other_organizer):
    dataset, gpt4, gpt40 = dup_dataset(organizer)
    client.force_login(other_organizer)
    assert client.get(reverse("organize:dataset_llms", args=[dataset.pk])).status_code == 404
    url = reverse("organize:dataset_llm_merge", args=[dataset.pk])
    assert client.get(url, {"source": gpt40.pk, "target": gpt4.pk}).status_code == 404
    response = client.post(url, {"source": gpt40.pk, "target": gpt4.pk, "confirm": "merge"})
    assert response.status_code == 404
    assert Response.objects.filter(llm=gpt40).count() == 1


@pytest.mark.parametrize("source", ["", "abc", "٣", "9" * 40, "999999"])
def test_merging_rejects_bad_ids_without_a_500(organizer_client, organizer, source):
    dataset, gpt4, _gpt40 = dup_dataset(organizer)
    url = reverse("organize:dataset_llm_merge", args=[dataset.pk])
    response = organizer_client.post(url, {"source": source, "target": gpt4.pk, "confirm": "merge"})
    assert response.status_code == 302
    assert Response.objects.filter(llm=gpt4).count() == 2


# --- raw downloads ------------------------------------------------------------------------------


def rated_study(owner):
    from annotation import engine
    from tests.engine.conftest import make_rater

    study = make_study(owner=owner, text="中文答案，很长")
    rater = make_rater()
    a = engine.assignment_next(study=study, rater=rater)
    engine.assignment_submit(
        assignment=a,
        rater=rater,
        scores={c.key: 2 for c in study.rubric.criteria_for(a.item.question)},
    )
    return study, rater


def body(response) -> bytes:
    return b"".join(response.streaming_content)


def test_raw_ratings_download_as_plain_and_excel_csv(organizer_client, organizer):
    study, rater = rated_study(organizer)
    page = organizer_client.get(reverse("organize:study", args=[study.pk])).content.decode()
    excel_url = reverse("organize:study_download", args=[study.pk, "ratings", "excel"])
    plain_url = reverse("organize:study_download", args=[study.pk, "ratings", "csv"])
    assert excel_url in page and plain_url in page
    plain, excel = body(organizer_client.get(plain_url)), body(organizer_client.get(excel_url))
    assert not plain.startswith(b"\xef\xbb\xbf")
    assert excel == b"\xef\xbb\xbf" + plain
    assert rater.pseudonym.encode() in plain and rater.user.username.encode() not in plain
    response = organizer_client.get(excel_url)
    assert response["Content-Disposition"].endswith('-excel.csv"')
    responses = body(
        organizer_client.get(
            reverse("organize:study_download", args=[study.pk, "responses", "excel"])
        )
    )
    assert "中文答案".encode() in responses


def test_the_csv_for_excel_escapes_formulas_and_the_plain_csv_keeps_them(
    organizer_client, organizer
):
    import csv
    import io

    study = make_study(owner=organizer, n_llms=1, text="=cmd|' /C calc'!A0")
    LLM.objects.filter(responses__question__dataset=study.dataset).update(name="@SUM(A1)")
    urls = {
        fmt: reverse("organize:study_download", args=[study.pk, "responses", fmt])
        for fmt in ("csv", "excel")
    }
    plain, excel = (body(organizer_client.get(urls[f])).decode("utf-8-sig") for f in urls)
    plain_rows, excel_rows = (list(csv.reader(io.StringIO(t))) for t in (plain, excel))
    assert len(plain_rows) == len(excel_rows) > 1
    plain_cells = {c for row in plain_rows for c in row}
    excel_cells = {c for row in excel_rows for c in row}
    assert {"=cmd|' /C calc'!A0", "@SUM(A1)"} <= plain_cells  # exact, for pandas and re-import
    assert {"'=cmd|' /C calc'!A0", "'@SUM(A1)"} <= excel_cells
    assert not any(c.startswith(("=", "+", "-", "@")) for c in excel_cells)


def test_raw_downloads_are_owner_only_and_check_the_format(
    client, organizer, other_organizer, annotator_user
):
    study, _ = rated_study(organizer)
    url = reverse("organize:study_download", args=[study.pk, "ratings", "csv"])
    client.force_login(other_organizer)
    assert client.get(url).status_code == 404
    client.force_login(annotator_user)
    assert client.get(url).status_code == 403
    client.force_login(organizer)
    bad = reverse("organize:study_download", args=[study.pk, "ratings", "exe"])
    assert client.get(bad).status_code == 404
    bad = reverse("organize:study_download", args=[study.pk, "passwords", "csv"])
    assert client.get(bad).status_code == 404
    assert Rater.objects.count() >= 1


def test_star_ratings_without_a_rubric_are_refused_once_naming_the_forms_field(
    organizer_client,
):
    """Not one "--rubric KEY" line per rating: the rubric is a setting of the whole import, so the
    page says once, in the words of its own form, what to choose."""
    ratings = [
        {"type": "rating", "question_id": "q1", "llm": llm, "rater": "r", "scores": {"c": 1}}
        for llm in ("model-x", "model-y")
    ]
    html = upload(organizer_client, GOOD + b"\n" + jsonl(*ratings)).content.decode()
    assert html.count("star ratings need a rubric") == 1
    assert "“Rubric” in the import form" in html
    assert not Dataset.objects.filter(name="my-data").exists()


def test_a_flag_the_text_says_is_the_command_lines_stays_a_flag(organizer_client):
    """The page turns the command's flags into its fields' names, but not where the text itself
    speaks of the command line: "“rubric” KEY on the command line" and "export_data “what”
    generic" named neither a field nor a flag."""
    ratings = [{"type": "rating", "question_id": "q1", "llm": "model-x", "rater": "r",
                "scores": {"c": 1}}]  # fmt: skip
    html = upload(organizer_client, GOOD + b"\n" + jsonl(*ratings)).content.decode()
    assert "--rubric KEY on the command line" in html and "“rubric” KEY" not in html
    assert "export_data --what generic" in html and "“what” generic" not in html
    assert "Needs “dataset”" in html  # a flag the form has as a field is still named as one


@pytest.mark.parametrize(
    "text, shown",
    [
        ("pass --rater NAME --rater-kind human", "pass “rater” NAME “rater kind” human"),
        ("(--rubric KEY on the command line)", "(--rubric KEY on the command line)"),
        ("命令行中的 --rubric KEY", "命令行中的 --rubric KEY"),
        ("export_data --what generic writes it", "export_data --what generic writes it"),
    ],
)
def test_option_names_keeps_only_the_command_lines_own_flags(text, shown):
    from annotation.templatetags.organizer import option_names

    assert option_names(text) == shown


def test_a_refusal_names_the_forms_fields_not_the_commands_flags(organizer_client):
    """The importers' refusals are shared with the command ("pass --rater NAME --rater-kind ...");
    the page, which has fields and no flags, names the fields."""
    header = b"id,question_uuid,llm_name,dialog_uuid,user_id,user_type,metric,score\n"
    html = upload(
        organizer_client, header, name="scores.csv", format="llmeval1-scores", dataset=""
    ).content.decode()
    errors = re.search(r'id="import-errors".*?</section>', html, re.S).group(0)
    assert "cannot tell whose scores these are" in errors
    assert "“rater” NAME “rater kind”" in errors and "--rater" not in errors


def test_llmeval2_scores_without_a_folder_ask_for_the_folder_field(organizer_client):
    """An uploaded file has lost its folder (human-score / gpt-score), which is what tells whose
    scores it holds: the form asks for the page's "Score folder" field before any parsing."""
    html = upload(
        organizer_client, b"[]", name="Chemistry_data.json", format="llmeval2-scores", dataset=""
    )
    assert html.status_code == 400
    body = html.content.decode()
    assert "Choose the folder the score files come from" in body
    assert "--rater" not in body and not Rater.objects.exists()


def test_the_download_links_say_which_csv_keeps_formula_like_text(organizer_client, organizer):
    """The plain CSV keeps an answer such as `=HYPERLINK(...)` exactly (docs/decisions/data.md);
    the page says so where the organizer picks the file, and points to the spreadsheet-safe ones."""
    study = make_study(owner=organizer)
    html = organizer_client.get(reverse("organize:study", args=[study.pk])).content.decode()
    assert html.count("a text may start with = + - @") == 2  # ratings and responses CSV
    assert html.count("starts with an apostrophe") == 2  # both CSVs for Excel


def test_the_import_pages_format_list_follows_the_pages_language(organizer_client):
    """The formats' help is the import command's English text; the page shows it translated."""
    url = reverse("organize:import")
    english = organizer_client.get(url, HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "Your own data as CSV with a &#x27;type&#x27; column" in english
    chinese = organizer_client.get(url, HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "Your own data" not in chinese and "LLMEval-2 questions and answers" not in chinese
    assert "“dataset”" in chinese and "--dataset" not in chinese


def test_pseudonyms_never_start_like_a_spreadsheet_formula(monkeypatch):
    """A pseudonym (and a study's public id) is never escaped by the CSV for Excel, so it reads
    the same there as in the report: the generator skips tokens that start with "-" or "_"."""
    import secrets

    from annotation.models import _public_id

    tokens = iter(["-AAAAAAAAAAAAAAA", "_BBBBBBBBBBBBBBB", "CCCCCCCCCCCCCCCC"])
    monkeypatch.setattr(secrets, "token_urlsafe", lambda n: next(tokens))
    assert _public_id() == "CCCCCCCCCCCCCCCC"


def test_the_preview_names_what_it_counts_in_the_pages_language(organizer_client):
    """The preview's rows are named in words of the page's language, not the importer's keys."""
    organizer_client.cookies["django_language"] = "zh-hans"
    html = upload(organizer_client, GOOD).content.decode()
    rows = dict(re.findall(r'data-entity="(\w+)"><td>([^<]+)</td>', html))
    assert rows == {"datasets": "数据集", "questions": "问题", "llms": "模型", "responses": "回答"}
    organizer_client.cookies["django_language"] = "en"
    html = upload(organizer_client, GOOD).content.decode()
    rows = dict(re.findall(r'data-entity="(\w+)"><td>([^<]+)</td>', html))
    assert rows["llms"] == "LLMs" and rows["questions"] == "Questions"
