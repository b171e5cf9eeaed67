"""The common pairwise CSV row is read by a fast path (generic._FastPairwise); every row it takes
must give the very RatingSpec the general path gives, and every row it declines must still get
the general path's checks and messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from annotation.importers import generic
from annotation.importers.base import ImportRefused, Options, RepairLog

HEADER = (
    "type,question_id,text,llm,llm_a,llm_b,rater,rater_kind,rater_pool,choice,submitted_at,left"
)
ROWS = [
    "question,q1,Which is better?,,,,,,,,,",
    "response,q1,answer x,x,,,,,,,,",
    "response,q1,answer y,y,,,,,,,,",
    "pairwise,q1,,,x,y,ann,,,a,2026-01-01T10:00:00+00:00,",
    "pairwise,q1,,,y,x,ann,,,B,2026-01-01T10:00:01,",  # upper case, no offset: read as UTC
    "pairwise,q1,,,x,y,ann,,,tie,,",  # no time: the import's time
    "pairwise, q1 ,,,x,y,ann,,,both_bad, 2026-01-01T10:00:02+02:00 ,",  # spaces stripped
    "pairwise,q1,,,x,y,judge-1,judge,judge,a,2026-01-01T10:00:03Z,",
    "pairwise,q1,,,x,y,judge-1,judge,judge,b,2026-01-01T10:00:04Z,",
    "pairwise,q1,,,x,y,ann,,,a,2026-01-01T10:00:05+00:00,y",  # a `left` cell: general path
    "pairwise,q1,,,x,y,ann,,crowd,a,,",  # another rater (same name, other pool)
    "pairwise,q1,,,x,y,ann,,crowd,tie,,",
]


def _parse(path: Path, *, fast: bool, monkeypatch: pytest.MonkeyPatch):
    taken = []
    take = generic._FastPairwise.take

    def spy(self, row, number):
        ok = fast and take(self, row, number)
        taken.append(ok)
        return ok

    monkeypatch.setattr(generic._FastPairwise, "take", spy)
    repairs = RepairLog()
    bundle = generic.parse([path], repairs, Options(dataset="d", progress=False), fmt="csv")
    return bundle, list(repairs), taken


def _write(tmp_path: Path, rows: list[str]) -> Path:
    path = tmp_path / "ratings.csv"
    path.write_text("\n".join([HEADER, *rows]) + "\n", encoding="utf-8")
    return path


def test_fast_rows_give_the_same_bundle_as_the_general_path(tmp_path, monkeypatch):
    path = _write(tmp_path, ROWS)
    fast, fast_repairs, taken = _parse(path, fast=True, monkeypatch=monkeypatch)
    slow, slow_repairs, _ = _parse(path, fast=False, monkeypatch=monkeypatch)
    # The fast path did read rows (each rater's first row goes the general way, which knows
    # raters; the row with a `left` cell too).
    assert taken.count(True) == 5
    assert fast.ratings == slow.ratings
    assert [r.where for r in fast.ratings] == [f"ratings.csv, line {n}" for n in range(5, 14)]
    assert fast.raters == slow.raters and fast.studies == slow.studies
    assert fast.questions == slow.questions and fast.responses == slow.responses
    assert fast_repairs == slow_repairs
    assert fast.ratings[2].submitted_at is None
    assert fast.ratings[1].submitted_at.utcoffset().total_seconds() == 0
    assert fast.ratings[3].submitted_at.utcoffset().total_seconds() == 7200
    assert fast.ratings[6].first_on_left is False


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("pairwise,q1,,,x,y,ann,,,maybe,,", "line 6: choice must be a, b, tie or both_bad"),
        ("pairwise,q1,,,x,x,ann,,,a,,", "line 6: llm_a and llm_b are the same model"),
        ("pairwise,q1,,,x,y,ann,,,a,yesterday,", "line 6: submitted_at must be an ISO 8601"),
        ("pairwise,q1,,,x,,ann,,,a,,", "line 6: llm_b is missing"),
        ("pairwise,,,,x,y,ann,,,a,,", "line 6: question_id is missing"),
        ("pairwise,q1,,,x,y\x00,ann,,,a,,", "line 6: llm_b contains a NUL character"),
        ("pairwise,q1,,,x,y,ann,,,a,,z", "line 6: left must name llm_a or llm_b"),
    ],
)
def test_a_bad_row_after_fast_rows_is_refused_naming_its_line(tmp_path, monkeypatch, row, message):
    path = _write(tmp_path, [*ROWS[:4], row])
    with pytest.raises(ImportRefused) as exc:
        _parse(path, fast=True, monkeypatch=monkeypatch)
    assert message in str(exc.value)


def test_the_same_rows_without_a_header_cell_for_time_or_pool(tmp_path, monkeypatch):
    path = tmp_path / "short.csv"
    path.write_text(
        "type,question_id,llm_a,llm_b,rater,choice\npairwise,q1,x,y,ann,a\npairwise,q1,y,x,ann,b\n"
    )
    fast, _, taken = _parse(path, fast=True, monkeypatch=monkeypatch)
    slow, _, _ = _parse(path, fast=False, monkeypatch=monkeypatch)
    assert taken == [False, True]
    assert fast.ratings == slow.ratings
