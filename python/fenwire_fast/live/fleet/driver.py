"""The driver of a fleet: :class:`Fleet`, the one process that places children on the nodes of a
Ray cluster, sends them controls and takes their events from the nodes' actors
(:class:`~fenwire_fast.live.fleet.node.NodeHub`). See :mod:`fenwire_fast.live.fleet`.
"""

from __future__ import annotations

import socket
import time
from collections import deque
from typing import Any

from ..parent.tracing import resolve as resolve_trace
from .child import ChildLost, FleetChild
from .events import FleetEvents
from .hold import FleetHold
from .named import DEFAULT_NAMESPACE, FleetBusy, Ledger, check_name
from .node import NodeHub, remove_if_orphaned
from .node_durable import DurableNodeHub
from .ray_modules import RAY

# Ray is an optional extra: imported by name, so the package type-checks with or without it (typed Any)
ray: Any = RAY.get("ray")
RayActorError: Any = RAY.get("RayActorError")
NodeAffinitySchedulingStrategy: Any = RAY.get("NodeAffinitySchedulingStrategy")


__all__ = ["Fleet", "LOST_ROOT_WAIT", "CONNECT_TIMEOUT"]

#: how long close() waits for a lost actor's last threads to let go of its root (seconds)
LOST_ROOT_WAIT = 5.0
#: how long the fleet waits for the cluster, and for an actor to start or answer a take (seconds)
CONNECT_TIMEOUT = 60.0


