"""`python -m evals.compare BASE CAND`: did the change help? Two recorded runs, paired and decided.

BASE and CAND are run ids or `TASK@latest` / `TASK@previous`, narrowed with
`,KEY=VALUE` pairs (`reaction@latest,backend=local,label=candidate`; keys backend,
model, label, split, branch, commit (a prefix), subset) or `--base-filter` / `--cand-filter`.
A reference passes over quick tries (`--limit`, `--case`) unless `subset=limit|case|any`, and
one that passed over newer runs (not complete, or a subset) says so on stderr. The runs' reports give
each case's scores (repeats are averaged within a case by `evals.analysis.comparison`), the
corpus each run recorded gives each case's family, the manifests give what changed
between the runs, and the cache gives the answers shown side by side. Nothing here
calls a model.

The output opens with what differs, in full (evals/analysis/differences.py: more than one of prompt,
model and options is confounded, exit 3 unless `--accept-mixed`; a prompt change on the stub too). Runs
scored by different scorers are re-scored with today's first (evals/cli/rescoring.py). Ship also needs
the tail guard (evals/analysis/tail.py).

Refused in one line (exit 1): a run compared with itself; runs of different tasks; runs of different splits
(unless `--allow-split-mismatch`); a run without a report; a shared case whose inputs
or label differ between the runs (each manifest records every case's sha256).

`--summary FILE` appends the markdown comparison to FILE (GitHub's `$GITHUB_STEP_SUMMARY`), never
overwriting what is there. `--html FILE` also writes the comparison's page (evals/render/html.py; `-`: the page alone on
standard output).

`--all BASE_REF CAND_REF` (each `@latest` or `@previous`) compares every registered task at
once under Holm's correction, one verdict per task. `--metric judged`: evals/cli/judged_metric.py.

Exit status: 0 ship, 3 inconclusive, 4 regress (with `--all`: 4 if any task regressed,
else 3 if any is inconclusive); 1 an error, 2 a usage error.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from attest.errors import run_main
from attest.options import OneLineErrorParser, at_least
from attest.text import printable
from evals.analysis.comparison import EXIT_CODES, CaseChange, Comparison, RunScores, compare, compare_all, exit_code
from evals.analysis.pairing import Run, load_run, pair
from evals.cli.options import margin_type
from evals.cli.prices import PRICES_HELP, load_prices
from evals.render.comparison_text import to_text
from evals.store.models import Manifest
from evals.store.open import open_store
from evals.store.protocols import Answers, Runs
from evals.store.records import RunError
from evals.store.refs import Resolved, UnknownTaskRef, parse_filter, resolve
from evals.store.settings import add_store_arguments, hint_options, resolve_cache_dir, resolve_store_url

if TYPE_CHECKING:
    from evals.analysis.tokens import PriceList

__all__ = ["main", "with_answers"]

NOT_CACHED = "(not in the cache)"


def with_answers(x: Comparison, cache: Answers | None, base: Manifest, cand: Manifest, every: bool) -> Comparison:
    """`x` with answer texts (sample 0) from the cache: for every changed case, or only those shown."""
    changed = [*x.regressed, *x.improved]
    wanted = {c.case_id for c in (changed if every else changed[: x.show])}
    if not wanted:
        return x
    b, c = _answers(cache, base, wanted), _answers(cache, cand, wanted)

    def fill(changes: Iterable[CaseChange]) -> tuple[CaseChange, ...]:
        return tuple(
            replace(ch, base_answer=b[ch.case_id], cand_answer=c[ch.case_id]) if ch.case_id in wanted else ch
            for ch in changes
        )

    return replace(x, regressed=fill(x.regressed), improved=fill(x.improved))


def _answers(cache: Answers | None, manifest: Manifest, wanted: set[str]) -> dict[str, str]:
    keys = {s.case: s.key for s in manifest.samples if s.sample == 0 and s.case in wanted}
    found = cache.get_many(list(keys.values())) if cache is not None else {}
    out = {case: NOT_CACHED for case in wanted}
    for case, key in keys.items():
        entry = found.get(key)
        if entry is not None:
            out[case] = entry.text
    return out


# ----- the command line --------------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = OneLineErrorParser(
        prog="compare",
        description="Pair two runs case by case and decide: ship (exit 0), inconclusive (3) or regress (4); "
        "1 is an error, 2 a usage error. BASE and CAND are run ids or TASK@latest / TASK@previous, "
        "narrowed by KEY=VALUE pairs after a comma (TASK@latest,backend=local,model=NAME,label=LABEL; "
        "keys backend, model, label, split, branch, commit (a prefix), subset=limit|case|any; quick tries "
        "(--limit, --case) are passed over unless subset= asks for them); with --all they are @latest or "
        "@previous and every task is "
        "decided together (Holm). Opens with what differs between the runs; when more than one of prompt, "
        "model and options differ the verdict is inconclusive (exit 3) unless --accept-mixed.",
    )
    parser.add_argument("base", metavar="BASE", help="the baseline run")
    parser.add_argument("cand", metavar="CAND", help="the candidate run")
    parser.add_argument("--all", action="store_true", help="compare every task: BASE and CAND are @latest/@previous")
    parser.add_argument("--cache-dir", help="cache and run directory (env ATTEST_CACHE_DIR; default cache/)")
    add_store_arguments(parser)
    parser.add_argument("--margin", type=margin_type, default=0.0, help="gain required to ship, fixed before looking")
    parser.add_argument("--show", type=at_least(0), default=5, help="changed cases shown side by side (default 5)")
    parser.add_argument(
        "--allow-split-mismatch",
        action="store_true",
        help="pair runs of different splits or subsets (--limit, --case) on the cases they share",
    )
    parser.add_argument(
        "--html", metavar="FILE", help="also write the comparison's page (one offline HTML file) to FILE; - for stdout"
    )
    parser.add_argument(
        "--accept-mixed", action="store_true", help="decide even when more than one of prompt, model, options differ"
    )
    parser.add_argument(
        "--base-filter",
        default="",
        metavar="K=V,...",
        help="narrow BASE: backend=,model=,label=,split=,branch=,commit=,subset=",
    )
    parser.add_argument("--cand-filter", default="", metavar="K=V,...", help="narrow CAND, as --base-filter")
    metric = "decide on the rule score (default) or the judged score (only for a judge validated by judge_check)"
    parser.add_argument("--metric", choices=("score", "judged"), default="score", help=metric)
    parser.add_argument("--prices", metavar="FILE", help=PRICES_HELP)
    parser.add_argument(
        "--summary",
        metavar="FILE",
        help="also append the markdown comparison to FILE (never overwritten), as to $GITHUB_STEP_SUMMARY",
    )
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print JSON (every changed case, with both answers)")
    out.add_argument("--markdown", action="store_true", help="print a PR comment (under 60,000 characters)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    refs = (args.base, args.cand)
    if args.all and not all(r.partition(",")[0] in ("@latest", "@previous") for r in refs):
        parser.error("with --all, BASE and CAND are @latest or @previous (the task comes from each of the three)")
    if not args.all and any(r.startswith("@") for r in refs):
        parser.error("name the task, as in reaction@latest, or compare every task with --all")
    if args.all and args.metric == "judged":
        parser.error("--metric judged compares one task's two runs; leave out --all")
    for text, where in ((args.base_filter, "--base-filter"), (args.cand_filter, "--cand-filter"), *_suffixes(refs)):
        try:
            parse_filter(text, where)
        except RunError as exc:
            parser.error(str(exc))
    return run_main("compare", lambda: _compare(args))


def _suffixes(refs: Sequence[str]) -> list[tuple[str, str]]:
    """Each reference's `,KEY=VALUE` narrowing, to check as a usage error before anything is read."""
    return [(ref.partition(",")[2], f"{ref!r}:") for ref in refs]


