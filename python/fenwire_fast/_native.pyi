"""Type stubs for the Rust backend ``fenwire_fast._native`` (same names as ``fenwire_fast._pure``)."""

from array import array
from typing import Any, Final, Self, final

from ._types import Rejection, Scanned

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

__version__: Final[str]
IMPLEMENTATION: Final[str]

def decode(line: object, direction: object) -> tuple[dict[str, Any] | None, Rejection | None]:
    """Decode and validate one line (``bytes`` or ``str``, without its newline).

    Check order: not a line, too large, not UTF-8, not JSON, not an object, then ``validate``.
    Returns ``(msg, None)`` or ``(None, rejection)``; never raises.
    """

def validate(msg: object, direction: object) -> tuple[Any, Rejection | None]:
    """Check a message (a dict) against the envelope and its type's schema.

    Returns ``(msg, None)`` (the same object) or ``(None, rejection)``; never raises.
    """

def encode(msg: object, direction: object) -> tuple[bytes | None, Rejection | None]:
    """Validate a message and serialise it compactly (orjson's bytes, no newline).

    Returns ``(line_bytes, None)`` or ``(None, rejection)``: the validation rejection unchanged,
    ``invalid`` for what JSON cannot carry, ``too-large`` when the line would reach
    ``MAX_LINE_BYTES``. Never raises.
    """

def message(type: object, run: object, seq: object, payload: object = None) -> dict[str, Any]:
    """Build a message: ``v``, ``seq``, ``type``, ``run`` first, then the payload's other fields in
    their order (a payload's own envelope fields never win).
    """

def rejection_ack(rejection: Rejection) -> dict[str, Any]:
    """The ``control-ack`` payload answering a rejected control line: ``{ref?, status, reason}``."""

def utf8_prefix(text: str, limit: int) -> str:
    """The longest prefix of ``text`` whose UTF-8 encoding is at most ``limit`` bytes; never
    splits a character.
    """

def truncate_line(text: str, limit: int) -> str:
    """``text`` when it fits ``limit`` UTF-8 bytes; else a prefix plus ``…``, ``<= limit`` bytes in
    all (just a prefix when ``limit`` is under 3 bytes).
    """

def scrub(text: str, max_bytes: int) -> tuple[str, bool]:
    """Make text safe to forward: escape control characters and lone surrogates, cut it at a
    character boundary and add a note saying what was kept; the result is never over ``max_bytes``
    UTF-8 bytes. Returns ``(text, changed)``.
    """

def _tables() -> dict[str, Any]: ...  # the Rust copies of the protocol tables, for the parity tests

@final
class Sender:
    """Stamps outgoing messages with strictly increasing ``seq`` values, starting at 1."""

    def __new__(cls, direction: Any, run: Any) -> Self: ...
    @property
    def direction(self) -> Any:
        """The direction the messages are encoded in: ``"event"`` (a child's events) or ``"control"`` (a parent's controls)."""
    @direction.setter
    def direction(self, direction: Any) -> None: ...
    @property
    def run(self) -> Any:
        """The ``run`` every message is stamped with (a ``str``)."""
    @run.setter
    def run(self, run: Any) -> None: ...
    @property
    def seq(self) -> int:
        """The last ``seq`` stamped (an ``int``, 0 before any): :meth:`next` stamps ``seq + 1`` and
        stores it only when a line was produced. May be set by hand.
        """
    @seq.setter
    def seq(self, seq: int) -> None: ...
    def next(self, type: object, payload: object = None) -> tuple[bytes | None, Rejection | None]:
        """Build, validate and encode the next message; ``seq`` advances only when a line was
        produced. Returns ``(line_bytes, None)`` or ``(None, rejection)``.
        """

