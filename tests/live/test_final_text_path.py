"""The parent's handling of ``final-text-path``: read, then remove; refuse anything
that is not a private regular file of ours in the run's directory, and say so."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import pytest
from fenwire_fast.live.parent.channel import Channel
from fenwire_fast.live.parent.final_text import FinalTextRead, PrivateDirectory

FULL = "Ünïcödé answer: " + "x" * 70_000
CUT = FULL[:1000]


def _setup(tmp_path: Path) -> tuple[Path, Path, Path]:
    d = tmp_path / "run"
    d.mkdir(mode=0o700)
    events = d / "events.jsonl"
    control = d / "control.jsonl"
    for p in (events, control):
        p.touch(mode=0o600)
    return d, events, control


def _result(events: Path, control: Path, payload: dict[str, Any]) -> Channel:
    lines = [
        {"v": 1, "seq": 1, "type": "ready", "run": "r"},
        {"v": 1, "seq": 2, "type": "result", "run": "r", "stop-reason": "stop", **payload},
        {"v": 1, "seq": 3, "type": "exit", "run": "r", "status": "done"},
    ]
    events.write_text("".join(json.dumps(x) + "\n" for x in lines))
    ch = Channel("r", str(control), str(events))
    ch.poll()
    assert ch.result is not None and ch.status == "done"
    return ch


def _file(path: Path, text: str = FULL, mode: int = 0o600) -> Path:
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, mode)
    os.write(fd, text.encode())
    os.close(fd)
    os.chmod(path, mode)
    return path


def test_a_private_file_is_read_and_removed(tmp_path: Path) -> None:
    d, events, control = _setup(tmp_path)
    f = _file(d / "fenwire-final-1.txt")
    ch = _result(events, control, {"final-text": CUT, "truncated?": True, "final-text-path": str(f)})
    assert ch.final_text == FULL
    assert ch.final_text_note is None
    assert not f.exists()
    assert ch.result is not None and ch.result["final-text"] == CUT  # the wire message is kept as is


@pytest.mark.parametrize(
    "case",
    ["symlink", "mode", "outside", "hardlink", "event-file", "prefix", "relative", "missing", "fifo", "directory"],
)
def test_refusals_keep_the_cut_text_and_remove_nothing(tmp_path: Path, case: str) -> None:
    d, events, control = _setup(tmp_path)
    keep: list[Path] = []
    if case == "symlink":
        target = _file(d / "target.txt")
        path = d / "link.txt"
        path.symlink_to(target)
        keep += [target, path]
        why = "is a symlink"
    elif case == "mode":
        path = _file(d / "f.txt", mode=0o644)
        keep.append(path)
        why = "accessible to others (mode 0644)"
    elif case == "outside":
        other = tmp_path / "elsewhere"
        other.mkdir(mode=0o700)
        path = _file(other / "f.txt")
        keep.append(path)
        why = "is not directly inside the run's private directory"
    elif case == "hardlink":
        path = _file(d / "f.txt")
        os.link(path, tmp_path / "second-name")
        keep.append(path)
        why = "has other hard links"
    elif case == "event-file":
        path = control
        control.write_text(FULL)
        keep.append(path)
        why = "one of the channel's own files"
    elif case == "prefix":
        path = _file(d / "f.txt", text="something else entirely")
        keep.append(path)
        why = "does not start with the result's final-text"
    elif case == "relative":
        path = Path("f.txt")
        why = "is not absolute"
    elif case == "missing":
        path = d / "nothing.txt"
        why = "cannot open"
    elif case == "fifo":
        path = d / "pipe"
        os.mkfifo(path, 0o600)
        keep.append(path)
        why = "is not a regular file"
    else:
        path = d / "sub"
        path.mkdir(mode=0o700)
        keep.append(path)
        why = "is not a regular file"
    ch = _result(events, control, {"final-text": CUT, "truncated?": True, "final-text-path": str(path)})
    assert ch.final_text == CUT
    assert ch.final_text_note is not None and why in ch.final_text_note, ch.final_text_note
    assert ch.final_text_note.startswith(f"final text truncated to {len(CUT.encode())} bytes: ")
    for p in keep:
        assert os.path.lexists(p), f"{p} was removed"
    assert events.exists() and control.exists()


def test_truncated_without_a_path_is_noted(tmp_path: Path) -> None:
    _, events, control = _setup(tmp_path)
    ch = _result(events, control, {"final-text": CUT, "truncated?": True})
    assert ch.final_text == CUT
    assert ch.final_text_note == f"final text truncated to {len(CUT.encode())} bytes; the child kept no full copy"


def test_a_complete_result_needs_no_note(tmp_path: Path) -> None:
    _, events, control = _setup(tmp_path)
    ch = _result(events, control, {"final-text": "short"})
    assert ch.final_text == "short" and ch.final_text_note is None


# -- the file changes while it is read: checked again at the end and around the unlink ------------


def _reading(d: Path, text: str = FULL) -> tuple[FinalTextRead, PrivateDirectory, Path]:
    """A read of ``d/f.txt`` started and one small step in (the rest is read by the next step)."""
    f = _file(d / "f.txt", text=text)
    private = PrivateDirectory(str(d))
    read = FinalTextRead.start(private, str(f), text[:10], cap=1 << 20)
    assert not read.done, read.why
    assert not read.step(100)
    return read, private, f


def test_a_name_replaced_during_the_read_is_refused_and_the_new_file_kept(tmp_path: Path) -> None:
    d, _, _ = _setup(tmp_path)
    read, private, f = _reading(d)
    _file(d / "other.txt", text=FULL)
    os.replace(d / "other.txt", f)
    assert read.step(1 << 20)
    assert read.text is None and read.why is not None and "was replaced while it was read" in read.why
    assert f.read_text() == FULL  # the file now under the name is not removed
    private.close()


def test_a_name_removed_during_the_read_is_refused(tmp_path: Path) -> None:
    d, _, _ = _setup(tmp_path)
    read, private, f = _reading(d)
    os.unlink(f)
    assert read.step(1 << 20)
    assert read.text is None and read.why is not None and "was removed while it was read" in read.why
    private.close()


@pytest.mark.parametrize("where", ["inside", "outside"])
def test_a_link_made_during_the_read_is_refused_and_nothing_removed(tmp_path: Path, where: str) -> None:
    d, _, _ = _setup(tmp_path)
    read, private, f = _reading(d)
    second = (d if where == "inside" else tmp_path) / "second-name"
    os.link(f, second)
    assert read.step(1 << 20)
    assert read.text is None and read.why is not None and "has other hard links" in read.why
    assert f.read_text() == FULL and second.read_text() == FULL
    private.close()


def test_two_links_when_opened_and_one_at_the_end_is_still_refused(tmp_path: Path) -> None:
    """What a racing child can make ``open`` see (two links: the name is an outside file's second
    link) and then the end of the read (one link: that name removed again): refused, for the open
    file may be the outside one. The race itself is in ``test_hostile_child``; here the file's
    state at ``open`` is set by hand."""
    d, _, _ = _setup(tmp_path)
    read, private, f = _reading(d)
    second = tmp_path / "second-name"
    os.link(f, second)
    read._st = os.stat(f)  # as if the open had seen this: two links
    os.unlink(second)  # one again by the end of the read
    assert read.step(1 << 20)
    assert read.text is None and read.why is not None and "has other hard links" in read.why
    assert f.read_text() == FULL
    private.close()


def test_a_link_outside_seen_only_once_the_name_is_removed_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last check: while a child removes a link, the kernel drops the link count before the
    name is gone, so the checks before the unlink can see one link although another name (outside)
    remains. After its own unlink the parent must find no link left; here one is, so the text is
    refused, the outside file keeps its name and its text, and only the private name is gone."""
    d, _, _ = _setup(tmp_path)
    read, private, f = _reading(d)
    outside = tmp_path / "outside-name"
    os.link(f, outside)
    monkeypatch.setattr(FinalTextRead, "_still_the_file_read", lambda self: None)  # the kernel's window
    assert read.step(1 << 20)
    assert read.text is None and read.why is not None
    assert "has other hard links (found when its name was removed)" in read.why
    assert not f.exists()
    assert outside.read_text() == FULL
    private.close()


