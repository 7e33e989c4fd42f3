"""Index benchmark: cold index, warm start, incremental update, query latency, peak memory; Aider's repo map beside it.

    .venv/bin/python bench/index.py [--runs 3]                  # Django 5.1, fetched and prepared the first time
    .venv/bin/python bench/index.py --aider --runs 3            # the same with Aider 0.86.2's RepoMap side by side
    .venv/bin/python bench/index.py --repo PATH                 # any git checkout
    .venv/bin/python bench/index.py --smoke                     # this checkout, one run, Aider only with --aider

The repository: Django 5.1's source release from PyPI (`pip download`, pinned by sha256, cached in
.cache/pypi-releases), unpacked once into .cache/bench-index/django-5.1 and committed, so files have git
blob ids. Each phase runs in a fresh process so its time and memory are its own:

- cold: an empty cache to a full index (RepoContext), then the first repo map of 4,000 tokens;
- warm: the saved index loaded and every file checked, an incremental update after editing one file, queries.

Memory counts every process: the phase's process and every process it starts (the parse workers), sampled
every 20 ms as the sum of their proportional set sizes (PSS: a page shared by the forked workers counts
once, split between them); the largest single process's peak resident size is printed beside it.

Aider side by side (an optional extra: `--aider` installs aider-chat 0.86.2 from bench/aider-requirements.txt
into its own virtual environment, .cache/aider-bench, the first time; about 700 MB, and it pins versions of
numpy, pydantic and tree-sitter other than ai-fix's, so it cannot share ai-fix's environment): in a fresh
process of that environment, `RepoMap(map_tokens=4096, map_mul_no_files=1)` over every tracked file, as Aider
lists them, with no tags cache (`.aider.tags.cache.v4` removed before): its cold repo map; then the same
again with the cache it wrote: its warm one. Its model is only used to count tokens; nothing is sent. Once
installed, every run measures it; without it, the figures stand alone.

Goals (issue 38): cold index of Django at most 2.2 s and 1/8 of Aider's cold repo map, with at most 150 MB
of memory counting every process; warm start and incremental update < 200 ms, query < 100 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path

from common import add_smoke, machine_load

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache" / "bench-index"
AIDER = CACHE.parent / "aider-bench"
AIDER_REQUIREMENTS = ROOT / "bench" / "aider-requirements.txt"
GOAL = {"cold_s": 2.2, "aider_ratio": 8.0, "memory_mb": 150, "warm_ms": 200, "incremental_ms": 200, "query_ms": 100}
EDITED = "django/db/models/query.py"
"""The file edited for the incremental update (another repository: its first tracked Python file)."""
QUERIES = [
    "QuerySet.bulk_create() crashes on PostgreSQL when ignore_conflicts and update_fields are both set",
    "Admin changelist: list_filter on a ForeignKey shows duplicate choices",
    "Migrations autodetector: renaming a model and a field at once raises KeyError in generate_renamed_fields",
    (
        'Traceback (most recent call last):\n  File "django/core/handlers/base.py", line 197, in _get_response\n'
        '  File "django/template/response.py", line 114, in render\nTemplateDoesNotExist: admin/login.html'
    ),
    "Paginator.get_page() should accept a float page number string like '2.0'",
]


def django_repo() -> Path:
    """.cache/bench-index/django-5.1: the pinned sdist unpacked and committed (made once)."""
    repo = CACHE / "django-5.1"
    if (repo / ".git").is_dir():
        return repo
    sys.path[:0] = [str(ROOT)]
    from tests.support.pypi_releases import DJANGO, fetch

    sdist = fetch(DJANGO)
    with tempfile.TemporaryDirectory(dir=CACHE.parent) as tmp:
        with tarfile.open(sdist) as tar:
            tar.extractall(tmp, filter="data")
        made = Path(tmp) / "Django-5.1"
        for step in (
            ["init", "-q"],
            ["add", "-A"],
            ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "src"],
        ):
            subprocess.run(["git", "-C", str(made), *step], check=True)
        CACHE.mkdir(parents=True, exist_ok=True)
        made.rename(repo)
    return repo


def tracked(repo: Path) -> list[str]:
    out = subprocess.run(["git", "-C", str(repo), "ls-files", "-z"], capture_output=True, text=True, check=True).stdout
    return [p for p in out.split("\0") if p]


def _peak_mb() -> float:
    """The largest single process's peak resident size: this one or its largest child (MB)."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return max(own, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)


