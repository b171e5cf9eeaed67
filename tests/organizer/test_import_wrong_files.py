"""What the import page says to a newcomer whose file is not yet right: a column the CSV header
lacks, a file of the other format. Once, with what to do, and nothing written."""

from __future__ import annotations

import re

import pytest

from annotation.models import Dataset
from tests.organizer.test_import_merge_download import GOOD, upload

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _english():
    from django.utils import translation

    with translation.override("en"):
        yield


CSV_NO_LLM = b"type,question_id,text\nquestion,q1,1+1=?\n" + b"".join(
    b"response,q1,answer %d\n" % i for i in range(30)
)


def test_a_csv_without_a_needed_column_is_told_once_not_on_every_row(organizer_client):
    """The header had no "llm" column: the page listed "line N: llm is missing" for each of
    30 rows. It says once which column the header lacks and which rows need it."""
    response = upload(organizer_client, CSV_NO_LLM, name="mine.csv", format="csv")
    errors = re.search(r'id="import-errors".*?</section>', response.content.decode(), re.S)
    assert response.status_code == 400
    assert re.findall(r"<li>(.*?)</li>", errors.group(0)) == [
        "<code>mine.csv: the CSV header has no column llm, which response rows need</code>"
    ]
    assert not Dataset.objects.filter(name="my-data").exists()


def test_an_empty_cell_in_a_csv_column_that_exists_is_still_told_by_line(organizer_client):
    body = b"type,question_id,text,llm\nquestion,q1,1+1=?,\nresponse,q1,2,\n"
    html = upload(organizer_client, body, name="mine.csv", format="csv").content.decode()
    assert "mine.csv, line 3: llm is missing" in html and "has no column" not in html


def test_a_file_of_the_other_format_says_which_format_to_choose(organizer_client):
    csv_file = b"type,question_id,text\nquestion,q1,1+1=?\n"
    html = upload(organizer_client, csv_file, name="mine.csv").content.decode()
    assert "mine.csv, line 1: not valid JSON" in html
    assert "the line looks like a CSV header: choose the format csv" in html
    html = upload(organizer_client, GOOD, name="mine.jsonl", format="csv").content.decode()
    assert (
        "the CSV header needs a &#x27;type&#x27; column; the file looks like JSON Lines: "
        "choose the format jsonl" in html
    )
    assert not Dataset.objects.filter(name="my-data").exists()
