"""`python -m snakemake ARGS` for the tests, without starting Python and importing Snakemake for every call.

A workflow test process makes dozens of `snakemake` calls, most of them dry runs, and each new process
spent more on starting than on the workflow: a dry run of a finished tiny run took 2.2-2.4 s, of which
~1.3 s importing Snakemake and its executor plugins (the SLURM plugin imports pandas), before it read
the Snakefile (2026-12-04, 2 cores). Here one server process per test process imports that once
(PRELOAD), then forks a child per call; the child takes the caller's working directory, environment,
arguments and exit status, writes its stdout and stderr to files, and runs what snakemake/__main__.py
runs: snakemake.cli.main() on sys.argv. It leaves the server's loop by SystemExit, so it ends as a
`snakemake` process ends (atexit handlers, flushed output). The same dry run took 0.9 s.

The library is never preloaded: a Snakefile imports it from its own checkout, which may not be this
one. Tests whose subject is the process itself (an interrupt, a second invocation meeting the lock,
--lint, the catalog's command, the module import) start `python -m snakemake` as a user does.

    python tests/snakemake_cli.py   # the server: one JSON request a line on stdin, JSON replies on stdout
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

# What every `snakemake` process imports before it reads a Snakefile: Snakemake with its executor plugins,
# and the packages this workflow's parse-time checks import.
PRELOAD = ("snakemake.cli", "snakemake.api", "snakemake_executor_plugin_slurm", "jsonschema", "pydantic", "pandas")


def serve() -> None:
    """The server: import PRELOAD, then for each request line fork a child that runs the CLI; reply with its
    pid, then its exit status (negative: the signal that ended it, as subprocess reports it)."""
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request)  # raises SystemExit: the child never returns to this loop
        _reply({"pid": pid})
        _reply({"returncode": os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])})


def _child(request: dict) -> None:
    import snakemake.cli

    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for descriptor, path, flags in (
        (0, os.devnull, os.O_RDONLY),
        (1, request["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
        (2, request["err"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
    ):
        opened = os.open(path, flags)
        os.dup2(opened, descriptor)
        os.close(opened)
    sys.argv = [str(Path(snakemake.cli.__file__).with_name("__main__.py")), *request["argv"]]
    snakemake.cli.main()  # ends in sys.exit(0 or 1)
    raise SystemExit(0)


def _reply(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


class _Server:
    """The client's end: the server process, one call at a time."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve())],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        self.lock = threading.Lock()

    def read(self, timeout: float | None) -> dict | None:
        """The next reply, or None when `timeout` seconds pass first."""
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        if not ready:
            return None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the snakemake CLI server ended (exit status {self.process.wait()})")
        return json.loads(line)

    def run(self, argv: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
        args = command(argv)
        with self.lock, tempfile.TemporaryDirectory(prefix="snakemake-cli-") as folder:
            out, err = Path(folder, "stdout"), Path(folder, "stderr")
            request = {"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ), "out": str(out), "err": str(err)}
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
            pid = self.read(None)["pid"]
            reply = self.read(timeout)
            if reply is None:
                os.kill(pid, signal.SIGKILL)
                self.read(None)
                raise subprocess.TimeoutExpired(args, timeout)
            stdout, stderr = (path.read_text(errors="replace") if path.exists() else "" for path in (out, err))
            return subprocess.CompletedProcess(args, reply["returncode"], stdout, stderr)


_server: _Server | None = None


def command(argv: list[str]) -> list[str]:
    """The `snakemake` process a user starts: `python -m snakemake *argv` with this Python."""
    return [sys.executable, "-m", "snakemake", *argv]


def run(argv: list[str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """What `subprocess.run(command(argv), capture_output=True, text=True, timeout=timeout)` returns, in this
    process's working directory and environment."""
    global _server
    if _server is None or _server.process.poll() is not None:
        _server = _Server()
    return _server.run(argv, timeout)


if __name__ == "__main__":
    serve()
