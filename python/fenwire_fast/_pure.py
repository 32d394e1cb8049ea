"""The pure-Python backend: the executable specification of the backend boundary.

Every name here has a twin in the Rust extension ``fenwire_fast._native`` with the same signature
and the same result for every input (docs/backend-boundary.md). JSON is read and written by orjson,
whose strict dialect and float formatting are the wire's; the Rust backend matches them.
"""

from __future__ import annotations

import array
import math
import operator
import re
from collections.abc import Callable
from typing import Any, NoReturn, SupportsIndex, TypeVar

import orjson

from ._fast_checks import FAST_CHECKS, NO_FAST_CHECKS
from ._schema import CONTROL_SCHEMAS, ENUMS, EVENT_SCHEMAS, Schema
from ._types import (
    CONTROL_TYPE_ORDER,
    EVENT_TYPE_ORDER,
    LIFECYCLE_EVENT_TYPES,
    MAX_LINE_BYTES,
    MAX_SAFE_INTEGER,
    VERSION,
    Rejection,
    Scanned,
)

__all__ = [
    "IMPLEMENTATION",
    "decode",
    "validate",
    "encode",
    "message",
    "rejection_ack",
    "Sender",
    "Receiver",
    "Framer",
    "ScanBatch",
    "utf8_prefix",
    "truncate_line",
    "scrub",
]

IMPLEMENTATION = "python"

Result = tuple[Any, Rejection | None]

# ---------------------------------------------------------------------------------------------
# Reason texts. The Rust backend produces the same strings byte for byte.

R_NOT_LINE = "line must be bytes or str"
R_TOO_LARGE = f"line is {MAX_LINE_BYTES} bytes or more; the limit is {MAX_LINE_BYTES - 1}"
R_NOT_UTF8 = "line is not valid UTF-8"
R_NOT_JSON = "line is not valid JSON"
R_NOT_OBJECT = "line is not a JSON object"
R_DIRECTION = 'direction must be "event" or "control"'
R_NOT_DICT = "message must be a JSON object"
R_V_REQUIRED = "v is required"
R_PAYLOAD_NOT_DICT = "payload must be a JSON object"
MAX_ENCODE_DEPTH = 254
_INT_MIN = -(2**63)
_INT_MAX = 2**64 - 1
_U64_MAX = 2**64 - 1


def _kind_name(value: object) -> str:
    """The JSON kind of a value, with its article, for reason texts."""
    if value is None:
        return "a null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a non-integral number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return "a non-JSON value"


def _version_reason(v: object) -> str:
    if _is_integral(v):
        return f"wire version {int(v)} is not supported; expected {VERSION}"  # type: ignore[call-overload]
    return f"wire version must be the number {VERSION}, not {_kind_name(v)}"


# ---------------------------------------------------------------------------------------------
# Field kinds: a fast predicate, and an error lister used only when the predicate fails.


def _is_number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_integral(v: object) -> bool:
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return True
    return isinstance(v, float) and v.is_integer()


def _ok_pos(v: object) -> bool:
    if type(v) is int:
        return 1 <= v <= MAX_SAFE_INTEGER
    return _is_integral(v) and 1 <= v <= MAX_SAFE_INTEGER  # type: ignore[operator]


def _errors_pos(v: object, field: str) -> list[tuple[str, str]]:
    errors = []
    if not _is_integral(v):
        errors.append((field, "must be an integer"))
    if _is_number(v):
        if v < 1:  # type: ignore[operator]
            errors.append((field, "must be at least 1"))
        elif v > MAX_SAFE_INTEGER:  # type: ignore[operator]
            errors.append((field, f"must be at most {MAX_SAFE_INTEGER}"))
    return errors


def _ok_string(v: object) -> bool:
    return isinstance(v, str)


def _ok_boolean(v: object) -> bool:
    return isinstance(v, bool)


def _ok_number(v: object) -> bool:
    return _is_number(v)


def _ok_object(v: object) -> bool:
    return isinstance(v, dict) or (isinstance(v, list) and not v)


def _ok_array(v: object) -> bool:
    return isinstance(v, list) or (isinstance(v, dict) and not v)


def _ok_refs(v: object) -> bool:
    if isinstance(v, list):
        return all(_ok_pos(item) for item in v)
    return isinstance(v, dict) and not v


def _errors_refs(v: object, field: str) -> list[tuple[str, str]]:
    if not _ok_array(v):
        return [(field, "must be an array")]
    errors: list[tuple[str, str]] = []
    if isinstance(v, list):
        for i, item in enumerate(v):
            if not _ok_pos(item):
                errors.extend(_errors_pos(item, f"{field}[{i}]"))
    return errors


def _ok_any(v: object) -> bool:
    return True


def _simple(
    predicate: Callable[[object], bool], message: str
) -> tuple[Callable[[object], bool], Callable[[object, str], list[tuple[str, str]]]]:
    def errors(v: object, field: str) -> list[tuple[str, str]]:
        return [] if predicate(v) else [(field, message)]

    return predicate, errors


def _enum(choices: tuple[str, ...]) -> tuple[Callable[[object], bool], Callable[[object, str], list[tuple[str, str]]]]:
    allowed = frozenset(choices)
    message = "must be one of " + ", ".join(choices)

    def predicate(v: object) -> bool:
        return isinstance(v, str) and v in allowed

    return _simple(predicate, message)


