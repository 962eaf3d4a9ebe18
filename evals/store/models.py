"""The run records as strict, typed documents: manifest, prompts, report, decision, progress.

Each record is a frozen `msgspec.Struct` with a `schema_version`, unknown fields refused and
every field given a type and a range, so a record that decodes is one the commands can use
(records are untrusted: a copied, planted or hand-edited run). msgspec rather than pydantic:
the read-only command lines (`compare`, `runs list`, `runs show`) start in a fraction of the
time, because msgspec imports in about a millisecond and checks a 226-case report without
first building a validator (pydantic spent about 80 ms of each start on these models).
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, ClassVar, Literal, TypeVar

import msgspec
from msgspec import Meta

from attest.errors import AttestError
from evals.store.judged import JudgedBlock

__all__ = [
    "RUN_ID",
    "SCHEMA_VERSION",
    "Decision",
    "JudgeIdentity",
    "JudgeRef",
    "JudgeSample",
    "Manifest",
    "Prompts",
    "Provenance",
    "Record",
    "RecordError",
    "Report",
    "ReportHead",
    "ResultRow",
    "RunAuthor",
    "RunProgress",
    "SampleRef",
    "decode",
]

SCHEMA_VERSION = 1
RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
R = TypeVar("R", bound="Record")

_Time = Annotated[float, Meta(ge=0.0, le=1e11)]  # seconds since the epoch, before the year 5000
_Count = Annotated[int, Meta(ge=0, le=10**9)]
_Unit = Annotated[float, Meta(ge=0.0, le=1.0)]
_Seconds = Annotated[float, Meta(ge=0.0, le=1e11)]
_Name = Annotated[str, Meta(max_length=1000)]
_Sha = Annotated[str, Meta(max_length=128)]
_RunId = Annotated[str, Meta(pattern=RUN_ID.pattern)]
_Repeat = Annotated[int, Meta(ge=1, le=10**6)]


class RecordError(AttestError):
    """A record's JSON that is not a valid record of its kind (the caller says which file or row)."""