def _compare(args: argparse.Namespace) -> int:
    args.price_list = load_prices(args.prices)
    cache_dir = resolve_cache_dir(args.cache_dir)
    url = resolve_store_url(args.store, args.store_file)
    # no answers ever cached here: the records alone, and no cache created
    opened = open_store(url, cache_dir, answers=url is not None or (cache_dir / "responses").is_dir())
    try:
        return _compare_in(opened.runs, opened.answers, args)
    finally:
        opened.close()


def _compare_in(store: Runs, cache: Answers | None, args: argparse.Namespace) -> int:
    names = _task_names() if args.all else ("",)
    loaded = [_load_pair(store, f"{task}{args.base}", f"{task}{args.cand}", args) for task in names]
    _ = [pair(b, c, allow_split_mismatch=args.allow_split_mismatch) for b, c in loaded]  # refusals before re-scores
    equal = [_one_scorer(b, c, cache, store.paths_local) for b, c in loaded]
    pairs, notes = [(b, c) for b, c, _ in equal], [n for _, _, n in equal]
    if args.metric == "judged":
        from evals.cli.judged_metric import judged_pair  # the task registry: only a judged comparison needs it

        judged = judged_pair(store, pairs[0], as_json=args.json)
        if judged is None:  # withheld: judge_check's validation missing or too weak, or the judges differ
            return EXIT_CODES["inconclusive"]
        pairs = [judged]
    scores = [pair(b, c, allow_split_mismatch=args.allow_split_mismatch) for b, c in pairs]
    mixed = args.accept_mixed
    if args.all:
        found = list(compare_all(scores, margin=args.margin, show=args.show, accept_mixed=mixed, notes=notes))
    else:
        found = [compare(*scores[0], margin=args.margin, show=args.show, accept_mixed=mixed, notes=notes[0])]
    found = [with_answers(x, cache, b.manifest, c.manifest, args.json) for x, (b, c) in zip(found, pairs, strict=True)]
    if args.html is not None:
        _write_html(found, scores, store, cache, args.html, args.price_list)
    if args.html != "-":
        _print(found, pairs, args)
    if args.summary is not None:  # after the verdict is printed: a summary that cannot be written loses nothing
        from evals.render.comparison_markdown import append_summary  # each format's renderer only when asked for
        from evals.render.comparison_tokens import markdown_with_tokens

        append_summary(markdown_with_tokens(found, pairs, args.price_list), args.summary)
    if args.html not in (None, "-"):
        print(f"page        {args.html}", file=sys.stderr if args.json or args.markdown else sys.stdout)
    return EXIT_CODES[found[0].verdict] if len(found) == 1 else exit_code(x.verdict for x in found)


