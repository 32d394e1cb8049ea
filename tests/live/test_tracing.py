"""OpenTelemetry traces and metrics of live runs (``trace=``, ``FENWIRE_OTEL``), checked with the
SDK's in-memory exporter and metric reader against what the channel itself counted.

Each test gets providers of its own, given through ``Telemetry(tracer_provider, meter_provider)``
(the global providers can be set once per process; the global path runs in a subprocess)."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from fenwire_fast.live.child.mock_agent import reported_traceparent
from fenwire_fast.live.parent.hub import Hub
from fenwire_fast.live.parent.otel import MAX_TEXT, RunTrace, Telemetry
from fenwire_fast.live.parent.spawn import LiveChild, spawn
from live_harness import GRACE, HANG_GUARD, child_env, gated, release_gate, wait_for_event, wait_gate_blocked
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

ECHO = str(Path(__file__).resolve().parent / "acp_agents" / "echo_agent.py")


class Otel:
    """A tracer and a meter provider of a test's own, and what they recorded."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.telemetry = Telemetry(tracer_provider, MeterProvider(metric_readers=[self.reader]))

    def spans(self, name: str | None = None) -> list[ReadableSpan]:
        return [s for s in self.exporter.get_finished_spans() if name is None or s.name == name]

    def metric(self, name: str) -> dict[tuple[tuple[str, Any], ...], Any]:
        """A metric's points: attributes -> value (a counter's sum, a histogram's count)."""
        data = self.reader.get_metrics_data()
        out: dict[tuple[tuple[str, Any], ...], Any] = {}
        for resource in data.resource_metrics if data is not None else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == name:
                        for point in metric.data.data_points:
                            key = tuple(sorted((point.attributes or {}).items()))
                            out[key] = getattr(point, "value", None) if hasattr(point, "value") else point.count
        return out


@pytest.fixture
def otel() -> Otel:
    return Otel()


def drain_all(child: LiveChild, events: list[dict[str, Any]]) -> None:
    """Poll ``child`` until it has finished, appending its events (a short sleep between empty
    polls; the harness's timeout guards against a hang)."""
    end = time.monotonic() + HANG_GUARD
    while not child.finished:
        messages, _ = child.poll()
        events.extend(messages)
        if not messages:
            assert time.monotonic() < end, f"{child.run} did not finish"
            time.sleep(0.005)


def traceparent_of(span: ReadableSpan) -> str:
    ctx = span.get_span_context()
    assert ctx is not None
    return f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{int(ctx.trace_flags):02x}"


def parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def span_id(span: ReadableSpan) -> int:
    ctx = span.get_span_context()
    assert ctx is not None
    return ctx.span_id


