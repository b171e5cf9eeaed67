"""A judge server's answer of the wrong shape fails the call (the executor's "malformed
response", retried like any) instead of the run, and what is kept of an answer fits the
database: no NUL, no lone surrogate, no count a counter cannot hold."""

from __future__ import annotations

import pytest

from evaluation import safety
from evaluation.client import completion_fields, loads


def _body(content="Accuracy: 3", finish="stop", usage=None, **choice):
    message = {"role": "assistant", "content": content}
    return {
        "choices": [{"message": message, "finish_reason": finish, **choice}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 2} if usage is None else usage,
    }


@pytest.mark.parametrize(
    "body",
    [
        {"choices": ["a choice that is text"]},
        {"choices": [{"message": "a message that is text"}]},
        _body(content=123),
        _body(content=["a", "list"]),
        _body(content={"a": "dict"}),
        _body(finish={"not": "text"}),
        _body(finish="x" * 41),
        _body(usage="many"),
        _body(usage={"prompt_tokens": -1}),
        _body(usage={"prompt_tokens": 2**40}),
        _body(usage={"completion_tokens": "12"}),
        _body(usage={"completion_tokens": 1.5}),
        _body(usage={"completion_tokens": float("inf")}),
        _body(usage={"prompt_tokens": True}),
    ],
)
def test_a_body_without_a_chat_completions_shape_is_a_malformed_response(body):
    with pytest.raises(ValueError):
        completion_fields(body)


def test_a_body_nested_deeper_than_the_stack_is_a_malformed_response():
    with pytest.raises(ValueError):
        loads(b'{"a": ' * 100_000 + b"1" + b"}" * 100_000)


def test_what_is_kept_of_an_answer_fits_the_database():
    content, finish, tokens_in, tokens_out = completion_fields(_body("A\x00 \ud800B"))
    assert (content, finish, tokens_in, tokens_out) == ("A \ufffdB", "stop", 10, 2)
    assert completion_fields(_body(None, None, {}))[:2] == ("", "")
    assert "\ud800" not in safety.short_error("bad \ud800 request") and "\x00" not in (
        safety.short_error("bad \x00 request")
    )


NESTED = b'{"error": ' * 50_000 + b"1" + b"}" * 50_000


@pytest.mark.parametrize("status", [200, 400, 500])
def test_a_server_answering_json_nested_deeper_than_the_stack_fails_calls_not_the_run(
    make_study, make_judge, status
):
    from evaluation.launch import judge_run_start
    from evaluation.runner import execute_run

    from .listener import Listener

    with Listener() as server:
        server.models_reply = (200, NESTED, {})
        server.reply = (status, NESTED, {})
        judge = make_judge(base_url=server.base_url, max_attempts=1)
        study = make_study(["Q?"], n_llms=1)
        # The pre-flight reads the model list: one it cannot read is no model list at all.
        run, estimate = judge_run_start(study=study, judge=judge, repeat_rate=0, enqueue=False)
        assert estimate.model_listed is None
        run = execute_run(run.pk, backoff=0)
    assert run.status == "done", (run.status, run.error)
    call = run.calls.get()
    assert call.status == "failed" and call.rating is None and len(call.error) <= 400
