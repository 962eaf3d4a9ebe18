"""Every value of every setting is one line or works (issue 36): generated, not listed.

For each setting, hypothesis draws values from strategies built to break parsers
(tests/settings_strategies.py) and runs the command that reads it, in process, with
the environment patched. The property: the command works (exit 0), or it exits 1 or
2 with one line on stderr that is no "internal error" (and, where the setting is
what is wrong, names it). Nothing connects anywhere: the HTTP backends get an
`httpx.MockTransport` (httpx still builds every URL and header, and validation
rehearses what the resolver would do with the host), the local backend is built
(reading ATTEST_LOCAL_*) but answered by the stub, and a store URL is only handed
to a command when every host it names is this machine.

The profile (`ci`: derandomized, no database) is in tests/conftest.py; for a longer
search run `pytest --hypothesis-profile=long tests/test_settings_properties.py`.
Each value a search found is pinned with `@example`.
"""

from __future__ import annotations

import io
import os
import tempfile
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import httpx
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from attest import cli
from attest.backends.local import make_local
from attest.backends.registry import make_backend
from attest.backends.settings import DEFAULT_OLLAMA_MODEL, Settings
from attest.backends.stub import StubBackend
from attest.backends.types import Backend
from tests.settings_strategies import NASTY, NUMBER, RELATIVE_PATH, URL, URL_VALUE

pytestmark = pytest.mark.timeout(120)
TAGS = '{"tags": ["deep-learning"]}'
ITEM = ["--retries", "1", "A title", "A summary"]


