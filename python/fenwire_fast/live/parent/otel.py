"""OpenTelemetry traces and metrics of live runs (the ``otel`` extra).

With :mod:`~fenwire_fast.live.parent.otel_spans` (the span tree below a run's span), the only
module of the package that imports ``opentelemetry``. It is loaded when tracing is asked
for (``Hub(trace=True)``, ``spawn(..., trace=True)`` or ``FENWIRE_OTEL=1``, see
:mod:`~fenwire_fast.live.parent.tracing`) and uses the global tracer and meter providers unless a
:class:`Telemetry` is given its own.

A :class:`RunTrace` per run builds the spans from the events the parent reads anyway, with no I/O
of its own:

- ``fenwire.run``, from the spawn to the end of the run (or the parent letting go of it), its
  context handed to the child as ``TRACEPARENT`` / ``TRACESTATE``;
- ``fenwire.turn``, from ``turn-started`` to ``turn-complete``;
- ``fenwire.llm`` (``llm-start`` to ``llm-end``) and ``fenwire.tool`` (``tool-call`` to its
  ``tool-result``), children of their turn;
- span events on the run span for each control sent (``fenwire.control``) and each ack
  (``fenwire.control.ack``).

Every batch of events is counted by type at C speed (a ``set`` of its types; a ``Counter`` when
there are several); only a batch holding a type that opens or closes a span or acknowledges a
control is walked event by event.
The counts go to the meters when the run ends and before that at most once a second (the clock
is looked at every 16th batch). Everything a child
wrote is checked and bounded before it becomes an attribute, and nothing here raises into the
parent: a failure is swallowed and tracing of that run stops.

The run traced is known only through what tracing reads of it (:class:`Traced`), so this module
imports neither the child nor its spawn.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from operator import itemgetter
from typing import TYPE_CHECKING, Any, Protocol, cast

from opentelemetry import context as otel_context
from opentelemetry import metrics, trace
from opentelemetry.trace import Span, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from ... import EVENT_TYPE_ORDER, decode, utf8_prefix
from .otel_spans import MAX_OPEN_TOOLS, MAX_TEXT, MAX_USAGE_FIELDS, SPAN_TYPES, RunSpans
from .otel_spans import text as _text

if TYPE_CHECKING:
    from ... import ScanBatch

__all__ = [
    "Telemetry",
    "RunTrace",
    "current_traceparent",
    "SPAN_TYPES",
    "MAX_TEXT",
    "MAX_OPEN_TOOLS",
    "FLUSH_INTERVAL",
    "FLUSH_EVERY",
    "MAX_USAGE_FIELDS",
    "Traced",
    "TracedChannel",
]

_SPAN_CODES = frozenset(i for i, name in enumerate(EVENT_TYPE_ORDER) if name in SPAN_TYPES)
#: seconds between two additions of a running run's counts to the meters
FLUSH_INTERVAL = 1.0
#: batches between two looks at the clock for that
FLUSH_EVERY = 16
_ERROR_STATUSES = frozenset({"failed", "timed-out"})
_STATUSES = frozenset({"starting", "ready", "running", "finalizing", "done", "cancelled", "failed", "timed-out"})
_PROPAGATOR = TraceContextTextMapPropagator()
_type_of = itemgetter("type")


def _version() -> str:
    from ... import __version__

    return str(__version__)


class TracedChannel(Protocol):
    """What tracing reads of a run's channel (a :class:`~fenwire_fast.live.parent.channel.Channel`)."""

    @property
    def offset(self) -> int:
        """Bytes of the event file read."""

    @property
    def events(self) -> int:
        """Events delivered."""

    @property
    def error_counts(self) -> Counter[str]:
        """Rejected lines, by code."""


class Traced(Protocol):
    """What tracing reads of a run (a :class:`~fenwire_fast.live.parent.live_child.Traced`)."""

    @property
    def channel(self) -> TracedChannel:
        """The run's channel."""

    @property
    def status(self) -> str:
        """The run's status."""

    @property
    def finished(self) -> bool:
        """The run has ended and all it wrote was read."""

    @property
    def error(self) -> str | None:
        """Why the run did not end well."""