class Fleet(FleetHold, FleetEvents):
    """Live children on the nodes of a Ray cluster; see :mod:`fenwire_fast.live.fleet`.

    ``address``: the cluster to join (``ray.init(address=...)``); ``None`` starts a local one (or
    uses the one this process is already connected to). A Ray Client address (``ray://``) is
    refused: the driver must run on a machine of the cluster. ``connect_timeout``: how long to wait
    for the cluster and for an actor to start (seconds, default :data:`CONNECT_TIMEOUT`).
    ``ray_init_kwargs`` go to ``ray.init``. :meth:`close` stops every child and actor; it shuts
    down only a cluster it started.

    ``name`` makes the fleet **named** and durable: its actors are detached named Ray actors in
    ``namespace`` (default ``"fenwire"``), each with a durable hub whose state dir is under
    ``state_root`` on its node (default: ``<tmp>/fenwire-named-fleet-<name>``); the runs outlive
    this driver (:meth:`commit`, :meth:`detach`, :meth:`attach`) and their actor's process (Ray
    restarts it; it takes the runs up again). Raises ``ValueError`` when a fleet of that name
    already exists there (:meth:`attach` takes it up).

    ``forward`` (``{"url": "nats://...", ...}``, the options of
    :class:`~fenwire_fast.forward.Forwarder`; the ``nats`` extra on every node) makes each node's
    actor publish its children's lines to NATS JetStream itself: the lines never reach this driver,
    which places children, sends controls and follows their status (``wait()``, ``children``); a
    child is reported finished once each of its lines is stored or refused.
    :meth:`forwarded` says what each node's forwarder did. A named fleet's nodes forward from the
    moment their actors start, with or without a driver, and commit what the stream stored
    themselves (:meth:`commit` moves nothing); :meth:`attach` takes the fleet's ``forward``."""

    def __init__(
        self,
        address: str | None = None,
        *,
        name: str | None = None,
        namespace: str | None = None,
        state_root: str | None = None,
        connect_timeout: float | None = None,
        forward: dict[str, Any] | None = None,
        **ray_init_kwargs: Any,
    ) -> None:
        if ray is None:
            raise ImportError("fenwire_fast.live.fleet needs Ray: pip install 'fenwire_fast[ray]'")
        attaching = bool(ray_init_kwargs.pop("_attach", False))
        _refuse_client(address)
        self.connect_timeout = CONNECT_TIMEOUT if connect_timeout is None else _seconds(connect_timeout)
        self.name = check_name(name) if name is not None else None
        self.namespace = DEFAULT_NAMESPACE if namespace is None else check_name(namespace)
        self.state_root = state_root
        #: the options of each node's forwarder (``forward=``), or ``None``: the lines come here
        self.forward = _forwarding(forward)
        self._own = False
        if not ray.is_initialized():
            _connect(address, self.connect_timeout, ray_init_kwargs)
            self._own = True
        elif address not in (None, "auto", "local") and ray.get_runtime_context().gcs_address != address:
            raise ValueError(
                f"this process is connected to the Ray cluster at {ray.get_runtime_context().gcs_address}, "
                f"not {address}: ray.shutdown() first, or leave address out"
            )
        self.children: list[FleetChild] = []
        self._held: deque[tuple[FleetChild, Any]] = deque()  # taken from the nodes, not handed over yet
        self._runs: dict[str, FleetChild] = {}
        self._actors: dict[str, Any] = {}
        #: node -> (actor pid, actor root), learnt when the actor starts
        self._where: dict[str, tuple[int, str]] = {}
        self._polls: dict[Any, str] = {}  # outstanding poll ref -> node
        self._lost: dict[str, str] = {}  # node -> why
        self._numbered = 0
        #: Ray calls made by the driver (spawns, controls, polls): for measurements
        self.ray_calls = 0
        self._token = self.new_token()
        self._takeover = False
        self._ledger: Ledger | None = None
        if self.name is None:
            self._remote = ray.remote(num_cpus=0, max_restarts=0, max_concurrency=1000)(NodeHub)
            return
        self._remote = ray.remote(num_cpus=0, max_restarts=-1, max_task_retries=0, max_concurrency=1000)(DurableNodeHub)
        self._ledger = Ledger(RAY["kv"], self.namespace, self.name)
        if not attaching:
            self._found()

    def _found(self) -> None:
        """Record a new named fleet in the cluster (refused when one of that name exists)."""
        from ... import __version__

        assert self._ledger is not None
        if self._ledger.meta() is not None:
            self._forget_ray()
            raise ValueError(
                f"a fleet named {self.name!r} already exists in Ray namespace {self.namespace!r}: "
                "Fleet.attach(...) takes it up"
            )
        self._ledger.put_meta({"version": __version__, "state_root": self.state_root, "forward": self.forward})

    # -- nodes ----------------------------------------------------------------------------------

    # -- children -------------------------------------------------------------------------------

    def spawn(
        self,
        prompt: str | None = None,
        *,
        run: str | None = None,
        node: str | None = None,
        mock: Any = None,
        agent: str | None = None,
        agent_config: dict[str, Any] | None = None,
        timeout: float | None = None,
        deadline: float | None = None,
        trace: Any = None,
        **kwargs: Any,
    ) -> FleetChild:
        """Start a child on ``node`` (default: the least-loaded alive node) and return its handle.
        ``kwargs`` go to :func:`~fenwire_fast.live.parent.spawn.spawn` on the node.

        ``trace`` (``True``, ``False``, or ``None``: on when ``FENWIRE_OTEL=1``; the ``otel``
        extra): the child joins the driver's trace, its ``TRACEPARENT`` being the driver's current
        span (nothing when no span is current). The spans of the run itself are made where its
        hub runs, on the node, when tracing is on there."""
        if run is None:
            self._numbered += 1
            run = f"child-{self._numbered}"
        if run in self._runs:
            raise ValueError(f"run {run!r} is already in this fleet")
        if deadline is None and timeout is not None:
            deadline = time.time() + timeout
        options = _traced(dict(kwargs, mock=mock, agent=agent, agent_config=agent_config, deadline=deadline), trace)
        chosen = node
        while True:
            node = chosen if chosen is not None else self._least_loaded()
            try:
                actor = self._actor(node)
                self.ray_calls += 1
                if self.name is None:
                    pid = ray.get(actor.spawn.remote(prompt, run, options))
                else:
                    pid = ray.get(actor.spawn_held.remote(self._token, prompt, run, options))
                break
            except (RayActorError, ChildLost) as exc:
                self._lose(node, exc)
                if chosen is not None:  # automatic placement tries the next node
                    raise self._gone(node) from None
            except FleetBusy as exc:
                raise FleetBusy(str(exc)) from None
        if self._ledger is not None:
            self._ledger.placed(run, node)
        return self._adopt_child(FleetChild(self, run, node, pid))

    def _send(self, child: FleetChild, type_: str, payload: dict[str, Any] | None) -> int:
        """Send ``child`` a control through its node's actor (one Ray call); returns its ``seq``."""
        if child.node in self._lost:
            raise self._gone(child.node, child.run)
        for _attempt in range(2):
            actor = self._actor(child.node)
            self.ray_calls += 1
            try:
                if self.name is None:
                    seq: int = ray.get(actor.send.remote(child.run, type_, payload))
                else:
                    seq = ray.get(actor.send_held.remote(self._token, child.run, type_, payload))
                return seq
            except RayActorError as exc:
                # a named fleet's actor restarted: take it again and send once more (a control
                # written just before the actor died may then arrive twice, under two seqs)
                if not self._retake(child.node, exc):
                    break
            except FleetBusy as exc:
                raise FleetBusy(str(exc)) from None
        raise self._gone(child.node, child.run)

    # -- events ---------------------------------------------------------------------------------

    def _answer(self, ref: Any, node: str, raw: bool) -> list[Any]:
        """Take one actor's answer and poll it again: ``(child, messages)`` pairs, or with
        ``raw`` ``(child, ScanBatch)`` pairs."""
        del self._polls[ref]
        try:
            answer = ray.get(ref)
        except RayActorError as exc:
            self._retake(node, exc)
            return []
        except FleetBusy as exc:
            raise FleetBusy(str(exc)) from None
        self._poll_actor(node, self._actors[node])
        out: list[Any] = []
        for run, blob, status in answer:
            out.extend(self._runs[run]._take(blob, status, raw))
        return out

    def _poll(self, timeout: float | None, raw: bool) -> list[Any]:
        refs = list(self._polls)
        if not refs:
            return []
        # one answer at a time: another one already in is taken by the next call, at no wait
        ready, _ = ray.wait(refs, num_returns=1, timeout=timeout)
        out: list[Any] = []
        for ref in ready:
            out.extend(self._answer(ref, self._polls[ref], raw))
        return out

    # -- closing --------------------------------------------------------------------------------

    def close(self) -> None:
        """Stop every child and actor; shut Ray down only when this fleet started it. A named
        fleet is removed whole: its runs end, its actors go and, on each node, its state dir."""
        for node, actor in self._actors.items():
            if node in self._lost:
                continue
            try:
                if self.name is None:
                    ray.get(actor.close.remote(), timeout=30)
                else:
                    ray.get(actor.close_held.remote(self._token), timeout=30)
            except FleetBusy:
                raise
            except Exception:  # noqa: BLE001 - a lost actor took its children with it
                pass
            ray.kill(actor, no_restart=True)
        for child in self.children:
            child._close()
        self._held.clear()
        self._actors.clear()
        self._polls.clear()
        if self._ledger is not None:
            self._ledger.clear()
        # the roots of lost actors, where they are on this host (a local cluster); a root on
        # another host goes with the next fleet actor's sweep there
        for node in self._lost:
            if node in self._where and self.name is None:
                remove_if_orphaned(self._where[node][1], wait=LOST_ROOT_WAIT)
        self._forget_ray()

    def _forget_ray(self) -> None:
        """Shut Ray down when this fleet started it."""
        if self._own:
            ray.shutdown()
            self._own = False

    def __enter__(self) -> Fleet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _traced(options: dict[str, Any], trace: Any) -> dict[str, Any]:
    """``options`` with, when ``trace`` resolves on, the driver's current span as the child's
    ``TRACEPARENT`` (in its ``env``; nothing when no span is current)."""
    if resolve_trace(trace) is not None:
        from ..parent.otel import current_traceparent

        context = current_traceparent()
        if context:
            options["env"] = {**(options.get("env") or {}), **context}
    return options