_KINDS: dict[str, tuple[Callable[[object], bool], Callable[[object, str], list[tuple[str, str]]]]] = {
    "string": _simple(_ok_string, "must be a string"),
    "boolean": _simple(_ok_boolean, "must be a boolean"),
    "number": _simple(_ok_number, "must be a number"),
    "integer": _simple(_is_integral, "must be an integer"),
    "object": _simple(_ok_object, "must be an object"),
    "array": _simple(_ok_array, "must be an array"),
    "pos": (_ok_pos, _errors_pos),
    "refs": (_ok_refs, _errors_refs),
    "any": _simple(_ok_any, ""),
    **{name: _enum(choices) for name, choices in ENUMS.items()},
}


class _Checker:
    """A schema ready for the full check: a dict of field -> predicate to find a fault, and the
    ordered field list to report errors in a fixed order (the drain's fast checks are in
    ``_fast_checks``)."""

    __slots__ = ("required", "fields", "predicates", "is_ack")

    def __init__(self, type_name: str, schema: Schema) -> None:
        self.required = schema.required
        self.fields = tuple((name, _KINDS[kind]) for name, kind in schema.fields)
        self.predicates = {name: _KINDS[kind][0] for name, kind in schema.fields if kind != "any"}
        self.is_ack = type_name == "control-ack"

    def errors(self, msg: dict[str, Any]) -> list[tuple[str, str]]:
        predicates = self.predicates
        ok = True
        for key, value in msg.items():
            predicate = predicates.get(key)
            if predicate is not None and not predicate(value):
                ok = False
                break
        if ok:
            for name in self.required:
                if name not in msg:
                    ok = False
                    break
        if ok and self.is_ack and "ref" not in msg:
            status = msg.get("status")
            ok = isinstance(status, str) and status == "rejected"
        if ok:
            return []
        errors: list[tuple[str, str]] = [(name, "is required") for name in self.required if name not in msg]
        for name, (predicate, lister) in self.fields:
            if name in msg:
                value = msg[name]
                if not predicate(value):
                    errors.extend(lister(value, name))
        if self.is_ack and "ref" not in msg and "status" in msg:
            status = msg["status"]
            if not (isinstance(status, str) and status == "rejected"):
                errors.append(("ref", "is required unless status is rejected"))
        return errors


_EVENT_CHECKERS = {name: _Checker(name, schema) for name, schema in EVENT_SCHEMAS.items()}
_CONTROL_CHECKERS = {name: _Checker(name, schema) for name, schema in CONTROL_SCHEMAS.items()}
_ARTICLE = {"event": "an event", "control": "a control"}
_DIRECTION_TABLES = {
    "event": (_EVENT_CHECKERS, _CONTROL_CHECKERS, "control"),
    "control": (_CONTROL_CHECKERS, _EVENT_CHECKERS, "event"),
}


def _join(errors: list[tuple[str, str]]) -> str:
    return "; ".join(f"{field} {text}" for field, text in errors)


def _usable_seq(v: object) -> int | None:
    if type(v) is int:
        return v if 1 <= v <= MAX_SAFE_INTEGER else None
    if _is_integral(v) and 1 <= v <= MAX_SAFE_INTEGER:  # type: ignore[operator]
        return int(v)  # type: ignore[call-overload, no-any-return]
    return None


def _rejection(code: str, reason: str, msg: dict[str, Any], errors: list[tuple[str, str]] | None = None) -> Rejection:
    t = msg.get("type")
    r = msg.get("run")
    return Rejection(
        code,
        reason,
        _usable_seq(msg.get("seq")),
        t if isinstance(t, str) else None,
        r if isinstance(r, str) else None,
        tuple(errors) if errors is not None else None,
    )


_ENVELOPE_FIELDS = (("seq", _KINDS["pos"]), ("type", _KINDS["string"]), ("run", _KINDS["string"]))


def _envelope_errors(msg: dict[str, Any]) -> list[tuple[str, str]]:
    errors: list[tuple[str, str]] = [(name, "is required") for name, _ in _ENVELOPE_FIELDS if name not in msg]
    for name, (predicate, lister) in _ENVELOPE_FIELDS:
        if name in msg:
            value = msg[name]
            if not predicate(value):
                errors.extend(lister(value, name))
    return errors


def validate(msg: object, direction: str) -> Result:
    """Check a message (a dict) against the envelope and its type's schema.

    Returns ``(msg, None)`` (the same object) or ``(None, rejection)``; never raises.
    """
    tables = _DIRECTION_TABLES.get(direction) if isinstance(direction, str) else None
    if tables is None:
        return None, Rejection("invalid", R_DIRECTION)
    if not isinstance(msg, dict):
        return None, Rejection("invalid", R_NOT_DICT)
    v = msg.get("v")
    if v is None:
        return None, _rejection("invalid", R_V_REQUIRED, msg)
    if not (_is_number(v) and v == VERSION):
        return None, _rejection("version-mismatch", _version_reason(v), msg)
    seq = msg.get("seq")
    type_name = msg.get("type")
    run = msg.get("run")
    if not (type(seq) is int and 1 <= seq <= MAX_SAFE_INTEGER and isinstance(type_name, str) and isinstance(run, str)):
        errors = _envelope_errors(msg)
        if errors:
            return None, _rejection("invalid", _join(errors), msg, errors)
    own, other, other_name = tables
    checker = own.get(type_name)  # type: ignore[arg-type]
    if checker is None:
        if type_name in other:
            reason = f"{type_name} is {_ARTICLE[other_name]} type, not {_ARTICLE[direction]} type"
        else:
            reason = f"unknown {direction} type: {type_name}"
        return None, _rejection("unknown-type", reason, msg)
    errors = checker.errors(msg)
    if errors:
        return None, _rejection("invalid-payload", _join(errors), msg, errors)
    return msg, None