def test_a_steered_run_gives_its_span_tree_attributes_and_metrics(otel: Otel, tmp_path: Path) -> None:
    gate = str(tmp_path / "gate")
    mock = gated({"steps": 3, "tools": 2, "deltas": 3, "gate_path": gate}, steps=(2,))
    child = spawn("task", mock=mock, env=child_env(), grace=GRACE, timeout=HANG_GUARD, trace=otel.telemetry)
    events: list[dict[str, Any]] = []
    with child:
        wait_gate_blocked(gate, "mock gate: turn 1 step 2")
        steer = child.steer("also check docs/")
        wait_for_event(child, lambda e: e["type"] == "control-ack" and e.get("ref") == steer, events)
        release_gate(gate)
        wait_for_event(child, lambda e: e["type"] == "turn-complete", events)
        close = child.close()
        drain_all(child, events)
        assert child.status == "done", child.error

    (run,) = otel.spans("fenwire.run")
    turns = otel.spans("fenwire.turn")
    llms = otel.spans("fenwire.llm")
    tools = otel.spans("fenwire.tool")
    completes = [e for e in events if e["type"] == "turn-complete"]
    assert len(turns) == len(completes) == 1
    (turn,) = turns
    assert parent_id(run) is None and parent_id(turn) == span_id(run)
    assert len(llms) == sum(e["type"] == "llm-start" for e in events) == 3
    assert len(tools) == sum(e["type"] == "tool-call" for e in events) == 4
    assert all(parent_id(s) == span_id(turn) for s in llms + tools)
    assert {s.get_span_context().trace_id for s in [run, *turns, *llms, *tools]} == {run.get_span_context().trace_id}

    # the child got the run span's context, and the mock reported it from ctx.traceparent
    assert reported_traceparent(events) == traceparent_of(run)

    attrs = dict(run.attributes or {})
    channel = child.channel
    assert attrs["fenwire.run.id"] == "run" and attrs["fenwire.run.agent"] == "mock"
    assert attrs["fenwire.run.status"] == "done"
    assert attrs["fenwire.run.events"] == channel.events == len(events)
    assert attrs["fenwire.run.bytes"] == channel.offset > 0
    assert attrs["fenwire.run.rejections"] == 0 and attrs["fenwire.run.turns"] == 1
    assert run.status.status_code is StatusCode.UNSET

    t = dict(turn.attributes or {})
    assert t["fenwire.turn"] == 1 and t["fenwire.turn.stop_reason"] == completes[0]["stop-reason"] == "stop"
    assert {k.rsplit(".", 1)[1]: v for k, v in t.items() if ".usage." in k} == completes[0]["usage"]
    ends = [e for e in events if e["type"] == "llm-end"]
    for span, end in zip(sorted(llms, key=lambda s: s.start_time or 0), ends, strict=True):
        a = dict(span.attributes or {})
        assert a["fenwire.llm.stop_reason"] == end["stop-reason"]
        assert {k.rsplit(".", 1)[1]: v for k, v in a.items() if ".usage." in k} == end["usage"]
        assert a["fenwire.llm.provider"] == "mock"
    calls = {e["id"]: e for e in events if e["type"] == "tool-call"}
    for span in tools:
        a = dict(span.attributes or {})
        assert a["fenwire.tool.id"] in calls and a["fenwire.tool.is_error"] is False
        assert span.status.status_code is StatusCode.UNSET

    sent = [(e.attributes or {}).get("fenwire.control.type") for e in run.events if e.name == "fenwire.control"]
    assert sent == ["prompt", "steer", "close"]
    acks = {
        (e.attributes or {})["fenwire.control.seq"]: (e.attributes or {})["fenwire.control.status"]
        for e in run.events
        if e.name == "fenwire.control.ack"
    }
    assert acks == {seq: c.status for seq, c in channel.controls.items()} and set(acks) == {1, steer, close}

    types = Counter(e["type"] for e in events)
    assert otel.metric("fenwire.events") == {(("fenwire.event.type", k),): v for k, v in types.items()}
    assert otel.metric("fenwire.bytes") == {(): channel.offset}
    assert otel.metric("fenwire.runs") == {(("fenwire.run.status", "done"),): 1}
    assert otel.metric("fenwire.run.duration") == {(("fenwire.run.status", "done"),): 1}
    assert otel.metric("fenwire.turn.duration") == {(): 1}
    assert otel.metric("fenwire.rejections") == {}


def test_a_cancelled_turn_ends_its_open_tool_span_with_an_error(otel: Otel) -> None:
    mock = {"steps": 2, "tools": 1, "hang_step": 1, "hang": "yield"}
    child = spawn("task", mock=mock, env=child_env(), grace=GRACE, timeout=HANG_GUARD, trace=otel.telemetry)
    events: list[dict[str, Any]] = []
    with child:
        wait_for_event(child, lambda e: e["type"] == "tool-call", events)
        child.cancel()
        drain_all(child, events)
        assert child.status == "cancelled", child.error
    (run,) = otel.spans("fenwire.run")
    (turn,) = otel.spans("fenwire.turn")
    (tool,) = otel.spans("fenwire.tool")
    assert dict(run.attributes or {})["fenwire.run.status"] == "cancelled"
    assert run.status.status_code is StatusCode.UNSET  # cancelled is what the parent asked for
    assert dict(turn.attributes or {})["fenwire.turn.stop_reason"] == "aborted"
    assert dict(tool.attributes or {})["fenwire.tool.is_error"] is True  # the child's "cancelled" result
    assert tool.status.status_code is StatusCode.ERROR
    assert [(e.attributes or {}).get("fenwire.control.type") for e in run.events if e.name == "fenwire.control"] == [
        "prompt",
        "cancel",
    ]
    assert otel.metric("fenwire.runs") == {(("fenwire.run.status", "cancelled"),): 1}