class Record(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """A run record: strict on the way in (`decode`), plain JSON on the way out."""

    kind: ClassVar[str] = "record"

    def replace(self: R, **changes: Any) -> R:
        """A copy with `changes` (a record is frozen)."""
        return msgspec.structs.replace(self, **changes)

    def to_dict(self, *, exclude: frozenset[str] = frozenset()) -> dict[str, Any]:
        """The record as JSON-ready builtins, without the fields named in `exclude`."""
        data: dict[str, Any] = msgspec.to_builtins(self)
        return {k: v for k, v in data.items() if k not in exclude}

    def to_json(self, *, indent: int = 0) -> str:
        encoded = msgspec.json.encode(self)
        return (msgspec.json.format(encoded, indent=indent) if indent else encoded).decode("utf-8")

    @classmethod
    def from_dict(cls: type[R], data: Any) -> R:
        """Check builtins (a dict from JSON) as this record, strictly; RecordError names the field."""
        try:
            return msgspec.convert(data, cls, strict=True)
        except msgspec.ValidationError as exc:
            raise RecordError(_where(exc)) from None


def decode(data: bytes | str, model: type[R]) -> R:
    """`data` as a `model` record; RecordError says which field is wrong and how."""
    try:
        return msgspec.json.decode(data, type=model)
    except msgspec.ValidationError as exc:
        raise RecordError(_where(exc)) from None
    except RecursionError:
        raise RecordError("field (top level): nested too deep") from None
    except msgspec.DecodeError as exc:
        try:  # Python's json writes NaN and Infinity, which msgspec refuses as not JSON: name the field
            loose = json.loads(data)
        except (ValueError, RecursionError):
            raise RecordError(f"field (top level): not JSON ({exc})") from None
        return model.from_dict(loose)


def _where(exc: msgspec.ValidationError) -> str:
    """msgspec's "Expected `int`, got `str` - at `$.samples[0].sample`" as "field samples[0].sample: ..."."""
    message, _, at = str(exc).partition(" - at `")
    path = at.rstrip("`").removeprefix("$").removeprefix(".")
    inside = re.fullmatch(r"Object (contains unknown|missing required) field `(.*)`", message)
    if inside:  # msgspec names the object; the field is the key inside it
        path = f"{path}.{inside[2]}" if path else inside[2]
        message = "not a field of this record" if inside[1] == "contains unknown" else "missing"
    return f"field {path or '(top level)'}: {message}"


class RunAuthor(Record, frozen=True, kw_only=True):
    """Who saved a run's manifest (a team's store records it)."""

    host: str
    user: str
    git_commit: str | None


class SampleRef(Record, frozen=True, kw_only=True):
    case: _Name
    sample: _Count
    key: _Sha


class ResultRow(Record, frozen=True, kw_only=True):
    """One entry of a report's `results` (pipeline.CaseResult as JSON); reports keep them as dicts."""

    id: _Name
    sample: _Count
    score: _Unit
    errors: list[str] = []
    latency_s: _Seconds = 0.0
    details: dict[str, Any] = {}


class JudgeSample(Record, frozen=True, kw_only=True):
    """Where one sample's judgement is cached; key "" when the answer held nothing to judge (judged fail)."""

    case: _Name
    sample: _Count
    key: _Sha


class JudgeIdentity(Record, frozen=True, kw_only=True):
    """Who a judge is: backend, model, digest, options and the fingerprint of its judge prompt."""

    backend: _Name
    model: _Name
    digest: _Name
    options: dict[str, Any] = {}
    prompt_fingerprint: _Sha  # the judge prompt rendered on fixed placeholders (engine/judge.py)


class JudgeRef(JudgeIdentity, frozen=True, kw_only=True):
    """A judged run's judge (its identity) and the key of each sample's judgement."""

    samples: list[JudgeSample] = []

    def identity(self) -> dict[str, Any]:
        """What names this judge in a validation: backend, model, digest, options and prompt fingerprint."""
        return self.to_dict(exclude=frozenset({"samples"}))


class Provenance(Record, frozen=True, kw_only=True):
    """Enough to reproduce a run and to tell two runs apart."""

    prompt_fingerprint: _Sha  # sha256 of every rendered request, in plan order
    system_prompts: list[_Sha]  # sha256 of each distinct system prompt; texts in prompts.json
    tag_prompt_path: str | None = None  # ATTEST_TAG_PROMPT, when set
    tag_prompt_sha256: _Sha | None = None
    scorer_fingerprint: _Sha  # sha256 of the task's scorer source
    git_commit: _Sha | None = None  # absent outside a git checkout
    git_dirty: bool | None = None
    git_branch: _Name | None = None  # the branch checked out, when not detached
    attest_version: _Name
    corpus: str  # relative to the project root when inside it
    corpus_sha256: dict[_Name, _Sha]  # per split


class Manifest(Record, frozen=True, kw_only=True):
    kind: ClassVar[str] = "manifest"

    schema_version: Literal[1] = 1
    run_id: _RunId
    task: _Name
    created: _Time
    status: Literal["generating", "complete", "failed", "interrupted"]
    backend: _Name
    model: _Name
    digest: _Name
    digest_note: _Name = ""
    options: dict[str, Any]
    split: _Name
    repeat: _Repeat
    provenance: Provenance
    samples: list[SampleRef]
    case_sha256: dict[_Name, _Sha] = {}  # inputs and label of each case, for pairing runs
    request_sha256: dict[_Name, _Sha] = {}  # each case's rendered request (sample 0); {} in older runs
    generate_seconds: Annotated[float, Meta(ge=0.0)] | None = None
    label: _Name = ""  # free text: "baseline", "candidate", ...
    limit: Annotated[int, Meta(ge=1)] | None = None  # --limit N: a stratified subset of the split, not all of it
    only: list[_Name] = []  # --case ID...: only these cases of the split
    judge: JudgeRef | None = None  # --judge-backend: the judge stage that graded every answer


class Prompts(Record, frozen=True, kw_only=True):
    """prompts.json: the distinct system prompts a run sent, by sha256."""

    kind: ClassVar[str] = "prompts"

    schema_version: Literal[1] = 1
    system: dict[str, str]


class Report(Record, frozen=True, kw_only=True):
    kind: ClassVar[str] = "report"

    schema_version: Literal[1] = 1
    run_id: _RunId
    task: _Name
    backend: _Name
    model: _Name
    digest: _Name
    split: _Name
    repeat: _Repeat
    scored_at: _Time
    scorer_fingerprint: _Sha
    corpus_sha256: dict[_Name, _Sha]
    overall: _Unit
    n: _Count
    median_latency: Annotated[float, Meta(ge=0.0)] | None
    summary: dict[str, Any]
    generate: dict[str, Any] = {}
    results: list[dict[str, Any]]
    # the interval, families, baselines and detectable difference (analysis/uncertainty.py); the run scripts fill it
    uncertainty: dict[str, Any] = {}
    judged: dict[str, Any] = {}  # a judged run's judge, counts and judgements (evals/store/judged.py's JudgedBlock)

    def __post_init__(self) -> None:
        """Each row checked as a ResultRow and the judged block as a JudgedBlock (types and ranges), kept as
        the dicts the renderers read."""
        for i, row in enumerate(self.results):
            check_as(row, ResultRow, f"results[{i}]")
        if self.judged:
            check_as(self.judged, JudgedBlock, "judged")


def check_as(data: Any, model: type[msgspec.Struct], where: str) -> None:
    """`data` checked as a `model` record, or ValueError naming the path from the top (msgspec's own form)."""
    try:
        msgspec.convert(data, model, strict=True)
    except msgspec.ValidationError as exc:
        message, _, at = str(exc).partition(" - at `$")
        raise ValueError(f"{message} - at `$.{where}{at.rstrip('`')}`") from None


class ReportHead(Record, frozen=True, kw_only=True, forbid_unknown_fields=False):
    """What `runs list` reads of a report.json: its score, without its per-case results (the whole
    report is checked where it is used: show, rescore, compare). Other fields are skipped unread."""

    kind: ClassVar[str] = "report"

    schema_version: Literal[1]
    run_id: _RunId
    overall: _Unit


class Decision(Record, frozen=True, kw_only=True):
    """The optimiser's gate, recorded beside the candidate run so rescore can re-check it."""

    kind: ClassVar[str] = "decision"

    schema_version: Literal[1] = 1
    baseline_run: _RunId
    candidate_run: _RunId
    margin: Annotated[float, Meta(ge=0.0, lt=1.0)]
    verdict: Literal["ship", "regress", "inconclusive"]
    mean_difference: Annotated[float, Meta(ge=-1.0, le=1.0)]
    interval: tuple[float, float]
    p_value: _Unit
    n: _Count
    decided_at: _Time


class RunProgress(Record, frozen=True, kw_only=True):
    """progress.json: how many of a generating run's samples are settled, rewritten by its writer about
    once a second, so `runs list` shows a live run as k/n (and one whose writer is gone as interrupted)."""

    kind: ClassVar[str] = "progress"

    schema_version: Literal[1] = 1
    run_id: _RunId
    done: _Count
    total: _Count
    updated: _Time