_loads = orjson.loads
_JSONDecodeError = orjson.JSONDecodeError


def decode(line: object, direction: str) -> Result:
    """Decode and validate one line (``bytes`` or ``str``, without its newline).

    Check order: not a line, too large, not UTF-8, not JSON, not an object, then ``validate``.
    Returns ``(msg, None)`` or ``(None, rejection)``; never raises.
    """
    if isinstance(line, bytes):
        data = line if type(line) is bytes else bytes(line)
    elif isinstance(line, str):
        try:
            data = line.encode("utf-8")
        except UnicodeEncodeError:
            if len(line) >= MAX_LINE_BYTES or len(line.encode("utf-8", "surrogatepass")) >= MAX_LINE_BYTES:
                return None, Rejection("too-large", R_TOO_LARGE)
            return None, Rejection("malformed", R_NOT_UTF8)
    else:
        return None, Rejection("malformed", R_NOT_LINE)
    if len(data) >= MAX_LINE_BYTES:
        return None, Rejection("too-large", R_TOO_LARGE)
    try:
        obj = _loads(data)
    except _JSONDecodeError:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return None, Rejection("malformed", R_NOT_UTF8)
        return None, Rejection("malformed", R_NOT_JSON)
    if type(obj) is not dict:
        return None, Rejection("malformed", R_NOT_OBJECT)
    return validate(obj, direction)


# ---------------------------------------------------------------------------------------------
# Encoding


def _path_str(parts: list[object]) -> str:
    out = ""
    for part in reversed(parts):
        if isinstance(part, int):
            out += f"[{part}]"
        elif out:
            out += f".{part}"
        else:
            out = str(part)
    return out or "message"


