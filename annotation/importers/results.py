"""What an import reports: counted repairs and flags, and the counts of what was (or would be)
added or skipped."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Repair:
    what: str
    file: str
    records: list[str] = field(default_factory=list)
    kind: str = "repaired"  # or "flagged": kept as given, marked in the data

    def line(self) -> str:
        shown = ", ".join(self.records[:5]) + (" ..." if len(self.records) > 5 else "")
        return f"{self.kind} {len(self.records)}: {self.what} ({self.file or 'all files'}: {shown})"


class RepairLog:
    """Counted repairs and flags, grouped by what and in which file. A repair changes how a
    value is stored (a number kept as its text); a flag keeps the value as given and marks it."""

    def __init__(self) -> None:
        self._by_key: dict[tuple[str, str], Repair] = {}

    def add(self, what: str, file: str | Path, record: str, *, kind: str = "repaired") -> None:
        path = Path(file) if file else None
        # The parent folder tells apart same-named files (human-score/ and gpt-score/).
        name = (
            f"{path.parent.name}/{path.name}"
            if path and path.parent.name
            else (path.name if path else "")
        )
        key = (what, name)
        if key not in self._by_key:
            self._by_key[key] = Repair(what=what, file=name, kind=kind)
        self._by_key[key].records.append(str(record))

    def flag(self, what: str, file: str | Path, record: str) -> None:
        self.add(what, file, record, kind="flagged")

    def __iter__(self) -> Iterator[Repair]:
        return iter(self._by_key.values())

    def __len__(self) -> int:
        return len(self._by_key)

    def total(self) -> int:
        return sum(len(r.records) for r in self)


def clock() -> tuple[float, float]:
    """(wall, process CPU) seconds, for ImportResult.timed."""
    return time.perf_counter(), time.process_time()


ENTITIES = (
    "datasets",
    "questions",
    "llms",
    "responses",
    "studies",
    "items",
    "raters",
    "assignments",
    "ratings",
    "scores",
)


@dataclass
class ImportResult:
    format: str
    paths: list[str]
    dry_run: bool = False
    added: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ENTITIES, 0))
    skipped: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ENTITIES, 0))
    repairs: list[Repair] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    dataset_id: int | None = None
    study_ids: list[int] = field(default_factory=list)
    record_id: int | None = None
    # Seconds per phase (parse, validate, write, commit): wall and this process's CPU.
    seconds: dict[str, float] = field(default_factory=dict)
    cpu_seconds: dict[str, float] = field(default_factory=dict)

    def timed(self, phase: str, since: tuple[float, float]) -> tuple[float, float]:
        """Add the wall and CPU time since `since` (from `clock()`) to `phase`; returns now."""
        now = clock()
        self.seconds[phase] = self.seconds.get(phase, 0.0) + now[0] - since[0]
        self.cpu_seconds[phase] = self.cpu_seconds.get(phase, 0.0) + now[1] - since[1]
        return now

    def timing_line(self) -> str:
        return ", ".join(
            f"{k} {v:.1f} s (CPU {self.cpu_seconds[k]:.1f} s)" for k, v in self.seconds.items()
        )

    @property
    def total_added(self) -> int:
        return sum(self.added.values())

    def counts(self) -> dict[str, dict[str, int]]:
        return {"added": dict(self.added), "skipped": dict(self.skipped)}

    def summary_lines(self) -> list[str]:
        verb = "would add" if self.dry_run else "added"
        lines = [line.line() for line in self.repairs]
        lines += self.notes
        for name in ENTITIES:
            a, s = self.added[name], self.skipped[name]
            if a or s:
                lines.append(f"{name}: {verb} {a}, skipped {s} (already present)")
        lines.append(
            f"total {verb} {self.total_added}"
            + (" (dry run: nothing was written)" if self.dry_run else "")
        )
        return lines