def phase_cold(repo: Path, cache: Path) -> dict[str, float]:
    from bot.context.provider import RepoContext

    began, cpu = time.perf_counter(), time.process_time()
    context = RepoContext(repo, cache)
    cold = time.perf_counter() - began
    context.repo_map(4000)
    with_map = time.perf_counter() - began
    context.close()
    workers = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "cold_s": cold,
        "cold_map_s": with_map,
        "cpu_main_s": time.process_time() - cpu,
        "cpu_workers_s": workers.ru_utime + workers.ru_stime,
        "files": context.index.files.live_count,
        "largest_mb": _peak_mb(),
    }


def phase_warm(repo: Path, cache: Path) -> dict[str, float]:
    from bot.context.base import Query
    from bot.context.provider import RepoContext

    began = time.perf_counter()
    context = RepoContext(repo, cache)
    warm = time.perf_counter() - began
    assert context.last_sync.parsed == 0, context.last_sync

    path = repo / (EDITED if (repo / EDITED).exists() else next(p for p in tracked(repo) if p.endswith(".py")))
    original = path.read_bytes()
    incremental = []
    try:
        for n in range(5):
            path.write_bytes(original + f"\n\ndef benchmark_edit_{n}():\n    return QuerySet\n".encode())
            began = time.perf_counter()
            report = context.refresh()
            incremental.append(time.perf_counter() - began)
            assert report.parsed == 1, report
    finally:
        path.write_bytes(original)
        context.refresh()

    rank, retrieve = [], []
    for text in QUERIES:
        context.retrieve(Query(text=text), 8000)  # first use unpacks the postings it touches
        began = time.perf_counter()
        context.rank(Query(text=text))
        rank.append(time.perf_counter() - began)
        began = time.perf_counter()
        context.retrieve(Query(text=text), 8000)
        retrieve.append(time.perf_counter() - began)
    context.close()
    return {
        "warm_ms": warm * 1000,
        "incremental_ms": statistics.median(incremental) * 1000,
        "rank_ms": statistics.median(rank) * 1000,
        "query_ms": statistics.median(retrieve) * 1000,
        "largest_mb": _peak_mb(),
    }


def phase_aider(repo: Path, cache: Path) -> dict[str, float]:
    """Aider's RepoMap over every tracked file; `cache` unused: Aider keeps its tags cache in the repository."""
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # its price list from the package, not the network
    from aider.io import InputOutput
    from aider.models import Model
    from aider.repomap import RepoMap

    files = [str(repo / p) for p in tracked(repo)]
    model = Model("gpt-4o")  # counts tokens only
    io = InputOutput(pretty=False, yes=True, fancy_input=False)
    began, cpu = time.perf_counter(), time.process_time()
    repo_map = RepoMap(map_tokens=4096, root=str(repo), main_model=model, io=io, map_mul_no_files=1)
    text = repo_map.get_repo_map([], files) or ""
    return {
        "map_s": time.perf_counter() - began,
        "cpu_s": time.process_time() - cpu,
        "tokens": model.token_count(text),
        "largest_mb": _peak_mb(),
    }


PHASES = {"cold": phase_cold, "warm": phase_warm, "aider": phase_aider}


