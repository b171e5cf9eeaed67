"""An organizer's day in Chromium: import your own data with a preview, a study from what the
dataset has (near-duplicate LLMs flagged and merged), edit the draft, bulk-add annotators,
download raw ratings for Excel, close after a confirmation (also without JavaScript)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from annotation.models import LLM, Dataset, Rater, Response, Study
from tests.engine.conftest import make_study

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

SHOTS = os.environ.get("REPORT_SCREENSHOTS")  # a folder for screenshots a person looks at


def _shot(page, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / f"{name}.png"), full_page=True)


RECORDS = [
    {"type": "question", "question_id": "q1", "text": "1+1=?", "task_type": "数学"},
    {"type": "question", "question_id": "q2", "text": "写一首诗", "task_type": "写作"},
    {"type": "response", "question_id": "q1", "llm": "GPT4", "text": "2"},
    {"type": "response", "question_id": "q1", "llm": "claude", "text": "二"},
    {"type": "response", "question_id": "q2", "llm": "GPT-4.0", "text": "春眠不觉晓"},
    {"type": "response", "question_id": "q2", "llm": "claude", "text": "床前明月光"},
]


def _jsonl(records) -> bytes:
    return "\n".join(json.dumps(r, ensure_ascii=False) for r in records).encode("utf-8")


def _upload(page, content: bytes) -> None:
    page.goto("/organize/import/")
    page.select_option("select[name=format]", "jsonl")
    page.fill("input[name=dataset]", "my-data")
    page.set_input_files(
        "input[name=files]",
        files=[{"name": "mine.jsonl", "mimeType": "application/jsonl", "buffer": content}],
    )
    page.get_by_role("button", name="Preview").click()


def test_import_preview_then_a_study_from_the_datasets_own_choices(page, login, organizer):
    login("alice", "alice-pass-123")
    # A broken line: the error names the file and the line, nothing is written.
    _upload(page, _jsonl(RECORDS) + b"\nnot json\n")
    expect(page.locator("#import-errors")).to_contain_text("mine.jsonl, line 7")
    assert not Dataset.objects.filter(name="my-data").exists()
    # The fixed file: a preview with counts, then Import.
    _upload(page, _jsonl(RECORDS))
    preview = page.locator("#import-preview")
    expect(preview.locator("tr[data-entity=questions] td").nth(1)).to_have_text("2")
    expect(preview.locator("tr[data-entity=responses] td").nth(1)).to_have_text("4")
    expect(preview.locator("tr[data-entity=llms] td").nth(1)).to_have_text("3")
    assert not Dataset.objects.filter(name="my-data").exists()
    _shot(page, "organizer-import-preview")
    preview.get_by_role("button", name="Import").click()
    # Straight to a new study on the imported dataset, its task types and LLMs listed.
    expect(page).to_have_url(re.compile(r"/organize/studies/new/\?dataset=\d+"))
    expect(page.get_by_role("checkbox", name=re.compile(r"^数学 \(1 question\)"))).to_be_visible()
    duplicates = page.locator("[data-duplicates]")
    expect(duplicates).to_contain_text("GPT4")
    expect(duplicates).to_contain_text("GPT-4.0")
    _shot(page, "organizer-new-study")

    # Merge the near-duplicates after a confirmation page.
    duplicates.get_by_role("link", name="Review and merge them").click()
    page.get_by_role("link", name="Merge GPT-4.0 into GPT4…").click()
    expect(page.locator("#merge-confirm")).to_contain_text("1 answer of dataset my-data moves")
    page.get_by_role("button", name="Merge").click()
    expect(page.locator(".messages")).to_contain_text("1 answer moved from GPT-4.0 to GPT4")
    assert Response.objects.filter(llm__name="GPT4").count() == 2
    assert not LLM.objects.filter(name="GPT-4.0").exists()

    # Create a study from ticked choices, then edit the draft with the same form.
    page.get_by_role("link", name="New study on this dataset").click()
    page.fill("input[name=name]", "Poems")
    page.select_option("select[name=rubric]", label="LLMEval-2 objective and subjective")
    page.get_by_role("checkbox", name=re.compile(r"^写作")).check()
    page.get_by_role("button", name="Create study").click()
    expect(page.locator(".messages")).to_contain_text("Study saved with 2 items")
    page.get_by_role("link", name="Edit").click()
    expect(page.get_by_role("checkbox", name=re.compile(r"^写作"))).to_be_checked()
    page.get_by_role("checkbox", name=re.compile(r"^claude")).check()
    page.get_by_role("button", name="Save changes").click()
    expect(page.locator(".messages")).to_contain_text("Study saved with 1 items")
    assert Study.objects.get(name="Poems").selection == {"task_types": ["写作"], "llms": ["claude"]}


def test_changing_the_dataset_swaps_the_pickers_in_place(page, login, organizer):
    login("alice", "alice-pass-123")
    Dataset.objects.create(name="empty")
    with_data = make_study(owner=organizer, status=Study.Status.DRAFT).dataset
    page.goto("/organize/studies/new/")
    page.evaluate("window.__sameDocument = true")
    page.select_option("select[name=dataset]", str(with_data.pk))
    expect(page.get_by_role("checkbox", name=re.compile(r"^secret-model-0 \("))).to_be_visible()
    assert page.evaluate("window.__sameDocument === true")


def test_bulk_annotators_passwords_once_reissue_and_deactivate(page, login, organizer):
    login("alice", "alice-pass-123")
    page.goto("/organize/annotators/")
    page.fill("textarea[name=names]", "wang.fang@example.org\nli-lei\n")
    page.get_by_role("button", name="Create accounts").click()
    rows = page.locator("#new-accounts tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.first.locator("[data-password]")).to_have_text(re.compile(r"^\S{10,}$"))
    _shot(page, "organizer-bulk-accounts")
    row = page.locator("#roster tr[data-username=li-lei]")
    row.get_by_role("button", name="New invitation link").click()
    expect(page.locator("[data-invite-url]").first).to_have_value(re.compile(r"/invite/"))
    page.locator("#roster tr[data-username=li-lei]").get_by_role(
        "button", name="Deactivate"
    ).click()
    expect(page.locator("#roster tr[data-username=li-lei]")).to_contain_text("deactivated")
    assert not Rater.objects.get(user__username="li-lei").user.is_active
    # The roster never shows pseudonyms.
    pseudonym = Rater.objects.get(user__username="li-lei").pseudonym
    assert pseudonym not in page.content()


def test_raw_ratings_for_excel_and_a_confirmed_close(page, login, organizer):
    login("alice", "alice-pass-123")
    study = make_study(owner=organizer, text="中文答案")
    page.goto(f"/organize/studies/{study.pk}/")
    with page.expect_download() as info:
        page.locator(".raw-downloads").get_by_role("link", name="CSV for Excel").first.click()
    with open(info.value.path(), "rb") as fh:
        assert fh.read(3) == b"\xef\xbb\xbf"
    page.get_by_role("link", name="Close…").click()
    expect(page.locator("#close-confirm")).to_contain_text("cannot be undone")
    page.get_by_role("link", name="Keep it open").click()
    study.refresh_from_db()
    assert study.status == Study.Status.LIVE
    page.get_by_role("link", name="Close…").click()
    page.get_by_role("button", name="Yes, close the study").click()
    expect(page.locator(".status")).to_have_text("closed")


def test_close_confirmation_works_without_javascript(browser, live_server, organizer):
    from django.test import Client

    study = make_study(owner=organizer)
    client = Client()
    client.force_login(organizer)
    context = browser.new_context(base_url=live_server.url, java_script_enabled=False)
    context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )
    tab = context.new_page()
    tab.goto(f"/organize/studies/{study.pk}/")
    tab.get_by_role("link", name="Close…").click()
    tab.get_by_role("button", name="Yes, close the study").click()
    expect(tab.locator(".status")).to_have_text("closed")
    context.close()
