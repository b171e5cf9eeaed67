"""The study page's links for annotators, in a real browser: the field is tall enough for its
text, so the underscores of PROLIFIC_PID, STUDY_ID and SESSION_ID show (they were cut off at
the bottom of the field, and the URL read "PROLIFIC PID" with a space)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.engine.conftest import make_study

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

# The font size and the room inside the field for its line, in CSS pixels. A line as tall as
# the font's own ("normal") put the underscore, which monospace fonts draw below the descent,
# under the field's edge: the room must leave clearance.
MEASURE = """input => {
  const style = getComputedStyle(input);
  const room = input.clientHeight - parseFloat(style.paddingTop) - parseFloat(style.paddingBottom);
  return [parseFloat(style.fontSize), room];
}"""


def test_the_crowd_links_are_not_cut_off_at_the_bottom(page, login, organizer):
    study = make_study(owner=organizer, admit_crowd=True, admit_public=True)
    login("alice", "alice-pass-123")
    page.goto(f"/organize/studies/{study.pk}/")
    fields = page.locator(".links input[readonly]")
    expect(fields.first).to_be_visible()
    assert fields.count() >= 3
    for i in range(fields.count()):
        size, room = fields.nth(i).evaluate(MEASURE)
        assert room >= 1.4 * size, (i, size, room)
    prolific = page.locator(".links input[value*=PROLIFIC_PID]").input_value()
    assert "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID=" in prolific
