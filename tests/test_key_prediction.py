"""Top-level keys where the Rust backend predicts them: after a few lines with one key order, a
line that differs from the compact `,"key":` it expects, at every place (whitespace, another or a
longer key, an escaped key, a broken separator, the end of the line), must come out exactly as
the pure backend reads it."""

from __future__ import annotations

from types import ModuleType

import pytest
from conftest import assert_strict_equal

# The key order of the lines before each variant (an assistant-text-delta, as a child writes it).
KEYS = ["v", "seq", "type", "run", "timestamp", "content-index", "delta", "summary"]
VALUES = {
    "v": b"1",
    "type": b'"assistant-text-delta"',
    "run": b'"run-1"',
    "timestamp": b'"2026-12-03T10:00:00Z"',
    "content-index": b"0",
    "delta": b'"some text \\"quoted\\" \\u00e9\\n"',
    "summary": b'"some text"',
}


def compact(seq: int, keys: list[str] = KEYS, seps: dict[int, bytes] | None = None) -> bytes:
    """The line with `keys` in order; `seps[i]` replaces the bytes before key i's value."""
    parts = [b"{"]
    for i, key in enumerate(keys):
        value = str(seq).encode() if key == "seq" else VALUES.get(key, b'"x"')
        sep = (b"," if i else b"") + b'"' + key.encode() + b'":'
        parts.append((seps or {}).get(i, sep) + value)
    parts.append(b"}")
    return b"".join(parts)


def variants(seq: int) -> list[bytes]:
    out = []
    for i, key in enumerate(KEYS):
        comma = b"," if i else b""
        name = key.encode()
        for sep in [
            comma + b' "' + name + b'":',  # whitespace where the comma ends
            comma + b'"' + name + b'" :',  # whitespace before the colon
            comma + b'"' + name + b'": ',  # whitespace after the colon
            comma + b'"' + name + b'x":',  # a longer key
            comma + b'"' + name[:-1] + b'":',  # a shorter one
            comma + b'"\\u00' + b"%02x" % name[0] + name[1:] + b'":',  # the same key, escaped
            comma + b'"' + name + b'"',  # no colon
            comma + b'"' + name + b":",  # no closing quote
            comma + b',"' + name + b'":',  # two commas
            comma + b'"' + name.upper() + b'":',  # another case
        ]:
            out.append(compact(seq, seps={i: sep}))
    # Other orders and sets of keys, a duplicate, a line that ends right after a predicted key.
    out.append(compact(seq, KEYS[:4] + KEYS[5:] + KEYS[4:5]))
    out.append(compact(seq, KEYS + ["summary"]))
    out.append(compact(seq, KEYS[:-1]))
    out.append(compact(seq, KEYS + ["extra"]))
    out.append(compact(seq)[:-1] + b",}")
    out.append(compact(seq)[:-1] + b',"delta":')
    out.append(compact(seq)[:-1] + b',"delta"')
    out.append(compact(seq)[:-1] + b",")
    out.append(compact(seq, KEYS[:2]) + b'  ,"type":"x"}')
    return out


@pytest.mark.parametrize("prime", [1, 3])
def test_variants_at_predicted_keys(backend: ModuleType, pure: ModuleType, prime: int) -> None:
    lines: list[bytes] = []
    seq = 0
    for variant_at in range(len(variants(0))):
        for _ in range(prime):
            seq += 1
            lines.append(compact(seq))
        seq += 1
        lines.append(variants(seq)[variant_at])
    data = b"\n".join(lines) + b"\n"
    got = backend.Receiver("event").feed(data)
    want = pure.Receiver("event").feed(data)
    assert len(got) == len(want) == len(lines)
    for g, w in zip(got, want, strict=True):
        assert_strict_equal(g, w)
    # The variants are read both ways: some as messages, some refused.
    kinds = {type(w).__name__ for w in want}
    assert "dict" in kinds and len(kinds) > 1, kinds
