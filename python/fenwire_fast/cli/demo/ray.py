"""``fenwire demo --ray``: the demo's children on the nodes of a Ray cluster.

:func:`fleet_source` gives a :class:`FleetSource`, the demo's children run through a
:class:`~fenwire_fast.live.fleet.Fleet` (each placed on the least-loaded node), on a local
``ray.cluster_utils.Cluster`` of ``nodes`` nodes (a head with no CPUs and ``nodes - 1`` more, each
with a small object store) started here and shut down at the end, or on the cluster at
``address``, joined within ``connect_timeout`` seconds and left running. What Ray does on its own
and the demo does not want is kept out: its SIGTERM handlers (the command's, which unwinds, is put
back), its notices below WARNING, a retry for minutes at an address where nothing listens, and the
address file of a cluster that was there before, which a local cluster's shutdown removes.
"""

from __future__ import annotations

import importlib
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, Any

from .report import Cluster

if TYPE_CHECKING:
    from ...live.child.mock_agent import MockConfig
    from ...live.fleet import FleetChild

__all__ = ["DemoSetupError", "FleetSource", "fleet_source", "OBJECT_STORE_BYTES"]

#: the object store of each node of the local cluster ``--ray`` starts (bytes; Ray's least is 75 MiB)
OBJECT_STORE_BYTES = 100 * 1024 * 1024


class DemoSetupError(RuntimeError):
    """The demo could not start (no Ray, or a cluster that cannot be joined): one line, said as is."""


class FleetSource:
    """The demo's children on the nodes of a Ray cluster, through a :class:`~fenwire_fast.live.fleet.Fleet`."""

    def __init__(
        self,
        fleet: Any,
        *,
        head: str | None = None,
        joined: str | None = None,
        setup_seconds: float = 0.0,
        acp: Sequence[str] | None = None,
    ) -> None:
        self.fleet = fleet
        #: the ACP agent's command the children run (``None``: the mock agent)
        self.acp = list(acp) if acp is not None else None
        #: the head node's id, when the demo started the cluster
        self.head = head
        #: the address of the cluster joined (``None``: a local cluster the demo started)
        self.joined = joined
        #: how long starting or joining the cluster took
        self.setup_seconds = setup_seconds
        self._ready: list[Any] = []  # answers taken while sleeping, handed over by the next poll
        from ...live.fleet import ChildLost

        self.lost: tuple[type[BaseException], ...] = (ChildLost,)

    def spawn(self, prompt: str, mock: MockConfig) -> FleetChild:
        """Spawn a child with ``prompt`` on the least-loaded node, on the mock with ``mock`` or on the ACP agent."""
        if not self.fleet.nodes():
            raise DemoSetupError("the Ray cluster has no alive node to run children on")
        child: FleetChild = (
            self.fleet.spawn(prompt, mock=mock) if self.acp is None else self.fleet.spawn(prompt, acp=self.acp)
        )
        return child

    def poll(self) -> list[tuple[FleetChild, dict[str, Any]]]:
        """The nodes' answers in so far: ``(child, event)`` pairs."""
        batches, self._ready = self._ready, []
        batches.extend(self.fleet.poll_batches(0.0))
        return [(child, event) for child, events in batches for event in events]

    def sleep(self, timeout: float) -> None:
        """Wait until a node's answer is in (it is kept for :meth:`poll`), at most ``timeout`` seconds."""
        self._ready.extend(self.fleet.poll_batches(timeout))

    def cluster(self) -> Cluster:
        """The cluster, as the summary says it (its nodes counted now)."""
        return Cluster(len(self.fleet.nodes()), self.head, self.joined, self.setup_seconds)

    @property
    def finished(self) -> bool:
        """Whether every child has finished."""
        return bool(self.fleet.finished)


def _import_ray() -> Any:
    try:
        return importlib.import_module("ray")
    except ImportError:
        raise DemoSetupError("--ray needs Ray: pip install 'fenwire_fast[ray]'") from None


def _worker_env() -> dict[str, str]:
    """What the local cluster's nodes need in their environment so that their workers import this
    fenwire_fast (the one running here, even from a source tree)."""
    from ...live.parent.spawn import _PACKAGE_ROOT, _on_default_path

    if _on_default_path(_PACKAGE_ROOT):
        return {}
    old = os.environ.get("PYTHONPATH")
    return {"PYTHONPATH": _PACKAGE_ROOT + (os.pathsep + old if old else "")}