@final
class Receiver:
    """Decodes incoming lines and enforces strictly increasing ``seq`` (a line that does not increase it is ``out-of-order``)."""

    def __new__(cls, direction: Any, *, run: str | None = None) -> Self: ...
    @property
    def direction(self) -> Any:
        """The direction the lines are decoded in: ``"event"`` (a child's events) or ``"control"`` (a parent's controls)."""
    @direction.setter
    def direction(self, direction: Any) -> None: ...
    @property
    def seq(self) -> int:
        """The last ``seq`` consumed (0 before any); a line must carry a greater one, else it is ``out-of-order``."""
    @seq.setter
    def seq(self, seq: int) -> None: ...
    @property
    def buffered(self) -> int:
        """Bytes of an unterminated line held by :meth:`feed` for the next call."""
    @property
    def run(self) -> str | None:
        """The run a plain batch belongs to (``None``: no batch is plain); see :attr:`plain`."""
    @run.setter
    def run(self, run: str | None) -> None: ...
    @property
    def plain(self) -> bool:
        """The last :meth:`feed` returned only messages (no rejection) of :attr:`run`, none of a
        type that changes a run's mirrored state (``ready``, ``control-ack``, ``turn-started``,
        ``turn-complete``, ``result``, ``exit``); true for an empty result. Always false while
        :attr:`run` is ``None`` (so a receiver that does not ask pays nothing for it), before the
        first :meth:`feed`, and after :meth:`receive`, :meth:`scan` or :meth:`scan_rejections`.
        """
    def receive(self, line: object) -> tuple[dict[str, Any] | None, Rejection | None]:
        """Decode one line and check its ``seq``. Returns ``(msg, None)`` or ``(None, rejection)``.

        A fatal rejection is returned untouched and consumes nothing; a usable ``seq`` that does not
        increase gives ``out-of-order`` (with no ``seq``); otherwise a usable ``seq`` is consumed,
        even when the line is rejected.
        """
    def feed(self, data: bytes | bytearray | memoryview) -> list[dict[str, Any] | Rejection]:
        """Frame ``data``, receive every complete non-empty line, and return the messages and
        rejections in order. An unterminated tail waits for the next call.
        """
    def scan(self, data: bytes | bytearray | memoryview) -> list[Scanned | Rejection]:
        """:meth:`feed` without dicts: the same framing, checks, seq rules and rejections, but each
        accepted line comes back as ``Scanned(type, seq, line)``, ``line`` being its exact bytes
        (no newline). Shares the framer buffer and ``seq`` with :meth:`feed`.

        On the Rust backend the framing and checking run with the GIL released (chunks of 4096
        bytes or more), so threads draining their own receivers use several cores; a
        ``bytearray`` or ``memoryview`` is copied first. A receiver is for one thread at a time.
        """
    def scan_rejections(self, data: bytes | bytearray | memoryview) -> list[tuple[int, Rejection]]:
        """:meth:`scan` for a checker that only wants the rejections: the same framing, checks and
        seq rules, but returns only ``(index, rejection)`` pairs, ``index`` being the rejection's
        place in the list :meth:`scan` would have returned (0 for the first complete non-empty
        line of ``data``).
        """
    def scan_batch(self, data: bytes | bytearray | memoryview) -> ScanBatch:
        """:meth:`scan` without a Python object per line: the same framing, checks, seq rules and
        rejections (sharing the framer buffer and ``seq``), returned as one :class:`ScanBatch` of
        columns. Each rejection comes with the number of accepted lines before it, so the order of
        :meth:`scan`'s list can be rebuilt.

        On the Rust backend the columns are built with the GIL released too (chunks of 4096 bytes
        or more), and when every line of ``data`` is accepted and it ends at a line boundary with
        nothing buffered before, ``lines`` is ``data`` itself.
        """
    def fast_path_counters(self) -> dict[str, int]:
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
        The fallbacks are 0 unless something is wrong: the output stays right either way, slower.
        """

@final
class Framer:
    r"""Sans-IO line framing over bytes fed in pieces of any size.

    Splits on ``b"\n"`` only; ``\r`` is kept; empty lines come out as ``b""``. A line that reaches
    ``max_line_bytes`` without a newline comes out once, as its first ``max_line_bytes`` bytes, and
    the rest of it up to its newline is skipped; so the output never depends on how the input was
    split.
    """

    def __new__(cls, max_line_bytes: int = 65536) -> Self: ...
    @property
    def max_line_bytes(self) -> int:
        """The line cap, in bytes (a positive ``int``, 65536 by default): a line that reaches it
        without a newline comes out once, as its first ``max_line_bytes`` bytes, and the rest of it
        up to its newline is skipped.
        """
    @property
    def buffered(self) -> int:
        """Bytes of an unterminated line held for the next feed."""
    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes]:
        """Frame ``data``; return the complete lines it finishes, in order."""

@final
class ScanBatch:
    r"""The accepted lines of one :meth:`Receiver.scan_batch` call, as columns, with no Python object
    per line:

    - ``lines``: the lines as one ``bytes``, each followed by ``b"\n"``;
    - ``ends``: ``array("Q")``, each line's end offset in ``lines`` (after its newline);
    - ``seqs``: ``array("Q")``, each line's seq;
    - ``types``: ``bytes``, each line's type as its index in ``EVENT_TYPE_ORDER`` or
      ``CONTROL_TYPE_ORDER`` (by the receiver's direction);
    - ``rejections``: ``(n, rejection)`` pairs, ``n`` being the number of accepted lines before it;
    - ``foreign``: the indices of the accepted lines whose ``run`` is not the receiver's
      :attr:`Receiver.run` (always empty when that is ``None``).

    ``len()`` is the number of accepted lines; :meth:`line` gives one of them, :meth:`slice` a
    run of them as a batch of its own.
    """

    @property
    def lines(self) -> bytes:
        r"""The accepted lines as one ``bytes``, each followed by ``b"\n"``."""
    @property
    def ends(self) -> array[int]:
        """Each accepted line's end offset in ``lines``, in bytes, after its newline, as an
        ``array("Q")``.
        """
    @property
    def seqs(self) -> array[int]:
        """Each accepted line's ``seq``, as an ``array("Q")``."""
    @property
    def types(self) -> bytes:
        """Each accepted line's type, one byte per line: its index in ``EVENT_TYPE_ORDER`` or
        ``CONTROL_TYPE_ORDER`` (by the receiver's direction), as ``bytes``.
        """
    @property
    def rejections(self) -> list[tuple[int, Rejection]]:
        """The rejected lines, as a ``list`` of ``(n, rejection)`` pairs, ``n`` being the number of
        accepted lines before the rejection.
        """
    @property
    def foreign(self) -> list[int]:
        """The indices of the accepted lines whose ``run`` is not the receiver's :attr:`Receiver.run`
        (always empty when that is ``None``), as a new ``list`` of ``int``.
        """
    def __len__(self) -> int: ...
    def slice(self, start: int, stop: int) -> ScanBatch:
        """Lines ``start`` to ``stop`` (not included) as a batch of their own: their bytes, ends
        counted from the slice's start, seqs, types and foreign lines, and the rejections whose
        ``n`` is ``start`` to ``stop - 1`` (to ``stop`` for a slice that ends the batch), ``n``
        counted from the slice's start. ``0 <= start <= stop <= len(batch)``; unlike a Python
        slice's, negative bounds and ``None`` are refused: a bound that is not an ``int`` (or is a
        ``bool``) raises ``TypeError``, an ``int`` out of that range ``IndexError`` (the types of
        both bounds are checked first)."""
    def line(self, i: int) -> bytes:
        """The ``i``-th accepted line's bytes, without its newline (``i`` may be negative, as for a list)."""
