"""The agreement figures of the report against second implementations, the way a user gets them:
a seeded JSONL file through `manage.py import_dataset`, the report through the API.

Cohen's kappa per pair (scikit-learn), Krippendorff's alpha (the `krippendorff` package), the
judge's macro P/R/F1 against the majority of the humans (scikit-learn) and the stars against the
human mean (scipy); Fleiss' kappa by its textbook formula. Every figure to 1e-9. Pairwise labels
are oriented by model name (docs/statistics.md, "Input"), as the report orients them.
"""

from __future__ import annotations

import io
import json
import random
from collections import Counter, defaultdict

import krippendorff
import numpy as np
import pytest
from django.core.management import call_command
from django.urls import reverse
from rest_framework.test import APIClient
from scipy import stats
from sklearn.metrics import cohen_kappa_score, precision_recall_fscore_support

from annotation.models import Rater, Study

# database_independent: the figures from the report frames: the frames are the same on PostgreSQL (tests/ranking/test_frames_copy.py).
pytestmark = [pytest.mark.django_db, pytest.mark.database_independent]

MODELS = {"m-a": 0.8, "m-b": 0.5, "模型-c": 0.2}  # quality; the unicode name sorts last
CRITERIA = ("accuracy", "fluency")
RATERS = (("h1", "human", 0.5), ("h2", "human", 0.8), ("h3", "human", 1.1), ("J", "judge", 0.4))
FLIP = {"a": "b", "b": "a"}
CHOICE = {"a": "A", "b": "B"}  # the file's choices as the report names them


def _records() -> list[dict]:
    rng = random.Random(7)
    recs: list[dict] = []
    for q in range(10):
        qid = f"q{q}"
        recs.append({"type": "question", "question_id": qid, "text": f"question {q}"})
        # Answers stored in reverse name order on every second question (orientation matters).
        order = list(MODELS) if q % 2 else list(reversed(MODELS))
        recs += [{"type": "response", "question_id": qid, "llm": m, "text": m} for m in order]
        for (m, quality), (name, kind, noise) in _each(MODELS.items(), RATERS):
            scores = {
                c: min(3, max(1, round(1 + 2 * quality + rng.gauss(0, noise)))) for c in CRITERIA
            }
            recs.append(_rated("rating", qid, name, kind, llm=m, scores=scores))
        for a, b in [("m-a", "m-b"), ("m-b", "模型-c"), ("m-a", "模型-c")]:
            for name, kind, noise in RATERS:
                p_a = (1 - noise / 2) * MODELS[a] / (MODELS[a] + MODELS[b]) + noise / 4
                choice = rng.choices(["a", "b", "tie", "both_bad"], [p_a, 1 - p_a, 0.3, 0.1])[0]
                if rng.random() < 0.5:  # written B-first: the same judgement
                    a, b, choice = b, a, FLIP.get(choice, choice)
                recs.append(_rated("pairwise", qid, name, kind, llm_a=a, llm_b=b, choice=choice))
    return recs


def _each(xs, ys):
    return [(x, y) for x in xs for y in ys]


def _rated(type_: str, qid: str, name: str, kind: str, **fields) -> dict:
    pool = "judge" if kind == "judge" else "onsite"
    base = {"type": type_, "question_id": qid, "rater": name, "rater_kind": kind}
    return {**base, "rater_pool": pool, **fields}


@pytest.fixture
def reports(tmp_path, organizer):
    recs = _records()
    path = tmp_path / "agreement.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in recs), encoding="utf-8")
    options = {"format": "jsonl", "dataset": "Agree", "rubric": "llmeval1", "no_progress": True}
    call_command(
        "import_dataset", str(path), user=organizer.username, stdout=io.StringIO(), **options
    )
    api = APIClient()
    api.force_authenticate(organizer)
    out = {}
    for mode, name in (
        ("star", "Agree (imported ratings)"),
        ("pairwise", "Agree (imported pairwise ratings)"),
    ):
        study = Study.objects.get(name=name)
        response = api.get(reverse("ranking:api-report", args=[study.pk]))
        assert response.status_code == 200
        out[mode] = response.json()["tables"]
    names = dict(Rater.objects.values_list("pseudonym", "name"))
    return recs, out, names