@pytest.mark.parametrize(
    ("mock", "timeout", "status"),
    [
        ({"steps": 2, "fail_step": 1}, HANG_GUARD, "failed"),
        ({"steps": 2, "tools": 1, "hang_step": 1, "hang": "yield"}, 1.0, "timed-out"),
    ],
)
def test_failed_and_timed_out_runs_are_errors(otel: Otel, mock: dict[str, Any], timeout: float, status: str) -> None:
    child = spawn("task", mock=mock, env=child_env(), grace=GRACE, timeout=timeout, trace=otel.telemetry)
    events: list[dict[str, Any]] = []
    with child:
        drain_all(child, events)
        assert child.status == status, child.error
    (run,) = otel.spans("fenwire.run")
    assert dict(run.attributes or {})["fenwire.run.status"] == status
    assert run.status.status_code is StatusCode.ERROR
    (turn,) = otel.spans("fenwire.turn")
    want = "error" if status == "failed" else "aborted"
    assert dict(turn.attributes or {})["fenwire.turn.stop_reason"] == want
    assert otel.metric("fenwire.runs") == {(("fenwire.run.status", status),): 1}


def test_a_killed_child_ends_every_open_span_with_an_error(otel: Otel) -> None:
    mock = {"steps": 2, "tools": 1, "hang_step": 1, "hang": "yield"}
    child = spawn("task", mock=mock, env=child_env(), grace=GRACE, timeout=HANG_GUARD, trace=otel.telemetry)
    events: list[dict[str, Any]] = []
    with child:
        wait_for_event(child, lambda e: e["type"] == "tool-call", events)
        child.kill()
        drain_all(child, events)
        assert child.status == "failed"
    (run,) = otel.spans("fenwire.run")
    (turn,) = otel.spans("fenwire.turn")
    (tool,) = otel.spans("fenwire.tool")
    assert run.status.status_code is StatusCode.ERROR
    assert "without an exit line" in (run.status.description or "")
    assert turn.status.status_code is StatusCode.ERROR and tool.status.status_code is StatusCode.ERROR
    assert "fenwire.tool.is_error" not in (tool.attributes or {})  # no result ever came


def test_a_run_the_parent_stops_following_is_an_error(otel: Otel) -> None:
    child = spawn("task", mock={"hang_step": 1}, env=child_env(), grace=GRACE, timeout=HANG_GUARD, trace=otel.telemetry)
    wait_for_event(child, lambda e: e["type"] == "tool-call")
    child.cleanup()
    (run,) = otel.spans("fenwire.run")
    assert run.status.status_code is StatusCode.ERROR
    assert run.status.description == "the run was killed before it finished"
    assert otel.spans("fenwire.turn")[0].status.status_code is StatusCode.ERROR


@pytest.mark.parametrize("raw", [False, True], ids=["dicts", "raw"])
def test_a_hub_traces_every_read(otel: Otel, raw: bool) -> None:
    # paced deltas: the hub reads the children while they write, so most reads are plain ones
    # (the hub's hot path), with the model and tool calls inside them
    mock = {"steps": 3, "tools": 1, "deltas": 40, "delay": 0.002}
    with Hub(trace=otel.telemetry) as hub:
        assert hub.telemetry is otel.telemetry
        for _ in range(2):
            hub.spawn("task", mock=mock, env=child_env(), grace=GRACE, timeout=HANG_GUARD)
        closed: set[str] = set()
        reads = hub.raw_batches() if raw else hub.batches()
        for child, _batch in reads:
            if child.channel.idle and child.run not in closed:
                closed.add(child.run)
                child.close()
        statuses = {c.run: c.status for c in hub.children}
        events = sum(c.channel.events for c in hub.children)
    assert statuses == {"child-1": "done", "child-2": "done"}
    runs = otel.spans("fenwire.run")
    assert sorted(dict(r.attributes or {})["fenwire.run.id"] for r in runs) == ["child-1", "child-2"]
    by_id = {span_id(r): r for r in runs}
    turns = otel.spans("fenwire.turn")
    assert len(turns) == 2 and {parent_id(t) for t in turns} == set(by_id)
    turn_ids = {span_id(t) for t in turns}
    calls = otel.spans("fenwire.llm") + otel.spans("fenwire.tool")
    assert len(calls) == 2 * (3 + 2) and {parent_id(c) for c in calls} == turn_ids
    assert all(c.status.status_code is StatusCode.UNSET for c in calls)
    assert sum(otel.metric("fenwire.events").values()) == events
    assert otel.metric("fenwire.events")[(("fenwire.event.type", "assistant-text-delta"),)] == 2 * 3 * 40


