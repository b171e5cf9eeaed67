"""config/cli.py: management commands name a row by id or name, and hostile ids are a clear
CommandError, never a crash."""

from __future__ import annotations

import pytest
from django.core.management.base import CommandError

from annotation.models import Study
from config.cli import object_by_ref
from tests.factories import make_study

pytestmark = pytest.mark.django_db


def test_a_study_is_found_by_id_and_by_name():
    study = make_study(status=Study.Status.DRAFT)
    assert object_by_ref(Study, str(study.pk)) == study
    assert object_by_ref(Study, study.name) == study


def test_an_all_digit_name_is_found_when_no_study_has_that_id():
    study = make_study(status=Study.Status.DRAFT)
    Study.objects.filter(pk=study.pk).update(name="987654")
    assert object_by_ref(Study, "987654") == study


@pytest.mark.parametrize("ref", ["nope", "٣", "9" * 5000, "12\x00"])
def test_an_unknown_or_hostile_reference_names_itself_in_the_error(ref):
    make_study(status=Study.Status.DRAFT)
    with pytest.raises(CommandError, match="No study"):
        object_by_ref(Study, ref)