def pinned(*values: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """`@example(value=v)` for each of `values`: the regressions a search found, run every time."""

    def wrap(test: Callable[..., None]) -> Callable[..., None]:
        for value in reversed(values):
            test = example(value=value)(test)
        return test

    return wrap


def run(entry: Callable[[], int], env: dict[str, str], cwd: Path | None = None) -> tuple[int, str]:
    """Run `entry` with `env` set and stdout/stderr captured: (exit code, stderr)."""
    err = io.StringIO()
    with pytest.MonkeyPatch.context() as mp:
        for name, value in env.items():
            mp.setenv(name, value)
        if cwd is not None:
            mp.chdir(cwd)
        with redirect_stdout(io.StringIO()), redirect_stderr(err):
            try:
                code = entry()
            except SystemExit as exc:  # argparse's usage error
                code = exc.code if isinstance(exc.code, int) else 2
    return code, err.getvalue()


def one_line_or_works(code: int, err: str, setting: str | None = None) -> None:
    """The property: exit 0, or exit 1/2 with one line that is not a bug report (naming `setting`, if given)."""
    assert "internal error" not in err and "Traceback" not in err, err
    if code == 0:
        return
    lines = err.splitlines()
    assert code in (1, 2) and len(lines) == 1, (code, err)
    if setting is not None:
        assert setting in lines[0], lines[0]


def _answer(request: httpx.Request) -> httpx.Response:
    """A model server that answers every route the HTTP backends use, wherever the base path put it."""
    path = request.url.path
    if path.endswith("/api/tags"):
        return httpx.Response(200, json={"models": [{"name": DEFAULT_OLLAMA_MODEL, "digest": "sha256:0"}]})
    if path.endswith("/api/chat"):
        return httpx.Response(200, json={"model": DEFAULT_OLLAMA_MODEL, "message": {"content": TAGS}})
    if path.endswith("/v1/chat/completions"):
        return httpx.Response(200, json={"choices": [{"message": {"content": TAGS}}]})
    return httpx.Response(404, json={"error": "no such route"})


def mocked(config: Settings) -> Backend:
    """The backend `config` names, its requests built by httpx and answered by `_answer` (no socket)."""
    return make_backend(config, httpx.Client(transport=httpx.MockTransport(_answer)))


def local_then_stub(config: Settings) -> Backend:
    """Build the local backend (it reads ATTEST_LOCAL_*; nothing starts before a request), then answer offline."""
    make_local(config).close()
    return StubBackend(config.options)


def attest(argv: list[str], env: dict[str, str], factory: Callable[[Settings], Backend] = mocked) -> tuple[int, str]:
    return run(lambda: cli.main(argv, backend_factory=factory), env)


# --- the model servers' URLs --------------------------------------------------------------------

URL_EXAMPLES = [
    "http://xn--a.invalid:1",  # the issue's: idna's InvalidCodepoint when httpx built the Host header
    "http://u:\udcff@127.0.0.1:9",  # a byte that is not UTF-8 in the password: Basic auth could not encode it
    "http://127.0.0.1:9/\udcff",  # ... in the path: httpx's percent-encoding could not
    "http://127.0.0.1:9/?a=\udcff",  # ... in the query: urllib's quote could not
    "http://127.0.0.1:9/a\x7fb",  # a control character in the path: httpx's InvalidURL
    "http://xn--ls8h.example:1",  # a valid xn-- label (a emoji domain): works
]


@given(value=URL_VALUE)
@pinned(*URL_EXAMPLES)
def test_ollama_host_is_one_line_or_works(value: str) -> None:
    code, err = attest(["tag", "--backend", "ollama", *ITEM], {"OLLAMA_HOST": value})
    one_line_or_works(code, err, "OLLAMA_HOST")


@given(value=URL_VALUE)
@pinned(*URL_EXAMPLES)
def test_openai_base_url_is_one_line_or_works(value: str) -> None:
    code, err = attest(["tag", "--backend", "openai", "--model", "m", *ITEM], {"ATTEST_OPENAI_BASE_URL": value})
    one_line_or_works(code, err, "ATTEST_OPENAI_BASE_URL")


SECRET = "S3CRET-pw"


@given(url=URL, kind=st.sampled_from(["ollama", "openai"]), tail=st.one_of(st.just(""), NASTY))
@example(url="http://u:@xn--a.invalid:1", kind="ollama", tail="")
def test_a_password_in_a_url_is_never_shown(url: str, kind: str, tail: str) -> None:
    scheme, _, rest = url.rpartition("://")
    value = f"{scheme}://u:{SECRET}{tail}@{rest.rpartition('@')[2]}" if scheme else f"u:{SECRET}{tail}@{url}"
    name = "OLLAMA_HOST" if kind == "ollama" else "ATTEST_OPENAI_BASE_URL"
    code, err = attest(["tag", "--backend", kind, "--model", "m", *ITEM], {name: value})
    one_line_or_works(code, err)
    assert SECRET not in err and "S3CRET" not in err, err


# --- numbers --------------------------------------------------------------------------------------

NUMBER_EXAMPLES = ["\u00b2", "9" * 5000, "\u0661", " 12 ", "0"]  # '²' passed isdigit() and failed int()


@given(value=NUMBER)
@pinned(*NUMBER_EXAMPLES)
def test_max_answer_bytes_is_one_line_or_works(value: str) -> None:
    code, err = attest(["tag", "--backend", "ollama", *ITEM], {"ATTEST_MAX_ANSWER_BYTES": value})
    one_line_or_works(code, err, "ATTEST_MAX_ANSWER_BYTES")


@given(value=NUMBER, name=st.sampled_from(["ATTEST_LOCAL_THREADS", "ATTEST_LOCAL_SLOTS", "ATTEST_LOCAL_SERVERS"]))
@example(value="\u00b2", name="ATTEST_LOCAL_SERVERS")
@example(value="100000", name="ATTEST_LOCAL_THREADS")  # would have asked llama.cpp for 100,000 threads
def test_local_counts_are_one_line_or_work(value: str, name: str) -> None:
    code, err = attest(["tag", "--backend", "local", *ITEM], {name: value}, local_then_stub)
    one_line_or_works(code, err, name)


# --- files and directories ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory of odd things a path setting may name, shared by the module's examples."""
    root = tmp_path_factory.mktemp("odd")
    (root / "file").write_text("not a directory\n", encoding="utf-8")
    (root / "dir").mkdir()
    os.mkfifo(root / "fifo")
    (root / "loop").symlink_to(root / "loop")
    (root / "dangling").symlink_to(root / "nowhere")
    return root


ODD = [
    "file",
    "dir",
    "fifo",
    "loop",
    "dangling",
    "file/below",
    "/dev/null",
    "/dev/zero",
    "/proc/self/mem",
]  # nothing a write could harm


def fresh(root: Path) -> Path:
    """A new empty directory under `root` for one example (hypothesis runs many examples per test)."""
    return Path(tempfile.mkdtemp(dir=root))


PROMPT_CONTENT = st.one_of(
    st.binary(max_size=64),
    st.integers(1, 200_000).map(lambda n: "[" * n),  # 100,000 deep: RecursionError in json.loads
    st.builds(lambda text: '{"instructions": ' + text + "}", NASTY),
    st.builds(lambda text: '{"instructions": "x", "demos": [' + text + "]}", NASTY),
    st.sampled_from(['{"instructions": "Tag it."}', '{"instructions": ""}', "null", "{}", '{"instructions": 1}']),
)


@given(
    where=st.one_of(st.sampled_from(ODD), NASTY, st.integers(4000, 5000).map(lambda n: "p" * n)),
    content=st.one_of(st.none(), PROMPT_CONTENT),
)
@example(where="x", content="[" * 100_000)  # json.loads' RecursionError was an internal error
def test_tag_prompt_is_one_line_or_works(scratch: Path, where: str, content: str | bytes | None) -> None:
    here = fresh(scratch)
    path = (
        here / "prompt.json" if content is not None else scratch / where if not where.startswith("/") else Path(where)
    )
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    elif isinstance(content, bytes):
        path.write_bytes(content)
    code, err = attest(["tag", "--backend", "stub", *ITEM], {"ATTEST_TAG_PROMPT": str(path)})
    one_line_or_works(code, err, "ATTEST_TAG_PROMPT")


CACHE_PLACES = st.one_of(
    st.sampled_from(ODD).map(lambda odd: ("odd", odd)),
    RELATIVE_PATH.map(lambda rel: ("fresh", rel)),
    st.integers(4000, 5000).map(lambda n: ("fresh", "/".join(["d" * 200] * (n // 200)))),  # over PATH_MAX
)


def cache_dir(scratch: Path, place: tuple[str, str]) -> str:
    """The cache directory a drawn place names: an odd thing in `scratch`, or a new path under a fresh directory."""
    kind, where = place
    if kind == "odd":
        return where if where.startswith("/") else str(scratch / where)
    return str(fresh(scratch) / where)


@given(place=CACHE_PLACES, flag=st.booleans())
@example(place=("fresh", "/".join(["d" * 200] * 21)), flag=False)
def test_cache_dir_for_reading_is_one_line_or_works(scratch: Path, place: tuple[str, str], flag: bool) -> None:
    from evals import runs

    where = cache_dir(scratch, place)
    argv, env = (["list", "--cache-dir", where], {}) if flag else (["list"], {"ATTEST_CACHE_DIR": where})
    code, err = run(lambda: runs.main(argv), env, cwd=scratch)
    one_line_or_works(code, err)


@settings(max_examples=max(6, settings.default.max_examples // 6))  # each writes a run: a fifth of a second
@given(place=CACHE_PLACES)
@example(place=("fresh", "/".join(["d" * 200] * 21)))
def test_cache_dir_for_writing_is_one_line_or_works(scratch: Path, place: tuple[str, str]) -> None:
    from evals.cli.runner import main
    from evals.tagging_eval import TASK

    argv = ["--backend", "stub", "--limit", "1", "--json"]
    code, err = run(lambda: main(TASK, argv), {"ATTEST_CACHE_DIR": cache_dir(scratch, place)}, cwd=scratch)
    lines = [line for line in err.splitlines() if not line.startswith("tagging dev: ")]  # the progress lines
    one_line_or_works(code, "\n".join(lines))
