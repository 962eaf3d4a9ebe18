"""The docs hold together: every relative link resolves, the README stays a front door, the layer map is the folders.

A link is `[text](target)` or `![alt](target)` outside code; a relative target must
name an existing file, and its `#anchor` (or a bare `#anchor` on the same page) a
heading of that Markdown file, slugged as GitHub slugs it. Web addresses are not
followed (the tests never leave 127.0.0.1).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FRONT_DOOR_LINES = 200
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_CODE_SPAN = re.compile(r"(`+).*?\1")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def pages(root: Path = REPO) -> list[Path]:
    """README.md and docs/*.md (the reference), CONTRIBUTING.md and the READMEs under examples/ and benchmarks/."""
    found = [root / "README.md", root / "CONTRIBUTING.md", *sorted((root / "docs").glob("*.md"))]
    return found + sorted(root.glob("examples/*/README.md")) + sorted(root.glob("benchmarks/README.md"))


def _prose_lines(path: Path) -> list[tuple[int, str]]:
    """(line number, text) of every line outside fenced code blocks."""
    lines, fenced = [], False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            lines.append((number, line))
    return lines


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: markup dropped, lower case, punctuation gone, spaces as hyphens."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading's anchor on a Markdown page, a repeated one numbered (-1, -2) as GitHub does."""
    seen: Counter[str] = Counter()
    found = set()
    for _, line in _prose_lines(path):
        match = _HEADING.match(line)
        if match:
            base = slug(match.group(2))
            found.add(f"{base}-{seen[base]}" if seen[base] else base)
            seen[base] += 1
    return found


def broken_links(path: Path) -> list[str]:
    """One line per relative link on the page whose file or anchor does not exist."""
    problems = []
    for number, line in _prose_lines(path):
        for target in _LINK.findall(_CODE_SPAN.sub("", line)):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):
                continue  # a web address or mailto: not followed
            problem = _check(path, target)
            if problem:
                problems.append(f"{path.name}:{number}: ({target}) {problem}")
    return problems


def _check(page: Path, target: str) -> str | None:
    name, _, anchor = target.partition("#")
    linked = (page.parent / name).resolve() if name else page
    if not linked.exists():
        return f"no such file: {linked}"
    if anchor and (linked.suffix != ".md" or anchor not in anchors(linked)):
        return f"no heading with anchor #{anchor} in {linked.name}"
    return None


def test_every_relative_link_resolves() -> None:
    checked = pages()
    assert {p.relative_to(REPO).as_posix() for p in checked} >= {"README.md", "docs/commands.md"}
    problems = [problem for page in checked for problem in broken_links(page)]
    assert not problems, "\n".join(problems)


def test_a_broken_link_or_anchor_is_caught(tmp_path: Path) -> None:
    """The guard: a link to a missing file, and one to a missing heading, are both reported; good ones are not."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A page\n\n## The app: `attest tag`, react\n", encoding="utf-8")
    readme = tmp_path / "README.md"
    readme.write_text(
        "# Top\n\n"
        "[ok](docs/a.md) [ok](docs/a.md#the-app-attest-tag-react) [ok](#top) [web](https://example.invalid/x)\n"
        "`[in code](nowhere.md)`\n\n"
        "[gone](docs/b.md) and ![img](docs/a.png)\n"
        "[no heading](docs/a.md#the-app) [no heading here](#bottom)\n"
        "```\n[in a block](nowhere.md)\n```\n",
        encoding="utf-8",
    )
    problems = broken_links(readme)
    assert [p.split(":")[1] for p in problems] == ["6", "6", "7", "7"], problems
    assert "no such file" in problems[0] and "docs/b.md" in problems[0]
    assert "#the-app " in problems[2] and "#bottom " in problems[3]


def test_slugs_follow_github() -> None:
    assert slug("The app: attest tag, react, explain") == "the-app-attest-tag-react-explain"
    assert slug("8. Let the optimiser propose a `tagging` prompt") == "8-let-the-optimiser-propose-a-tagging-prompt"
    assert slug("The local backend's model") == "the-local-backends-model"
    assert slug("compare and rescore") == "compare-and-rescore"


def test_the_readme_is_a_front_door() -> None:
    """At most 200 lines, linking to at least three reference pages under docs/, each of which exists."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= FRONT_DOOR_LINES
    linked = set(re.findall(r"\]\((docs/[\w-]+\.md)", text))
    assert len(linked) >= 3 and all((REPO / page).is_file() for page in linked), linked
    assert {"make test", "make eval"} <= set(re.findall(r"^(make \w+)\b", text, re.M))


def _layer_map_folders(contributing: Path) -> set[str]:
    """The `evals/.../` folders named in CONTRIBUTING.md's layer table (its `where` column)."""
    table = contributing.read_text(encoding="utf-8").split("| layer | where |", 1)[1].split("\n\n", 1)[0]
    wheres = [row.split("|")[2] for row in table.splitlines() if row.startswith("|") and row.count("|") > 3]
    return {folder.rstrip("/") for where in wheres for folder in re.findall(r"`(evals/[\w/]+/)`", where)}


def _module_folders(root: Path) -> set[str]:
    """Every folder under evals/ (modules or templates), caches left out."""
    folders = (p for p in (root / "evals").rglob("*") if p.is_dir() and "__pycache__" not in p.parts)
    return {p.relative_to(root).as_posix() for p in folders}


def test_the_layer_map_is_the_folders() -> None:
    """Every folder of evals/ is in CONTRIBUTING.md's layer map, and the map names no other."""
    named = _layer_map_folders(REPO / "CONTRIBUTING.md")
    assert named == _module_folders(REPO)


def test_a_folder_missing_from_the_layer_map_is_caught(tmp_path: Path) -> None:
    (tmp_path / "evals" / "store" / "local").mkdir(parents=True)
    (tmp_path / "evals" / "store" / "local" / "cache.py").write_text("", encoding="utf-8")
    (tmp_path / "evals" / "store" / "keys.py").write_text("", encoding="utf-8")
    (tmp_path / "CONTRIBUTING.md").write_text(
        "| layer | where | what |\n|---|---|---|\n| store | `evals/store/` | keys |\n\nThen `evals/store/local/`.\n",
        encoding="utf-8",
    )
    assert _layer_map_folders(tmp_path / "CONTRIBUTING.md") == {"evals/store"}
    assert _module_folders(tmp_path) == {"evals/store", "evals/store/local"}