class _NoSigtermNotice(logging.Filter):
    """Ray says that it could not set its SIGTERM handler outside the main thread: the demo keeps
    its own (which unwinds, so every child is stopped), so that notice is dropped."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "SIGTERM handler is not set" not in record.getMessage()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _reachable(address: str, timeout: float) -> None:
    """Fail at once when nothing listens at a ``host:port`` address (Ray would retry for minutes)."""
    where = address.split("://", 1)[-1]
    host, sep, port = where.rpartition(":")
    if not sep or not port.isdigit() or not host:
        return  # "auto", "local", or a form Ray reads itself
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=min(timeout, 5.0)).close()
    except OSError as exc:
        why = exc.strerror or _first_line(exc)
        raise DemoSetupError(f"cannot reach a Ray cluster at {address}: {why}") from None


def _connect(ray_module: Any, address: str, timeout: float) -> None:
    """``ray.init(address)``, given up after ``timeout`` seconds (Ray itself retries for minutes).

    It runs in a thread so that the wait is bounded; a connection that did not come in time is
    left to that thread (a daemon: it does not hold the process)."""
    if ray_module.is_initialized():
        raise DemoSetupError("Ray is already initialized in this process; the demo connects by itself")
    _reachable(address, timeout)
    failure: list[BaseException] = []
    done = threading.Event()

    def connect() -> None:
        try:
            ray_module.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
        except BaseException as exc:  # noqa: BLE001 - said on the way out, as one line
            failure.append(exc)
        finally:
            done.set()

    notice = _NoSigtermNotice()
    ray_logger = logging.getLogger("ray._private.worker")
    ray_logger.addFilter(notice)
    try:
        threading.Thread(target=connect, name="fenwire-demo-ray-init", daemon=True).start()
        if not done.wait(timeout):
            raise DemoSetupError(f"no Ray cluster answered at {address} within {timeout:g} s")
    finally:
        ray_logger.removeFilter(notice)
    if failure:
        raise DemoSetupError(f"cannot join the Ray cluster at {address}: {_first_line(failure[0])}")


@contextmanager
def _sigterm_kept() -> Iterator[Callable[[], None]]:
    """Ray puts in its own SIGTERM handlers: a head node started in this process one that drains
    the node (30 s) and exits, the core one that aborts the process where it stands; either way no
    actor closes its hub, so children are killed without their files removed. The handler this
    process had (the command's unwinds, so the fleet is closed and the cluster shut down) is put
    back each time the yielded function is called, and on the way out."""
    handler = signal.getsignal(signal.SIGTERM)

    def keep() -> None:
        if handler is not None and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, handler)

    try:
        yield keep
    finally:
        keep()


@contextmanager
def _quiet_ray() -> Iterator[None]:
    """Ray's own notices (a cluster starting, an address file overwritten) below WARNING are not shown."""
    logger = logging.getLogger("ray")
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)


@contextmanager
def _address_file_kept() -> Iterator[None]:
    """A local cluster writes its address where ``ray.init()`` looks for one, and its shutdown
    removes that file: the address of a cluster that was there before is put back."""
    try:
        path: str | None = importlib.import_module("ray._common.utils").get_ray_address_file(None)
    except Exception:  # noqa: BLE001 - a Ray without that file: nothing to keep
        path = None
    saved: str | None = None
    if path is not None:
        try:
            with open(path, encoding="utf-8") as handle:
                saved = handle.read()
        except OSError:
            saved = None
    try:
        yield
    finally:
        if path is not None and saved is not None and not os.path.exists(path):
            try:
                with open(path, "w", encoding="utf-8") as handle:
                    handle.write(saved)
            except OSError:
                pass


@contextmanager
def fleet_source(nodes: int, address: str | None, connect_timeout: float, out: IO[str]) -> Iterator[FleetSource]:
    """A fleet on a local cluster of ``nodes`` nodes (started here, shut down on the way out), or on
    the cluster at ``address`` (joined, left running)."""
    ray_module = _import_ray()
    from ...live.fleet import Fleet

    with _quiet_ray(), _sigterm_kept() as keep:
        started = time.monotonic()
        if address is not None:
            _connect(ray_module, address, connect_timeout)
            keep()
            with _joined(ray_module, Fleet) as fleet:
                yield FleetSource(fleet, joined=address, setup_seconds=time.monotonic() - started)
            return
        out.write(f"fenwire demo: starting a local Ray cluster of {nodes} node{'s' if nodes != 1 else ''}\n")
        out.flush()
        with _address_file_kept():
            # no node yet: whatever is started below is shut down on the way out
            cluster: Any = importlib.import_module("ray.cluster_utils").Cluster()
            try:
                common = {"object_store_memory": OBJECT_STORE_BYTES, "env_vars": _worker_env()}
                cluster.add_node(num_cpus=0, include_dashboard=False, **common)  # the head
                keep()
                for _ in range(nodes - 1):
                    cluster.add_node(num_cpus=1, **common)
                    keep()
                cluster.wait_for_nodes()
                _connect(ray_module, cluster.address, connect_timeout)
                keep()
                with _joined(ray_module, Fleet) as fleet:
                    head = cluster.head_node.node_id
                    yield FleetSource(fleet, head=head, setup_seconds=time.monotonic() - started)
            finally:
                cluster.shutdown()


@contextmanager
def _joined(ray_module: Any, fleet_class: Any) -> Iterator[Any]:
    """A fleet on the cluster this process is connected to; closed, then disconnected, on the way out."""
    try:
        fleet = fleet_class()  # Ray is initialized: the fleet joins and leaves the shutdown to the demo
        try:
            yield fleet
        finally:
            fleet.close()
    finally:
        ray_module.shutdown()
