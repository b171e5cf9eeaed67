"""The report of a pairwise study depends on the ratings, not on which answer of a pair happens
to be stored as response A.

Nominal agreement (Cohen's and Fleiss' kappa, Krippendorff's alpha over A / B / tie / both bad)
and the macro P/R/F1 and confusion matrix of the judge tables use the labels A and B as
categories. If A were whatever answer was stored first, the same ratings imported with the
answers in another order (`export_data --what generic` writes them in name order) would give
other figures. The statistics orient every pair by model name instead
(docs/statistics.md, "Input"). This test imports the same ratings twice through
`manage.py import_dataset`, once with the answers of every second question stored in
the other order and every second pair written B-first (choice and left side kept), and compares
the report through the API; it also checks Fleiss' kappa against a direct computation in name
order.
"""

from __future__ import annotations

import io
import json
import random
from collections import Counter

import pytest
from django.core.management import call_command
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.models import Study

pytestmark = pytest.mark.django_db

MODELS = ["x", "y", "z"]
RATERS = [("h1", "human", "onsite"), ("h2", "human", "onsite"), ("h3", "human", "crowd")]
RATERS += [("judge", "judge", "judge")]
FLIP = {"a": "b", "b": "a", "tie": "tie", "both_bad": "both_bad"}


def _records(swap_every_second: bool) -> list[dict]:
    rng = random.Random(3)
    recs: list[dict] = []
    for q in range(8):
        qid = f"q{q}"
        recs.append({"type": "question", "question_id": qid, "text": f"question {q}"})
        recs += [
            {"type": "response", "question_id": qid, "llm": m, "text": m * (5 + 40 * i)}
            # An item's response A is the answer stored first: in one import that is the
            # last model by name on every question, in the other on every second question.
            for i, m in (list if swap_every_second and q % 2 else reversed)(list(enumerate(MODELS)))
        ]
        pairs = [("x", "y"), ("y", "z"), ("x", "z")]
        for n_pair, (a, b) in enumerate(pairs):
            for name, kind, pool in RATERS:
                # Skewed towards "a" so that A and B are not equally frequent (their shares
                # are what the chance agreement of the kappas depends on).
                choice = rng.choice(["a", "a", "a", "b", "tie", "both_bad"])
                left = rng.choice([a, b])
                rec = {
                    "type": "pairwise",
                    "question_id": qid,
                    "llm_a": a,
                    "llm_b": b,
                    "choice": choice,
                    "left": left,
                    "rater": name,
                    "rater_kind": kind,
                    "rater_pool": pool,
                }
                if swap_every_second and (q + n_pair) % 2:
                    rec.update(llm_a=b, llm_b=a, choice=FLIP[choice])
                recs.append(rec)
    return recs


def _import(tmp_path, organizer, name: str, recs: list[dict]) -> Study:
    path = tmp_path / f"{name}.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in recs) + "\n", encoding="utf-8")
    call_command(
        "import_dataset",
        str(path),
        format="jsonl",
        dataset=name,
        user=organizer.username,
        no_progress=True,
        stdout=io.StringIO(),
    )
    return Study.objects.get(name=f"{name} (imported pairwise ratings)")


def _report(organizer, study: Study) -> dict:
    api = APIClient()
    api.force_authenticate(organizer)
    response = api.get(reverse("ranking:api-report", args=[study.pk]))
    assert response.status_code == 200
    return response.json()["tables"]


def _fleiss_in_name_order(recs: list[dict], raters: set[str]) -> float:
    labels: dict[tuple, list[str]] = {}
    for r in recs:
        if r["type"] != "pairwise" or r["rater"] not in raters:
            continue
        a, b = sorted([r["llm_a"], r["llm_b"]])
        choice = r["choice"] if r["llm_a"] == a else FLIP[r["choice"]]
        labels.setdefault((r["question_id"], a, b), []).append(choice)
    per_item, counts = [], Counter()
    for values in labels.values():
        n = len(values)
        per_item.append((sum(c * c for c in Counter(values).values()) - n) / (n * (n - 1)))
        counts.update(values)
    total = sum(counts.values())
    p_e = sum((c / total) ** 2 for c in counts.values())
    return (sum(per_item) / len(per_item) - p_e) / (1 - p_e)


def _figures(tables: dict) -> dict:
    def drop(row, *cols):
        # Rounded: the same sums taken in another order may differ in the last bits.
        return tuple(
            (k, round(v, 12) if isinstance(v, float) else v)
            for k, v in sorted(row.items())
            if k not in cols
        )

    # Raters are pseudonyms, different in each study: compare by position in a stable order.
    return {
        "chance_agreement": [drop(r, "ci_low", "ci_high") for r in tables["chance_agreement"]],
        "kappa": [drop(r) for r in tables["kappa"]],
        "krippendorff": [drop(r) for r in tables["krippendorff"]],
        "kappa_pairs": sorted(round(r["kappa"], 12) for r in tables["kappa_pairs"]),
        "judge_agreement": [
            drop(r, "group") for r in tables["judge_agreement"] if r["group_by"] != "judge"
        ]
        + [drop(r, "group") for r in tables["judge_agreement"] if r["group_by"] == "judge"],
        "judge_confusion": sorted(drop(r, "group") for r in tables["judge_confusion"]),
        "position_bias": [drop(r, "group") for r in tables["position_bias"]],
        "leaderboard_points": [drop(r) for r in tables["leaderboard_points"]],
    }


def test_agreement_figures_do_not_depend_on_which_answer_is_stored_first(tmp_path, organizer):
    straight, swapped = _records(False), _records(True)
    one = _report(organizer, _import(tmp_path, organizer, "straight", straight))
    two = _report(organizer, _import(tmp_path, organizer, "swapped", swapped))
    a, b = _figures(one), _figures(two)
    for table in a:
        assert a[table] == b[table], table
    rows = [r for r in two["chance_agreement"] if r["statistic"] == "fleiss_kappa"]
    got = {r["raters"]: r["estimate"] for r in rows}
    humans = {name for name, kind, _ in RATERS if kind == "human"}
    assert got["humans"] == pytest.approx(_fleiss_in_name_order(swapped, humans), abs=1e-12)
    assert got["all"] == pytest.approx(
        _fleiss_in_name_order(swapped, humans | {"judge"}), abs=1e-12
    )