def _labels(recs: list[dict]) -> dict[str, dict[tuple, dict[str, object]]]:
    """(mode or criterion) -> item -> rater -> label; pairwise in name orientation."""
    out: dict[str, dict[tuple, dict[str, object]]] = defaultdict(lambda: defaultdict(dict))
    for r in recs:
        if r["type"] == "rating":
            for c, v in r["scores"].items():
                out[c][(r["question_id"], r["llm"])][r["rater"]] = v
        elif r["type"] == "pairwise":
            a, b = sorted([r["llm_a"], r["llm_b"]])
            choice = r["choice"] if r["llm_a"] == a else FLIP.get(r["choice"], r["choice"])
            out["pairwise"][(r["question_id"], a, b)][r["rater"]] = CHOICE.get(choice, choice)
    return out


def _fleiss(units: list[list[object]]) -> float:
    per_unit, counts = [], Counter()
    for values in units:
        n = len(values)
        per_unit.append((sum(k * k for k in Counter(values).values()) - n) / (n * (n - 1)))
        counts.update(values)
    total = sum(counts.values())
    p_e = sum((k / total) ** 2 for k in counts.values())
    return (float(np.mean(per_unit)) - p_e) / (1 - p_e)


def _alpha(by_item: dict[tuple, dict[str, object]], level: str) -> float:
    raters = sorted({r for v in by_item.values() for r in v})
    codes = {c: i for i, c in enumerate(["A", "B", "tie", "both_bad"])}
    data = [
        [
            float(codes.get(v, v)) if (v := by_item[i].get(r)) is not None else np.nan
            for i in by_item
        ]
        for r in raters
    ]
    domain = [1, 2, 3] if level == "ordinal" else None
    return krippendorff.alpha(
        reliability_data=data, level_of_measurement=level, value_domain=domain
    )


def test_kappa_fleiss_and_alpha_agree_with_the_libraries(reports):
    recs, tables, names = reports
    labels = _labels(recs)
    n = 0
    for mode in ("star", "pairwise"):
        for row in tables[mode]["kappa_pairs"]:
            a, b = names[row["rater_a"]], names[row["rater_b"]]
            items = labels[row["criterion"]]
            common = [i for i, v in items.items() if a in v and b in v]
            expected = cohen_kappa_score(
                [items[i][a] for i in common], [items[i][b] for i in common]
            )
            assert row["n_items"] == len(common)
            assert row["kappa"] == pytest.approx(expected, abs=1e-9), (mode, a, b)
            n += 1
        for row in tables[mode]["chance_agreement"]:
            items = labels[row["criterion"]]
            if row["raters"] == "humans" or row["raters"] == "onsite":
                items = {i: {r: x for r, x in v.items() if r != "J"} for i, v in items.items()}
            elif row["raters"] == "judge":
                continue  # one judge: no pairable values
            if row["statistic"] == "fleiss_kappa":
                expected = _fleiss([list(v.values()) for v in items.values()])
            else:
                expected = _alpha(items, row["statistic"].removeprefix("alpha_"))
            assert row["estimate"] == pytest.approx(expected, abs=1e-9), row
            n += 1
    assert n >= 30


def test_judge_vs_human_majority_and_stars_agree_with_the_libraries(reports):
    recs, tables, names = reports
    labels = _labels(recs)
    for mode in ("star", "pairwise"):
        for row in tables[mode]["judge_agreement"]:
            if row["group_by"] != "judge":
                continue
            truth, pred = [], []
            for votes in labels[row["criterion"]].values():
                humans = Counter(
                    "tie" if x == "both_bad" else x for r, x in votes.items() if r != "J"
                )
                (top, k), *rest = humans.most_common()
                if rest and rest[0][1] == k:
                    continue  # no majority
                truth.append(top)
                pred.append("tie" if votes["J"] == "both_bad" else votes["J"])
            kinds = sorted(set(truth) | set(pred), key=str)
            p, r, f, _ = precision_recall_fscore_support(
                truth, pred, labels=kinds, average="macro", zero_division=0
            )
            assert row["n_judgements"] == len(truth)
            assert row["accuracy"] == pytest.approx(np.mean(np.array(truth) == np.array(pred)))
            assert (row["macro_precision"], row["macro_recall"], row["macro_f1"]) == pytest.approx(
                (p, r, f), abs=1e-9
            )
    for row in tables["star"]["star_vs_human"]:
        if row["group_by"] != "judge":
            continue
        items = labels[row["criterion"]].values()
        x = [v["J"] for v in items]
        y = [np.mean([s for r, s in v.items() if r != "J"]) for v in items]
        assert row["mae"] == pytest.approx(np.mean(np.abs(np.subtract(x, y))), abs=1e-12)
        assert row["pearson"] == pytest.approx(stats.pearsonr(x, y)[0], abs=1e-9)
        assert row["spearman"] == pytest.approx(stats.spearmanr(x, y)[0], abs=1e-9)
