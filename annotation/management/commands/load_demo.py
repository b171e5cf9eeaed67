"""python manage.py load_demo [--no-accounts] [--no-studies] [--simulate] [--fixtures DIR]
[--judge-url URL]

Loads the compact real fixtures (fixtures/), creates the demo accounts and two live studies, and
prints how to log in. Idempotent: running it again changes nothing (passwords are reset to the
printed ones). The caller runs `migrate` first.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.core.exceptions import ValidationError
from django.core.management import call_command, get_commands
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from annotation.importers import ImportRefused, dataset_import
from annotation.importers.ownership import dataset_named
from annotation.models import LLM, Rater, Rubric, Study
from annotation.permissions import ORGANIZERS_GROUP
from annotation.services import study_create, study_set_status

FIXTURES = Path(settings.BASE_DIR) / "fixtures"
ORGANIZER = ("organizer", "organizer-demo")
ADMIN = ("admin", "admin-demo")
ANNOTATORS = [(f"annotator{i}", "annotator-demo") for i in (1, 2, 3)]
STAR_STUDY = "Demo: LLMEval-2 star"
PAIR_STUDY = "Demo: ChineseAlpacaEval pairwise"
SCORES_STUDY = "LLMEval-2 (imported scores)"
SIM_PAIR_STUDY = "Demo: LLMEval-2 pairwise (simulated raters)"
# The live demo studies admit every pool, so each entry path (login, crowd link, public sign-up)
# can be tried.
OPEN_TO_ALL: dict[str, Any] = {"admit_onsite": True, "admit_crowd": True, "admit_public": True}
DEMO_JUDGE = "Demo judge (local test server)"
DEMO_JUDGE_KEY_ENV = "LLMEVAL_DEMO_JUDGE_KEY"


def _live_study(organizer, *, name: str, rubric: str, **definition: Any) -> Study:
    """The demo study of this name; made (open to every pool, in the mode of its rubric) and
    launched on the first run."""
    study = Study.objects.filter(name=name, owner=organizer).first()
    if study is None:
        r = Rubric.objects.get(key=rubric)
        study = study_create(
            owner=organizer, name=name, rubric=r, mode=r.mode, **OPEN_TO_ALL, **definition
        )
        study_set_status(study=study, status=Study.Status.LIVE)
    return study


def demo_imports(root: Path) -> list[tuple[str, list[Path], dict]]:
    """What the demo imports, in order: (format, files, options)."""
    l2 = root / "llmeval-2"
    return [
        ("llmeval2", sorted((l2 / "data").glob("*_data.json")), {}),
        (
            "llmeval2-scores",
            sorted((l2 / "results" / "human-score").glob("*_data.json"))
            + sorted((l2 / "results" / "gpt-score").glob("*_data.json")),
            {},
        ),
        ("chinese-alpaca-eval", [root / "chinese-alpaca-eval"], {}),
        ("alignbench", [root / "alignbench" / "data" / "data_v1.1_release.jsonl"], {}),
        ("llmeval1-scores", sorted((root / "llmeval-1" / "data").glob("*.csv")), {}),
    ]


class Command(BaseCommand):
    help = (
        "Load the demo: import the compact real fixtures (LLMEval-2 with both score sets, a "
        "ChineseAlpacaEval slice, AlignBench and LLMEval-1 slices), create demo accounts "
        "(organizer, admin, annotator1-3) and two live studies. Safe to run twice."
    )

    def add_arguments(self, parser):
        parser.add_argument("--fixtures", default=str(FIXTURES), help="Fixture folder.")
        parser.add_argument("--no-accounts", action="store_true", help="Create no accounts.")
        parser.add_argument("--no-studies", action="store_true", help="Create no demo studies.")
        parser.add_argument(
            "--simulate",
            action="store_true",
            help="Also add simulated human raters to the imported-scores study "
            "(runs the simulate_ratings command when it is installed).",
        )
        parser.add_argument(
            "--judge-url",
            help="Create (or re-point) the demo organizer's judge at this OpenAI-compatible URL, "
            f"with the key in {DEMO_JUDGE_KEY_ENV}; bin/demo passes the local test server "
            "(evaluation.testing.fake_openai) it starts. The host must be allowed "
            "(JUDGE_ALLOWED_HOSTS) and the variable approved (JUDGE_API_KEY_ENVS).",
        )

    def handle(self, *args, **opts):
        root = Path(opts["fixtures"])
        if not (root / "llmeval-2").is_dir():
            raise CommandError(f"No fixtures in {root}.")
        organizer = None if opts["no_accounts"] else self._accounts()
        for fmt, paths, options in demo_imports(root):
            if not paths:
                continue
            try:
                result = dataset_import(
                    format=fmt, paths=paths, user=organizer, progress=False, **options
                )
            except ImportRefused as exc:
                raise CommandError(f"demo import {fmt} refused: {exc}") from exc
            self.stdout.write(f"imported {fmt}: {result.total_added} rows added")
        studies = [] if opts["no_studies"] else self._studies(organizer, root)
        if organizer is not None:
            # Imported score studies belong to the demo organizer so they show up for them.
            Study.objects.filter(owner__isnull=True, selection__imported=True).update(
                owner=organizer
            )
        if opts["simulate"] and not opts["no_studies"]:
            self.simulate_hook(studies)
        judge = self._judge(organizer, opts["judge_url"]) if opts["judge_url"] else None
        self._print(organizer, studies)
        if judge is not None:
            self.stdout.write(
                f"Judge: {judge.name} -> {judge.base_url} (key in {judge.api_key_env}); "
                "start a run from LLM judges -> a study."
            )

    def _judge(self, organizer, url: str):
        # Imported here: the judges app is optional for the rest of the demo.
        from evaluation.models import JudgeConfig
        from evaluation.services import judge_config_create

        try:
            judge = JudgeConfig.objects.filter(name=DEMO_JUDGE, owner=organizer).first()
            if judge is None:
                return judge_config_create(
                    name=DEMO_JUDGE,
                    owner=organizer,
                    model="fake-judge",
                    base_url=url,
                    api_key_env=DEMO_JUDGE_KEY_ENV,
                    price_in_per_1k=Decimal("0.01"),
                    price_out_per_1k=Decimal("0.03"),
                    concurrency=8,
                    max_tokens=512,
                )
            judge.base_url = url  # the test server's port changes between demo starts
            judge.full_clean(exclude=["rater"])
            judge.save(update_fields=["base_url"])
            return judge
        except ValidationError as e:
            raise CommandError(f"demo judge refused: {' '.join(e.messages)}") from None

    # Where a later step (simulated raters) plugs in: it receives the demo studies.
    def simulate_hook(self, studies: list[Study]) -> None:
        if "simulate_ratings" not in get_commands():
            self.stdout.write("simulate_ratings is not installed: skipped")
            return
        study = next((s for s in studies if s.name == SCORES_STUDY), None)
        if study is not None:
            call_command("simulate_ratings", study=str(study.pk), stdout=self.stdout)
            # A closed pairwise study over the same LLMEval-2 answers, so the report shows Points,
            # Elo, Bradley-Terry and length bias: its simulated choices follow the real human
            # star scores of those answers (see ranking/simulate.py).
            pair = Study.objects.filter(name=SIM_PAIR_STUDY, owner=study.owner).first()
            if pair is None:
                pair = study_create(
                    name=SIM_PAIR_STUDY,
                    dataset=study.dataset,
                    mode=Rubric.Mode.PAIRWISE,
                    rubric=Rubric.objects.get(key="pairwise"),
                    owner=study.owner,
                    pair_design=Study.PairDesign.SAMPLED,
                    pairs_per_question=6,
                    selection=dict(study.selection or {}, imported=False),
                    description="Simulated raters only: pairwise choices derived from the real "
                    "LLMEval-2 human scores, for the report demo.",
                )
                study_set_status(study=pair, status=Study.Status.CLOSED)
            call_command("simulate_ratings", study=str(pair.pk), stdout=self.stdout)
            studies.append(pair)

    @transaction.atomic
    def _accounts(self):
        User = get_user_model()
        group, _ = Group.objects.get_or_create(name=ORGANIZERS_GROUP)
        # Organizers use the admin for the annotation models (the admin itself keeps results
        # read-only and shows each organizer only their own studies).
        group.permissions.set(Permission.objects.filter(content_type__app_label="annotation"))

        def ensure(username, password, **flags):
            user, _ = User.objects.get_or_create(username=username)
            for key, value in flags.items():
                setattr(user, key, value)
            user.set_password(password)
            user.save()
            return user

        organizer = ensure(*ORGANIZER, is_staff=True, is_superuser=False)
        organizer.groups.add(group)
        ensure(*ADMIN, is_staff=True, is_superuser=True)
        for username, password in ANNOTATORS:
            user = ensure(username, password, is_staff=False, is_superuser=False)
            Rater.objects.get_or_create(
                user=user,
                defaults={
                    "kind": Rater.Kind.HUMAN,
                    "pool": Rater.Pool.ONSITE,
                    "nickname": username,
                    "invited_by": organizer,
                },
            )
        return organizer

    def _studies(self, organizer, root: Path) -> list[Study]:
        out = []
        l2 = dataset_named(organizer, "LLMEval-2")  # names are per owner
        if l2 is not None:
            subjects = sorted(
                {p.stem[: -len("_data")].replace("_", " ") for p in demo_imports(root)[0][1]}
            )
            study = _live_study(
                organizer,
                name=STAR_STUDY,
                dataset=l2,
                rubric="llmeval2",
                selection={"task_types": subjects},
                description="Rate LLMEval-2 answers (three subjects) on the LLMEval-2 rubric.",
                hint_policy=Study.HintPolicy.SHOWN,
                completion_code="LLMEVAL-DEMO",
            )
            out.append(study)
        cae = dataset_named(organizer, "ChineseAlpacaEval")
        baseline = LLM.objects.filter(name="text-davinci-003").first()
        if cae is not None and baseline is not None:
            study = _live_study(
                organizer,
                name=PAIR_STUDY,
                dataset=cae,
                rubric="pairwise",
                pair_design=Study.PairDesign.BASELINE,
                baseline_llm=baseline,
                description="Compare gpt-4-0613 and gpt-3.5-turbo-0613 with the baseline "
                "text-davinci-003 on ChineseAlpacaEval instructions.",
                completion_code="CAE-DEMO",
            )
            out.append(study)
        scores = Study.objects.filter(name=SCORES_STUDY, owner=organizer).first()
        if scores is not None:
            out.append(scores)
        return out

    def _print(self, organizer, studies: list[Study]) -> None:
        url = getattr(settings, "SITE_URL", "http://127.0.0.1:8000").rstrip("/") + "/"
        w = self.stdout.write
        w("")
        w(f"Demo ready at {url}  (admin: {url}admin/, API docs: {url}api/docs/)")
        if organizer is not None:
            w("Accounts (username / password):")
            w(f"  organizer   {ORGANIZER[0]} / {ORGANIZER[1]}   (staff, organizers group)")
            w(f"  superuser   {ADMIN[0]} / {ADMIN[1]}")
            for username, password in ANNOTATORS:
                w(f"  annotator   {username} / {password}   (onsite)")
        if studies:
            w("Studies:")
            for study in studies:
                w(
                    f"  [{study.pk}] {study.name}: {study.mode}, {study.status}, "
                    f"{study.items.count()} items"
                )
