"""Planning a run's requests: the plain-text fallback of a JSON-mode request."""

from __future__ import annotations

from evaluation.services import judge_run_create


def test_the_text_fallback_is_made_when_first_asked_for_and_is_the_text_runs_request(
    make_study, make_judge, monkeypatch
):
    """JSON mode 'auto' plans the JSON request; the plain-text one (sent only once a server
    refuses JSON mode) is rendered on first use, and is exactly what a text-mode run sends."""
    from evaluation import prompts
    from evaluation.planning import judge_run_plan

    study = make_study(["A?", "B?"], n_llms=1)
    auto = judge_run_create(study=study, judge=make_judge(json_mode="auto"), repeat_rate=0)
    text = judge_run_create(study=study, judge=make_judge(json_mode="off"), repeat_rate=0)
    rendered: list[bool] = []
    real = prompts.render_messages

    def counted(template, context, *, json_mode):
        rendered.append(json_mode)
        return real(template, context, json_mode=json_mode)

    monkeypatch.setattr(prompts, "render_messages", counted)
    plan = judge_run_plan(run=auto)
    assert plan.json_first and rendered == [True, True]
    job = plan.pending[0]
    assert True in job.bodies and False in job.bodies and False in job.hashes
    assert rendered == [True, True]  # asking whether it exists makes nothing
    assert "response_format" in job.bodies[True]
    expected = {j.item_id: j for j in judge_run_plan(run=text).pending}[job.item_id]
    rendered.clear()
    assert job.bodies[False] == expected.bodies[False] and rendered == [False]
    assert job.hashes[False] == expected.hashes[False] and rendered == [False]  # made once
    assert set(job.bodies) == {True, False} and True not in expected.bodies


def test_chunks_start_small_and_double_up_to_the_chunk_size_covering_every_item_once(
    make_study, make_judge
):
    """The first chunk is small (the first requests go out sooner), each later one twice the
    last up to `size`; together they plan every item once, in order."""
    from evaluation.planning import plan_chunks, plan_context

    study = make_study([f"Q{i}?" for i in range(10)])  # 20 items
    run = judge_run_create(study=study, judge=make_judge(), repeat_rate=0)
    chunks = list(plan_chunks(plan_context(run), first=2, size=5))
    assert [n for _, n in chunks] == [2, 4, 5, 5, 4]
    item_ids = [job.item_id for jobs, _ in chunks for job in jobs]
    assert item_ids == sorted(study.items.values_list("id", flat=True))