def tree_pss_kb(pid: int) -> int:
    """The summed PSS of `pid` and all its descendants, in kB (0 for processes that ended meanwhile)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(stat.parent.name))
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        todo += children.get(current, [])
        try:
            rollup = Path(f"/proc/{current}/smaps_rollup").read_text()
        except OSError:
            continue
        total += next((int(line.split()[1]) for line in rollup.splitlines() if line.startswith("Pss:")), 0)
    return total


def run_phase(python: Path, name: str, repo: Path, cache: Path) -> dict[str, float]:
    """A phase in a fresh process, its memory (every process it starts counted) sampled meanwhile."""
    proc = subprocess.Popen(
        [str(python), __file__, "--phase", name, "--repo", str(repo), "--cache", str(cache)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    peak = [0]

    def sample() -> None:
        while proc.poll() is None:
            peak[0] = max(peak[0], tree_pss_kb(proc.pid))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    sampler.join()
    if proc.returncode != 0:
        raise SystemExit(f"the {name} phase failed:\n{err[-3000:]}")
    result: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    result["memory_mb"] = peak[0] / 1024
    return result


def install_aider() -> Path:
    """The Python of .cache/aider-bench, with aider-chat installed (made the first time)."""
    python = AIDER / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(AIDER)], check=True)
        done = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "-r", str(AIDER_REQUIREMENTS)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            shutil.rmtree(AIDER)
            raise SystemExit(f"could not install {AIDER_REQUIREMENTS.name} into {AIDER}:\n{done.stderr[-3000:]}")
    return python


def aider_cold_and_warm(python: Path, repo: Path, cache: Path) -> tuple[dict[str, float], dict[str, float]]:
    tags = repo / ".aider.tags.cache.v4"
    shutil.rmtree(tags, ignore_errors=True)
    try:
        return run_phase(python, "aider", repo, cache), run_phase(python, "aider", repo, cache)
    finally:
        shutil.rmtree(tags, ignore_errors=True)


def medians(runs: list[dict[str, float]]) -> dict[str, tuple[float, float, float]]:
    """Each figure's median, lowest and highest."""
    return {
        key: (statistics.median(r[key] for r in runs), min(r[key] for r in runs), max(r[key] for r in runs))
        for key in runs[0]
    }


def cell(figure: tuple[float, float, float], unit: str, digits: int) -> str:
    median, low, high = figure
    spread = f" ({low:.{digits}f} - {high:.{digits}f})" if low != high else ""
    return f"{median:.{digits}f} {unit}{spread}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", type=Path, help="a git checkout (default: Django 5.1, prepared the first time)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--aider", action="store_true", help="install Aider 0.86.2 (the first time) and run it beside")
    parser.add_argument("--phase", choices=sorted(PHASES), help=argparse.SUPPRESS)
    parser.add_argument("--cache", type=Path, help=argparse.SUPPRESS)
    add_smoke(parser, "this checkout, one run, Aider only with --aider")
    args = parser.parse_args()
    if args.phase:
        print(json.dumps(PHASES[args.phase](args.repo, args.cache)))
        return 0
    if args.smoke:  # a clone of this checkout: the incremental update edits a file of the repository it indexes
        with tempfile.TemporaryDirectory(prefix="ai-fix-bench-") as tmp:
            subprocess.run(["git", "clone", "-q", str(ROOT), f"{tmp}/repo"], check=True)
            return measure(Path(tmp) / "repo", 1, args.aider, with_aider=args.aider)
    return measure((args.repo or django_repo()).resolve(), args.runs, args.aider, with_aider=True)


