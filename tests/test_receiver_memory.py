"""A receiver gives back what one large chunk made it allocate: its reused buffers (the outcomes of
``scan``, the columns of ``scan_batch``, the framer's buffer) do not stay at their peak until the
receiver is dropped.

Measured as the process's resident memory (``/proc/self/statm``) after the call, its results
dropped and the C allocator asked to return free memory (``malloc_trim``), against before the
call: what is left is what the receiver holds.
"""

from __future__ import annotations

import ctypes
import gc
import os
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")

MIB = 1 << 20
#: The chunk: about 64 MiB of valid, in-order lines.
CHUNK_MIB = 64
#: What a receiver may keep after the call (its buffers are kept up to a few MiB, for reuse).
KEPT_MIB = 16


def resident_mib() -> float:
    gc.collect()
    ctypes.CDLL(None).malloc_trim(0)
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / MIB


def chunk(first_seq: int = 1) -> bytes:
    line = b'{"v":1,"seq":%d,"type":"info","run":"r","summary":"a line of an ordinary size, some words"}\n'
    n = CHUNK_MIB * MIB // len(line % 1)
    return b"".join(line % i for i in range(first_seq, first_seq + n))


def kept_after(call: Callable[[], Any]) -> float:
    """MiB of resident memory that ``call`` leaves behind, its result dropped."""
    before = resident_mib()
    result = call()
    del result
    return resident_mib() - before


def test_scan_batch_gives_back_its_columns(backend: ModuleType) -> None:
    data = chunk()
    cut = data.index(b"\n", 4096) + 1
    rx = backend.Receiver("event", run="r")
    rx.scan_batch(data[:cut])  # the buffers exist and are in use before
    rest = data[cut:]
    assert kept_after(lambda: rx.scan_batch(rest)) < KEPT_MIB


def test_scan_batch_gives_back_the_lines_it_copied(backend: ModuleType) -> None:
    # a chunk that begins inside a line: the accepted lines are copied, not the chunk itself
    data = chunk()
    rx = backend.Receiver("event", run="r")
    rx.scan_batch(data[:4000])
    batch = rx.scan_batch(data[4000:8192])
    assert batch.lines != data[4000:8192]
    assert kept_after(lambda: rx.scan_batch(data[8192:])) < KEPT_MIB


@pytest.mark.parametrize("method", ["scan", "scan_rejections"])
def test_scan_gives_back_its_outcomes(backend: ModuleType, method: str) -> None:
    data = chunk()
    rx = backend.Receiver("event")
    getattr(rx, method)(data[:4096])
    assert kept_after(lambda: getattr(rx, method)(data[4096:])) < KEPT_MIB


@pytest.mark.parametrize("method", ["feed", "scan", "scan_batch"])
def test_a_huge_line_across_calls_leaves_no_huge_buffer(backend: ModuleType, method: str) -> None:
    """A line begun in one call and ended 64 MiB later, in the next: it is cut at the line cap and
    rejected, and the framer does not keep (or even copy) the rest."""
    rx = backend.Receiver("event")
    call = getattr(rx, method)
    call(b'{"v":1,')
    huge = b"x" * (CHUNK_MIB * MIB) + b"\n"
    assert kept_after(lambda: call(huge)) < KEPT_MIB
    assert rx.buffered == 0


def test_a_framer_with_a_huge_cap_gives_back_a_huge_line(backend: ModuleType) -> None:
    framer = backend.Framer(2**40)
    framer.feed(b"x")
    huge = b"y" * (CHUNK_MIB * MIB) + b"\n"
    assert kept_after(lambda: framer.feed(huge)) < KEPT_MIB
    assert framer.buffered == 0