def test_hostile_fields_are_checked_and_bounded(otel: Otel) -> None:
    trace = otel.telemetry.start_run("r", {"fenwire.run.agent": "x" * 10_000})
    assert isinstance(trace, RunTrace)
    trace.observe(
        [
            {"type": "turn-started", "turn": True},
            {"type": "llm-start", "provider": 5, "model": "\u00e9" * 10_000},
            {"type": "llm-end", "stop-reason": ["x"], "usage": {"a": True, "b": float("inf"), "c": 5, "d" * 100: 1}},
            {"type": "tool-result", "tool-call-id": "never-called", "is-error?": "yes"},
            {"type": "tool-call", "name": {"x": 1}, "id": 7},
            {"type": "turn-complete", "usage": [1, 2], "stop-reason": "s" * 1000},
            {"type": "control-ack", "ref": 2**70, "status": None},
        ]
    )
    assert trace.broken is None
    trace.span.end()
    (llm,) = otel.spans("fenwire.llm")
    attrs = dict(llm.attributes or {})
    assert "fenwire.llm.provider" not in attrs and "fenwire.llm.stop_reason" not in attrs
    assert len(attrs["fenwire.llm.model"].encode()) <= MAX_TEXT
    assert {k: v for k, v in attrs.items() if ".usage." in k} == {"fenwire.llm.usage.c": 5}
    (turn,) = otel.spans("fenwire.turn")
    assert "fenwire.turn" not in (turn.attributes or {})
    assert len(dict(turn.attributes or {})["fenwire.turn.stop_reason"]) <= MAX_TEXT
    (tool,) = otel.spans("fenwire.tool")  # the call without a name or id, ended with its turn
    assert tool.status.status_code is StatusCode.ERROR
    (run,) = otel.spans("fenwire.run")
    assert len(dict(run.attributes or {})["fenwire.run.agent"]) <= MAX_TEXT
    # a batch that is not what the channel delivers breaks this run's tracing, not the parent
    trace2 = otel.telemetry.start_run("r2", {})
    assert trace2 is not None
    trace2.observe([{"no": "type"}])  # type: ignore[list-item]
    assert trace2.broken is not None


