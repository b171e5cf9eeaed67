"""The published figures the tests compare with, in one place: the LLMEval-2 upstream README
leaderboard and the LLMEval-1 seed table 6 (GPT-4 column). Shared by tests/data (through the
import command and the report) and tests/stats (the statistics on the frames)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pandas as pd
import pytest

# The figures themselves are data: tests/published.toml.
_FIGURES = tomllib.loads((Path(__file__).parent / "published.toml").read_text(encoding="utf-8"))

# Upstream README leaderboard, "Scores": (human, GPT-4), keyed by the data's llm_name, in the
# README's order (its human rank).
README = {k: tuple(v) for k, v in _FIGURES["llmeval2_readme"].items()}
README_TOTALS = README

# Seed table 6, GPT-4 column (in brackets), as results/分项测评_gpt4.csv prints it:
# overall, accuracy, informativeness, fluency, logicality (coherence), harmlessness.
TABLE6_GPT4 = {k: tuple(v) for k, v in _FIGURES["llmeval1_table6_gpt4"].items()}
TABLE6_GPT4_RANK = dict(_FIGURES["llmeval1_table6_gpt4_rank"])
T6_COLUMNS = ("overall", "accuracy", "informativeness", "fluency", "logicality", "harmlessness")
# Three printed cells are the data's value rounded another way (docs/statistics.md):
# NewBing overall 2.62149 (printed 2.622: the mean of the rounded criterion means, 2.6216);
# MOSS-w-Plugin informativeness 2.14945 (printed 2.150: rounded twice, via 2.1495);
# ChatGLM-6B logicality 2.51852 (printed 2.518: truncated).
TABLE6_DATA = {
    ("NewBing", "overall"): 2.62149,
    ("MOSS-w-Plugin-16B", "informativeness"): 2.14945,
    ("ChatGLM-6B", "logicality"): 2.51852,
}


def judge_star_means(means: pd.DataFrame) -> pd.DataFrame:
    """The judge's rows of a star-means table (rater_kind, model, criterion, mean) as a model x
    criterion frame."""
    judge = means[means["rater_kind"] == "judge"]
    return judge.pivot(index="model", columns="criterion", values="mean")


def assert_table6_gpt4(judge: pd.DataFrame) -> None:
    """Every cell of table 6's GPT-4 column, to the printed three decimals; the three cells the
    data rounds another way to their value in the data, within the last printed digit."""
    assert sorted(judge.index) == sorted(TABLE6_GPT4)
    for model, values in TABLE6_GPT4.items():
        for column, published in zip(T6_COLUMNS, values, strict=True):
            got = judge.loc[model, column]
            if (model, column) in TABLE6_DATA:
                assert got == pytest.approx(TABLE6_DATA[(model, column)], abs=1e-5)
                assert abs(got - published) < 0.0011
            else:
                assert round(got, 3) == pytest.approx(published, abs=1e-9), (model, column)


def one_row(frame: pd.DataFrame, **where: str) -> pd.Series:
    """The one row of a report table whose columns, read as text, have the given values."""
    for column, value in where.items():
        frame = frame[frame[column].astype(str) == value]
    assert len(frame) == 1, where
    return frame.iloc[0]
