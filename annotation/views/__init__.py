"""Annotation views by audience: annotator pages (annotator.py, entry.py), organizer pages
(organizer/), and the home page (home.py). The REST API lives in annotation/api/."""
