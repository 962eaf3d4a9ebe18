"""A quick try: `--limit N` (a fixed subset, stratified by family) and `--case ID` (named cases).

`stratified(cases, n)` is deterministic and the same on every machine: each family gets
its share of N by largest remainder (ties by family name), and within a family the cases
are taken in the order of the sha256 of their ids, so neither the corpus file's order nor
the machine changes which cases a given N picks, and adding a case to one family moves
few others. The picked cases keep the corpus's order.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TypeVar

from attest.errors import AttestError
from evals.corpus.cases import Case

__all__ = ["UnknownCaseError", "named", "stratified"]

C = TypeVar("C", bound=Case)


class UnknownCaseError(AttestError):
    """A `--case` id that is not in the corpus."""


def _rank(case_id: str) -> str:
    return hashlib.sha256(case_id.encode("utf-8")).hexdigest()


def _quotas(sizes: dict[str, int], n: int) -> dict[str, int]:
    total = sum(sizes.values())
    exact = {family: n * size / total for family, size in sizes.items()}
    quotas = {family: int(share) for family, share in exact.items()}
    left = n - sum(quotas.values())
    by_remainder = sorted(sizes, key=lambda family: (-(exact[family] - quotas[family]), family))
    for family in by_remainder[:left]:
        quotas[family] += 1
    return quotas


def stratified(cases: Sequence[C], n: int) -> list[C]:
    """At most `n` of `cases`, each family in proportion to its size (see the module's docstring)."""
    if n >= len(cases):
        return list(cases)
    families: dict[str, list[C]] = {}
    for case in cases:
        families.setdefault(case.family, []).append(case)
    quotas = _quotas({family: len(members) for family, members in families.items()}, n)
    keep: set[str] = set()
    for family, members in families.items():
        keep.update(c.id for c in sorted(members, key=lambda c: _rank(c.id))[: quotas[family]])
    return [c for c in cases if c.id in keep]


def named(cases: Sequence[C], ids: Sequence[str], where: str) -> list[C]:
    """The cases with these ids, in the corpus's order; an unknown id raises UnknownCaseError naming `where`."""
    known = {c.id for c in cases}
    unknown = [i for i in ids if i not in known]
    if unknown:
        raise UnknownCaseError(f"--case {unknown[0]}: no case with that id in {where}")
    wanted = set(ids)
    return [c for c in cases if c.id in wanted]
