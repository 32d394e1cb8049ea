"""Type stubs for the Rust backend ``fenwire_fast._native`` (same names as ``fenwire_fast._pure``)."""

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
    "utf8_prefix",
    "truncate_line",
    "scrub",
]

__version__: Final[str]
IMPLEMENTATION: Final[str]

def decode(line: object, direction: object) -> tuple[dict[str, Any] | None, Rejection | None]: ...
def validate(msg: object, direction: object) -> tuple[Any, Rejection | None]: ...
def encode(msg: object, direction: object) -> tuple[bytes | None, Rejection | None]: ...
def message(type: object, run: object, seq: object, payload: object = None) -> dict[str, Any]: ...
def rejection_ack(rejection: Rejection) -> dict[str, Any]: ...
def utf8_prefix(text: str, limit: int) -> str: ...
def truncate_line(text: str, limit: int) -> str: ...
def scrub(text: str, max_bytes: int) -> tuple[str, bool]: ...
def _tables() -> dict[str, Any]: ...  # the Rust copies of the protocol tables, for the parity tests

@final
class Sender:
    direction: Any
    run: Any
    seq: int
    def __new__(cls, direction: Any, run: Any) -> Self: ...
    def next(self, type: object, payload: object = None) -> tuple[bytes | None, Rejection | None]: ...

@final
class Receiver:
    direction: Any
    seq: int
    def __new__(cls, direction: Any) -> Self: ...
    @property
    def buffered(self) -> int: ...
    def receive(self, line: object) -> tuple[dict[str, Any] | None, Rejection | None]: ...
    def feed(self, data: bytes | bytearray | memoryview) -> list[dict[str, Any] | Rejection]: ...
    def scan(self, data: bytes | bytearray | memoryview) -> list[Scanned | Rejection]:
        """``feed`` without dicts: the same framing, line cap, checks, seq rules and rejections, in
        order, but each accepted line comes back as ``Scanned(type, seq, line)`` with ``line`` its
        exact bytes (no newline). Shares the framer buffer and ``seq`` with ``feed``.

        The framing and checking run with the GIL released (chunks of 4096 bytes or more), so
        threads draining their own receivers use several cores; a ``bytearray`` or
        ``memoryview`` is copied first. A receiver is for one thread at a time: a call on it
        while another thread's ``scan`` runs raises ``RuntimeError`` (already borrowed).
        """

@final
class Framer:
    def __new__(cls, max_line_bytes: int = 65536) -> Self: ...
    @property
    def max_line_bytes(self) -> int: ...
    @property
    def buffered(self) -> int: ...
    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes]: ...