def measure(repo: Path, runs: int, install: bool, *, with_aider: bool) -> int:
    """Every phase `runs` times on `repo`, Aider's too when it is installed and `with_aider` (`install`: install it
    first)."""
    if not (repo / ".git").exists():
        print(f"{repo} is not a git checkout", file=sys.stderr)
        return 2
    aider = install_aider() if install else AIDER / "bin" / "python"
    left_out = "" if with_aider else "--smoke runs it only with --aider"
    if not aider.exists():
        left_out = "it is not installed (--aider installs it into .cache/aider-bench)"
    with_aider = not left_out
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {machine_load()}")
    if left_out:
        print(f"Aider's figures are left out: {left_out}")
    colds, warms, aider_colds, aider_warms = [], [], [], []
    for n in range(runs):
        cache = Path(tempfile.mkdtemp(prefix="ai-fix-bench-"))
        try:
            # Every other run Aider first: neither always meets a cooler page cache or a quieter minute.
            if with_aider and n % 2:
                cold, warm = aider_cold_and_warm(aider, repo, cache)
                aider_colds.append(cold)
                aider_warms.append(warm)
            colds.append(run_phase(Path(sys.executable), "cold", repo, cache))
            warms.append(run_phase(Path(sys.executable), "warm", repo, cache))
            if with_aider and not n % 2:
                cold, warm = aider_cold_and_warm(aider, repo, cache)
                aider_colds.append(cold)
                aider_warms.append(warm)
        finally:
            shutil.rmtree(cache, ignore_errors=True)
        print(f"run {n + 1}: {machine_load()}")
    cold, warm = medians(colds), medians(warms)
    print(
        f"\nrepository: {repo} ({int(cold['files'][0])} files indexed by ai-fix, {len(tracked(repo))} tracked), "
        f"{runs} run(s): median (lowest - highest); at the end: {machine_load()}\n"
    )
    theirs = medians(aider_colds) if aider_colds else None
    theirs_warm = medians(aider_warms) if aider_warms else None
    rows = [
        ("cold index", cell(cold["cold_s"], "s", 2), "-", f"<= {GOAL['cold_s']} s"),
        (
            "cold: index and first repo map (4k tokens)",
            cell(cold["cold_map_s"], "s", 2),
            cell(theirs["map_s"], "s", 1) if theirs else "-",
            f"<= Aider's / {GOAL['aider_ratio']:.0f}",
        ),
        (
            "memory at the cold start's peak, every process (PSS)",
            cell(cold["memory_mb"], "MB", 0),
            cell(theirs["memory_mb"], "MB", 0) if theirs else "-",
            f"<= {GOAL['memory_mb']} MB",
        ),
        (
            "largest single process (peak RSS)",
            cell(cold["largest_mb"], "MB", 0),
            cell(theirs["largest_mb"], "MB", 0) if theirs else "-",
            "",
        ),
        (
            "warm start (load the index, check every file)",
            cell(warm["warm_ms"], "ms", 0),
            cell(theirs_warm["map_s"], "s", 1) + " (repo map from its cache)" if theirs_warm else "-",
            f"< {GOAL['warm_ms']} ms",
        ),
        (
            "incremental update (1 file edited)",
            cell(warm["incremental_ms"], "ms", 0),
            "-",
            f"< {GOAL['incremental_ms']} ms",
        ),
        ("query: rank", cell(warm["rank_ms"], "ms", 0), "-", f"< {GOAL['query_ms']} ms"),
        ("query: rank, slices, render (8k tokens)", cell(warm["query_ms"], "ms", 0), "-", f"< {GOAL['query_ms']} ms"),
        ("memory of the warm process (PSS)", cell(warm["memory_mb"], "MB", 0), "-", ""),
    ]
    print("| measure | ai-fix | Aider 0.86.2 | goal |\n|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print(
        f"\ncold: CPU {cold['cpu_main_s'][0]:.2f} s in the main process and {cold['cpu_workers_s'][0]:.2f} s in the "
        "parse workers (medians): the wall time is this CPU shared out over the cores other work leaves free"
    )
    if theirs:
        ratio = theirs["map_s"][0] / cold["cold_map_s"][0]
        print(
            f"Aider's cold repo map / ai-fix's cold index and repo map: {ratio:.1f}x (medians; Aider's CPU "
            f"{theirs['cpu_s'][0]:.1f} s, its map {theirs['tokens'][0]:.0f} tokens); / ai-fix's cold index alone: "
            f"{theirs['map_s'][0] / cold['cold_s'][0]:.1f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
