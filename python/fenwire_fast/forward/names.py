"""Where a run's lines go in JetStream: its subject, its stream, and each line's message id.

A run id may hold any character, and a NATS subject token may not hold ``.``, ``*``, ``>`` or
white space. :func:`subject` escapes a run id into one token: every byte of its UTF-8 form outside
``A-Z a-z 0-9 _ -`` becomes ``%XX`` (``%`` itself included), so ``child-1`` stays ``child-1`` and
``a.b`` becomes ``a%2Eb``; :func:`run_of` undoes it. The message id is ``<token>:<seq>``: a line
published twice (a forwarder that restarted, a retry) is stored once.
"""

from __future__ import annotations

import re

__all__ = ["DEFAULT_PREFIX", "DEFAULT_STREAM", "MSG_ID", "subject", "run_of", "message_id", "seq_of_id", "check_prefix"]

#: the subjects' first tokens: a run's lines go to ``fenwire.<run>``
DEFAULT_PREFIX = "fenwire"
#: the stream that keeps them (made with subjects ``<prefix>.>`` when missing)
DEFAULT_STREAM = "FENWIRE"
#: JetStream's de-duplication header
MSG_ID = "Nats-Msg-Id"

_PLAIN = re.compile(rb"[A-Za-z0-9_-]+")
_TOKEN = re.compile(r"[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*")


def check_prefix(prefix: str) -> str:
    """``prefix`` if it is one or more plain tokens joined by dots; raises ``ValueError``."""
    if not _TOKEN.fullmatch(prefix):
        raise ValueError(f"subject prefix {prefix!r}: dot-separated tokens of A-Z a-z 0-9 _ - only")
    return prefix


def _escape(run: str) -> str:
    raw = run.encode("utf-8", "surrogatepass")
    if _PLAIN.fullmatch(raw):
        return run
    out = []
    for byte in raw:
        char = chr(byte)
        out.append(char if char.isascii() and (char.isalnum() or char in "_-") else f"%{byte:02X}")
    return "".join(out)


def subject(prefix: str, run: str) -> str:
    """The subject of ``run``'s lines: ``<prefix>.<run, escaped into one token>``."""
    return f"{prefix}.{_escape(run) or '%'}"


def run_of(prefix: str, name: str) -> str | None:
    """The run of subject ``name`` (``None`` when it is not one of ``prefix``'s run subjects)."""
    head = prefix + "."
    if not name.startswith(head) or "." in name[len(head) :]:
        return None
    token = name[len(head) :]
    if token == "%":
        return ""
    try:
        return _unescape(token)
    except (ValueError, UnicodeDecodeError):
        return None


def _unescape(token: str) -> str:
    out = bytearray()
    i = 0
    while i < len(token):
        if token[i] == "%":
            pair = token[i + 1 : i + 3]
            if len(pair) != 2 or not all(c in "0123456789ABCDEF" for c in pair):
                raise ValueError(f"not an escape: %{pair}")
            out.append(int(pair, 16))
            i += 3
        elif token[i].isascii() and (token[i].isalnum() or token[i] in "_-"):
            out += token[i].encode()
            i += 1
        else:
            raise ValueError(f"not a token made by subject(): {token!r}")
    return out.decode("utf-8", "surrogatepass")


def message_id(run: str, seq: int) -> str:
    """The de-duplication id of ``run``'s line ``seq``: ``<run token>:<seq>``."""
    return f"{_escape(run) or '%'}:{seq}"


def seq_of_id(msg_id: str | None) -> int | None:
    """The seq of a message id made by :func:`message_id` (``None`` when it is not one)."""
    if not msg_id:
        return None
    _, _, seq = msg_id.rpartition(":")
    return int(seq) if seq.isdigit() and seq.isascii() and len(seq) <= 16 else None


#: the options a fleet's ``forward=`` may give each node's forwarder, with their types
FORWARD_OPTIONS: dict[str, type | tuple[type, ...]] = {
    "url": str,
    "stream": str,
    "prefix": str,
    "max_in_flight": int,
    "ack_timeout": (int, float),
    "commit_every": (int, float),
    "connect_timeout": (int, float),
    "retry_max": (int, float),
    "create_stream": bool,
}


def check_forward(options: object) -> dict[str, object]:
    """``options`` (a mapping with ``url`` and any of :data:`FORWARD_OPTIONS`) checked, as a new
    dict; raises ``ValueError`` or ``TypeError`` naming the option at fault."""
    if not isinstance(options, dict):
        raise TypeError(f"forward= takes a dict of options with 'url', not {type(options).__name__}")
    if "url" not in options:
        raise ValueError("forward= needs 'url': the NATS server, e.g. nats://127.0.0.1:4222")
    out: dict[str, object] = {}
    for key, value in options.items():
        kind = FORWARD_OPTIONS.get(key)
        if kind is None:
            raise ValueError(f"forward= has no option {key!r}: {', '.join(FORWARD_OPTIONS)}")
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
            raise TypeError(f"forward={{{key!r}: ...}} takes {kind}, not {type(value).__name__}")
        out[key] = value
    check_prefix(str(out.get("prefix", DEFAULT_PREFIX)))
    if int(out.get("max_in_flight", 1)) < 1:  # type: ignore[call-overload]
        raise ValueError("forward={'max_in_flight': ...} must be at least 1")
    return out
