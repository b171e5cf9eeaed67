"""The generic format's round trip through the pages: the study page's download, the import
page, the copy's download: the same bytes as the export command writes."""

from __future__ import annotations

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation import models as am
from tests.data.test_generic_roundtrip import rich_star  # noqa: F401
from tests.factories import generic_export


@pytest.mark.django_db
def test_the_round_trip_through_the_pages_gives_the_same_file(
    rich_star,  # noqa: F811
    organizer,
    organizer_client,
    star_rubric,
):
    """Download the generic JSONL from the study page, import it on the import page, download
    the copy: the same bytes, as with the commands."""
    rich_star.owner = organizer
    rich_star.save()
    page = organizer_client.get(reverse("organize:study", args=[rich_star.pk])).content.decode()
    url = reverse("organize:study_download", args=[rich_star.pk, "generic", "jsonl"])
    assert f'href="{url}"' in page
    first = b"".join(organizer_client.get(url).streaming_content)
    assert first == generic_export(rich_star)

    preview = organizer_client.post(
        reverse("organize:import"),
        {
            "format": "jsonl",
            "dataset": "page copy",
            "study": "page copy",
            "rubric": star_rubric.key,
            "files": SimpleUploadedFile("study.jsonl", first),
        },
    ).content.decode()
    token = re.search(r'name="token" value="([0-9a-f]+)"', preview).group(1)
    organizer_client.post(reverse("organize:import_confirm"), {"token": token, "action": "import"})
    copy = am.Study.objects.get(name="page copy")
    url = reverse("organize:study_download", args=[copy.pk, "generic", "jsonl"])
    assert b"".join(organizer_client.get(url).streaming_content) == first
