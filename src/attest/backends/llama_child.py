"""The child process that holds the `local` backend's llama.cpp server (xllamacpp).

`python -m attest.backends.llama_child '{"model": ..., "port": ..., "threads": ..., "slots": ..., "n_ctx": ...}'`
starts the server and serves until its stdin closes (the parent exited or stopped it)
or it is sent SIGTERM/SIGKILL. It leaves with `os._exit`: xllamacpp's `Server`
destructor joins a loop thread that nothing tells to stop, so letting Python
finalise the handle would hang for ever. In its own process that can never hang the
parent: the parent kills this process, whatever it is doing.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from typing import Any

__all__ = ["main"]


def _params(config: dict[str, Any]) -> Any:
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = config["model"]
    params.n_parallel = int(config["slots"])
    params.n_ctx = int(config["n_ctx"]) * int(config["slots"])  # n_ctx is shared by the slots
    params.cpuparams.n_threads = int(config["threads"])
    params.cpuparams_batch.n_threads = int(config["threads"])
    params.cache_prompt = True  # a slot keeps its last prompt: a shared system prompt is not evaluated again
    params.port = int(config["port"])
    params.hostnames = ["127.0.0.1"]
    params.verbosity = -1
    return params


def main(argv: list[str]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when this process ends
    config = json.loads(argv[0])
    import xllamacpp

    _server = xllamacpp.Server(_params(config))  # serves on its own threads; kept alive until the exit
    try:
        while sys.stdin.buffer.read(1 << 16):  # blocks until the parent closes the pipe or dies
            pass
    finally:
        os._exit(0)  # skips the server's destructor and its join


if __name__ == "__main__":
    main(sys.argv[1:])
