"""The run's journal: answers written to a local file the moment they arrive (see Journal)."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from datetime import datetime

from django.conf import settings

from evaluation.models import JudgeCall
from evaluation.planning import Job
from evaluation.recording import Outcome

# The fields of an answer the journal keeps (as they are, and times as ISO text).
KEPT = ("json_mode", "raw", "finish_reason", "tokens_in", "tokens_out", "latency_ms", "attempts")
TIMES = ("started_at", "finished_at")


class Journal:
    """An append-only file of answered calls, written the moment each answer arrives.

    The database writer batches, so a kill -9 can lose answers that were paid for but not yet
    committed. Each answer is therefore first appended here with a plain write() from the event
    loop (no await in between: it survives the process being killed, as the data is in the
    kernel). A resumed run records journal entries missing from the database instead of calling
    again; the file is removed when the run finishes. Best effort: it is local to the machine.
    """

    def __init__(self, run_id: int, created_at=None) -> None:
        base = os.environ.get("JUDGE_JOURNAL_DIR") or os.path.join(
            tempfile.gettempdir(), "llmeval-judge-journal"
        )
        db = settings.DATABASES["default"]
        name = str(db.get("NAME"))
        if "memory" in name:  # an in-memory database lives and dies with this process
            name += f"|pid {os.getpid()}"
        # The database's identity and the run's creation time: never another database's run 1.
        tag = hashlib.sha256(
            f"{db.get('ENGINE')}|{db.get('HOST')}|{db.get('PORT')}|{name}|{created_at}".encode()
        ).hexdigest()[:16]
        os.makedirs(base, exist_ok=True)
        self.path = os.path.join(base, f"run-{tag}-{run_id}.jsonl")
        self._fd: int | None = None
        self._recovered: dict[tuple[int, str], dict] | None = None

    def append(self, o: Outcome) -> None:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        entry = {"item": o.job.item_id, "purpose": o.job.purpose}
        entry |= {name: getattr(o, name) for name in KEPT}
        entry |= {name: _iso(getattr(o, name)) for name in TIMES}
        line = json.dumps(entry, ensure_ascii=False)
        os.write(self._fd, (line + "\n").encode("utf-8"))

    def _entries(self) -> dict[tuple[int, str], dict]:
        """The journal's answers by (item, purpose), read once."""
        if self._recovered is None:
            self._recovered = {}
            if os.path.exists(self.path):
                with open(self.path, encoding="utf-8") as f:
                    for line in f:
                        try:
                            e = json.loads(line)
                        except ValueError:
                            continue  # a line cut short by the kill
                        self._recovered.setdefault((e["item"], e["purpose"]), e)
        return self._recovered

    def recover(self, jobs: list[Job]) -> tuple[list[Outcome], list[Job]]:
        """Answers journaled by a killed executor and missing from the database, for these jobs,
        and the jobs still to call."""
        entries = self._entries()
        if not entries:
            return [], jobs
        out: list[Outcome] = []
        remaining: list[Job] = []
        for job in jobs:
            e = entries.pop((job.item_id, job.purpose), None)
            if e is None or e["json_mode"] not in job.bodies:
                remaining.append(job)
                continue
            kept = {name: e[name] for name in KEPT} | {name: _dt(e[name]) for name in TIMES}
            out.append(Outcome(job=job, status=JudgeCall.Status.OK, http_status=200, **kept))
        return out, remaining

    def close(self, *, remove: bool) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if remove and os.path.exists(self.path):
            os.remove(self.path)


def _dt(value: str | None):
    return datetime.fromisoformat(value) if value else None


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None
