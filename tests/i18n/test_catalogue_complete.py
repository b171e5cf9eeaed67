"""Every translatable string of the code has a Chinese translation: makemessages, run on a copy of
the sources and of the catalogue (the real locale directory is never touched), leaves no msgid
without a msgstr; a fuzzy entry (a guess msgmerge made) counts as missing."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

SOURCES = ("annotation", "evaluation", "ranking", "config", "templates", "locale")

pytestmark = pytest.mark.database_independent


def _entries(po: str) -> list[str]:
    return [
        b for b in po.split("\n\n") if "\nmsgid " in "\n" + b and 'msgid ""\nmsgstr ""\n"' not in b
    ]


def untranslated(po: str) -> list[str]:
    """The msgids of the entries that are fuzzy or have an empty msgstr (any plural form)."""
    missing = []
    for block in _entries(po):
        empty = re.search(r'^msgstr(\[\d+\])? ""$(?!\n")', block, re.M)
        if "#, fuzzy" in block or empty:
            msgid = re.search(r'^msgid (".*"(?:\n".*")*)', block, re.M)
            missing.append(msgid.group(1) if msgid else block)
    return missing


def test_untranslated_finds_empty_and_fuzzy_entries():
    po = (
        'msgid ""\nmsgstr ""\n"Language: zh_Hans\\n"\n\n'
        'msgid "done"\nmsgstr "完成"\n\n'
        'msgid "empty"\nmsgstr ""\n\n'
        '#, fuzzy\nmsgid "guessed"\nmsgstr "猜的"\n\n'
        'msgid "long"\nmsgstr ""\n"长"\n'
    )
    assert untranslated(po) == ['"empty"', '"guessed"']


@pytest.mark.skipif(shutil.which("xgettext") is None, reason="GNU gettext is not installed")
def test_makemessages_leaves_no_string_untranslated(tmp_path):
    base = Path(settings.BASE_DIR)
    for name in SOURCES:
        shutil.copytree(base / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(base / "manage.py", tmp_path / "manage.py")
    # The copy's settings put LOCALE_PATHS in the copy (BASE_DIR is config/settings.py's parent).
    subprocess.run(
        [sys.executable, "manage.py", "makemessages", "-l", "zh_Hans", "-v0"],
        cwd=tmp_path,
        check=True,
        capture_output=True,
    )
    po = (tmp_path / "locale" / "zh_Hans" / "LC_MESSAGES" / "django.po").read_text("utf-8")
    missing = untranslated(po)
    assert not missing, f"{len(missing)} strings lack a Chinese translation: " + "; ".join(missing)
