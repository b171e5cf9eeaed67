"""Domain model: what is rated (catalogue.py: datasets, questions, responses, rubrics), how and by
whom (study.py: studies, items, raters, assignments) and what was said (ratings.py: ratings,
scores, import records, annotator exclusions).

Integrity lives in the database: unique and check constraints guard what the services promise
(one first exposure per rater and item, one rating per assignment, canonical pair order).
"""

from annotation.models import owners  # noqa: F401  (renames a deleted owner's clashing rows)
from annotation.models._ids import SHUFFLE_MAX, _public_id, _shuffle_key
from annotation.models.catalogue import LLM, Criterion, Dataset, Question, Response, Rubric
from annotation.models.ratings import Exclusion, ImportRecord, ParseStatus, Rating, Score
from annotation.models.study import Assignment, Item, PairChoice, Rater, Study

__all__ = [
    "LLM",
    "SHUFFLE_MAX",
    "Assignment",
    "Criterion",
    "Dataset",
    "Exclusion",
    "ImportRecord",
    "Item",
    "PairChoice",
    "ParseStatus",
    "Question",
    "Rater",
    "Rating",
    "Response",
    "Rubric",
    "Score",
    "Study",
    "_public_id",
    "_shuffle_key",
]
