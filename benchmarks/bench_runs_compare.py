"""Run records at scale, through the command-line functions: `runs list` and `compare` (targets < 1 s).

- `runs list` over 1,000 synthetic runs (a manifest and a report of 20 samples each,
  written with `DirStore`), through `evals.runs.main(["list"])`, output discarded. The
  reference reads the same 2,000 files with `json.loads` and nothing else, so the ratio
  is what validating the records, sorting and printing cost on top.
- `compare` of two 10,000-sample runs end to end through `evals.compare.main` (run ids,
  text output, `--show 5`): reading and validating both manifests (10,000 sample keys and
  case hashes each) and reports (10,000 results each), the families from a 10,000-case
  corpus file, the statistics, and the answers shown, from a cache holding all 20,000.
  Scores are 0/1 (exact McNemar) with 12% of the cases changed. The reference reads the
  same four files with `json.loads` and takes the bare mean paired difference. The notes
  give `--json` (every changed case's answers read from the cache) beside it.
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks._common import REPEATS, Row, Spread, print_rows, rotated, script_command, timed, workdir
from evals import compare, runs
from evals.store.keys import Entry
from evals.store.local.cache import ResponseCache
from evals.store.models import Manifest, Provenance, Report, SampleRef
from evals.store.records import DirStore

__all__ = ["run"]

TARGET_S = 1.0
LIST_RUNS, LIST_SAMPLES = 1_000, 20
COMPARE_CASES = 10_000
FAMILIES = ("anchor", "keyword-trap", "two-topic", "edge", "long-abstract")


def _provenance(corpus: str, prompt: str) -> Provenance:
    return Provenance(
        prompt_fingerprint=prompt,
        system_prompts=[prompt],
        scorer_fingerprint="scorer-sha",
        attest_version="bench",
        corpus=corpus,
        corpus_sha256={"dev": "corpus-sha"},
    )


def _records(
    run_id: str, scores: dict[str, float], corpus: str, prompt: str, created: float
) -> tuple[Manifest, Report]:
    samples = [SampleRef(case=case, sample=0, key=f"{run_id}:{case}") for case in scores]
    manifest = Manifest(
        run_id=run_id, task="tagging", created=created, status="complete", backend="fake", model="m", digest="d",
        options={"temperature": 0.0}, split="dev", repeat=1, provenance=_provenance(corpus, prompt), samples=samples,
        case_sha256={case: f"sha-{case}" for case in scores},
    )  # fmt: skip
    results = [
        {"id": case, "sample": 0, "score": score, "errors": [], "latency_s": 0.01, "details": {}}
        for case, score in scores.items()
    ]
    overall = sum(scores.values()) / len(scores)
    report = Report(
        run_id=run_id, task="tagging", backend="fake", model="m", digest="d", split="dev", repeat=1,
        scored_at=created, scorer_fingerprint="scorer-sha", corpus_sha256={"dev": "corpus-sha"}, overall=overall,
        n=len(results), median_latency=0.01, summary={}, results=results,
    )  # fmt: skip
    return manifest, report


def _save(store: DirStore, manifest: Manifest, report: Report) -> None:
    with store.writing(manifest.run_id):
        store.save(manifest.run_id, "manifest", manifest)
        store.save(manifest.run_id, "report", report)


def _quiet(fn: Callable[[], int]) -> Callable[[], int]:
    def call() -> int:
        with contextlib.redirect_stdout(io.StringIO()):
            return fn()

    return call


# --- runs list ---------------------------------------------------------------------------------------


def _list_setup() -> Path:
    cache = workdir("runs-list")
    store = DirStore(cache / "runs")
    rng = random.Random(1)
    now = time.time()
    for i in range(LIST_RUNS):
        scores = {f"case-{j:02d}": float(rng.random() < 0.5) for j in range(LIST_SAMPLES)}
        _save(store, *_records(f"20250101T{i:06d}-tagging-{i:08x}", scores, "evals/x.json", f"p{i % 7}", now - i))
    return cache


def _bare_read(root: Path) -> int:
    return sum(len(json.loads(path.read_text(encoding="utf-8"))) for path in root.glob("*/*.json"))


def _list_row() -> Row:
    cache = _list_setup()
    argv = ["--cache-dir", str(cache), "list"]
    ours: list[float] = []
    ref: list[float] = []
    for i in range(REPEATS):
        for who in rotated(["ours", "ref"], i):
            if who == "ours":
                code, seconds = timed(_quiet(lambda: runs.main(argv)))
                assert code == 0
                ours.append(seconds)
            else:
                ref.append(timed(lambda: _bare_read(cache / "runs"))[1])
    o, r = Spread.of(ours), Spread.of(ref)
    return Row(
        f"`runs list`, {LIST_RUNS:,} runs of {LIST_SAMPLES} samples",
        o.fmt(unit="s"),
        f"json.loads of the same {2 * LIST_RUNS:,} files: {r.fmt(unit='s')}",
        f"{o.median / r.median:.1f}x",
        f"< {TARGET_S:g} s",
        o.hi < TARGET_S,
        script_command("bench_runs_compare.py"),
        ["through evals.runs.main, output discarded; records validated by the strict pydantic models"],
    )


# --- compare -----------------------------------------------------------------------------------------


def _compare_setup() -> tuple[Path, str, str]:
    cache = workdir("compare")
    ids = [f"case-{i:05d}" for i in range(COMPARE_CASES)]
    corpus = cache / "corpus.json"
    corpus.write_text(
        json.dumps([{"id": c, "split": "dev", "family": FAMILIES[i % 5]} for i, c in enumerate(ids)]), encoding="utf-8"
    )
    rng = random.Random(2)
    base = {c: float(rng.random() < 0.5) for c in ids}
    cand = {c: (1.0 - s if rng.random() < (0.08 if s == 0.0 else 0.04) else s) for c, s in base.items()}
    store = DirStore(cache / "runs")
    answers = ResponseCache(cache)
    try:
        for name, scores, created in (("base", base, 1.0), ("cand", cand, 2.0)):
            run_id = f"20250101T00000{int(created)}-tagging-{name}"
            _save(store, *_records(run_id, scores, str(corpus), f"prompt-{name}", created))
            for case, score in scores.items():
                text = json.dumps({"tags": ["catalysis"] if score else ["statistics"], "run": name})
                answers.put(f"{run_id}:{case}", Entry(text, 0.01, None, None, "m", "d", created))
    finally:
        answers.close()
    return cache, "20250101T000001-tagging-base", "20250101T000002-tagging-cand"


def _bare_compare(cache: Path, base: str, cand: str) -> float:
    reports = [json.loads((cache / "runs" / r / "report.json").read_text(encoding="utf-8")) for r in (base, cand)]
    for r in (base, cand):
        json.loads((cache / "runs" / r / "manifest.json").read_text(encoding="utf-8"))
    b = {x["id"]: x["score"] for x in reports[0]["results"]}
    c = {x["id"]: x["score"] for x in reports[1]["results"]}
    return statistics.fmean(c[k] - b[k] for k in b)


def _compare_row() -> Row:
    cache, base, cand = _compare_setup()
    argv = ["--cache-dir", str(cache), base, cand]
    ours: list[float] = []
    ref: list[float] = []
    as_json: list[float] = []
    for i in range(REPEATS):
        for who in rotated(["ours", "json", "ref"], i):
            if who == "ref":
                ref.append(timed(lambda: _bare_compare(cache, base, cand))[1])
                continue
            extra = ["--json"] if who == "json" else []
            code, seconds = timed(_quiet(lambda: compare.main([*argv, *extra])))  # noqa: B023 (called at once)
            assert code in (0, 3, 4), code
            (ours if who == "ours" else as_json).append(seconds)
    o, r = Spread.of(ours), Spread.of(ref)
    return Row(
        f"`compare` CLI, two {COMPARE_CASES:,}-sample runs, end to end",
        o.fmt(unit="s"),
        f"json.loads of both reports and manifests + the bare mean difference: {r.fmt(unit='s')}",
        f"{o.median / r.median:.1f}x",
        f"< {TARGET_S:g} s",
        o.hi < TARGET_S,
        script_command("bench_runs_compare.py"),
        [
            f"through evals.compare.main (text, --show 5), 0/1 scores, 12% of cases changed; "
            f"--json (every changed case's answers from the cache): {Spread.of(as_json).fmt(unit='s')}"
        ],
    )


def run() -> list[Row]:
    return [_list_row(), _compare_row()]


if __name__ == "__main__":
    print_rows(run())
