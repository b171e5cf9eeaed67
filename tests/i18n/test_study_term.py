"""One Chinese word for a study: the catalogue says 项目 (评测项目) for "study", so no entry about a
study may call it 研究 ("research"), which the pages used in a few places for the same thing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings

pytestmark = pytest.mark.database_independent

PO = Path(settings.BASE_DIR) / "locale" / "zh_Hans" / "LC_MESSAGES" / "django.po"


def _text(block: str, field: str) -> str:
    found = re.search(rf'^{field} ((?:".*"\n?)+)', block + "\n", re.M)
    return "".join(re.findall(r'"(.*)"', found.group(1))) if found else ""


def study_called_research(po: str) -> list[str]:
    """The msgids about a study (not about research) whose translation says 研究."""
    wrong = []
    for block in po.split("\n\n"):
        msgid, msgstr = _text(block, "msgid"), _text(block, "msgstr")
        about_study = re.search(r"\bstud(y|ies)\b", msgid, re.I)
        if about_study and "research" not in msgid.lower() and "研究" in msgstr:
            wrong.append(msgid)
    return wrong


def test_the_check_finds_a_study_called_research():
    po = (
        'msgid "Edit study"\nmsgstr "编辑研究"\n\n'
        'msgid "Close study"\nmsgstr "关闭项目"\n\n'
        'msgid "Return the study or contact the researcher."\nmsgstr "退回此项目或联系研究人员。"\n'
    )
    assert study_called_research(po) == ["Edit study"]


def test_the_catalogue_calls_a_study_a_project_everywhere():
    wrong = study_called_research(PO.read_text("utf-8"))
    assert not wrong, "研究 for a study in: " + "; ".join(wrong)
