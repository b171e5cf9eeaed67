"""The item page's links are built from patterns reversed once: they must be exactly what
reverse() gives, under any script prefix."""

from __future__ import annotations

import uuid

import pytest
from django.urls import clear_script_prefix, reverse, set_script_prefix

from annotation.views.annotator_item import ITEM_VIEWS, item_urls


@pytest.mark.parametrize("prefix", ["/", "/eval/"])
def test_the_item_links_are_what_reverse_gives(prefix):
    pid = uuid.uuid4()
    set_script_prefix(prefix)
    try:
        expected = {
            name: reverse(f"annotate:{view}", args=[pid]) for name, view in ITEM_VIEWS.items()
        }
        assert item_urls(pid) == expected
        assert item_urls(str(pid)) == expected
    finally:
        clear_script_prefix()
    assert expected["skip"].startswith(f"{prefix}a/{pid}/")
