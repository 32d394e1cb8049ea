"""Which process, started when, in which boot: what tells a run's child from a process that took
its pid later."""

from __future__ import annotations

__all__ = ["process_start", "boot_id"]


def process_start(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks after boot, from ``/proc``); ``None`` when no such
    process is running (a zombie has ended) or ``/proc`` cannot tell."""
    try:
        with open(f"/proc/{int(pid)}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return None
    # the name (field 2) is in parentheses and may hold anything: count fields after the last ")"
    rest = stat[stat.rfind(b")") + 2 :].split()
    try:
        if rest[0] in (b"Z", b"X"):  # field 3, the state: ended, not reaped yet
            return None
        return int(rest[19])  # field 22, starttime
    except (IndexError, ValueError):
        return None


_BOOT_ID: str | None = None


def boot_id() -> str | None:
    """This boot of the machine (``/proc/sys/kernel/random/boot_id``), or ``None``."""
    global _BOOT_ID
    if _BOOT_ID is None:
        try:
            with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as handle:
                _BOOT_ID = handle.read().strip()
        except OSError:
            return None
    return _BOOT_ID