# -- decoded as it is read: the same text as one decode, whatever the steps -----------------------

NASTY = [
    b"",
    b"plain ascii",
    "Ünïcödé 日本語 🙂 done".encode(),
    b"\xff\xfe not UTF-8 at all \x80",
    b"cut at the end \xf0\x9f",  # a character the file never finishes
    b"\xf0\x9f" + b"x",  # an unfinished character followed by more
    b"\xed\xa0\x80 an encoded surrogate",
    "\ud800 surrogatepass".encode("utf-8", "surrogatepass"),
    b"\xc3\x28 \xe2\x82 \xe2\x28\xa1 \xf0\x28\x8c\xbc \xf8\xa1\xa1\xa1\xa1 overlong \xc0\xaf",
]


def _read_all(d: Path, data: bytes, prefix: str, budgets: list[int]) -> FinalTextRead:
    f = d / "f.txt"
    fd = os.open(f, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    os.write(fd, data)
    os.close(fd)
    private = PrivateDirectory(str(d))
    read = FinalTextRead.start(private, str(f), prefix, cap=1 << 20)
    steps = 0
    while not read.step(budgets[steps % len(budgets)]):
        steps += 1
    private.close()
    if f.exists():
        f.unlink()
    return read


@pytest.mark.parametrize("seed", range(6))
def test_the_text_is_one_decode_of_the_file_however_it_is_stepped(tmp_path: Path, seed: int) -> None:
    """Invalid UTF-8 becomes U+FFFD exactly as ``bytes.decode("utf-8", "replace")`` makes it, with
    characters cut anywhere between steps; the prefix is checked against the text as it comes."""
    rng = random.Random(seed)
    samples = [*NASTY, bytes(rng.randrange(256) for _ in range(3000)), b"".join(rng.sample(NASTY, 5)) * 40]
    for data in samples:
        whole = data.decode("utf-8", "replace")
        budgets = [rng.randint(1, 9) for _ in range(7)]
        for cut in sorted({0, 1, len(whole) // 2, len(whole)}):
            read = _read_all(tmp_path, data, whole[:cut], budgets)
            assert read.text == whole, (data, budgets)
        if whole:
            wrong = whole[: len(whole) // 2] + ("?" if whole[len(whole) // 2] != "?" else "!")
            read = _read_all(tmp_path, data, wrong, budgets)
            assert read.text is None and read.why is not None and "does not start with" in read.why
        read = _read_all(tmp_path, data, whole + "more", budgets)  # a prefix longer than the text
        assert read.text is None and read.why is not None and "does not start with" in read.why


def test_a_wrong_prefix_is_refused_at_the_first_step(tmp_path: Path) -> None:
    d, _, _ = _setup(tmp_path)
    f = _file(d / "f.txt", text="x" * (8 << 20))
    private = PrivateDirectory(str(d))
    read = FinalTextRead.start(private, str(f), "y", cap=16 << 20)
    assert read.step(64 << 10)  # one 64 KiB step, not the whole 8 MiB
    assert read.why is not None and "does not start with" in read.why
    assert f.exists()
    private.close()