def test_rejections_past_the_channels_bound_are_all_counted(otel: Otel, tmp_path: Path) -> None:
    """The channel keeps only some of a run's errors (``ERRORS_KEPT``); the metric counts them all."""
    from fenwire_fast.live.parent.channel import ERRORS_KEPT, Channel

    bad = 10 * ERRORS_KEPT
    lines = []
    for i in range(bad):
        lines.append('{"v":1,"seq":%d,"type":"nope","run":"r"}' % (i + 1))
        lines.append('{"v":1,"seq":%d,"type":"info","run":"other","summary":"x"}' % (i + 1))
    (tmp_path / "events.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "control.jsonl").touch()
    channel = Channel("r", str(tmp_path / "control.jsonl"), str(tmp_path / "events.jsonl"), max_bytes=1024)
    trace = otel.telemetry.start_run("r", {})
    assert isinstance(trace, RunTrace)
    child = SimpleNamespace(channel=channel)
    while True:
        messages, errors = channel.poll()
        trace._flush(child)  # type: ignore[arg-type]  # a flush after every read: the bound bites between
        if not (messages or errors or channel.pending()):
            break
    assert channel.errors_dropped > 0
    counted = {dict(k)["fenwire.rejection.code"]: n for k, n in otel.metric("fenwire.rejections").items()}
    assert counted == dict(channel.error_counts) and sum(counted.values()) == 2 * bad


def test_tracing_is_off_by_default(otel: Otel, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FENWIRE_OTEL", raising=False)
    with Hub() as hub:
        assert hub.telemetry is None
        child = hub.spawn("task", mock={"steps": 1}, env=child_env(), grace=GRACE, timeout=HANG_GUARD)
        assert child.trace is None
        events: list[dict[str, Any]] = []
        wait_for_event(child, lambda e: e["type"] == "turn-complete", events)
        assert reported_traceparent(events) is None
        child.close()
        hub.wait(HANG_GUARD)
    assert otel.spans() == []
    with pytest.raises(TypeError):
        Hub(trace="yes")


def test_fenwire_otel_traces_through_the_global_providers() -> None:
    script = textwrap.dedent(
        """
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        from fenwire_fast.live.parent.hub import Hub
        tracer = trace.get_tracer("app")
        with tracer.start_as_current_span("app") as app, Hub() as hub:
            child = hub.spawn("task", mock={"steps": 1})
            for c, event in hub:
                if event["type"] == "turn-complete":
                    c.close()
        spans = {s.name: s for s in exporter.get_finished_spans()}
        run = spans["fenwire.run"]
        assert run.parent.span_id == app.get_span_context().span_id, "the run is a child of the current span"
        print(sorted(spans), run.attributes["fenwire.run.status"])
        """
    )
    env = child_env({"FENWIRE_OTEL": "1"})
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=HANG_GUARD)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['app', 'fenwire.llm', 'fenwire.run', 'fenwire.turn'] done"


def test_the_package_works_without_opentelemetry() -> None:
    script = textwrap.dedent(
        """
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "opentelemetry" or name.startswith("opentelemetry."):
                    raise ImportError("blocked: " + name)
        sys.meta_path.insert(0, Block())
        import fenwire_fast, fenwire_fast.live.parent.hub, fenwire_fast.live.parent.spawn, fenwire_fast.live.acp.mapping
        from fenwire_fast.live.parent.tracing import TracingUnavailable, resolve
        from fenwire_fast.live.parent.hub import Hub
        with Hub() as hub:                      # FENWIRE_OTEL=1 without the extra: a warning, no tracing
            assert hub.telemetry is None
            child = hub.spawn("task", mock={"steps": 1})
            for c, event in hub:
                if event["type"] == "turn-complete":
                    c.close()
            assert child.status == "done" and child.trace is None
        try:
            Hub(trace=True)
        except TracingUnavailable as exc:
            print("refused:", exc)
        assert not any(m.startswith("opentelemetry") for m in sys.modules)
        """
    )
    env = child_env({"FENWIRE_OTEL": "1"})
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=HANG_GUARD)
    assert out.returncode == 0, out.stderr
    assert "refused: tracing needs opentelemetry-api: pip install 'fenwire_fast[otel]'" in out.stdout
    assert out.stderr.count("FENWIRE_OTEL is set but tracing needs opentelemetry-api") == 1


def test_the_acp_bridge_passes_the_traceparent_in_the_prompts_meta(otel: Otel) -> None:
    pytest.importorskip("acp")
    child = spawn("hello", acp=[sys.executable, ECHO], env=child_env(), timeout=60, trace=otel.telemetry)
    events: list[dict[str, Any]] = []
    with child:
        wait_for_event(child, lambda e: e["type"] == "turn-complete", events)
        child.close()
        drain_all(child, events)
        assert child.status == "done", child.error
    (run,) = otel.spans("fenwire.run")
    thoughts = [e["text"] for e in events if e["type"] == "assistant-thinking"]
    assert "".join(thoughts) == f"echoingtraceparent {traceparent_of(run)}"  # one thinking block
    assert dict(run.attributes or {})["fenwire.run.acp"].endswith("echo_agent.py")


def test_the_observability_example_runs(tmp_path: Path) -> None:
    """docs/observability.md's example, as pasted: it prints the run's spans to stdout."""
    doc = Path(__file__).resolve().parents[2] / "docs" / "observability.md"
    (block,) = re.findall(r"^```python\n(.*?)^```", doc.read_text(), re.S | re.M)
    script = tmp_path / "example.py"
    script.write_text(block)
    out = subprocess.run(
        [sys.executable, str(script)], env=child_env(), capture_output=True, text=True, timeout=HANG_GUARD
    )
    assert out.returncode == 0, out.stderr
    for name in ("fenwire.run", "fenwire.turn", "fenwire.llm", "fenwire.tool", "review"):
        assert f'"name": "{name}"' in out.stdout
