"""Load the released LLMEval data into the statistics' input frames, as the importer would.

Reads ../shared/data directly (tests skip when it is absent). LLMEval-2: each answer has one
human score (the panel's, published as one number) and one GPT-4 score; they become two raters,
"LLMEval-2 human panel" (onsite, human) and "GPT-4 (LLMEval-2)" (judge). LLMEval-1: the GPT-4
star file in long format; a (answer, criterion) that appears twice in the file is GPT-4 judging
the same answer again, so later occurrences are marked as repeats.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
if not DATA.exists():  # the repository may live elsewhere; the brief's absolute path
    DATA = Path("/work/shared/data")

LLMEVAL2 = DATA / "llmeval-2"
LLMEVAL1 = DATA / "llmeval-1"

HUMAN_PANEL = "LLMEval-2 human panel"
GPT4_L2 = "GPT-4 (LLMEval-2)"
GPT4_L1 = "GPT-4 (LLMEval-1)"

# Star range of each LLMEval-2 criterion (upstream README "Criteria").
LLMEVAL2_MAX = {
    "Correctness": 3.0,
    "Explanation Correctness": 2.0,
    "Accuracy": 5.0,
    "Informativeness": 3.0,
    "Fluency": 3.0,
    "Logicality": 3.0,
}

T0 = pd.Timestamp("2023-07-01", tz="UTC")


def require(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"real data not available: {path} is absent (see ../shared/data/README.md)")
    return path


def _answer(record: dict) -> str:
    texts = [t.get("content") for t in record.get("dialog") or [] if t.get("role") == "llm"]
    # Six answers in the release are the JSON value false instead of text; count them as "False".
    return str(texts[-1]) if texts else ""


def llmeval2_star_df() -> pd.DataFrame:
    """Both LLMEval-2 score sets as one star_df (two raters per answer)."""
    require(LLMEVAL2)
    rows = []
    sources = (
        ("human-score", HUMAN_PANEL, "onsite", "human"),
        ("gpt-score", GPT4_L2, "judge", "judge"),
    )
    for folder, rater, pool, kind in sources:
        for path in sorted((LLMEVAL2 / "results" / folder).glob("*_data.json")):
            subject = path.name.removesuffix("_data.json")
            for rec in json.loads(path.read_text(encoding="utf-8")):
                length = len(_answer(rec))
                for crit, score in rec["stars"].items():
                    rows.append(
                        (
                            rater,
                            kind,
                            pool,
                            rec["dialog_uuid"],
                            rec["question_uuid"],
                            subject,
                            rec["llm_name"],
                            crit,
                            float(score),
                            length,
                        )
                    )
    df = pd.DataFrame(
        rows,
        columns=[
            "rater_id",
            "rater_kind",
            "pool",
            "dialog",
            "question_id",
            "task_type",
            "model",
            "criterion",
            "score",
            "length",
        ],
    )
    df["item_id"] = pd.factorize(df["dialog"], sort=True)[0] + 1
    df["rating_id"] = pd.factorize(df["rater_id"] + "|" + df["dialog"])[0] + 1
    df["is_repeat"] = False
    df["submitted_at"] = T0 + pd.to_timedelta(df["rating_id"], unit="s")
    df["hint_shown"] = pd.array([pd.NA] * len(df), dtype="boolean")
    df["duration_s"] = np.nan
    return df.drop(columns="dialog")


def llmeval1_gpt4_star_df() -> pd.DataFrame:
    """LLMEval-1 GPT-4 star scores (data/分项测评_gpt4.csv) as a star_df."""
    path = require(LLMEVAL1 / "data" / "分项测评_gpt4.csv")
    raw = pd.read_csv(path)
    raw = raw.sort_values("id", kind="stable")
    occurrence = raw.groupby(["dialog_uuid", "metric"]).cumcount()
    key = raw["dialog_uuid"] + "|" + occurrence.astype(str)
    df = pd.DataFrame(
        {
            "rating_id": pd.factorize(key)[0] + 1,
            "rater_id": GPT4_L1,
            "rater_kind": "judge",
            "pool": "judge",
            "item_id": pd.factorize(raw["dialog_uuid"], sort=True)[0] + 1,
            "question_id": raw["question_uuid"],
            "task_type": raw["question_uuid"].str.rsplit("_", n=1).str[0],
            "model": raw["llm_name"],
            "criterion": raw["metric"],
            "score": raw["score"].astype(float),
            "is_repeat": (occurrence > 0).to_numpy(),
            "submitted_at": T0 + pd.to_timedelta(raw["id"], unit="s"),
            "hint_shown": pd.array([pd.NA] * len(raw), dtype="boolean"),
            "duration_s": np.nan,
            "length": 0,
        }
    )
    return df.reset_index(drop=True)


def llmeval1_results(name: str) -> pd.DataFrame:
    """One of the published LLMEval-1 per-model tables in results/, indexed by model name."""
    path = require(LLMEVAL1 / "results" / f"{name}.csv")
    return pd.read_csv(path).set_index("llm_name")
