"""Built-in templates on a study with a rubric of one's own (docs/judges.md, "Templates and your
own rubric"). The LLMEval star templates take the criteria, their star meanings and ranges from
the study's rubric, so they judge it as it is; the AlignBench template fixes a 1-10 scale and an
overall score in its words, so it is refused, clearly, by the command, the API and the page,
before any call (it used to run and give 1-10 scores to a 1-5 rubric)."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation.rubric_services import CriterionSpec, rubric_create
from evaluation import planning, services
from evaluation.models import JudgeRun, PromptTemplate

pytestmark = pytest.mark.django_db

MISFIT = "The built-in template alignbench is written for AlignBench's rubric"


@pytest.fixture
def own_rubric(organizer):
    specs = [
        CriterionSpec("clarity", "Clarity", "清晰度", 1, 5, []),
        CriterionSpec("tone", "Tone", "语气", 1, 3, [{"en": "rude", "zh": "粗鲁"}] * 3),
    ]
    data = {"key": "team", "name_en": "Team", "name_zh": "", "description": "", "criteria": specs}
    return rubric_create(data, owner=organizer)


def _prompt(study, judge) -> str:
    draft = JudgeRun(study=study, judge=judge, limit=1, repeat_rate=0)
    services.judge_run_snapshot(draft)
    job = planning.judge_run_plan(run=draft).pending[0]
    bodies = [job.bodies[json_mode] for json_mode in (True, False) if json_mode in job.bodies]
    return "\n".join(m["content"] for body in bodies for m in body["messages"])


@pytest.mark.parametrize("key", ["llmeval1-star", "llmeval2-star", None])
def test_the_llmeval_star_templates_list_the_rubrics_own_criteria_and_ranges(
    make_study, make_judge, fake, own_rubric, key
):
    study = make_study(["Q1?"], rubric="team")
    template = PromptTemplate.objects.get(key=key, builtin=True) if key else None
    prompt = _prompt(study, make_judge(template=template))
    assert "1 to 5 (Clarity) and 1 to 3 (Tone)" in prompt
    assert "Clarity:\n\n- 1 star\n- 2 stars\n" in prompt  # no meaning given: the stars alone
    assert "- 1 star means rude" in prompt
    assert '"Clarity": numbers of its stars(int)' in prompt and '"Tone"' in prompt
    for other in ("Accuracy", "Informativeness", "Fluency", "Logicity", "Harmlessness"):
        assert other not in prompt


def test_the_demo_judge_scores_every_criterion_of_a_rubric_without_star_meanings(
    make_study, make_judge, fake, own_rubric
):
    """The local test server (the demo's judge) read only criteria whose stars had meanings: on
    a rubric of one's own it left out "Clarity" and every call of the run failed to parse."""
    from evaluation.runner import execute_run

    study = make_study(["Q1?", "Q2?"], rubric="team")
    run = services.judge_run_create(study=study, judge=make_judge(), repeat_rate=0)
    run = execute_run(run.pk, backoff=0.01)
    assert run.status == "done" and run.n_done == 4
    assert run.n_ok == 4 and run.n_parse_failed == 0


def test_the_alignbench_template_is_refused_for_another_rubric_by_the_command(
    make_study, make_judge, fake, own_rubric
):
    study = make_study(["Q1?"], rubric="team")
    judge = make_judge(template=PromptTemplate.objects.get(key="alignbench", builtin=True))
    out = io.StringIO()
    for dry in ([], ["--dry-run"]):
        with pytest.raises(CommandError, match=MISFIT) as refused:
            call_command("judge", "--study", study.name, "--judge", judge.name, *dry, stdout=out)
        assert "clarity 1-5, tone 1-3" in str(refused.value)
    assert out.getvalue() == "" and not JudgeRun.objects.exists() and not fake.paid()


def test_the_alignbench_template_is_refused_on_the_api_and_the_page(
    organizer_client, make_study, make_judge, fake, own_rubric
):
    study = make_study(["Q1?"], rubric="team")
    judge = make_judge(template=PromptTemplate.objects.get(key="alignbench", builtin=True))
    api = organizer_client.post(
        reverse("judges_api:run_start"),
        {"study": study.pk, "judge": judge.pk, "dry_run": True},
        content_type="application/json",
    )
    assert api.status_code == 400 and MISFIT in " ".join(api.json()["judge"])
    page = organizer_client.post(
        reverse("judges:run_start", args=[study.pk]),
        {"judge": judge.pk, "repeat_rate": "0", "seed": "0", "mode": "live"},
    )
    assert page.status_code in (200, 400)
    assert MISFIT in page.content.decode().replace("&#x27;", "'")
    assert not JudgeRun.objects.exists() and not fake.paid()


def test_the_alignbench_template_still_judges_the_alignbench_rubric(make_study, make_judge, fake):
    study = make_study(["Q1?"], rubric="alignbench", answer_type="数学计算")
    judge = make_judge(template=PromptTemplate.objects.get(key="alignbench", builtin=True))
    assert "综合得分" in _prompt(study, judge)