def _has_surrogate(s: str) -> bool:
    if s.isascii():
        return False
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _unencodable(value: object, depth: int, path: list[object]) -> str | None:
    """The first thing in ``value`` (depth-first, in order) that JSON cannot carry; ``path`` is
    filled (innermost first) with where it is."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        if _INT_MIN <= value <= _INT_MAX:
            return None
        return "integer outside the 64-bit range"
    if isinstance(value, float):
        return None if math.isfinite(value) else "NaN or infinite number"
    if isinstance(value, str):
        return "string with a lone surrogate" if _has_surrogate(value) else None
    if isinstance(value, dict):
        if depth >= MAX_ENCODE_DEPTH:
            return f"nesting deeper than {MAX_ENCODE_DEPTH}"
        for key, item in value.items():
            if not isinstance(key, str):
                return "non-string key"
            if _has_surrogate(key):
                return "key with a lone surrogate"
            problem = _unencodable(item, depth + 1, path)
            if problem is not None:
                path.append(key)
                return problem
        return None
    if isinstance(value, list):
        if depth >= MAX_ENCODE_DEPTH:
            return f"nesting deeper than {MAX_ENCODE_DEPTH}"
        for i, item in enumerate(value):
            problem = _unencodable(item, depth + 1, path)
            if problem is not None:
                path.append(i)
                return problem
        return None
    return f"unsupported value of type {type(value).__name__}"


_dumps = orjson.dumps
#: str-subclass keys are str keys (the walk above has refused every other kind of key).
_DUMPS_OPTIONS = orjson.OPT_NON_STR_KEYS


def _dumps_default(value: object) -> object:
    """orjson writes subclasses of str, int, dict and list as their base; a float subclass is a
    float too (the walk above has refused everything JSON cannot carry)."""
    if isinstance(value, float):
        return float(value)
    raise TypeError


def encode(msg: object, direction: str) -> Result:
    """Validate a message and serialise it compactly (orjson's bytes, no newline).

    Returns ``(line_bytes, None)`` or ``(None, rejection)``: the validation rejection unchanged,
    ``invalid`` for what JSON cannot carry, ``too-large`` when the line would reach
    ``MAX_LINE_BYTES``. Never raises.
    """
    checked, rejection = validate(msg, direction)
    if rejection is not None:
        return None, rejection
    path: list[object] = []
    problem = _unencodable(checked, 0, path)
    if problem is not None:
        return None, _rejection("invalid", f"{_path_str(path)} cannot be encoded: {problem}", checked)
    data = _dumps(checked, default=_dumps_default, option=_DUMPS_OPTIONS)
    if len(data) >= MAX_LINE_BYTES:
        return None, _rejection(
            "too-large", f"encoded line is {len(data)} bytes; the limit is {MAX_LINE_BYTES - 1}", checked
        )
    return data, None


def message(type: str, run: str, seq: int, payload: dict[str, Any] | None = None) -> dict[str, Any]:
    """Build a message: ``v``, ``seq``, ``type``, ``run`` first, then the payload's other fields in
    their order (a payload's own envelope fields never win)."""
    msg: dict[str, Any] = {"v": VERSION, "seq": seq, "type": type, "run": run}
    if payload:
        for key, value in payload.items():
            if key not in msg:
                msg[key] = value
    return msg


def rejection_ack(rejection: Rejection) -> dict[str, Any]:
    """The ``control-ack`` payload answering a rejected control line: ``{ref?, status, reason}``."""
    payload: dict[str, Any] = {}
    if rejection.seq is not None:
        payload["ref"] = rejection.seq
    payload["status"] = "rejected"
    payload["reason"] = rejection.reason
    return payload


# ---------------------------------------------------------------------------------------------
# Attributes as PyO3 makes them: the Rust classes' attributes are PyO3 getters and setters, whose
# misuse CPython and PyO3 word; these make the properties below refuse it alike.

_Class = TypeVar("_Class", bound=type)


def _u64(value: SupportsIndex) -> int:
    """``value`` as PyO3 converts it to a Rust ``u64`` (a ``seq`` setter's argument): an int (a
    bool is 0 or 1) or anything with ``__index__``, else ``TypeError``; ``OverflowError`` outside
    ``0 ..= 2**64 - 1``. CPython words both, through the same calls."""
    n = operator.index(value)  # "'str' object cannot be interpreted as an integer", as PyO3's
    n.to_bytes(8, "little")  # "can't convert negative int to unsigned" / "int too big to convert"
    return n


def _no_deleter(self: object) -> NoReturn:
    raise AttributeError("property has no deleter")


def _pyo3_attributes(cls: _Class) -> _Class:
    """Make the public properties of ``cls`` refuse what a PyO3 attribute refuses, worded alike: a
    property with no setter is read-only (setting or deleting it raises CPython's "attribute 'x' of
    'Cls' objects is not writable"; the Rust type's name is ``fenwire_fast._native.Cls``), and a
    property with a setter cannot be deleted ("property has no deleter"). Getting stays a plain
    property's."""
    for name, attr in list(vars(cls).items()):
        if name.startswith("_") or not isinstance(attr, property):
            continue
        if attr.fset is None:
            message = f"attribute {name!r} of {cls.__name__!r} objects is not writable"

            def refuse(self: object, *value: object, message: str = message) -> NoReturn:
                raise AttributeError(message)

            setattr(cls, name, property(attr.fget, refuse, refuse, attr.__doc__))
        else:
            setattr(cls, name, property(attr.fget, attr.fset, _no_deleter, attr.__doc__))
    return cls


def _checked_direction(direction: object) -> str:
    """``direction`` when it is ``"event"`` or ``"control"``; a ``ValueError`` where the mistake is
    made (a sender or receiver built with a typo would otherwise reject every line)."""
    if isinstance(direction, str) and direction in ("event", "control"):
        return direction
    raise ValueError(f'direction must be "event" or "control", not {direction!r}')


@_pyo3_attributes
class Sender:
    """Stamps outgoing messages with strictly increasing ``seq`` values, starting at 1."""

    __slots__ = ("_direction", "_run", "_seq")

    def __init__(self, direction: str, run: str) -> None:
        self._direction = _checked_direction(direction)
        self._run = run
        self._seq = 0

    @property
    def direction(self) -> str:
        """The direction the messages are encoded in: ``"event"`` (a child's events) or ``"control"`` (a parent's controls)."""
        return self._direction

    @direction.setter
    def direction(self, direction: str) -> None:
        self._direction = direction  # any object, as on the Rust backend: encode rejects a bad one

    @property
    def run(self) -> str:
        """The ``run`` every message is stamped with (a ``str``)."""
        return self._run

    @run.setter
    def run(self, run: str) -> None:
        self._run = run  # any object, as on the Rust backend: encode rejects a bad one

    @property
    def seq(self) -> int:
        """The last ``seq`` stamped (an ``int``, 0 before any): :meth:`next` stamps ``seq + 1`` and
        stores it only when a line was produced. May be set by hand."""
        return self._seq

    @seq.setter
    def seq(self, seq: int) -> None:
        self._seq = _u64(seq)

    def next(self, type: str, payload: dict[str, Any] | None = None) -> Result:
        """Build, validate and encode the next message; ``seq`` advances only when a line was
        produced. Returns ``(line_bytes, None)`` or ``(None, rejection)``."""
        seq = self._seq + 1 if self._seq < _U64_MAX else _U64_MAX  # a u64 on the Rust backend: saturates
        run = self._run
        if payload is not None and not isinstance(payload, dict):
            return None, Rejection(
                "invalid",
                R_PAYLOAD_NOT_DICT,
                seq,
                type if isinstance(type, str) else None,
                run if isinstance(run, str) else None,
            )
        line, rejection = encode(message(type, run, seq, payload), self._direction)
        if line is not None:
            self._seq = seq
        return line, rejection


# ---------------------------------------------------------------------------------------------
# Framing and receiving


@_pyo3_attributes
class Framer:
    """Sans-IO line framing over bytes fed in pieces of any size.

    Splits on ``b"\\n"`` only; ``\\r`` is kept; empty lines come out as ``b""``. A line that reaches
    ``max_line_bytes`` without a newline comes out once, as its first ``max_line_bytes`` bytes, and
    the rest of it up to its newline is skipped; so the output never depends on how the input was
    split.
    """

    __slots__ = ("_max_line_bytes", "_buf", "_skipping")

    def __init__(self, max_line_bytes: int = MAX_LINE_BYTES) -> None:
        if not isinstance(max_line_bytes, int) or isinstance(max_line_bytes, bool) or max_line_bytes < 1:
            raise ValueError("max_line_bytes must be a positive integer")
        self._max_line_bytes = min(max_line_bytes, _U64_MAX)  # as the Rust backend stores it
        self._buf = b""
        self._skipping = False

    @property
    def max_line_bytes(self) -> int:
        """The line cap, in bytes (a positive ``int``, 65536 by default): a line that reaches it
        without a newline comes out once, as its first ``max_line_bytes`` bytes, and the rest of it
        up to its newline is skipped."""
        return self._max_line_bytes

    @property
    def buffered(self) -> int:
        """Bytes of an unterminated line held for the next feed."""
        return len(self._buf)

    def feed(self, data: bytes) -> list[bytes]:
        """Frame ``data``; return the complete lines it finishes, in order."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError("data must be bytes")
        data = bytes(data)
        if self._skipping:
            nl = data.find(b"\n")
            if nl < 0:
                return []
            self._skipping = False
            data = data[nl + 1 :]
        if self._buf:
            data = self._buf + data
            self._buf = b""
        pieces = data.split(b"\n")
        tail = pieces.pop()
        cap = self._max_line_bytes
        if len(data) < cap:  # then no piece can reach the cap: nothing to cut
            self._buf = tail
            return pieces
        lines = [piece if len(piece) < cap else piece[:cap] for piece in pieces]
        if len(tail) >= cap:
            lines.append(tail[:cap])
            self._skipping = True
        else:
            self._buf = tail
        return lines


#: The keys of ``Receiver.fast_path_counters``, in order (the Rust backend's; see its docstring).
_FAST_PATH_COUNTERS = (
    "dict_template_hits",
    "dict_template_misses",
    "dict_template_fallbacks",
    "dict_unfit",
    "str_one_pass_hits",
    "str_one_pass_fallbacks",
    "scan_quick_accepted",
    "scan_quick_deferred",
)


@_pyo3_attributes
class Receiver:
    """Decodes incoming lines and enforces strictly increasing ``seq`` (a line that does not increase it is ``out-of-order``)."""

    # ``_direction`` is the object given (any object may be set); ``_known`` the direction it
    # names, else "": the drain looks that up, never an object that may be unhashable.
    __slots__ = ("_direction", "_known", "_seq", "_framer", "_run", "_plain")

    def __init__(self, direction: str, *, run: str | None = None) -> None:
        self._direction = self._known = _checked_direction(direction)
        self._seq = 0
        self._framer = Framer()
        self._plain = False
        self.run = run

    @property
    def direction(self) -> str:
        """The direction the lines are decoded in: ``"event"`` (a child's events) or ``"control"`` (a parent's controls)."""
        return self._direction

    @direction.setter
    def direction(self, direction: str) -> None:
        # any object, as on the Rust backend: a bad one has every line rejected
        self._direction = direction
        self._known = direction if isinstance(direction, str) and direction in ("event", "control") else ""

    @property
    def seq(self) -> int:
        """The last ``seq`` consumed (0 before any); a line must carry a greater one, else it is ``out-of-order``."""
        return self._seq

    @seq.setter
    def seq(self, seq: int) -> None:
        self._seq = _u64(seq)

    @property
    def run(self) -> str | None:
        """The run a plain batch belongs to (``None``: no batch is plain); see :attr:`plain`."""
        return self._run

    @run.setter
    def run(self, run: str | None) -> None:
        if run is not None and not isinstance(run, str):
            raise TypeError("run must be a str or None")
        self._run = run

    @property
    def plain(self) -> bool:
        """The last :meth:`feed` returned only messages (no rejection) of :attr:`run`, none of a
        type that changes a run's mirrored state (``ready``, ``control-ack``, ``turn-started``,
        ``turn-complete``, ``result``, ``exit``); true for an empty result. Always false while
        :attr:`run` is ``None`` (so a receiver that does not ask pays nothing for it), before the
        first :meth:`feed`, and after :meth:`receive`, :meth:`scan` or :meth:`scan_rejections`."""
        return self._plain

    @property
    def buffered(self) -> int:
        """Bytes of an unterminated line held by :meth:`feed` for the next call."""
        return self._framer.buffered

    def receive(self, line: object) -> Result:
        """Decode one line and check its ``seq``. Returns ``(msg, None)`` or ``(None, rejection)``.

        A fatal rejection is returned untouched and consumes nothing; a usable ``seq`` that does not
        increase gives ``out-of-order`` (with no ``seq``); otherwise a usable ``seq`` is consumed,
        even when the line is rejected.
        """
        self._plain = False
        return self._receive(line)

    def _receive(self, line: object) -> Result:
        msg, rejection = decode(line, self._direction)
        if rejection is None:
            seq = msg["seq"]
            if type(seq) is not int:
                seq = int(seq)
            if seq <= self._seq:
                return None, Rejection(
                    "out-of-order", f"seq {seq} does not follow {self._seq}", None, msg["type"], msg["run"]
                )
            self._seq = seq
            return msg, None
        if rejection.fatal:
            return None, rejection
        seq = rejection.seq
        if seq is not None:
            if seq <= self._seq:
                return None, Rejection(
                    "out-of-order", f"seq {seq} does not follow {self._seq}", None, rejection.type, rejection.run
                )
            self._seq = seq
        return None, rejection

    def feed(self, data: bytes) -> list[Any]:
        """Frame ``data``, receive every complete non-empty line, and return the messages and
        rejections in order. An unterminated tail waits for the next call."""
        out = self._drain(data, False)
        if self._run is not None:
            self._plain = _plain_batch(out, self._run)
        return out

    def scan(self, data: bytes) -> list[Any]:
        """:meth:`feed` without dicts: the same framing, checks, seq rules and rejections, but each
        accepted line comes back as ``Scanned(type, seq, line)``, ``line`` being its exact bytes
        (no newline). Shares the framer buffer and ``seq`` with :meth:`feed`.

        On the Rust backend the framing and checking run with the GIL released (chunks of 4096
        bytes or more), so threads draining their own receivers use several cores; a
        ``bytearray`` or ``memoryview`` is copied first. A receiver is for one thread at a time."""
        return self._drain(data, True)

    def scan_rejections(self, data: bytes) -> list[tuple[int, Rejection]]:
        """:meth:`scan` for a checker that only wants the rejections: the same framing, checks and
        seq rules, but returns only ``(index, rejection)`` pairs, ``index`` being the rejection's
        place in the list :meth:`scan` would have returned (0 for the first complete non-empty
        line of ``data``)."""
        return [(i, r) for i, r in enumerate(self._drain(data, True)) if type(r) is Rejection]

    def scan_batch(self, data: bytes, *extra: object) -> ScanBatch:
        """:meth:`scan` without a Python object per line: the same framing, checks, seq rules and
        rejections (sharing the framer buffer and ``seq``), returned as one :class:`ScanBatch` of
        columns. Each rejection comes with the number of accepted lines before it, so the order of
        :meth:`scan`'s list can be rebuilt.

        On the Rust backend the columns are built with the GIL released too (chunks of 4096 bytes
        or more), and when every line of ``data`` is accepted and it ends at a line boundary with
        nothing buffered before, ``lines`` is ``data`` itself."""
        if extra:  # worded as the Rust method words it (which does not count ``self``)
            raise TypeError(f"Receiver.scan_batch() takes 1 positional arguments but {1 + len(extra)} were given")
        foreign: list[int] | None = [] if self._run is not None else None
        items = self._drain(data, True, foreign)
        index = _TYPE_INDEX.get(self._known, {})
        lines: list[bytes] = []
        ends: list[int] = []
        seqs: list[int] = []
        types = bytearray()
        rejections: list[tuple[int, Rejection]] = []
        end = 0
        for item in items:
            if type(item) is Rejection:
                rejections.append((len(lines), item))
                continue
            type_name, seq, line = item
            lines.append(line)
            end += len(line) + 1
            ends.append(end)
            seqs.append(seq)
            types.append(index[type_name])
        joined = b"\n".join(lines) + b"\n" if lines else b""
        return ScanBatch(joined, ends, seqs, bytes(types), rejections, foreign or [])

    def fast_path_counters(self, *args: object, **kwargs: object) -> dict[str, int]:
        """Diagnostic counts of this receiver's fast paths (totals since it was made), as a dict of
        ints with these keys, always in this order:

        - ``dict_template_hits``: dicts (messages and nested objects) copied from a template of
          their key order;
        - ``dict_template_misses``: dicts of 2 to 24 keys built key by key because their key order
          has no template yet (its first or second sighting) or can have none (a repeated key);
        - ``dict_template_fallbacks``: dicts of 2 to 24 keys built key by key because a template
          copy was not laid out as expected, which turns templates off for the receiver (so any
          later dict counts here too); on CPython other than 3.11 (no template copies) every dict
          from the third sighting of a key order on counts here;
        - ``dict_unfit``: dicts of fewer than 2 or more than 24 keys (never templated);
        - ``str_one_pass_hits``: non-ASCII strs written in one pass from the line's UTF-8;
        - ``str_one_pass_fallbacks``: non-ASCII strs that one pass refused, decoded by CPython;
        - ``scan_quick_accepted``: lines :meth:`scan` or :meth:`scan_rejections` accepted by the
          one-pass check alone;
        - ``scan_quick_deferred``: lines they handed to the exact check (the one-pass check was not
          sure, or the seq did not increase): unusual lines and every rejection.

        Only the Rust backend has these paths; the pure backend returns the same keys, all 0.
        The fallbacks are 0 unless something is wrong: the output stays right either way, slower."""
        # Misuse is worded as the Rust method words it (it takes no arguments at all).
        if kwargs:
            raise TypeError("Receiver.fast_path_counters() takes no keyword arguments")
        if args:
            raise TypeError(f"Receiver.fast_path_counters() takes no arguments ({len(args)} given)")
        # This backend has none of the counted paths (its own fast path in `_drain` is a
        # different one and is not counted): the same keys, all 0.
        return dict.fromkeys(_FAST_PATH_COUNTERS, 0)

    def _drain(self, data: bytes, scanned: bool, foreign: list[int] | None = None) -> list[Any]:
        """Frame and receive ``data``: messages (or ``Scanned`` records) and rejections in order.
        With ``foreign``, the indices among the accepted lines of those whose run is not
        :attr:`run` are appended to it."""
        self._plain = False
        out: list[Any] = []
        append = out.append
        run = self._run
        accepted = 0
        fast = FAST_CHECKS.get(self._known, NO_FAST_CHECKS)  # a direction set later may be wrong
        shapes = fast.shapes
        loads = _loads
        cap = MAX_LINE_BYTES
        last = self._seq
        try:
            for line in self._framer.feed(data):
                # The common case: a well-formed, valid, in-order message, surely so by its
                # shape's or type's fast check. Anything else takes the full path, which decides
                # every detail.
                if len(line) < cap:
                    try:
                        seq = shapes[(msg := loads(line))["type"]](msg, last) or fast.check(msg, last)
                    except _JSONDecodeError:
                        if not line:
                            continue  # empty lines are skipped
                        seq = 0
                    except (KeyError, TypeError):  # no shape for the type, no str type, not a dict
                        seq = fast.check(msg, last)
                    if seq:
                        last = seq
                        if foreign is not None:
                            if msg["run"] != run:
                                foreign.append(accepted)
                            accepted += 1
                        append(Scanned(msg["type"], last, line) if scanned else msg)
                        continue
                self._seq = last
                msg, rejection = self._receive(line)
                last = self._seq
                if msg is None:
                    append(rejection)
                else:
                    if foreign is not None:
                        if msg["run"] != run:
                            foreign.append(accepted)
                        accepted += 1
                    append(Scanned(msg["type"], last, line) if scanned else msg)
        finally:
            self._seq = last
        return out


_TYPE_INDEX: dict[str, dict[str, int]] = {
    "event": {name: i for i, name in enumerate(EVENT_TYPE_ORDER)},
    "control": {name: i for i, name in enumerate(CONTROL_TYPE_ORDER)},
}


class ScanBatch:
    """The accepted lines of one :meth:`Receiver.scan_batch` call, as columns, with no Python object
    per line:

    - ``lines``: the lines as one ``bytes``, each followed by ``b"\\n"``;
    - ``ends``: ``array("Q")``, each line's end offset in ``lines`` (after its newline);
    - ``seqs``: ``array("Q")``, each line's seq;
    - ``types``: ``bytes``, each line's type as its index in ``EVENT_TYPE_ORDER`` or
      ``CONTROL_TYPE_ORDER`` (by the receiver's direction);
    - ``rejections``: ``(n, rejection)`` pairs, ``n`` being the number of accepted lines before it;
    - ``foreign``: the indices of the accepted lines whose ``run`` is not the receiver's
      :attr:`Receiver.run` (always empty when that is ``None``).

    ``len()`` is the number of accepted lines; :meth:`line` gives one of them, :meth:`slice` a
    run of them as a batch of its own."""

    __slots__ = (
        "_lines",
        "_ends",
        "_seqs",
        "_types",
        "_rejections",
        "_offsets",
        "_seq_values",
        "_rejected",
        "_foreign",
    )
    _lines: bytes
    _ends: array.array[int]
    _seqs: array.array[int]
    _types: bytes
    _rejections: list[tuple[int, Rejection]]
    _offsets: list[int]
    _seq_values: list[int]
    _rejected: list[tuple[int, Rejection]]
    _foreign: list[int]

    def __init__(
        self,
        lines: bytes,
        ends: list[int],
        seqs: list[int],
        types: bytes,
        rejections: list[tuple[int, Rejection]],
        foreign: list[int],
    ) -> None:
        init = object.__setattr__
        init(self, "_lines", lines)
        init(self, "_ends", array.array("Q", ends))
        init(self, "_seqs", array.array("Q", seqs))
        init(self, "_types", types)
        init(self, "_rejections", rejections)
        init(self, "_offsets", ends)
        init(self, "_seq_values", seqs)
        init(self, "_rejected", list(rejections))
        init(self, "_foreign", foreign)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"ScanBatch objects are read-only (cannot set {name!r})")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"ScanBatch objects are read-only (cannot delete {name!r})")

    @property
    def lines(self) -> bytes:
        """The accepted lines as one ``bytes``, each followed by ``b"\\n"``."""
        return self._lines

    @property
    def ends(self) -> array.array[int]:
        """Each accepted line's end offset in ``lines``, in bytes, after its newline, as an
        ``array("Q")``."""
        return self._ends

    @property
    def seqs(self) -> array.array[int]:
        """Each accepted line's ``seq``, as an ``array("Q")``."""
        return self._seqs

    @property
    def types(self) -> bytes:
        """Each accepted line's type, one byte per line: its index in ``EVENT_TYPE_ORDER`` or
        ``CONTROL_TYPE_ORDER`` (by the receiver's direction), as ``bytes``."""
        return self._types

    @property
    def rejections(self) -> list[tuple[int, Rejection]]:
        """The rejected lines, as a ``list`` of ``(n, rejection)`` pairs, ``n`` being the number of
        accepted lines before the rejection."""
        return self._rejections

    def __len__(self) -> int:
        return len(self._offsets)

    def __repr__(self) -> str:
        n = len(self._offsets)
        return f"ScanBatch({n} lines, {self._offsets[-1] if n else 0} bytes, {len(self._rejections)} rejections)"

    @property
    def foreign(self) -> list[int]:
        """The indices of the accepted lines whose ``run`` is not the receiver's :attr:`Receiver.run`
        (always empty when that is ``None``), as a new ``list`` of ``int``."""
        return list(self._foreign)

    def slice(self, start: int, stop: int, *extra: object) -> ScanBatch:
        """Lines ``start`` to ``stop`` (not included) as a batch of their own: their bytes, ends
        counted from the slice's start, seqs, types and foreign lines, and the rejections whose
        ``n`` is ``start`` to ``stop - 1`` (to ``stop`` for a slice that ends the batch), ``n``
        counted from the slice's start. ``0 <= start <= stop <= len(batch)``; unlike a Python
        slice's, negative bounds and ``None`` are refused: a bound that is not an ``int`` (or is a
        ``bool``) raises ``TypeError``, an ``int`` out of that range ``IndexError`` (the types of
        both bounds are checked first)."""
        if extra:  # worded as the Rust method words it (which does not count ``self``)
            raise TypeError(f"ScanBatch.slice() takes 2 positional arguments but {2 + len(extra)} were given")
        n = len(self._offsets)
        for i in (start, stop):
            if type(i) is bool or not isinstance(i, int):
                raise TypeError("slice bounds must be ints")
        if not 0 <= start <= n or not 0 <= stop <= n or start > stop:
            raise IndexError("slice bounds out of range")
        offsets = self._offsets
        base = offsets[start - 1] if start else 0
        end = offsets[stop - 1] if stop else 0
        lines = self._lines if start == 0 and stop == n else self._lines[base:end]
        rejected = [(b - start, r) for b, r in self._rejected if b >= start and (b < stop or b == n and stop == n)]
        return ScanBatch(
            lines,
            [e - base for e in offsets[start:stop]],
            self._seq_values[start:stop],
            self._types[start:stop],
            rejected,
            [i - start for i in self._foreign if start <= i < stop],
        )

    def line(self, i: int) -> bytes:
        """The ``i``-th accepted line's bytes, without its newline (``i`` may be negative, as for a list)."""
        if type(i) is bool or not isinstance(i, int):
            raise TypeError("line index must be an int")
        n = len(self._offsets)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("line index out of range")
        start = self._offsets[i - 1] if i else 0
        return self._lines[start : self._offsets[i] - 1]


_RUN = operator.itemgetter("run")
_TYPE = operator.itemgetter("type")


def _plain_batch(items: list[Any], run: str) -> bool:
    """Every item a message (no rejection) of ``run``, none of a lifecycle type: one look at the
    whole batch at C speed (its runs and types)."""
    try:
        runs = set(map(_RUN, items))
        types = set(map(_TYPE, items))
    except TypeError:  # a Rejection is not subscriptable
        return False
    return LIFECYCLE_EVENT_TYPES.isdisjoint(types) and (not runs or runs == {run})


# ---------------------------------------------------------------------------------------------
# Text primitives


def _utf8_len(text: str) -> int:
    if text.isascii():
        return len(text)
    return len(text.encode("utf-8", "surrogatepass"))


def utf8_prefix(text: str, limit: int) -> str:
    """The longest prefix of ``text`` whose UTF-8 encoding is at most ``limit`` bytes; never
    splits a character."""
    if not isinstance(text, str):
        raise TypeError("text must be str")
    limit = operator.index(limit)
    if limit <= 0:
        return ""
    if len(text) <= limit // 4 or (len(text) <= limit and text.isascii()):
        return text
    if text.isascii():
        return text[:limit]
    data = text[: limit + 1].encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text[: limit + 1]
    cut = limit
    while cut > 0 and (data[cut] & 0xC0) == 0x80:
        cut -= 1
    return data[:cut].decode("utf-8", "surrogatepass")


ELLIPSIS = "\u2026"


def truncate_line(text: str, limit: int) -> str:
    """``text`` when it fits ``limit`` UTF-8 bytes; else a prefix plus ``…``, ``<= limit`` bytes in
    all (just a prefix when ``limit`` is under 3 bytes)."""
    if not isinstance(text, str):
        raise TypeError("text must be str")
    limit = operator.index(limit)
    if _utf8_len(text) <= limit:
        return text
    if limit < 3:
        return utf8_prefix(text, limit)
    return utf8_prefix(text, limit - 3) + ELLIPSIS


def _escape_char(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x100:
        return f"\\x{code:02X}"
    return f"\\u{code:04X}"


#: C0 controls but tab, newline and CR; DEL; C1 controls; lone surrogates.
_UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


def _sanitize(text: str) -> tuple[str, int]:
    """Escape control characters (C0 but tab, newline and CR; DEL; C1) as ``\\xHH`` and lone
    surrogates as ``\\uHHHH``; return the text and how many characters were escaped."""
    if _UNSAFE.search(text) is None:
        return text, 0
    return _UNSAFE.subn(_escape_char, text)


def _scrub_note(escaped: int, kept: int | None, total: int) -> str:
    parts = []
    if escaped:
        parts.append(f"{escaped} unsafe character{'s' if escaped != 1 else ''} escaped")
    if kept is not None:
        parts.append(f"kept {kept} of {total} bytes")
    return "[fenwire: " + "; ".join(parts) + "]"


def scrub(text: str, max_bytes: int) -> tuple[str, bool]:
    """Make text safe to forward: escape control characters and lone surrogates, cut it at a
    character boundary and add a note saying what was kept; the result is never over ``max_bytes``
    UTF-8 bytes. Returns ``(text, changed)``."""
    if not isinstance(text, str):
        raise TypeError("text must be str")
    limit = max(0, operator.index(max_bytes))
    scanned = text[: limit + 1]
    raw_truncated = len(text) > limit + 1
    sanitized, escaped = _sanitize(scanned)
    size = _utf8_len(sanitized)
    if not escaped and not raw_truncated and size <= limit:
        return text, False
    total = _utf8_len(text)
    if not raw_truncated and size <= limit:
        note = _scrub_note(escaped, None, total)
        if size + 2 + len(note) <= limit:
            return sanitized + "\n\n" + note, True
    # Cut: the note's length with the widest possible "kept" count bounds the room for text.
    room = limit - 2 - len(_scrub_note(escaped, limit, total))
    if room < 0:
        return utf8_prefix(sanitized, limit), True
    kept = utf8_prefix(sanitized, room)
    note = _scrub_note(escaped, _utf8_len(kept), total)
    if not kept:
        return note, True
    return kept + "\n\n" + note, True
