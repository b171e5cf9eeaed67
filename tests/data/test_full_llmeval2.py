"""The whole of LLMEval-2 from ../shared/data (skipped where the folder is absent)."""

from __future__ import annotations

import pytest

from annotation.importers import dataset_import
from annotation.models import LLM, Question, Rater, Response
from tests.data.conftest import SHARED, table_counts

FULL = SHARED / "llmeval-2"


@pytest.mark.slow
@pytest.mark.skipif(
    not (FULL / "data").is_dir(), reason=f"the full LLMEval-2 data is not present at {FULL}"
)
def test_the_full_llmeval2_imports_once_with_both_raters(db):
    data = sorted((FULL / "data").glob("*_data.json"))
    scores = sorted((FULL / "results" / "human-score").glob("*.json")) + sorted(
        (FULL / "results" / "gpt-score").glob("*.json")
    )
    dataset_import(format="llmeval2", paths=data, progress=False)
    result = dataset_import(format="llmeval2-scores", paths=scores, progress=False)

    assert Question.objects.count() == 480
    assert LLM.objects.count() == 20
    assert Response.objects.count() == 9600
    assert Rater.objects.get(name="LLMEval-2 human panel").ratings.count() == 9600
    assert Rater.objects.get(name="GPT-4 (LLMEval-2)").ratings.count() == 9600
    # Every score of both sets is stored (two objective or four subjective criteria each).
    assert result.added["scores"] == 2 * (6080 * 2 + 3520 * 4)

    before = table_counts()
    again = dataset_import(format="llmeval2-scores", paths=scores, progress=False)
    assert again.total_added == 0
    assert dataset_import(format="llmeval2", paths=data, progress=False).total_added == 0
    assert table_counts() == before
