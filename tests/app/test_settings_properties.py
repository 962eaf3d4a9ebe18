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
search run `pytest --hypothesis-profile=long tests/app/test_settings_properties.py`.
Each value a search found is pinned with `@example`.
"""

from __future__ import annotations

import io
import os
import subprocess
import tempfile
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import httpx
import psycopg
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from attest import cli
from attest.backends.local import make_local
from attest.backends.registry import KINDS, make_backend
from attest.backends.settings import DEFAULT_OLLAMA_MODEL, Settings
from attest.backends.stub import StubBackend
from attest.backends.types import Backend
from attest.errors import ConfigError
from tests.settings_strategies import (
    CHAR,
    HOST,
    NASTY,
    NUMBER,
    PATH,
    PORT,
    QUERY,
    RELATIVE_PATH,
    STORE_VALUE,
    URL_VALUE,
)

pytestmark = pytest.mark.timeout(120)
TAGS = '{"tags": ["deep-learning"]}'
ITEM = ["--retries", "1", "A title", "A summary"]


def pinned(*values: str, **rest: object) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """`@example(value=v, **rest)` for each of `values`: the regressions found, run every time."""

    def wrap(test: Callable[..., None]) -> Callable[..., None]:
        for value in reversed(values):
            test = example(value=value, **rest)(test)
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
    return StubBackend(config.options, config.stub_answer)


def attest(argv: list[str], env: dict[str, str], factory: Callable[[Settings], Backend] = mocked) -> tuple[int, str]:
    return run(lambda: cli.main(argv, backend_factory=factory), env)


# --- the model servers' URLs --------------------------------------------------------------------

URL_EXAMPLES = [
    "http://xn--a.invalid:1",  # the issue's: idna's InvalidCodepoint when httpx built the Host header
    "http://u:\udcff@127.0.0.1:9",  # a byte that is not UTF-8 in the password: Basic auth could not encode it
    "http://127.0.0.1:9/\udcff",  # ... in the path: httpx's percent-encoding could not
    "http://127.0.0.1:9/?a=\udcff",  # ... in the query: urllib's quote could not
    "http://127.0.0.1:9/a\x7fb",  # a control character in the path: httpx's InvalidURL
    "http:/\x1f@127.0.0.1",  # found by the search: urlsplit reads a path, httpx refuses the control in it
    "http://xn--ls8h.example:1",  # an emoji domain IDNA 2008 refuses
    "http://xn--bcher-kva.example:1",  # a valid xn-- label (bücher): works
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


# The password's own characters: none that ends the authority (/ ? #), so it stays the URL's password.
PASSWORD_TAIL = st.text(CHAR, max_size=12).map(lambda t: "".join(c for c in t if c not in "/?#"))


@given(
    scheme=st.sampled_from(["http://", "https://", ""]),
    tail=PASSWORD_TAIL,
    rest=st.tuples(HOST, PORT, PATH, QUERY).map("".join),
    kind=st.sampled_from(["ollama", "openai"]),
)
@example(scheme="http://", tail="", rest="xn--a.invalid:1", kind="ollama")
def test_a_password_in_a_url_is_never_shown(scheme: str, tail: str, rest: str, kind: str) -> None:
    value = f"{scheme}u:{SECRET}{tail}@{rest}"
    name = "OLLAMA_HOST" if kind == "ollama" else "ATTEST_OPENAI_BASE_URL"
    code, err = attest(["tag", "--backend", kind, "--model", "m", *ITEM], {name: value})
    one_line_or_works(code, err)
    assert "S3CRET" not in err, err


# --- numbers --------------------------------------------------------------------------------------

NUMBER_EXAMPLES = ["\u00b2", "9" * 5000, "\u0661", " 12 ", "0"]  # '²' passed isdigit() and failed int()


@given(value=NUMBER)
@pinned(*NUMBER_EXAMPLES)
def test_max_answer_bytes_is_one_line_or_works(value: str) -> None:
    code, err = attest(["tag", "--backend", "ollama", *ITEM], {"ATTEST_MAX_ANSWER_BYTES": value})
    one_line_or_works(code, err, "ATTEST_MAX_ANSWER_BYTES")


@given(value=NUMBER, name=st.sampled_from(["ATTEST_LOCAL_THREADS", "ATTEST_LOCAL_SLOTS", "ATTEST_LOCAL_SERVERS"]))
@example(value="\u00b2", name="ATTEST_LOCAL_SERVERS")
@example(value="100000", name="ATTEST_LOCAL_THREADS")
def test_local_counts_are_one_line_or_work(value: str, name: str) -> None:
    code, err = attest(["tag", "--backend", "local", *ITEM], {name: value}, local_then_stub)
    one_line_or_works(code, err, name)


@pytest.mark.parametrize("value", ["100000", "1025", "\u00b2", "9" * 5000])
def test_a_local_count_no_machine_has_is_refused(value: str) -> None:
    """100,000 threads would have been asked of llama.cpp; '²' passed isdigit() and failed int()."""
    from attest.backends.llamacpp import LocalServerError, ServerSettings

    with pytest.raises(LocalServerError, match=r"^ATTEST_LOCAL_THREADS=.* is not a whole number from 1 to 1024"):
        ServerSettings.resolve({"ATTEST_LOCAL_THREADS": value})
    assert ServerSettings.resolve({"ATTEST_LOCAL_THREADS": " 1024 "}).threads == 1024


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
    if isinstance(content, str):  # a byte the environment would hand over escaped is written as that byte
        path.write_text(content, encoding="utf-8", errors="surrogateescape")
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


@settings(max_examples=max(4, settings.default.max_examples // 10))  # each writes a run and its page
@given(place=CACHE_PLACES)
@example(place=("fresh", "/".join(["d" * 200] * 21)))
def test_cache_dir_for_writing_is_one_line_or_works(scratch: Path, place: tuple[str, str]) -> None:
    from evals.cli.runner import main
    from evals.tagging_eval import TASK

    argv = ["--backend", "stub", "--limit", "1", "--json"]
    code, err = run(lambda: main(TASK, argv), {"ATTEST_CACHE_DIR": cache_dir(scratch, place)}, cwd=scratch)
    lines = [line for line in err.splitlines() if not line.startswith("tagging dev: ")]  # the progress lines
    one_line_or_works(code, "\n".join(lines))


# --- the team store ---------------------------------------------------------------------------------

_HERE = ("", "localhost", "127.0.0.1", "::1")
_PG_ENV = ("PGHOST", "PGHOSTADDR", "PGPORT", "PGSERVICE", "PGSERVICEFILE", "PGPASSFILE", "PGDATABASE", "PGUSER")


def only_this_machine(url: str) -> bool:
    """Whether every host and address `url` names is this machine (a socket directory, loopback), so
    handing it to a command cannot reach or resolve anything elsewhere; a service file could name any host."""
    from psycopg import conninfo

    info = conninfo.conninfo_to_dict(url)
    names = [*str(info.get("host") or "").split(","), *str(info.get("hostaddr") or "").split(",")]
    return "service" not in info and all(n in _HERE or n.startswith(("/", "@")) for n in names)


STORE_EXAMPLES = [
    "postgresql://u:\udcff@127.0.0.1:9/db",  # a byte that is not UTF-8: libpq's parser could not encode it
    "host=" + "a" * 64 + " port=1",  # a label over 63 characters: the resolver's IDNA codec refused it
    "postgresql://[::1",
    "port= password=S3CRET-pw",  # found by the search: the port swallowed the password, and messages showed it
    "user= password=S3CRET-pw host=/nowhere",
    "host=127.0.0.1 port=99999999999",
]


@given(value=STORE_VALUE, flag=st.booleans())
@pinned(*STORE_EXAMPLES, flag=False)
def test_store_is_one_line_or_works(scratch: Path, value: str, flag: bool) -> None:
    from evals import runs
    from evals.store.settings import resolve_store_url

    env = {"ATTEST_CACHE_DIR": str(fresh(scratch))}
    with pytest.MonkeyPatch.context() as mp:
        for name in _PG_ENV:
            mp.delenv(name, raising=False)
        try:
            checked = resolve_store_url(value)  # the entry point's validation step
        except ConfigError as exc:
            assert "\n" not in str(exc) and "--store/ATTEST_STORE" in str(exc), str(exc)
            checked = None
        if checked is not None and not only_this_machine(checked):
            return  # valid, and would be resolved or connected to elsewhere: the validation step is the test
        argv, env = (["list", "--store", value], env) if flag else (["list"], {**env, "ATTEST_STORE": value})
        code, err = run(lambda: runs.main(argv), env)
    one_line_or_works(code, err)


@given(value=STORE_VALUE, form=st.sampled_from(["url", "key"]))
@example(value="postgresql://127.0.0.1:9/db", form="key")
@example(value="port=", form="key")  # found by the search: libpq read the port as "password=...", and showed it
def test_a_store_password_is_never_shown(scratch: Path, value: str, form: str) -> None:
    from evals import runs

    if form == "url":
        scheme, sep, rest = value.partition("://")
        value = f"{scheme}{sep}u:{SECRET}@{rest.rpartition('@')[2]}" if sep else f"postgresql://u:{SECRET}@{value}"
    else:
        value = f"{value} password={SECRET}"
    with pytest.MonkeyPatch.context() as mp:
        for name in _PG_ENV:
            mp.delenv(name, raising=False)
        try:
            local = only_this_machine(value)
        except (psycopg.Error, UnicodeError):  # unparseable: the command refuses it before resolving anything
            local = True
        if not local:
            return
        code, err = run(lambda: runs.main(["list"]), {"ATTEST_CACHE_DIR": str(fresh(scratch)), "ATTEST_STORE": value})
    one_line_or_works(code, err)
    assert "S3CRET" not in err, err


@pytest.mark.parametrize("value", [pytest.param(v, id=f"store-{i}") for i, v in enumerate(STORE_EXAMPLES)])
def test_a_store_url_connect_would_choke_on_is_refused_before_connecting(value: str) -> None:
    """Values the validation step must refuse itself (the property test does not connect to a name)."""
    from evals.store.settings import resolve_store_url

    with pytest.raises(ConfigError, match=r"^--store/ATTEST_STORE") as info:
        resolve_store_url(value)
    assert "\n" not in str(info.value) and "\udcff" not in str(info.value) and "S3CRET" not in str(info.value)


# --- a few through the real transport, in a subprocess ----------------------------------------------


@pytest.mark.parametrize(
    ("name", "value", "words"),
    [
        ("OLLAMA_HOST", "http://xn--a.invalid:1", "OLLAMA_HOST cannot be used (idna refused it"),  # the issue's
        (
            "ATTEST_OPENAI_BASE_URL",
            "http://u:p%ff@127.0.0.1:{port}/a%zz/\u00e4\u202e?k=%ff&j=\u200f",
            "cannot get an answer from the server",
        ),
    ],
)
def test_through_the_real_transport(attest_exe: Path, free_port: int, name: str, value: str, words: str) -> None:
    env = {**os.environ, name: value.format(port=free_port)}
    argv = [str(attest_exe), "tag", "--backend", "openai" if "OPENAI" in name else "ollama", "--model", "m", *ITEM]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    one_line_or_works(done.returncode, done.stderr, name if "cannot be used" in words else None)
    assert done.returncode == 1 and words in done.stderr, done.stderr


@given(value=NASTY, kind=st.sampled_from(["ollama", "openai"]), flag=st.booleans())
@example(value="m\udcff", kind="ollama", flag=False)  # a byte that is not UTF-8: httpx could not encode the body
def test_model_is_one_line_or_works(value: str, kind: str, flag: bool) -> None:
    argv, env = (["--model", value], {}) if flag else ([], {"ATTEST_MODEL": value})
    code, err = attest(["tag", "--backend", kind, *argv, *ITEM], env)
    one_line_or_works(code, err)


@given(key=NASTY, backend=st.one_of(st.sampled_from(["openai", "stub", "OpenAI", ""]), NASTY))
@example(key="\udcff", backend="openai")
def test_backend_and_api_key_are_one_line_or_work(key: str, backend: str) -> None:
    env = {"ATTEST_BACKEND": backend, "ATTEST_OPENAI_API_KEY": SECRET + key, "ATTEST_MODEL": "m"}
    code, err = attest(["tag", *ITEM], env)
    one_line_or_works(code, err)
    assert "S3CRET" not in err, err


@given(value=STORE_VALUE, form=st.sampled_from(["userinfo", "query", "key", "quoted"]))
@example(value="host=/tmp/x dbname=d", form="key")  # hint_options printed this password as given
@example(value="postgresql://h/d?sslmode=x", form="query")  # ... and this one
def test_a_printed_store_hint_never_holds_the_password(value: str, form: str) -> None:
    from evals.store.postgres.check import check_url
    from evals.store.settings import hint_options

    if form in ("userinfo", "query"):
        scheme, sep, rest = value.partition("://")
        url = f"{scheme}{sep}u:{SECRET}@{rest}" if form == "userinfo" and sep else f"postgresql://h/d?password={SECRET}"
        value = url if form == "userinfo" or not sep else f"{value}{'&' if '?' in value else '?'}password={SECRET}"
    else:
        value = f"{value} password={SECRET}" if form == "key" else f"password='{SECRET} x\\' y' {value}"
    try:
        check_url(value)
    except ConfigError:
        return  # the command stops at validation: no hint is printed
    assert "S3CRET" not in hint_options(None, value)


# --- the judge's settings -----------------------------------------------------------------------------


def judge_factory(config: Settings) -> Backend:
    """Each backend as the eval builds it, offline: the stub with its answerer, local built then stubbed,
    the HTTP ones against the mock server."""
    if config.backend == "stub":
        return StubBackend(config.options, config.stub_answer)
    return local_then_stub(config) if config.backend == "local" else mocked(config)


@settings(max_examples=max(6, settings.default.max_examples // 6))  # each runs one case and judges it
@given(
    kind=st.one_of(st.sampled_from(["stub", "ollama", "openai", "auto", "local", "STUB", " stub "]), NASTY), model=NASTY
)
@example(kind="x\udcff", model="")  # the variable is not checked by argparse's choices: one line, not a bug
@example(kind="ollama", model="m\udcff")  # named as the judge's model, not ATTEST_MODEL
def test_judge_settings_are_one_line_or_work(scratch: Path, kind: str, model: str) -> None:
    from evals.cli.runner import main
    from evals.explanation_eval import TASK

    argv = ["--backend", "stub", "--limit", "1", "--retries", "1", "--json"]
    env = {"ATTEST_JUDGE_BACKEND": kind, "ATTEST_JUDGE_MODEL": model, "ATTEST_CACHE_DIR": str(fresh(scratch))}
    code, err = run(lambda: main(TASK, argv, backend_factory=judge_factory), env, cwd=scratch)
    lines = [line for line in err.splitlines() if not line.startswith("explanation dev: ")]  # progress
    one_line_or_works(code, "\n".join(lines))
    if kind.strip() and kind.strip() not in KINDS:  # the variable is not limited by argparse's choices
        assert code == 1 and "ATTEST_JUDGE_BACKEND=" in err, err
    assert "ATTEST_MODEL" not in err, err  # the judge's model is its own setting
