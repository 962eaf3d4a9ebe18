"""Hostile content stays inert: answers, case ids, family names, the model's name, labels and prompts
that carry markup, script, `javascript:` links, bidi overrides and control characters render as
visible text; the page fires no dialog, runs no script of theirs and loads nothing."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from evals.analysis.comparison import RunScores, compare
from evals.render import html
from evals.render.page_compare import compare_page_data
from evals.render.pages import run_html
from evals.store.models import Manifest, Provenance, Report, SampleRef
from tests.browser.conftest import Opened

pytestmark = pytest.mark.browser

PAYLOAD = (
    "<script>window.__pwned=1;alert(1)</script></textarea></pre></td></table>"
    '<img src=x onerror="window.__pwned=2;alert(2)"><a href="javascript:alert(3)">click me</a>'
    '<svg onload="alert(4)"></svg><img src="http://127.0.0.1:9/beacon.png"><iframe src="http://127.0.0.1:9/"></iframe>'
    "--> <!-- $\\alpha$ \u202eevil\u0007\x1b[31m\u0085\u2028end"
)
# fingerprints, hashes and the commit are capped at 128 characters on read: the short payload still carries markup,
# a bidi override and a control character
SHORT = "<script>window.__pwned=1;alert(1)</script>\u202eevil\u0007"
SEEN = [
    "<script>window.__pwned=1;alert(1)</script>",
    "</textarea>",
    'href="javascript:alert(3)"',
    "\\u202eevil",
    "\\x07",
]


def _hostile(i: int) -> str:
    return f"{PAYLOAD} #{i}"


def _run_page(tmp_path: Path) -> tuple[Path, list[str]]:
    ids = [_hostile(i) for i in range(6)]
    manifest = Manifest(
        run_id="20260101T000000-hostile-00000099",  # a run id is checked against a pattern on read
        task=_hostile(98),
        created=0.0,
        status="complete",
        backend=_hostile(97),
        model=_hostile(96),
        digest=_hostile(95),
        options={"note": PAYLOAD},
        split="dev",
        repeat=1,
        label=PAYLOAD,
        provenance=Provenance(
            prompt_fingerprint=SHORT,
            system_prompts=["x"],
            scorer_fingerprint=SHORT,
            attest_version=PAYLOAD,
            corpus=PAYLOAD,
            corpus_sha256={"dev": SHORT},
            git_commit=SHORT,
        ),
        samples=[SampleRef(case=c, sample=0, key=f"k{i}") for i, c in enumerate(ids)],
    )
    family = {c: f"fam {PAYLOAD}"[: 20 + i % 2] for i, c in enumerate(ids)}
    results = [
        {"id": c, "sample": 0, "score": float(i % 2), "errors": [PAYLOAD], "latency_s": 0.0, "details": {}}
        for i, c in enumerate(ids)
    ]
    block = {
        "score": {"mean": 0.5, "low": 0.2, "high": 0.8, "n": 6, "method": PAYLOAD, "text": PAYLOAD},
        "samples": 6,
        "baselines": [
            {"name": PAYLOAD, "answer": PAYLOAD, "mean": 0.1, "low": 0.0, "high": 0.3, "difference": {"text": PAYLOAD}}
        ],
        "families": [
            {"family": f, "mean": 0.5, "low": 0.1, "high": 0.9, "baselines": {PAYLOAD: 0.2}}
            for f in sorted(set(family.values()))
        ],
        "detectable": {"text": PAYLOAD},
    }
    report = Report(
        run_id=manifest.run_id,
        task=manifest.task,
        backend=manifest.backend,
        model=manifest.model,
        digest=manifest.digest,
        split="dev",
        repeat=1,
        scored_at=0.0,
        scorer_fingerprint=SHORT,
        corpus_sha256={},
        overall=0.5,
        n=6,
        median_latency=None,
        summary={PAYLOAD: PAYLOAD},
        results=results,
        uncertainty=block,
    )
    texts: dict[tuple[str, int], str | None] = {
        (c, 0): json.dumps({"flag": i % 2 == 0, "level": i % 3 + 1, "text": PAYLOAD}) if i % 3 else PAYLOAD
        for i, c in enumerate(ids)
    }
    cases = {c: {"id": c, "family": family[c], "title": PAYLOAD, "flag": i % 2 == 1} for i, c in enumerate(ids)}
    page = run_html(manifest, report, {"sha": PAYLOAD}, texts, cases, [PAYLOAD])
    path = tmp_path / "run.html"
    path.write_text(page, encoding="utf-8")
    return path, ids


def _compare_page(tmp_path: Path) -> tuple[Path, list[str]]:
    ids = [_hostile(i) for i in range(8)]
    family = {c: f"fam {PAYLOAD}"[: 20 + i % 2] for i, c in enumerate(ids)}
    answers = {c: PAYLOAD + c for c in ids}
    prov_b = {"model": PAYLOAD, "prompt_fingerprint": "a"}
    prov_c = {"model": PAYLOAD + "2", "prompt_fingerprint": "b"}
    base = RunScores(
        PAYLOAD,
        _hostile(90),
        {c: [float(i % 2)] for i, c in enumerate(ids)},
        family,
        answers,
        {},
        prov_b,
        (PAYLOAD + "\nsame line",),
    )
    cand = RunScores(
        PAYLOAD,
        _hostile(91),
        {c: [float(i % 3 == 0)] for i, c in enumerate(ids)},
        family,
        answers,
        {},
        prov_c,
        ("other " + PAYLOAD + "\nsame line",),
    )
    x = compare(base, cand)
    page = compare_page_data(x, ({c: PAYLOAD for c in ids}, {c: PAYLOAD + " more" for c in ids}), family, {})
    path = tmp_path / "compare.html"
    path.write_text(html.render_compare([page], None), encoding="utf-8")
    return path, ids


def _check_inert(o: Opened, ids: list[str]) -> None:
    o.assert_quiet()
    assert o.page.evaluate("window.__pwned === undefined")
    assert o.page.locator("img, iframe, svg[onload], image").count() == 0
    links = o.page.eval_on_selector_all("a", "links => links.map(a => a.getAttribute('href'))")
    assert all(re.fullmatch(r"#reader-\d+", str(href)) for href in links), links  # only the page's own reader links
    text = o.page.inner_text("body")
    for seen in SEEN:
        assert seen in text, seen
    assert "\u202e" not in text and "\u0007" not in text and "\u0085" not in text
    assert len(o.visible()) == len(ids)
    assert all(case.startswith("<script>window.__pwned=1") and "\\u202e" in case for case in o.visible())


@pytest.mark.parametrize("build", [_run_page, _compare_page], ids=["run", "compare"])
def test_hostile_fields_render_as_visible_text_and_run_nothing(
    build: Callable[[Path], tuple[Path, list[str]]], tmp_path: Path, open_page: Callable[[Path], Opened]
) -> None:
    path, ids = build(tmp_path)
    o = open_page(path)
    _check_inert(o, ids)
    o.page.fill("#f-text", "click me")  # the page's own script still works beside the payloads
    assert len(o.visible()) == len(ids)
    o.page.fill("#f-text", "#3")
    assert len(o.visible()) == 1
