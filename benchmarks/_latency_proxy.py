"""A loopback TCP proxy that adds round-trip time, for measuring the team store across a network.

`LatencyProxy(target_unix_socket, rtt_s)` listens on a free 127.0.0.1 port and forwards each
connection to PostgreSQL's unix socket, holding every chunk half the round-trip time in each
direction (order kept; bandwidth not limited), so one request and its answer take `rtt_s`
longer, as on a network link with that latency. It runs in a thread of the benchmark's own
process, talks only to 127.0.0.1 and the socket given, and counts the connections it served.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from contextlib import suppress

__all__ = ["LatencyProxy"]

_CHUNK = 1 << 16


class LatencyProxy:
    """127.0.0.1:`port` -> `target` (a unix socket path), each direction delayed by `rtt_s` / 2."""

    def __init__(self, target: str, rtt_s: float) -> None:
        self.target, self.half = target, rtt_s / 2
        self.connections = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._server: asyncio.base_events.Server | None = None
        self.port = 0
        self._thread = threading.Thread(target=self._serve, daemon=True, name="latency-proxy")

    def __enter__(self) -> LatencyProxy:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the latency proxy did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    def url(self, db: str, user: str = "postgres") -> str:
        return f"postgresql://{user}@127.0.0.1:{self.port}/{db}"

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(asyncio.start_server(self._client, "127.0.0.1", 0))
        self.port = int(self._server.sockets[0].getsockname()[1])
        self._ready.set()
        self._loop.run_forever()
        self._server.close()
        with suppress(Exception):
            self._loop.run_until_complete(self._server.wait_closed())
        self._loop.close()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        _nodelay(writer)
        try:
            up_reader, up_writer = await asyncio.open_unix_connection(self.target)
        except OSError:
            writer.close()
            return
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer), return_exceptions=True)

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Copy `reader` to `writer`, each chunk delivered `half` seconds after it arrived, in order."""
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def deliver() -> None:
            while True:
                due, data = await queue.get()
                if not data:
                    break
                await asyncio.sleep(max(0.0, due - time.monotonic()))
                writer.write(data)
                await writer.drain()

        sender = asyncio.ensure_future(deliver())
        try:
            while data := await reader.read(_CHUNK):
                queue.put_nowait((time.monotonic() + self.half, data))
        except (ConnectionError, OSError):
            pass
        finally:
            queue.put_nowait((0.0, b""))
            with suppress(Exception):
                await sender
            with suppress(Exception):
                writer.close()


def _nodelay(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
