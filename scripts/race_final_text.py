#!/usr/bin/env python3
"""The hard-link race on ``final-text-path``: how often does the parent read an outside file?

A hostile child hard-links a file from outside its private directory (the *victim*, readable by
the parent's user) into that directory, names the link in its ``result``, and removes the link
again, over and over. If the parent opens the name while it has two links and checks the link
count after the second one is gone, it sees one link and hands over the victim's text. This script
runs a process doing exactly that while the parent follows the name ``--attempts`` times through
its own code path (:class:`~fenwire_fast.live.parent.channel.Channel`), and prints how many reads returned
the victim's text (0 is the only right answer), how many were refused, and how the victim fared.

    python scripts/race_final_text.py --attempts 20000

Exit status 1 when any read returned the victim's text or the victim was changed or removed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fenwire_fast import IMPLEMENTATION
from fenwire_fast.live.parent.channel import Channel

VICTIM = "-----BEGIN VICTIM----- the parent must never read this -----END VICTIM-----\n"
PREFIX = "-----BEGIN VICTIM-----"

#: argv: victim path, link path. Links the victim in and removes the link, forever.
LINKER = r"""
import os, sys
victim, link = sys.argv[1], sys.argv[2]
while True:
    try:
        os.link(victim, link)
    except FileExistsError:
        pass
    try:
        os.unlink(link)
    except FileNotFoundError:
        pass
"""


def _line(seq: int, type_: str, **payload: object) -> str:
    return json.dumps({"v": 1, "seq": seq, "type": type_, "run": "r", **payload})


def race(root: Path, attempts: int) -> tuple[dict[str, int], dict[str, int]]:
    """Follow ``final-text-path`` ``attempts`` times while a process links the victim in and out;
    return the outcomes counted, and the refusals counted by reason."""
    outside = root / "outside"
    outside.mkdir(mode=0o700)
    victim = outside / "victim"
    fd = os.open(victim, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, VICTIM.encode())
    os.close(fd)
    priv = root / "priv"
    priv.mkdir(mode=0o700)
    events, control = priv / "events.jsonl", priv / "control.jsonl"
    control.touch(mode=0o600)
    link = priv / "final.txt"
    result = {"stop-reason": "stop", "final-text": PREFIX, "truncated?": True, "final-text-path": str(link)}
    lines = _line(1, "ready") + "\n" + _line(2, "result", **result) + "\n" + _line(3, "exit", status="done") + "\n"
    linker = subprocess.Popen([sys.executable, "-c", LINKER, str(victim), str(link)])
    counts = {"victim": 0, "refused": 0, "other": 0}
    reasons: dict[str, int] = {}
    try:
        while os.stat(victim).st_nlink < 2:  # the linker is running
            assert linker.poll() is None
            time.sleep(0.001)
        for _ in range(attempts):
            events.write_text(lines)
            with Channel("r", str(control), str(events)) as ch:
                ch.poll()
                assert ch.exit is not None and ch.result is not None
                if ch.final_text_note is not None:
                    counts["refused"] += 1
                    why = ch.final_text_note.split(": ", 1)[-1].replace(repr(str(link)), "<path>")
                    reasons[why] = reasons.get(why, 0) + 1
                elif ch.final_text == VICTIM:
                    counts["victim"] += 1
                else:
                    counts["other"] += 1
    finally:
        linker.kill()
        linker.wait()
    counts["victim intact"] = int(victim.read_text() == VICTIM and os.stat(victim).st_nlink >= 1)
    return counts, reasons


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--attempts", type=int, default=20_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fenwire-race-") as tmp:
        started = time.monotonic()
        counts, reasons = race(Path(tmp), args.attempts)
        took = time.monotonic() - started
    print(
        f"{IMPLEMENTATION}: {counts['victim']} of {args.attempts} reads returned the outside file's text; "
        f"{counts['refused']} refused, {counts['other']} other; victim intact: {bool(counts['victim intact'])} "
        f"({took:.1f} s)"
    )
    for why, n in sorted(reasons.items(), key=lambda kv: -kv[1]):
        print(f"  {n:6d} refused: {why}")
    return 0 if counts["victim"] == 0 and counts["victim intact"] else 1


if __name__ == "__main__":
    sys.exit(main())
