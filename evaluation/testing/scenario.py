"""Build a throwaway study and judge in the configured database, for the crash test and the
benchmark (run as a process so it uses that process's DATABASE_URL):

    DATABASE_URL=sqlite:////tmp/x.sqlite3 python -m evaluation.testing.scenario \
        --items 2000 --base-url http://127.0.0.1:PORT/v1 --concurrency 64

Prints {"study": id, "judge": id} as JSON; `build_in_process` runs it so from a test. Star items: one per (question, LLM), two LLMs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def build(
    *,
    items: int,
    base_url: str,
    concurrency: int,
    key_env: str,
    mode: str = "star",
    max_attempts: int = 6,
    timeout_s: float = 30.0,
) -> dict[str, int]:
    from annotation.models import LLM, Dataset, Question, Response, Rubric
    from annotation.services import study_create
    from evaluation.services import judge_config_create

    n = len(Dataset.objects.filter(name__startswith="scenario"))
    dataset = Dataset.objects.create(name=f"scenario-{n}")
    llms = [LLM.objects.get_or_create(name=f"scenario-llm-{i}")[0] for i in range(2)]
    per_question = 2 if mode == "star" else 1
    n_questions = (items + per_question - 1) // per_question
    questions = Question.objects.bulk_create(
        Question(
            dataset=dataset,
            external_id=str(i),
            text=f"Question {i} of {dataset.name}?",
            kind="subjective",
            reference=f"Reference {i}",
            task_type="Physics",
        )
        for i in range(n_questions)
    )
    responses = []
    for q in questions:
        for j, llm in enumerate(llms):
            text = f"Answer {j} to question {q.external_id}."
            responses.append(Response(question=q, llm=llm, text=text, length=len(text)))
    Response.objects.bulk_create(responses, batch_size=2000)
    rubric = Rubric.objects.get(key="llmeval2" if mode == "star" else "pairwise")
    study = study_create(name=f"scenario study {n}", dataset=dataset, mode=mode, rubric=rubric)
    judge = judge_config_create(
        name=f"scenario judge {n}",
        base_url=base_url,
        api_key_env=key_env,
        concurrency=concurrency,
        max_attempts=max_attempts,
        timeout_s=timeout_s,
        price_in_per_1k=Decimal("0.03"),
        price_out_per_1k=Decimal("0.06"),
    )
    return {"study": study.pk, "judge": judge.pk, "items": study.items.count()}


def build_in_process(
    env: dict[str, str], base_url: str, *, items: int, concurrency: int, key_env: str
) -> dict:
    """build() in a process of its own over the database env names (migrated first): the ids."""
    argv = ["--migrate", "--items", str(items), "--base-url", base_url, "--key-env", key_env]
    out = subprocess.run(
        [sys.executable, "-m", __name__, *argv, "--concurrency", str(concurrency)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=100)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--key-env", default="OPENAI_API_KEY")
    parser.add_argument("--mode", default="star", choices=["star", "pairwise"])
    parser.add_argument("--migrate", action="store_true")
    args = parser.parse_args()
    sys.path.insert(0, os.getcwd())
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    options = vars(args)  # the options are build()'s keywords, and --migrate
    if options.pop("migrate"):
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
    print(json.dumps(build(**options)))


if __name__ == "__main__":
    main()
