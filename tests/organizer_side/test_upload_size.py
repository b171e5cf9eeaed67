"""An upload bigger than IMPORT_UPLOAD_MAX_MB is refused before anything reads it.

The importers parse a file whole in memory (a JSONL file becomes a list of parsed lines), and the
browser import keeps a previewed upload on disk for an hour. With no cap, one organizer's
multi-gigabyte upload could exhaust the web server's memory or fill its disk for every other
user. Now the import page, the import API and the admin's import refuse it with a message naming
the cap and the command line, which has no cap, before a byte is staged or parsed."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from tests.factories import table_counts

pytestmark = pytest.mark.django_db

LINE = b'{"type": "question", "question_id": "q%d", "text": "t"}\n'


def _big_jsonl(n_lines: int = 20_000) -> SimpleUploadedFile:
    return SimpleUploadedFile("big.jsonl", b"".join(LINE % i for i in range(n_lines)))


@pytest.fixture
def one_mb_cap(settings):
    settings.IMPORT_UPLOAD_MAX_MB = 1


def test_the_import_api_refuses_an_upload_over_the_cap(organizer_client, one_mb_cap):
    before = table_counts()
    r = organizer_client.post(
        "/api/imports/", {"format": "jsonl", "dataset": "big", "files": [_big_jsonl()]}
    )
    assert r.status_code == 400
    assert "1 MB" in r.json()["detail"] and "import_dataset" in r.json()["detail"]
    assert table_counts() == before


def test_the_import_page_refuses_it_and_stages_nothing(organizer_client, one_mb_cap):
    before = table_counts()
    r = organizer_client.post(
        reverse("organize:import"), {"format": "jsonl", "dataset": "big", "files": [_big_jsonl()]}
    )
    assert r.status_code == 400
    assert "1 MB" in r.content.decode()
    assert table_counts() == before
    assert "import_staged" not in organizer_client.session


def test_an_upload_under_the_cap_is_imported(organizer_client, one_mb_cap):
    r = organizer_client.post(
        "/api/imports/", {"format": "jsonl", "dataset": "small", "files": [_big_jsonl(100)]}
    )
    assert r.status_code == 201, r.content
    assert r.json()["added"]["questions"] == 100
