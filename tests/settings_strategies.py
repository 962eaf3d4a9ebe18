"""Hypothesis strategies built to break the parsers a setting's value goes through.

Every value is one the environment (or argv) can actually hold: no NUL, and a byte
that is not UTF-8 arrives as a lone surrogate from U+DC80 to U+DCFF (Python's
surrogateescape), never another surrogate. Beyond arbitrary unicode they draw on
what each parser chokes on: C0/C1 controls and bidi marks, IDNA `xn--` labels,
brackets, ports, percent escapes, very long labels, userinfo, URL query parameters
and libpq `key=value` strings.
"""

from __future__ import annotations

from hypothesis import strategies as st

CONTROLS = "".join(chr(c) for c in (*range(0x01, 0x20), *range(0x7F, 0xA0)))
BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
NOT_UTF8 = "".join(chr(0xDC80 + b) for b in range(128))  # the bytes 0x80-0xff, as os.environ hands them over
URL_PUNCTUATION = ":/@[]%?#=&.-_ \\'\""

_odd = st.sampled_from(CONTROLS + BIDI + NOT_UTF8 + URL_PUNCTUATION + "\u00e4\u00df\u2070\u00b2\u0661\uff10\u3002")
_any = st.characters(exclude_categories=("Cs",), exclude_characters="\x00")
CHAR = st.one_of(_any, _odd, _odd)
NASTY = st.text(CHAR, max_size=24)
SHORT_NASTY = st.text(CHAR, max_size=6)
PERCENT = st.from_regex(r"%[0-9a-fA-FzZ%]{0,2}", fullmatch=True)

_LDH = st.from_regex(r"[a-z0-9][a-z0-9-]{0,8}", fullmatch=True)
LABEL = st.one_of(
    _LDH,
    st.builds(lambda rest: "xn--" + rest, st.one_of(_LDH, SHORT_NASTY, st.just(""), st.just("a"))),
    st.sampled_from(["xn--a", "xn--ls8h", "xn--", "xn--zz", "xn--80ak6aa92e", "-", "a-", "_", ""]),
    st.integers(60, 70).map(lambda n: "a" * n),
    SHORT_NASTY,
    PERCENT,
)
HOST = st.one_of(
    st.lists(LABEL, min_size=1, max_size=4).map(".".join),
    st.sampled_from(["127.0.0.1", "0.0.0.0", "[::1]", "[::]", "::1", "[fe80::1%eth0]", "[::1", "::1]", "[]", "1.2.3"]),
    st.builds(lambda inner, tail: f"[{inner}]{tail}", SHORT_NASTY, SHORT_NASTY),
    st.integers(250, 300).map(lambda n: ".".join(["a" * 50] * (n // 50))),
)
PORT = st.one_of(
    st.just(""),
    st.integers(-3, 70_000).map(lambda n: f":{n}"),
    st.builds(lambda t: ":" + t, SHORT_NASTY),
    st.sampled_from([":", "::", ":0", ":65535", ":65536", ":1_0", ":\u0661\u0662", ":+1", ": 1"]),
)
USERINFO = st.one_of(
    st.just(""),
    st.builds(lambda u: f"{u}@", SHORT_NASTY),
    st.builds(lambda u, p: f"{u}:{p}@", SHORT_NASTY, st.one_of(SHORT_NASTY, PERCENT)),
    st.sampled_from(["@", "u:@", ":p@", "u:p@q@", "u%zz:p%ff@"]),
)
PATH = st.lists(st.one_of(SHORT_NASTY, PERCENT, st.sampled_from(["..", ".", "v1", ""])), max_size=4).map(
    lambda parts: "/" + "/".join(parts) if parts else ""
)
_PARAM = st.builds(lambda k, v: f"{k}={v}", st.one_of(SHORT_NASTY, PERCENT), st.one_of(SHORT_NASTY, PERCENT))
QUERY = st.one_of(
    st.just(""),
    st.lists(st.one_of(_PARAM, SHORT_NASTY), min_size=1, max_size=3).map(lambda ps: "?" + "&".join(ps)),
)
SCHEME = st.sampled_from(["http://", "https://", "HTTP://", "", "", "ftp://", "http:/", "//", "http:///", "ws://"])
URL = st.builds(
    lambda scheme, user, host, port, path, query, fragment: scheme + user + host + port + path + query + fragment,
    SCHEME,
    USERINFO,
    HOST,
    PORT,
    PATH,
    QUERY,
    st.one_of(st.just(""), st.builds(lambda f: "#" + f, SHORT_NASTY)),
)
URL_VALUE = st.one_of(URL, URL, NASTY, st.text(_any, max_size=40))

NUMBER = st.one_of(
    st.from_regex(r"[ \t]*[+-]?[0-9]{1,25}[ \t\r\n]*", fullmatch=True),
    st.integers(-10, 3000).map(str),
    st.sampled_from(["\u00b2", "\u0661", "\uff15", "1_000", "1e3", "0x10", "inf", "nan", "", " ", "9" * 5000]),
    NASTY,
)

_PG_KEYS = st.sampled_from(
    ["host", "hostaddr", "port", "dbname", "user", "password", "options", "sslmode", "connect_timeout",
     "application_name", "target_session_attrs", "load_balance_hosts", "keepalives", "client_encoding",
     "passfile", "service", "sslrootcert", "bogus", ""]
)  # fmt: skip
_PG_VALUE = st.one_of(
    SHORT_NASTY,
    HOST,
    st.builds(lambda v: "'" + v.replace("'", "\\'") + "'", NASTY),
    st.sampled_from(["127.0.0.1", "/nonexistent/sock", "1,2", "127.0.0.1,::1", "99999999999", "-1", "''", "'", "\\"]),
)
LIBPQ = st.lists(st.builds(lambda k, v: f"{k}={v}", _PG_KEYS, _PG_VALUE), min_size=1, max_size=4).map(" ".join)
PG_URL = st.builds(
    lambda scheme, user, host, port, path, query: scheme + user + host + port + path + query,
    st.sampled_from(["postgresql://", "postgres://", "postgresql:///", "postgresql:", "pg://"]),
    USERINFO,
    st.one_of(HOST, st.just(""), st.just("127.0.0.1,[::1]")),
    PORT,
    PATH,
    st.one_of(QUERY, st.builds(lambda k, v: f"?{k}={v}", _PG_KEYS, _PG_VALUE)),
)
STORE_VALUE = st.one_of(PG_URL, LIBPQ, NASTY)

PATH_SEGMENT = st.one_of(
    st.text(CHAR, min_size=1, max_size=12).filter(lambda s: "/" not in s and s not in (".", "..")),
    st.integers(250, 300).map(lambda n: "n" * n),  # over NAME_MAX
    st.sampled_from(["x", "-", " ", "~", "$HOME", "*", "a:b", "\\", "con", ".hidden"]),
)
RELATIVE_PATH = st.lists(PATH_SEGMENT, min_size=1, max_size=4).map("/".join)