class Telemetry:
    """The tracer and the meters runs report to.

    ``Telemetry()`` uses the global providers (what the application installed with the
    OpenTelemetry SDK; without an SDK every call does nothing). Give ``tracer_provider`` /
    ``meter_provider`` to report elsewhere, e.g. ``Hub(trace=Telemetry(tracer_provider=tp))``.

    Meters: ``fenwire.events`` (by ``fenwire.event.type``), ``fenwire.bytes``,
    ``fenwire.rejections`` (by ``fenwire.rejection.code``), ``fenwire.runs`` (by
    ``fenwire.run.status``), and the histograms ``fenwire.run.duration`` and
    ``fenwire.turn.duration`` (seconds)."""

    def __init__(self, tracer_provider: Any = None, meter_provider: Any = None) -> None:
        version = _version()
        self.tracer = trace.get_tracer("fenwire_fast", version, tracer_provider=tracer_provider)
        meter = metrics.get_meter("fenwire_fast", version, meter_provider=meter_provider)
        self.events = meter.create_counter("fenwire.events", unit="{event}", description="events received, by type")
        self.bytes = meter.create_counter("fenwire.bytes", unit="By", description="bytes of event files read")
        self.rejections = meter.create_counter(
            "fenwire.rejections", unit="{line}", description="event lines rejected, by code"
        )
        self.runs = meter.create_counter("fenwire.runs", unit="{run}", description="runs ended, by final status")
        self.run_duration = meter.create_histogram(
            "fenwire.run.duration", unit="s", description="from the spawn to the end of a run"
        )
        self.turn_duration = meter.create_histogram(
            "fenwire.turn.duration", unit="s", description="from turn-started to turn-complete, as read"
        )

    def start_run(self, run: str, what: Mapping[str, str], env: Mapping[str, str] | None = None) -> RunTrace | None:
        """Begin a run's span (see :class:`RunTrace`); ``None`` when that fails (never raises).

        ``what``: attributes saying what runs (``fenwire.run.command``, ``.agent`` or ``.acp``).
        ``env``: the variables given to the child; a ``TRACEPARENT`` there is the run span's parent
        (else the current span is)."""
        try:
            return RunTrace(self, run, what, env)
        except Exception:  # noqa: BLE001 - tracing must never break a spawn
            return None


