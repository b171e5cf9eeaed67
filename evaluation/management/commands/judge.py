"""python manage.py judge --study STUDY --judge JUDGE [--limit N] [--both-orders]
[--repeat-rate R] [--seed S] [--budget B] [--dry-run] [--resume RUN_ID] [--reparse] [--enqueue]
[--force]"""

from __future__ import annotations

import gc
import os
import sys
from decimal import Decimal, InvalidOperation

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from annotation.models import Study
from config.cli import add_study_argument, add_switches, object_by_ref, passed_on
from evaluation import launch, recording, selectors, services
from evaluation.models import JudgeConfig, JudgeRun
from evaluation.tasks import judge_run_execute


def _budget(value: str) -> Decimal:
    try:
        budget = Decimal(value)
    except InvalidOperation:
        raise CommandError(f"--budget {value!r} is not a number.") from None
    if not budget.is_finite() or budget < 0:
        raise CommandError("--budget must be a number of at least 0.")
    return budget


class Command(BaseCommand):
    help = (
        "Run an LLM judge over a study's items (or resume / re-parse a run). A new run starts "
        "only after a pre-flight (the key variable is approved and set, the URL is allowed, the "
        "server lists the model, the study has items) and prints its cost estimate first."
    )
    # A worker command: the system checks import the whole URL configuration (the report
    # views and the statistics stack: pandas, scipy), seconds of CPU per judge process for
    # nothing the run uses; `manage.py check` and the server run them (as import_dataset).
    requires_system_checks: list[str] = []

    def add_arguments(self, parser):
        add_study_argument(parser, required=False)
        parser.add_argument("--judge", help="Judge configuration id or name.")
        parser.add_argument(
            "--limit", type=int, help="Judge at most N items this judge has not judged yet."
        )
        parser.add_argument(
            "--repeat-rate",
            type=float,
            default=0.02,
            help="Share of items judged again with a fresh call (default 0.02).",
        )
        parser.add_argument("--seed", type=int, default=0, help="Seed for order and repeats.")
        parser.add_argument(
            "--budget",
            type=_budget,
            help="Stop the run (status 'stopped: budget reached') once its cost reaches this; "
            "calls already in flight still finish.",
        )
        parser.add_argument("--resume", type=int, metavar="RUN_ID", help="Continue this run.")
        add_switches(
            parser,
            {
                "--both-orders": "Pairwise: judge each pair in both orders (position consistency).",
                "--dry-run": "Only run the pre-flight and print the cost estimate; start nothing.",
                "--reparse": "Re-run the parser over the stored outputs of --resume RUN_ID (or the "
                "latest run of --study/--judge); no API calls.",
                "--enqueue": "Hand the run to the task queue instead of running it here.",
                "--force": "With --resume: take over a run another executor seems to hold.",
                "--no-progress": "No progress bar.",
                "--batch": "Go through the server's Batch API: half the price, results within a day.",
            },
        )

    def handle(self, *args, **opts):
        run = self._run(opts)
        if run is None:  # --dry-run: the estimate is printed, nothing started
            return
        if opts["reparse"]:
            result = recording.judge_run_reparse(run=run)
            self.stdout.write(
                f"Re-parsed run {run.pk}: {result['changed']} changed, {result['ok']} parsed, "
                f"{result['parse_failed']} parse failures."
            )
            return
        if opts["enqueue"]:
            job = judge_run_execute.enqueue(run.pk, force=opts["force"]).id
            self.stdout.write(f"Run {run.pk} queued (job {job}).")
            return
        bar = None
        if not opts["no_progress"]:
            bar = tqdm(
                total=run.n_planned or None,
                unit="call",
                desc=f"run {run.pk}",
                file=self.stderr._out,
                dynamic_ncols=True,
            )

        def progress(s: dict) -> None:
            if bar is None:
                return
            bar.total = s["n_planned"] or bar.total
            if s["n_done"] > bar.n:
                bar.update(s["n_done"] - bar.n)  # update() keeps tqdm's rate (calls/s) right
            bar.set_postfix(
                failed=s["n_call_failed"],
                unparsed=s["n_parse_failed"],
                cached=s["n_cached"],
                tokens=s["tokens_in"] + s["tokens_out"],
                cost=f"{s['cost']:.4f}",
                refresh=False,
            )
            bar.refresh()

        # This process does nothing but the run: hand the GIL between the event loop and the
        # database writer more often than the default 5 ms, so neither starves the other.
        sys.setswitchinterval(float(os.environ.get("JUDGE_SWITCH_INTERVAL", "0.001")))
        from evaluation.runner import execute_run  # openai: only when this process runs the calls

        # A full collection now, before the claim: start-up left enough young objects that one
        # fell due early in the run (about 130 ms with the GIL held); the next is due only once
        # the run's surviving objects reach a quarter of the heap.
        gc.collect()
        done = execute_run(run.pk, force=opts["force"], progress=progress)
        if bar is not None:
            bar.close()
        if done is None:
            raise CommandError(
                f"Run {run.pk} is finished or held by a live executor (use --force to take over)."
            )
        self._summary(done)
        if done.status == JudgeRun.Status.FAILED:
            raise CommandError(f"Run {done.pk} failed: {done.error}")

    def _run(self, opts) -> JudgeRun | None:
        if opts["resume"]:
            try:
                return JudgeRun.objects.get(pk=opts["resume"])
            except JudgeRun.DoesNotExist:
                raise CommandError(f"No run {opts['resume']}.") from None
        if not opts["study"] or not opts["judge"]:
            raise CommandError("Give --study and --judge (or --resume RUN_ID).")
        study = object_by_ref(Study, opts["study"])
        judge = object_by_ref(JudgeConfig, opts["judge"])
        if opts["reparse"]:
            run = JudgeRun.objects.filter(study=study, judge=judge).first()
            if run is None:
                raise CommandError("This judge has no run on this study to re-parse.")
            return run
        options = {
            "study": study,
            "judge": judge,
            **passed_on(opts, "both_orders", "repeat_rate", "limit", "seed"),
            "mode": JudgeRun.Mode.BATCH if opts["batch"] else JudgeRun.Mode.LIVE,
        }
        try:
            # Validate first, then estimate: a refused option prints no estimate.
            checked = {k: v for k, v in options.items() if k != "judge"}
            services.judge_run_options_check(budget=opts["budget"], **checked)
            if opts["dry_run"]:
                self._estimate(launch.judge_run_preflight(**options))
                return None
            run, estimate = launch.judge_run_start(budget=opts["budget"], enqueue=False, **options)
        except ValidationError as e:
            raise CommandError(" ".join(e.messages)) from None
        self._estimate(estimate)
        return run

    def _estimate(self, e: launch.Estimate) -> None:
        listed = {True: "listed by the server", None: "the server offers no model list"}
        self.stdout.write(
            f"Pre-flight passed: key variable {e.key_env} set; model {e.model} "
            f"{listed.get(e.model_listed, '')}. Estimate: {e.items} items, {e.calls} calls, "
            f"~{e.tokens_in} input tokens; estimated cost {e.total_max:.4f} "
            f"(input ~{e.cost_in:.4f} + output at most {e.cost_out_max:.4f})."
        )

    def _summary(self, run: JudgeRun) -> None:
        s = selectors.run_summary(run)
        self.stdout.write(
            f"Run {s['id']} {s['status']}: {s['done']}/{s['planned']} calls, {s['ok']} parsed, "
            f"{s['parse_failed']} parse failures, {s['call_failed']} failed calls, "
            f"{s['cached']} from cache; tokens in {s['tokens_in']}, out {s['tokens_out']}; "
            f"cost {s['cost']:.6f}"
        )
        if s["position_consistency"]:
            pc = s["position_consistency"]
            rate = "n/a" if pc["rate"] is None else f"{pc['rate']:.3f}"
            self.stdout.write(f"Position consistency: {rate} over {pc['pairs']} pairs")
        if s["self_consistency"]:
            sc = s["self_consistency"]
            self.stdout.write(f"Repeat agreement: {sc['rate']:.3f} over {sc['pairs']} repeats")
