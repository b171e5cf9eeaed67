"""Organizer pages, one module per workflow: studies (create, edit, launch / pause / close,
progress), onsite annotators, importing data, a dataset's LLMs, raw downloads."""

from __future__ import annotations

from annotation.roster import onsite_annotator_create, onsite_annotators_for
from annotation.views.organizer.studies import STATUS_ACTIONS, study_links

__all__ = ["STATUS_ACTIONS", "onsite_annotator_create", "onsite_annotators_for", "study_links"]