class RunTrace:
    """One run's spans and its counts, fed by the parent's reads (see the module docstring).

    :meth:`observe` takes each delivered batch (dicts or raw), :meth:`control` each control
    sent, :meth:`finish` the end of the run. :attr:`env` is ``TRACEPARENT`` (and ``TRACESTATE``) for
    the child. Nothing here raises: a failure ends this run's tracing (:attr:`broken` says why)."""

    def __init__(self, telemetry: Telemetry, run: str, what: Mapping[str, str], env: Mapping[str, str] | None) -> None:
        self.telemetry = telemetry
        self.broken: str | None = None
        self.started = time.monotonic()
        parent = None
        if env and env.get("TRACEPARENT"):
            given = {"traceparent": env["TRACEPARENT"]}
            if env.get("TRACESTATE"):
                given["tracestate"] = env["TRACESTATE"]
            parent = _PROPAGATOR.extract(given)
        attributes: dict[str, Any] = {"fenwire.run.id": _text(run) or ""}
        attributes.update({k: _text(v) or "" for k, v in what.items()})
        self.span: Span = telemetry.tracer.start_span("fenwire.run", context=parent, attributes=attributes)
        carrier: dict[str, str] = {}
        _PROPAGATOR.inject(carrier, context=trace.set_span_in_context(self.span))
        #: the child's ``TRACEPARENT`` / ``TRACESTATE``
        self.env = {name.upper(): value for name, value in carrier.items()}
        #: the turn, model-call and tool-call spans below the run's
        self.spans = RunSpans(telemetry.tracer, self.span, telemetry.turn_duration)
        self._counts: Counter[str] = Counter()
        self._code_counts: Counter[int] = Counter()
        self._flushed_at = self.started
        self._bytes_flushed = 0
        self._errors_flushed = 0
        self._errors_counted: Counter[str] = Counter()
        self._done = False
        self._off = False  # done, or broken: no more events are looked at
        self._batches = 0

    @property
    def turns(self) -> int:
        """Turns begun."""
        return self.spans.turns

    @property
    def traceparent(self) -> str | None:
        """The W3C ``traceparent`` the child gets."""
        return self.env.get("TRACEPARENT")

    # -- feeding --------------------------------------------------------------------------------

    def observe(
        self, batch: Sequence[dict[str, Any]] | ScanBatch, child: Traced | None = None, *, raw: bool = False
    ) -> None:
        """A delivered batch (dicts, or with ``raw`` a :class:`ScanBatch`): its events counted by type
        and the ones that open or close a span followed; a raw batch's types come from its column and
        only its span lines are decoded. Never raises: a failure turns tracing off for the run."""
        if self._off:
            return
        try:
            if raw:
                self._take_raw(cast("ScanBatch", batch))
            else:
                self._take_dicts(cast("Sequence[dict[str, Any]]", batch))
            self._batches += 1
            if not self._batches % FLUSH_EVERY and child is not None:
                self._maybe_flush(child)
        except Exception as exc:  # noqa: BLE001 - never raise in the parent
            self._break(exc)

    def observe_raw(self, batch: ScanBatch, child: Traced | None = None) -> None:
        """:meth:`observe` of a raw batch."""
        self.observe(batch, child, raw=True)

    def _take_dicts(self, messages: Sequence[dict[str, Any]]) -> None:
        types = set(map(_type_of, messages))  # a set costs a third of a Counter per event
        if len(types) == 1:  # the common batch: deltas only
            only = types.pop()
            self._counts[only] += len(messages)
            walk = only in SPAN_TYPES
        else:
            self._counts.update(map(_type_of, messages))
            walk = not SPAN_TYPES.isdisjoint(types)
        if walk:
            for message in messages:
                if message["type"] in SPAN_TYPES:
                    self.spans.on(message)

    def _take_raw(self, batch: ScanBatch) -> None:
        types = batch.types
        codes = Counter(types)
        self._code_counts.update(codes)
        if not _SPAN_CODES.isdisjoint(codes):
            for i, code in enumerate(types):
                if code in _SPAN_CODES:
                    message, _ = decode(batch.line(i), "event")
                    if message is not None:
                        self.spans.on(message)

    def _maybe_flush(self, child: Traced) -> None:
        if time.monotonic() - self._flushed_at >= FLUSH_INTERVAL:
            self._flush(child)

    def control(self, seq: int, type_: str) -> None:
        """A control was sent: a ``fenwire.control`` event on the run span."""
        if self._done or self.broken is not None:
            return
        try:
            self.span.add_event("fenwire.control", {"fenwire.control.type": type_, "fenwire.control.seq": seq})
        except Exception as exc:  # noqa: BLE001
            self._break(exc)

    def _flush(self, child: Traced) -> None:
        """Add the counts since the last flush to the meters."""
        self._flushed_at = time.monotonic()
        tel = self.telemetry
        counts = self._counts
        if self._code_counts:
            for code, n in self._code_counts.items():
                counts[EVENT_TYPE_ORDER[code] if code < len(EVENT_TYPE_ORDER) else "unknown"] += n
            self._code_counts = Counter()
        for etype, n in counts.items():
            tel.events.add(n, {"fenwire.event.type": etype})
        self._counts = Counter()
        channel = child.channel
        offset = channel.offset
        if offset > self._bytes_flushed:
            tel.bytes.add(offset - self._bytes_flushed)
            self._bytes_flushed = offset
        counts = channel.error_counts
        if counts.total() > self._errors_flushed:
            for reason, n in (counts - self._errors_counted).items():
                if reason != "other":
                    tel.rejections.add(n, {"fenwire.rejection.code": reason})
            self._errors_counted = counts.copy()
            self._errors_flushed = counts.total()

    def finish(self, child: Traced, why: str | None = None) -> None:
        """The run ended (``why``: it ended otherwise, e.g. the parent let go of it): end every span
        still open with an error, set the run's attributes and status, add its counts."""
        if self._done:
            return
        self._done = self._off = True
        try:
            status = child.status
            status = status if status in _STATUSES else "unknown"
            finished = child.finished
            reason = why or (None if finished else "the parent stopped following the run")
            self.spans.end_turn(f"the run ended first ({status})")
            if self.broken is None:
                self._flush(child)
            channel = child.channel
            attributes: dict[str, Any] = {
                "fenwire.run.status": status,
                "fenwire.run.events": channel.events,
                "fenwire.run.bytes": channel.offset,
                "fenwire.run.rejections": sum(
                    n for code, n in channel.error_counts.items() if code not in ("foreign-run", "other")
                ),
                "fenwire.run.turns": self.turns,
            }
            if self.broken is not None:
                attributes["fenwire.trace.broken"] = self.broken
            self.span.set_attributes(attributes)
            if status in _ERROR_STATUSES or reason is not None and status not in ("done", "cancelled"):
                error = reason or child.error or status
                self.span.set_status(Status(StatusCode.ERROR, utf8_prefix(error.split("\n", 1)[0], MAX_TEXT)))
            tel = self.telemetry
            tel.runs.add(1, {"fenwire.run.status": status})
            tel.run_duration.record(time.monotonic() - self.started, {"fenwire.run.status": status})
        except Exception as exc:  # noqa: BLE001
            self._break(exc)
        finally:
            try:
                self.span.end()
            except Exception:  # noqa: BLE001
                pass

    def fail(self, exc: BaseException) -> None:
        """The spawn failed before a child ran: end the run span with the error."""
        if self._done:
            return
        self._done = self._off = True
        try:
            self.span.set_status(Status(StatusCode.ERROR, utf8_prefix(f"spawn failed: {exc}", MAX_TEXT)))
            self.span.end()
        except Exception:  # noqa: BLE001
            pass

    def _break(self, exc: BaseException) -> None:
        """Something went wrong in here: stop tracing this run's events, keep the run span."""
        self._off = True
        if self.broken is None:
            self.broken = utf8_prefix(f"{type(exc).__name__}: {exc}", MAX_TEXT)


def current_traceparent() -> dict[str, str]:
    """``TRACEPARENT`` / ``TRACESTATE`` of the current span (empty when there is none): what a
    process that starts runs elsewhere (a fleet's driver) hands on."""
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier, context=otel_context.get_current())
    return {name.upper(): value for name, value in carrier.items()}
