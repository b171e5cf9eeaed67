"""The 409 page of two writes of one name at the same moment (config/conflicts.py) speaks the
reader's language: its title and message are in the Chinese catalogue."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser
from django.db import IntegrityError
from django.test import RequestFactory
from django.utils import translation

from config.conflicts import ConflictMiddleware

pytestmark = pytest.mark.django_db


def test_the_conflict_page_in_chinese():
    request = RequestFactory().get("/organize/studies/new/")
    request.user = AnonymousUser()
    with translation.override("zh-hans"):
        response = ConflictMiddleware(lambda r: None).process_exception(
            request, IntegrityError("UNIQUE constraint failed: annotation_study.name")
        )
    assert response is not None and response.status_code == 409
    body = response.content.decode()
    assert "同时保存了两次" in body and "未写入任何内容" in body
