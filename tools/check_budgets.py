"""The code budgets, checked by bin/test: no function over 60 lines, no Python file over 500 lines
and no import cycle between the project's modules.

Tests count for the file budget, not for the function one; migrations count for neither (Django
writes them). Known offenders are listed in tools/budgets_baseline.txt, which may only shrink: a
new offender fails the check, and a fixed one is reported so its line can be removed (`--trim`
removes it). The import graph is built from the source with `ast`, module-level imports only (an
import inside a function or under `if TYPE_CHECKING:` runs later or never, so it cannot close a
cycle at import time).

    python tools/check_budgets.py            # check; exit 1 on a new offender
    python tools/check_budgets.py --trim     # also drop the fixed offenders from the baseline
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

MAX_FUNCTION_LINES = 60
MAX_FILE_LINES = 500
PACKAGES = ("annotation", "evaluation", "ranking", "config", "benchmarks", "bin", "tools", "tests")
ROOT = Path(__file__).resolve().parent.parent
BASELINE = ROOT / "tools" / "budgets_baseline.txt"


@dataclass(frozen=True)
class Source:
    path: str  # relative to the root, with forward slashes
    module: str  # dotted module name ("annotation.models" for annotation/models/__init__.py)
    text: str

    @property
    def is_package(self) -> bool:
        return self.path.endswith("__init__.py")

    @property
    def is_test(self) -> bool:
        return self.path.startswith("tests/")


def module_name(path: str) -> str:
    parts = path[: -len(".py")].split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_files(root: Path) -> list[str]:
    """Tracked and untracked-but-not-ignored Python files of the project packages."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "--", "*.py"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        out = [p.relative_to(root).as_posix() for p in root.rglob("*.py")]
    return sorted(
        p
        for p in set(out)
        if (p.split("/")[0] in PACKAGES or "/" not in p)
        and "/migrations/" not in p
        and (root / p).is_file()
    )


def read_sources(root: Path, paths: Iterable[str]) -> list[Source]:
    return [Source(p, module_name(p), (root / p).read_text(encoding="utf-8")) for p in paths]


def functions(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, int]]:
    """(qualified name, lines from `def` to its last line) of every function, nested ones too."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            name = prefix + node.name
            yield name, (node.end_lineno or node.lineno) - node.lineno + 1
            yield from functions(node, name + ".")
        elif isinstance(node, ast.ClassDef):
            yield from functions(node, prefix + node.name + ".")
        else:
            yield from functions(node, prefix)


def size_offenders(sources: Iterable[Source]) -> dict[str, int]:
    """Baseline key -> size, for every file and function over its budget."""
    found: dict[str, int] = {}
    for src in sources:
        lines = src.text.count("\n") + (0 if src.text.endswith("\n") or not src.text else 1)
        if lines > MAX_FILE_LINES:
            found[f"file {src.path}"] = lines
        if src.is_test:
            continue
        for name, size in functions(ast.parse(src.text, src.path)):
            if size > MAX_FUNCTION_LINES:
                found[f"function {src.path}::{name}"] = size
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _module_level_imports(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If) and not _is_type_checking(node):
            yield from _module_level_imports(node.body)
            yield from _module_level_imports(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody):
                yield from _module_level_imports(block)
            for handler in node.handlers:
                yield from _module_level_imports(handler.body)


def _resolve(src: Source, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = src.module.split(".")
    if not src.is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def import_graph(sources: Iterable[Source]) -> dict[str, set[str]]:
    """Module -> the project modules it imports at module level."""
    sources = list(sources)
    known = {s.module for s in sources}
    graph: dict[str, set[str]] = {s.module: set() for s in sources}
    for src in sources:
        for node in _module_level_imports(ast.parse(src.text, src.path).body):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = _resolve(src, node)
                subs = [f"{base}.{alias.name}" for alias in node.names]
                targets = [base, *(s for s in subs if s in known)]
            graph[src.module].update(t for t in targets if t in known and t != src.module)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return sorted(found)


def offenders(sources: list[Source]) -> dict[str, int]:
    found = size_offenders(sources)
    for component in cycles(import_graph(sources)):
        found["cycle " + " ".join(component)] = len(component)
    return found


def read_baseline(path: Path) -> list[str]:
    if not path.exists():
        return []
    lines = (line.strip() for line in path.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def trim_baseline(path: Path, fixed: set[str]) -> None:
    kept = [
        line for line in path.read_text(encoding="utf-8").splitlines() if line.strip() not in fixed
    ]
    path.write_text("\n".join(kept) + "\n", encoding="utf-8")


def _cycle_members(key: str) -> set[str]:
    return set(key.split()[1:]) if key.startswith("cycle ") else set()


def _within_known_cycle(key: str, allowed: set[str]) -> bool:
    """A smaller cycle left over from a known one (some of its modules untangled) is known."""
    members = _cycle_members(key)
    return bool(members) and any(members <= _cycle_members(a) for a in allowed)


def _cycle_remains(key: str, found: dict[str, int]) -> bool:
    members = _cycle_members(key)
    return bool(members) and any(_cycle_members(f) and _cycle_members(f) <= members for f in found)


def check(root: Path, baseline: Path, trim: bool = False) -> int:
    sources = read_sources(root, project_files(root))
    found = offenders(sources)
    allowed = set(read_baseline(baseline))
    known = {key for key in found if key in allowed or _within_known_cycle(key, allowed)}
    new = sorted(set(found) - known)
    fixed = {key for key in allowed if key not in found and not _cycle_remains(key, found)}
    for key in new:
        print(f"over budget: {key} ({found[key]}{' modules' if key[0] == 'c' else ' lines'})")
    for key in sorted(fixed):
        print(f"fixed, {'removed from' if trim else 'remove it from'} the baseline: {key}")
    if trim and fixed:
        trim_baseline(baseline, fixed)
    functions_checked = sum(
        1 for s in sources if not s.is_test for _ in functions(ast.parse(s.text))
    )
    print(
        f"budgets: {len(sources)} files, {functions_checked} functions: {len(new)} new "
        f"offender(s), {len(known)} known (baseline), {len(fixed)} fixed"
    )
    return 1 if new else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--trim", action="store_true", help="drop fixed offenders from the baseline"
    )
    parser.add_argument("--root", type=Path, default=ROOT, help="the project folder")
    parser.add_argument("--baseline", type=Path, default=None, help="the baseline file")
    args = parser.parse_args(argv)
    return check(
        args.root, args.baseline or args.root / "tools" / "budgets_baseline.txt", args.trim
    )


if __name__ == "__main__":
    sys.exit(main())
