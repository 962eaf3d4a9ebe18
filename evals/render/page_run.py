"""What a run's page shows, gathered from its records: plain data for the template, no markup.

Task-blind. A case's inputs are its text fields and its gold is every other field (beyond
id, split, family and note); a confusion matrix is drawn for a yes/no field that both the
gold and the answers hold, and a reliability plot for a small whole-number field of the
answers (a stated confidence) beside it: derived from the data, never from the task's name.
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evals.analysis.degenerate import parse_answer
from evals.analysis.tokens import PriceList, cost_text, tokens_text
from evals.render import plots
from evals.render.judge_status import judged_card
from evals.render.page_caps import PAGE_BASELINES, PAGE_FAMILIES, PAGE_ROWS, family_points, hidden
from evals.store.models import Manifest, Report, SampleRef
from evals.store.protocols import Answers

__all__ = ["CaseRow", "Reader", "RunPage", "Texts", "answer_texts", "run_page_data", "short_hash", "split_case"]

META = ("id", "split", "family", "note")
Texts = Mapping[tuple[str, int], "str | None"]  # (case id, sample) -> the answer text (None: not in the cache)
SCALE_MAX = 10  # a whole-number answer field with at most this many values is a scale (a confidence)


@dataclass(frozen=True)
class CaseRow:
    case: str
    sample: int
    family: str
    inputs: dict[str, str]
    gold: dict[str, str]
    answer: str | None
    parsed: str | None  # the parsed answer, pretty JSON
    score: float | None
    errors: list[str]
    reader: int = 0  # 1-based index into the page's readers; 0: the case has no shared profile

    @property
    def failed(self) -> bool:
        return self.score is None or self.score < 1.0


@dataclass(frozen=True)
class Reader:
    """Long input fields many cases share (a reader's profile), shown once and referred to by each case."""

    number: int
    name: str  # the start of its first field, to tell readers apart
    fields: dict[str, str]


@dataclass
class RunPage:
    manifest: Manifest
    report: Report | None
    prompts: dict[str, str]
    rows: list[CaseRow]
    warnings: list[str]
    families: list[str]
    facts: list[tuple[str, str, str]] = field(default_factory=list)  # (name, shown, full value on hover or "")
    readers: list[Reader] = field(default_factory=list)
    plots: dict[str, str] = field(default_factory=dict)  # name -> inline SVG made by evals.render.plots
    judge: dict[str, str] = field(default_factory=dict)  # a judged run: its judged pass rate, judge and validation
    caps: tuple[int, int] = (PAGE_ROWS, PAGE_FAMILIES)  # the table's rows and the filter's families drawn

    @property
    def block(self) -> dict[str, Any]:
        block = dict(self.report.uncertainty) if self.report is not None else {}
        if isinstance(block.get("baselines"), list):
            block["baselines"] = block["baselines"][:PAGE_BASELINES]
        return block

    @property
    def hidden(self) -> str:
        return hidden(len(self.rows), len(self.families))


def answer_texts(cache: Answers, samples: Sequence[SampleRef]) -> dict[tuple[str, int], str | None]:
    """(case id, sample) -> the cached answer text (None when the cache no longer holds it)."""
    found = cache.get_many([s.key for s in samples])
    return {(s.case, s.sample): (e.text if (e := found.get(s.key)) is not None else None) for s in samples}


def split_case(case: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    """A raw case's inputs (its text fields) and its gold (its other fields), each value as text."""
    inputs = {k: v for k, v in case.items() if k not in META and isinstance(v, str)}
    gold = {k: json.dumps(v, ensure_ascii=False) for k, v in case.items() if k not in META and not isinstance(v, str)}
    return inputs, gold


def run_page_data(
    manifest: Manifest,
    report: Report | None,
    prompts: Mapping[str, str],
    texts: Mapping[tuple[str, int], str | None],
    cases: Mapping[str, Mapping[str, Any]],
    warnings: Sequence[str],
    prices: PriceList | None = None,
    judge_line: str = "",
) -> RunPage:
    """The page's data: `cases` maps case id to the raw corpus case (empty when the corpus is gone);
    `judge_line` says whether a judged run's judge is validated (render/judge_status.py)."""
    scored = {(str(r["id"]), int(r["sample"])): r for r in (report.results if report else [])}
    rows = [_row(s, scored.get((s.case, s.sample), {}), texts.get((s.case, s.sample)), cases) for s in manifest.samples]
    readers, rows = _readers(rows)
    page = RunPage(manifest, report, dict(prompts), rows, list(warnings), sorted({r.family for r in rows}))
    page.readers = readers
    page.facts = _facts(manifest, report, prices)
    page.plots = _plots(page, cases)
    page.judge = judged_card(report, judge_line)
    return page


SHARED_MIN_CHARS = 80  # a shared input field this long on average is a profile, not an item's own text


def _readers(rows: list[CaseRow]) -> tuple[list[Reader], list[CaseRow]]:
    """Input fields that a few long values repeat across the cases (a reader's persona and interests) lifted
    out of the rows into readers, each row keeping its reader's number."""
    cases = len({r.case for r in rows})
    if cases < 4:
        return [], rows
    common = [k for k in rows[0].inputs if all(k in r.inputs for r in rows)]
    shared = [
        k
        for k in common
        if len({r.inputs[k] for r in rows}) <= cases // 4
        and sum(len(r.inputs[k]) for r in rows) / len(rows) >= SHARED_MIN_CHARS
    ]
    if not shared:
        return [], rows
    numbers: dict[tuple[str, ...], int] = {}
    readers: list[Reader] = []
    out = []
    for r in rows:
        values = tuple(r.inputs[k] for k in shared)
        if values not in numbers:
            numbers[values] = len(readers) + 1
            readers.append(Reader(len(readers) + 1, _name(values[0]), dict(zip(shared, values, strict=True))))
        own = {k: v for k, v in r.inputs.items() if k not in shared}
        out.append(dataclasses.replace(r, inputs=own, reader=numbers[values]))
    return readers, out


def _name(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " …"


def short_hash(value: str) -> tuple[str, str]:
    """`value` with each sha in it (40 or 64 hex digits, perhaps after `name:`) cut to 12 digits, and the
    whole value for hovering ("" when nothing was cut)."""
    shown = " ".join(_short_part(word) for word in value.split(" "))
    return shown, value if shown != value else ""


def _short_part(part: str) -> str:
    head, sep, tail = part.rpartition(":")
    return f"{head}{sep}{tail[:12]}" if _HEX.fullmatch(tail) else part


_HEX = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def _row(s: SampleRef, result: Mapping[str, Any], text: str | None, cases: Mapping[str, Mapping[str, Any]]) -> CaseRow:
    case = cases.get(s.case, {})
    inputs, gold = split_case(case)
    parsed = parse_answer(text)
    score = result.get("score")
    return CaseRow(
        case=s.case,
        sample=s.sample,
        family=str(case.get("family") or "(none)"),
        inputs=inputs,
        gold=gold,
        answer=text,
        parsed=None if parsed is None else json.dumps(parsed, indent=1, ensure_ascii=False),
        score=None if score is None else float(score),
        errors=[str(e) for e in result.get("errors", [])],
    )


def _facts(m: Manifest, report: Report | None, prices: PriceList | None) -> list[tuple[str, str, str]]:
    """(name, shown, full): each sha in a value is shown by its first 12 digits, the whole value on hover."""
    return [(name, *short_hash(value)) for name, value in _plain_facts(m, report, prices)]


def _plain_facts(m: Manifest, report: Report | None, prices: PriceList | None) -> list[tuple[str, str]]:
    p = m.provenance
    facts = [
        ("run", m.run_id),
        ("task, split", f"{m.task}, {m.split} split, {m.repeat} sample(s) per case, {m.status}"),
        ("created", time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(m.created))),
        ("backend", m.backend),
        ("model", m.model),
        ("digest", m.digest or f"(none) {m.digest_note}"),
        ("options", json.dumps(m.options, sort_keys=True)),
        ("prompt fingerprint", p.prompt_fingerprint),
        ("scorer fingerprint", p.scorer_fingerprint),
        ("corpus", f"{p.corpus} " + " ".join(f"{k}:{v}" for k, v in sorted(p.corpus_sha256.items()))),
        ("commit", (p.git_commit or "n/a") + (" (uncommitted changes)" if p.git_dirty else "")),
        ("branch", p.git_branch or "n/a"),
        ("attest", p.attest_version),
    ]
    if m.label:
        facts.insert(1, ("label", m.label))
    if p.tag_prompt_path:
        facts.append(("prompt file", f"{p.tag_prompt_path} sha256 {p.tag_prompt_sha256 or 'unreadable'}"))
    if report is not None:
        latency = "n/a" if report.median_latency is None else f"{report.median_latency:.3f} s"
        gen = report.generate
        facts.append(("median latency", latency))
        if gen:
            facts.append(
                ("cache", f"{gen.get('hits')} hits, {gen.get('misses')} misses, {gen.get('seconds', 0):.2f} s")
            )
            tokens = gen.get("tokens") if isinstance(gen.get("tokens"), dict) else None
            facts.append(("tokens", tokens_text(tokens, int(gen.get("samples", len(m.samples))))))
        cost = cost_text(m.backend, m.model, report.generate.get("tokens"), prices)
        if cost is not None:
            facts.append(("cost", cost))
    return facts


def _plots(page: RunPage, cases: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    out: dict[str, str] = {}
    block = page.block
    points = family_points(block.get("families"))
    if points:
        out["families"] = plots.forest(points, xlabel="mean score (95% interval)")
    scores = [r.score for r in page.rows if r.score is not None]
    if scores:
        out["distribution"] = plots.histogram(scores)
    out.update(_verdict_plots(page.rows, cases))
    return out


def _verdict_plots(rows: Sequence[CaseRow], cases: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """A confusion matrix and a reliability plot, when the data hold a yes/no field and a scale."""
    parsed = [(r, parse_answer(r.answer)) for r in rows]
    flag = _shared_flag(parsed, cases)
    if flag is None:
        return {}
    golds = [(bool(cases[r.case][flag]), p.get(flag) if p else None) for r, p in parsed if r.case in cases]
    counts = [
        [sum(1 for g, a in golds if g is gold and a is ans) for ans in (False, True, None)] for gold in (False, True)
    ]
    out = {"confusion": plots.confusion(counts, ["false", "true"], field=flag)}
    scale = _scale([p for _, p in parsed if p is not None], flag)
    if scale is not None:
        right: dict[int, list[bool]] = {}
        for r, p in parsed:
            if p is not None and r.case in cases and isinstance(p.get(scale), int) and isinstance(p.get(flag), bool):
                right.setdefault(p[scale], []).append(p[flag] == cases[r.case][flag])
        table = [(value, sum(v) / len(v), len(v)) for value, v in sorted(right.items())]
        out["reliability"] = plots.reliability(table, field=scale)
    return out


def _shared_flag(
    parsed: Sequence[tuple[CaseRow, dict[str, Any] | None]], cases: Mapping[str, Mapping[str, Any]]
) -> str | None:
    """The first field that is a yes/no value both in the gold cases and in most parsed answers."""
    answers = [p for _, p in parsed if p is not None]
    gold = [cases[r.case] for r, _ in parsed if r.case in cases]
    if not answers or not gold:
        return None
    names = sorted({k for c in gold for k, v in c.items() if isinstance(v, bool) and k not in META})
    for name in names:
        if all(isinstance(c.get(name), bool) for c in gold) and _mostly(answers, name, bool):
            return name
    return None


def _scale(answers: Sequence[dict[str, Any]], flag: str) -> str | None:
    names = sorted({k for a in answers for k, v in a.items() if k != flag and _whole(v)})
    for name in names:
        values = Counter(a[name] for a in answers if _whole(a.get(name)))
        if _mostly(answers, name, int) and len(values) <= SCALE_MAX:
            return name
    return None


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _mostly(answers: Sequence[dict[str, Any]], name: str, kind: type) -> bool:
    ok = sum(1 for a in answers if isinstance(a.get(name), kind) and (kind is bool or _whole(a.get(name))))
    return ok * 2 > len(answers)