def _one_scorer(base: Run, cand: Run, cache: Answers | None, local: bool) -> tuple[Run, Run, tuple[str, ...]]:
    """Both runs as they are when one scorer scored them, else `rescoring.one_scorer`'s."""
    if base.manifest.provenance.scorer_fingerprint == cand.manifest.provenance.scorer_fingerprint:
        return base, cand, ()
    from evals.cli.rescoring import one_scorer  # the task registry and the scorers: only when the scorers differ

    return one_scorer(base, cand, cache, paths_local=local)  # a shared store's corpus paths are never opened


def _task_names() -> tuple[str, ...]:
    from evals import tasks  # every task module and pydantic: only `--all` needs the registry

    return tasks.names()


def _write_html(
    found: list[Comparison],
    scores: list[tuple[RunScores, RunScores]],
    store: Runs,
    cache: Answers | None,
    target: str,
    prices: PriceList | None,
) -> None:
    from evals.render.html import write_page
    from evals.render.pages import comparison_html

    write_page(comparison_html(found, scores, store, cache, prices), target)


def _load_pair(store: Runs, base: str, cand: str, args: argparse.Namespace) -> tuple[Run, Run]:
    runs = []
    for ref, narrowing, option in (
        (base, args.base_filter, "--base-filter"),
        (cand, args.cand_filter, "--cand-filter"),
    ):
        found = _resolve(store, ref, parse_filter(narrowing, option))
        if found.skipped:
            print(printable(f"compare: {found.note(ref)}"), file=sys.stderr)
        runs.append(load_run(store, found.run_id))
    return runs[0], runs[1]


def _resolve(store: Runs, ref: str, where: Mapping[str, str]) -> Resolved:
    """`resolve`, naming the known tasks when a reference's task is none of them."""
    try:
        return resolve(store, ref, where)
    except UnknownTaskRef as exc:
        from evals import tasks  # the registry only on this error path: it costs compare its start-up

        if exc.task not in tasks.names():
            raise RunError(f"{ref!r}: unknown task {exc.task!r}; {tasks.known()}") from None
        raise


def _print(found: list[Comparison], pairs: Sequence[tuple[Run, Run]], args: argparse.Namespace) -> None:
    from evals.render.comparison_tokens import token_json, token_lines

    if args.json:
        from evals.render.comparison_json import to_json  # here: each format's renderer only when asked for

        data: Any = to_json(found[0]) if len(found) == 1 else _all_json(found)
        for one, (b, c) in zip(data["comparisons"] if len(found) > 1 else [data], pairs, strict=True):
            one["runs"] = token_json(b, c, args.price_list)
        print(json.dumps(data, indent=1))
    elif args.markdown:
        from evals.render.comparison_tokens import markdown_with_tokens

        print(printable(markdown_with_tokens(found, pairs, args.price_list), multiline=True))
    else:
        for x, (b, c) in zip(found, pairs, strict=True):
            print(printable(to_text(x), multiline=True), end="")
            print(printable("\n".join(token_lines(b, c, args.price_list)), multiline=True))
            where = hint_options(args.cache_dir, args.store)
            print(printable(f"see a case: python -m evals.runs{where} show {x.cand_run} --case ID"))


def _all_json(found: Sequence[Comparison]) -> Mapping[str, Any]:
    from evals.render.comparison_json import to_json

    return {"comparisons": [to_json(x) for x in found], "exit_code": exit_code(x.verdict for x in found)}


if __name__ == "__main__":
    raise SystemExit(main())
