"""A server's base URL, split into what may be shown and the credentials it carried.

`http://user:KEY@host:8000/v1?api_key=K2` becomes an `Endpoint` whose `url` is
`http://host:8000/v1` (safe to print in any message) and whose `auth` (sent as HTTP
Basic auth) and `params` (sent as the query string) are never shown: `secrets`
lists every form they could be printed in, for `redact`.
"""

from __future__ import annotations

import base64
import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import SplitResult, parse_qsl, unquote, urlsplit, urlunsplit

from attest.config import checked
from attest.errors import ConfigError

__all__ = ["REDACTED", "Endpoint", "check_api_key", "host_problem", "redact"]

REDACTED = "[redacted]"
_MIN_SECRET = 4  # shorter strings cannot be masked without mangling the message around them


@dataclass(frozen=True)
class Endpoint:
    """`url` (scheme://host:port/path, no userinfo, no query) plus the credentials, which repr never shows."""

    url: str
    auth: tuple[str, str] | None = field(default=None, repr=False)
    params: tuple[tuple[str, str], ...] = field(default=(), repr=False)

    @classmethod
    def parse(cls, raw: str, variable: str = "the server URL", valid: str = "use http://host:port") -> Endpoint:
        """Split `raw` and build the request a backend will send to it, as httpx and the socket layer will;
        a URL that cannot be used is one ConfigError naming `variable` (but not the URL's secrets)."""
        return checked(variable, valid, lambda: cls._parse(raw, variable))

    @classmethod
    def _parse(cls, raw: str, variable: str) -> Endpoint:
        parts = _split(raw.strip(), variable)
        netloc = parts.netloc.rpartition("@")[2]
        auth = (unquote(parts.username), unquote(parts.password or "")) if parts.username is not None else None
        params = tuple(parse_qsl(parts.query, keep_blank_values=True))
        endpoint = cls(urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", "")), auth, params)
        _rehearse(endpoint)
        return endpoint

    def shown(self, path: str = "") -> str:
        """The URL of `path` on this server as messages show it: query values masked."""
        query = "&".join(f"{name}=***" for name, _ in self.params)
        return f"{self.url}{path}" + (f"?{query}" if query else "")

    @property
    def secrets(self) -> tuple[str, ...]:
        """Every credential this endpoint holds, in each form it could be printed in."""
        found: list[str] = [value for _, value in self.params]
        if self.auth is not None:
            user, password = self.auth
            found += [password, _basic(user, password)] if password else [user, _basic(user, "")]
        return tuple(s for s in found if len(s) >= _MIN_SECRET)


def redact(text: str, secrets: Iterable[str]) -> str:
    """`text` with every secret (and its repr-escaped form) replaced by `[redacted]`, longest first."""
    forms = {form for s in secrets for form in (s, repr(s)[1:-1], s.strip()) if len(form) >= _MIN_SECRET}
    for form in sorted(forms, key=len, reverse=True):
        text = text.replace(form, REDACTED)
    return text


def check_api_key(key: str | None, variable: str = "ATTEST_OPENAI_API_KEY") -> str | None:
    """The key with surrounding whitespace (a CRLF .env file's `\\r`) removed, or ConfigError without showing it."""
    if key is None or not key.strip():
        return None
    stripped = key.strip()
    if not all("!" <= ch <= "~" for ch in stripped):
        raise ConfigError(
            f"{variable} holds a space, control or non-ASCII character inside it ({len(stripped)} characters): "
            "an API key is printable ASCII; check the file or shell that sets it"
        )
    return stripped


def _rehearse(endpoint: Endpoint) -> None:
    """Do now what sending to `endpoint` will do with it, so whatever refuses it refuses it here.

    httpx builds the URL and its Host header (IDNA-decoding an `xn--` label), quotes the
    query and encodes Basic auth; the socket layer IDNA-encodes the host for the resolver;
    the backend computes every printed form of the credentials.
    """
    import httpx

    request = httpx.Request("POST", endpoint.url + "/api/chat", params=list(endpoint.params))
    request.url.raw_host.decode("ascii").encode("idna")
    if endpoint.auth is not None:
        httpx.BasicAuth(*endpoint.auth)  # builds its header at once
    endpoint.secrets  # noqa: B018 -- encodes the credentials as Basic auth does, to find each printed form


def _split(raw: str, variable: str) -> SplitResult:
    try:
        parts = urlsplit(raw)
        parts.port  # noqa: B018 -- raises ValueError for a port that is not a number in range
    except ValueError as exc:
        raise ConfigError(f"{variable} is not a usable URL ({_reason(exc)}): use http://host:port") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"{variable} is not a usable URL (it needs http:// or https:// and a host): use http://host:port"
        )
    problem = host_problem(parts)
    if problem:
        raise ConfigError(f"{variable} is not a usable URL ({problem}): use http://host:port")
    return parts


_LABEL = re.compile(r"(?!-)[A-Za-z0-9_-]{1,63}(?<!-)")


def host_problem(parts: SplitResult) -> str:
    """What is wrong with the URL's host and port as written, or ''. urlsplit lets through what an HTTP
    client refuses later (a space in the host, text after an IPv6 bracket): checked here, in one line."""
    host = parts.netloc.rpartition("@")[2]
    port = f":{parts.port}" if parts.port is not None else ""
    if host.startswith("["):
        literal, _, rest = host[1:].partition("]")
        try:
            ipaddress.IPv6Address(literal)
        except ValueError:
            return "a malformed IPv6 address: write it in brackets, e.g. http://[::1]:8080"
        return "" if rest in ("", port, ":") else "text after the IPv6 address's bracket"
    name = host[: len(host) - len(port)] if port and host.endswith(port) else host.rstrip(":")
    if ":" in name or not all(_LABEL.fullmatch(label) for label in name.rstrip(".").split(".")):
        return "the host is not a host name or IP address (letters, digits, '-' and '.')"
    return ""


def _reason(exc: ValueError) -> str:
    """What urlsplit objected to, without repeating the URL (which may hold a credential)."""
    text = str(exc).lower()
    if "port" in text:
        return "the port is not a number from 0 to 65535"
    if "ipv6" in text or "bracket" in text:
        return "a malformed IPv6 address: write it in brackets, e.g. http://[::1]:8080"
    return "malformed"


def _basic(user: str, password: str) -> str:
    return base64.b64encode(f"{user}:{password}".encode()).decode()