def _seconds(value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"connect_timeout must be a positive number of seconds, not {value!r}")
    return float(value)


def _forwarding(forward: dict[str, Any] | None) -> dict[str, Any] | None:
    """``forward=`` checked (see :func:`fenwire_fast.forward.names.check_forward`)."""
    if forward is None:
        return None
    from ...forward.names import check_forward

    return check_forward(forward)


def _refuse_client(address: str | None) -> None:
    """A Ray Client address (``ray://``) is refused: the driver's long polls, its actors' detached
    lifetimes and its key-value records need a driver on a machine of the cluster."""
    if address is not None and address.startswith("ray://"):
        raise ValueError(
            f"a fleet cannot be driven through Ray Client ({address}): run the driver on a machine "
            "of the cluster, with the head's HOST:PORT or 'auto'"
        )


def _connect(address: str | None, timeout: float, ray_init_kwargs: dict[str, Any]) -> None:
    """``ray.init`` the cluster at ``address``, failing within ``timeout`` when nothing answers there."""
    _refuse_client(address)
    if address not in (None, "auto", "local"):
        host, _, port = address.rpartition(":")
        try:
            with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout):
                pass
        except (OSError, ValueError) as exc:
            raise ConnectionError(f"no Ray cluster answers at {address} within {timeout:g} s: {exc}") from None
    ray.init(address=address, **ray_init_kwargs)
