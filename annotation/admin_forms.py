"""Forms of the admin's custom views (the "Import data" page)."""

from __future__ import annotations

from typing import Any

from django import forms

from annotation.forms import DataImportForm
from annotation.importers import FORMATS


class ImportForm(DataImportForm):
    """The organizer import page's form, for every format, with a dry run: the admin imports at
    once rather than staging the files for a preview."""

    dry_run = forms.BooleanField(required=False, help_text="Check and count; write nothing.")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, formats=FORMATS, **kwargs)
