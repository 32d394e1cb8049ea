"""Dicts of messages whose keys repeat from line to line (the Rust backend copies a template for
a key sequence it has seen before): each one must be an ordinary, independent dict, equal to the
pure backend's, tracked by the garbage collector exactly when the pure backend's is."""

from __future__ import annotations

import gc
import json
import sys
from types import ModuleType
from typing import Any

from conftest import assert_strict_equal


def line(seq: int, **fields: Any) -> bytes:
    msg = {"v": 1, "seq": seq, "type": "tool-result", "run": "r", "name": "sh", "is-error?": False}
    msg.update(fields)
    return json.dumps(msg, ensure_ascii=False, separators=(",", ":")).encode()


def stream(seq: int = 0) -> list[bytes]:
    """Lines that repeat a few key sequences (top-level and nested, small and large objects,
    scalar and container values), with changes of order, a duplicate key and new keys between;
    their seq follow ``seq``."""
    out: list[bytes] = []
    for i in range(40):
        seq += 1
        out.append(line(seq, result={"stdout": f"out {i}", "code": i}))
        seq += 1
        out.append(line(seq, result={"code": i, "stdout": f"swapped {i}"}))
        seq += 1
        out.append(line(seq, result=[i, {"a": i, "b": [i]}], summary=f"s{i}"))
        seq += 1
        out.append(line(seq, result=None, summary="only scalars"))
        seq += 1
        # Same keys as the line before, but the `result` is a container this time.
        out.append(line(seq, result={"x": {}}, summary="only scalars"))
        seq += 1
        big = {f"k{j}": j * i for j in range(12)}
        out.append(line(seq, result=big, id=f"id{i % 3}"))
        seq += 1
        dup = b'{"v":1,"seq":%d,"type":"tool-result","run":"r","name":"sh","is-error?":false,"name":"d%d"}'
        out.append(dup % (seq, i))
        seq += 1
        out.append(line(seq, result={f"new{i}": i}))
    return out


def test_same_as_pure_and_tracked_alike(backend: ModuleType, pure: ModuleType) -> None:
    lines = stream()
    got = backend.Receiver("event").feed(b"\n".join(lines) + b"\n")
    want = pure.Receiver("event").feed(b"\n".join(lines) + b"\n")
    assert len(got) == len(want) == len(lines)
    for g, w in zip(got, want, strict=True):
        assert isinstance(g, dict), g
        assert_strict_equal(g, w)
        for gv, wv in [(g, w), (g.get("result"), w.get("result"))]:
            if isinstance(gv, dict):
                assert gc.is_tracked(gv) == gc.is_tracked(wv), (gv, wv)


def test_dicts_are_independent_and_hash_right(backend: ModuleType) -> None:
    lines = stream()
    got = backend.Receiver("event").feed(b"\n".join(lines) + b"\n")
    first, again = got[0], got[8]  # the same key sequences, eight lines apart
    assert list(first) == list(again) and first is not again
    assert first["result"] is not again["result"]
    again["result"]["stdout"] = "changed"
    del again["name"]
    again["extra"] = 1
    assert first["result"]["stdout"] == "out 0" and first["name"] == "sh" and "extra" not in first
    for msg in got:
        for key, value in msg.items():
            # A key equal to the stored one but another object: found through the hash index.
            fresh = "".join(list(key))
            assert fresh is not key or len(key) <= 1
            assert msg[fresh] is value and fresh in msg
        assert "absent" not in msg


def test_no_reference_leaks(backend: ModuleType) -> None:
    rx = backend.Receiver("event")
    lines = stream()
    rx.feed(b"\n".join(lines) + b"\n")  # the templates are made on this pass
    pieces = [b"\n".join(stream(len(lines) * k)) + b"\n" for k in range(1, 4)]
    gc.collect()
    before = sys.getrefcount(None), sys.getrefcount(False)
    for piece in pieces:
        out = rx.feed(piece)
        assert len(out) == len(lines) and all(isinstance(m, dict) for m in out), out[:3]
        del out
    gc.collect()
    after = sys.getrefcount(None), sys.getrefcount(False)
    # Each message holds None / False a few times; a reference leaked per value would be hundreds.
    assert abs(after[0] - before[0]) < 20 and abs(after[1] - before[1]) < 20, (before, after)
