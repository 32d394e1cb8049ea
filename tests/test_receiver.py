"""Receiver.receive (docs/design-decisions.md, "Sequence numbers"), Framer and Receiver.feed ("Framing
and the line cap")."""

from __future__ import annotations

from types import ModuleType

import pytest
from conftest import assert_strict_equal
from fenwire_fast import MAX_LINE_BYTES, Rejection

R_TOO_LARGE = "line is 65536 bytes or more; the limit is 65535"


def cancel(seq: object, run: str = "r") -> bytes:
    return b'{"v":1,"seq":%s,"type":"cancel","run":"%s"}' % (str(seq).encode(), run.encode())


def prompt_of_size(size: int, seq: int = 1) -> bytes:
    head = b'{"v":1,"seq":%d,"type":"prompt","run":"r","text":"' % seq
    return head + b"a" * (size - len(head) - 2) + b'"}'


class TestReceive:
    def test_starts_at_zero(self, backend: ModuleType) -> None:
        rx = backend.Receiver("control")
        assert rx.seq == 0 and type(rx.seq) is int and rx.direction == "control"

    def test_valid_in_order(self, backend: ModuleType) -> None:
        rx = backend.Receiver("control")
        for seq in (1, 2, 5, 6, 100, 2**53 - 1):
            msg, rej = rx.receive(cancel(seq))
            assert rej is None and msg["seq"] == seq and rx.seq == seq

    def test_gaps_ok(self, backend: ModuleType) -> None:
        rx = backend.Receiver("control")
        assert rx.receive(cancel(1))[1] is None
        assert rx.receive(cancel(5))[1] is None
        assert rx.seq == 5

    def test_str_lines(self, backend: ModuleType) -> None:
        rx = backend.Receiver("control")
        msg, rej = rx.receive(cancel(3).decode())
        assert rej is None and rx.seq == 3

    def test_seq_float_consumed_as_int(self, backend: ModuleType) -> None:
        rx = backend.Receiver("control")
        msg, rej = rx.receive(cancel("1.0"))
        assert rej is None
        assert_strict_equal(msg["seq"], 1.0)  # the message keeps the JSON's value
        assert rx.seq == 1 and type(rx.seq) is int
        msg, rej = rx.receive(cancel("2e0"))
        assert rej is None and rx.seq == 2 and type(rx.seq) is int

    def test_out_of_order_valid_message(self, backend: ModuleType) -> None:
        rx = backend.Receiver("control")
        rx.receive(cancel(5))
        for seq, reason in [
            (5, "seq 5 does not follow 5"),
            (4, "seq 4 does not follow 5"),
            ("1.0", "seq 1 does not follow 5"),
        ]:
            msg, rej = rx.receive(cancel(seq, "other"))
            assert msg is None
            assert_strict_equal(rej, Rejection("out-of-order", reason, None, "cancel", "other"))
            assert rej.fatal is False and rej.errors is None
        assert rx.seq == 5

    def test_out_of_order_rejected_line_takes_type_and_run_from_rejection(self, backend: ModuleType) -> None:
        rx = backend.Receiver("control")
        rx.receive(cancel(5))
        cases = [
            (
                b'{"v":1,"seq":3,"type":"prompt","run":"r"}',
                Rejection("out-of-order", "seq 3 does not follow 5", None, "prompt", "r"),
            ),
            (
                b'{"v":1,"seq":3,"type":"pause","run":9}',
                Rejection("out-of-order", "seq 3 does not follow 5", None, "pause", None),
            ),
            (
                b'{"v":1,"seq":3,"type":7,"run":"x"}',
                Rejection("out-of-order", "seq 3 does not follow 5", None, None, "x"),
            ),
            (b'{"v":1,"seq":5}', Rejection("out-of-order", "seq 5 does not follow 5", None, None, None)),
            (
                b'{"v":1,"seq":4,"type":"ready","run":"r"}',
                Rejection("out-of-order", "seq 4 does not follow 5", None, "ready", "r"),
            ),
        ]
        for line, want in cases:
            msg, rej = rx.receive(line)
            assert msg is None
            assert_strict_equal(rej, want)
        assert rx.seq == 5

    def test_fatal_untouched_and_consumes_nothing(self, backend: ModuleType) -> None:
        rx = backend.Receiver("control")
        rx.receive(cancel(5))
        for line in [
            b'{"v":2,"seq":3,"type":"cancel","run":"r"}',
            b'{"v":2,"seq":9,"type":"cancel","run":"r"}',
            b'{"v":"1","seq":5}',
        ]:
            msg, rej = rx.receive(line)
            _, want = backend.decode(line, "control")
            assert msg is None and rej.fatal is True
            assert_strict_equal(rej, want)
            assert rx.seq == 5
        assert rx.receive(cancel(6))[1] is None

    @pytest.mark.parametrize(
        "line,code",
        [
            (b'{"v":1,"seq":7,"type":"pause","run":"r"}', "unknown-type"),
            (b'{"v":1,"seq":7,"type":"ready","run":"r"}', "unknown-type"),
            (b'{"v":1,"seq":7,"type":"prompt","run":"r"}', "invalid-payload"),
            (b'{"v":1,"seq":7,"type":"cancel"}', "invalid"),
            (b'{"v":1,"seq":7,"type":5,"run":"r"}', "invalid"),
            (b'{"seq":7,"type":"cancel","run":"r"}', "invalid"),
            (b'{"v":null,"seq":7.0}', "invalid"),
        ],
    )
    def test_usable_seq_consumed_even_when_rejected(self, backend: ModuleType, line: bytes, code: str) -> None:
        rx = backend.Receiver("control")
        rx.receive(cancel(2))
        msg, rej = rx.receive(line)
        assert msg is None and rej.code == code and rej.seq == 7
        _, want = backend.decode(line, "control")
        assert_strict_equal(rej, want)  # returned as decode gave it
        assert rx.seq == 7 and type(rx.seq) is int
        _, rej = rx.receive(cancel(7))
        assert rej.code == "out-of-order"
        assert rx.receive(cancel(8))[1] is None

    @pytest.mark.parametrize(
        "line",
        [
            b"nope",
            b"",
            b"   ",
            b"[]",
            b"x" * MAX_LINE_BYTES,
            b'{"v":1,"seq":0,"type":"cancel","run":"r"}',
            b'{"v":1,"seq":-4,"type":"cancel","run":"r"}',
            b'{"v":1,"seq":1.5,"type":"cancel","run":"r"}',
            b'{"v":1,"seq":"9","type":"cancel","run":"r"}',
            b'{"v":1,"seq":9007199254740992,"type":"cancel","run":"r"}',
            b'{"v":1,"seq":1e300,"type":"cancel","run":"r"}',
            b'{"v":1,"seq":true,"type":"cancel","run":"r"}',
            b'{"v":1,"type":"cancel","run":"r"}',
        ],
    )
    def test_no_usable_seq_no_ordering(self, backend: ModuleType, line: bytes) -> None:
        rx = backend.Receiver("control")
        rx.receive(cancel(5))
        msg, rej = rx.receive(line)
        _, want = backend.decode(line, "control")
        assert msg is None
        assert_strict_equal(rej, want)
        assert rx.seq == 5

    def test_not_a_line(self, backend: ModuleType) -> None:
        rx = backend.Receiver("control")
        for line in (None, 5, bytearray(cancel(1))):
            assert rx.receive(line) == (None, Rejection("malformed", "line must be bytes or str"))
        assert rx.seq == 0

    @pytest.mark.parametrize("direction", ["sideways", "events", "", None, 1, ["event"]])
    def test_bad_direction_is_refused_at_construction(self, backend: ModuleType, direction: object) -> None:
        with pytest.raises(ValueError, match='^direction must be "event" or "control", not ') as info:
            backend.Receiver(direction)
        assert str(info.value).endswith(repr(direction))

    def test_a_direction_changed_later_rejects(self, backend: ModuleType) -> None:
        rx = backend.Receiver("control")
        rx.direction = "sideways"
        assert rx.receive(cancel(1)) == (None, Rejection("invalid", 'direction must be "event" or "control"'))
        assert (
            rx.feed(cancel(1) + b"\n" + cancel(2) + b"\n")
            == [Rejection("invalid", 'direction must be "event" or "control"')] * 2
        )
        assert rx.seq == 0

    def test_max_safe_integer_then_nothing_follows(self, backend: ModuleType) -> None:
        rx = backend.Receiver("control")
        assert rx.receive(cancel(2**53 - 1))[1] is None
        _, rej = rx.receive(cancel(2**53 - 1))
        assert rej.code == "out-of-order"
        _, rej = rx.receive(cancel(2**53))
        assert rej.code == "invalid" and rej.seq is None
        assert rx.seq == 2**53 - 1

    def test_seq_attribute_settable(self, backend: ModuleType) -> None:
        rx = backend.Receiver("control")
        rx.seq = 10
        assert rx.receive(cancel(10))[1].code == "out-of-order"
        assert rx.receive(cancel(11))[1] is None


class TestFramer:
    def test_splits_on_newline_only(self, backend: ModuleType) -> None:
        f = backend.Framer()
        data = "a\rb\r\nc\u2028d\u2029e\x85f\x0bg\x0ch\n".encode()
        assert f.feed(data) == [b"a\rb\r", "c\u2028d\u2029e\x85f\x0bg\x0ch".encode()]

    def test_empty_lines_kept(self, backend: ModuleType) -> None:
        assert backend.Framer().feed(b"\n\na\n\n") == [b"", b"", b"a", b""]

    def test_unterminated_tail_waits(self, backend: ModuleType) -> None:
        f = backend.Framer()
        assert f.feed(b"abc") == [] and f.buffered == 3
        assert f.feed(b"def") == [] and f.buffered == 6
        assert f.feed(b"\ngh") == [b"abcdef"] and f.buffered == 2
        assert f.feed(b"\n") == [b"gh"] and f.buffered == 0

    def test_accepts_bytes_like(self, backend: ModuleType) -> None:
        f = backend.Framer()
        assert f.feed(bytearray(b"a\nb")) == [b"a"]
        assert f.feed(memoryview(b"c\n")) == [b"bc"]
        assert all(type(x) is bytes for x in f.feed(bytearray(b"d\ne\n")))

    @pytest.mark.parametrize("data", ["a\n", None, 5, ["a"]])
    def test_rejects_non_bytes(self, backend: ModuleType, data: object) -> None:
        with pytest.raises(TypeError):
            backend.Framer().feed(data)

    @pytest.mark.parametrize("value", [0, -1, None])
    def test_bad_max_line_bytes(self, backend: ModuleType, value: int | None) -> None:
        with pytest.raises(ValueError):
            backend.Framer(value)
        with pytest.raises(ValueError):
            backend.Framer(max_line_bytes=value)

    def test_default_max_line_bytes(self, backend: ModuleType) -> None:
        for f in (backend.Framer(), backend.Framer(65536), backend.Framer(max_line_bytes=65536)):
            assert f.feed(b"x" * 65536 + b"\n" + b"x" * 65535 + b"\n") == [b"x" * 65536, b"x" * 65535]

    def test_default_cap_exactly_65535_ok(self, backend: ModuleType) -> None:
        f = backend.Framer()
        line = b"a" * 65535
        assert f.feed(line + b"\n") == [line]
        assert f.feed(line) == [] and f.buffered == 65535
        assert f.feed(b"\n") == [line]

    def test_default_cap_65536_reported_once_then_skipped(self, backend: ModuleType) -> None:
        line = bytes(range(256)).replace(b"\n", b"-") * 256  # 65536 bytes, no newline
        assert len(line) == 65536
        for pieces in ([line + b"\nnext\n"], [line, b"\nnext\n"], [line[:1000], line[1000:], b"\n", b"next\n"]):
            f = backend.Framer()
            out = [x for p in pieces for x in f.feed(p)]
            assert out == [line, b"next"]

    def test_over_long_line_first_cap_bytes(self, backend: ModuleType) -> None:
        big = b"".join(b"%07d," % i for i in range(25000))  # 200000 bytes
        f = backend.Framer()
        assert f.feed(big + b"\nok\n") == [big[:65536], b"ok"]
        f = backend.Framer()
        out = []
        for i in range(0, len(big), 4096):
            out += f.feed(big[i : i + 4096])
        assert out == [big[:65536]]
        assert f.buffered == 0
        assert f.feed(b"still skipping") == []
        assert f.feed(b"...\nok\n") == [b"ok"]

    def test_small_cap(self, backend: ModuleType) -> None:
        f = backend.Framer(max_line_bytes=4)
        assert f.feed(b"abc\nabcd\nabcdef\nxy") == [b"abc", b"abcd", b"abcd"]
        assert f.buffered == 2
        assert f.feed(b"zzz") == [b"xyzz"]
        assert f.buffered == 0
        assert f.feed(b"zz\nq\n") == [b"q"]

    def test_cap_one(self, backend: ModuleType) -> None:
        f = backend.Framer(1)
        assert f.feed(b"\nab\nc\n\n") == [b"", b"a", b"c", b""]

    def test_cap_reached_exactly_at_feed_end_then_newline(self, backend: ModuleType) -> None:
        f = backend.Framer(4)
        assert f.feed(b"abcd") == [b"abcd"]
        assert f.feed(b"\nx\n") == [b"x"]  # the newline ends the skipped line

    def test_carriage_returns_kept(self, backend: ModuleType) -> None:
        assert backend.Framer().feed(b"a\r\n\r\n\r") == [b"a\r", b"\r"]


class TestFeed:
    def test_messages_and_rejections_in_order(self, backend: ModuleType) -> None:
        rx = backend.Receiver("control")
        data = cancel(1) + b"\n" + b"nope\n" + cancel(1) + b"\n" + b'{"v":2}\n' + cancel(3) + b"\n"
        out = rx.feed(data)
        want = [
            backend.decode(cancel(1), "control")[0],
            Rejection("malformed", "line is not valid JSON"),
            Rejection("out-of-order", "seq 1 does not follow 1", None, "cancel", "r"),
            Rejection("version-mismatch", "wire version 2 is not supported; expected 1"),
            backend.decode(cancel(3), "control")[0],
        ]
        assert_strict_equal(out, want)
        assert rx.seq == 3

    def test_empty_lines_skipped_whitespace_lines_malformed(self, backend: ModuleType) -> None:
        rx = backend.Receiver("control")
        out = rx.feed(b"\n\n" + cancel(1) + b"\n\n \n\t\n\r\n")
        assert_strict_equal(
            out,
            [
                {"v": 1, "seq": 1, "type": "cancel", "run": "r"},
                Rejection("malformed", "line is not valid JSON"),
                Rejection("malformed", "line is not valid JSON"),
                Rejection("malformed", "line is not valid JSON"),
            ],
        )

    def test_accepts_bytes_like_rejects_str(self, backend: ModuleType) -> None:
        rx = backend.Receiver("control")
        assert rx.feed(bytearray(cancel(1) + b"\n"))[0]["seq"] == 1
        assert rx.feed(memoryview(cancel(2) + b"\n"))[0]["seq"] == 2
        for bad in (cancel(3).decode() + "\n", None, 5):
            with pytest.raises(TypeError):
                rx.feed(bad)  # type: ignore[arg-type]
        assert rx.seq == 2 and rx.buffered == 0

    def test_crlf_lines_are_valid(self, backend: ModuleType) -> None:
        rx = backend.Receiver("control")
        out = rx.feed(cancel(1) + b"\r\n" + cancel(2) + b"\r\r\n")
        assert [m["seq"] for m in out] == [1, 2]

    def test_unterminated_tail_waits(self, backend: ModuleType) -> None:
        rx = backend.Receiver("control")
        line = cancel(1)
        assert rx.feed(line[:10]) == [] and rx.buffered == 10
        assert rx.feed(line[10:]) == [] and rx.buffered == len(line)
        assert rx.seq == 0
        out = rx.feed(b"\n")
        assert len(out) == 1 and out[0]["seq"] == 1 and rx.buffered == 0

    def test_over_long_line_one_too_large_then_skipped(self, backend: ModuleType) -> None:
        big = prompt_of_size(200000, seq=1)
        for chunk in (len(big) + 10, 65536, 4096, 1000):
            rx = backend.Receiver("control")
            data = big + b"\n" + cancel(2) + b"\n"
            out = []
            for i in range(0, len(data), chunk):
                out += rx.feed(data[i : i + chunk])
            assert_strict_equal(
                out, [Rejection("too-large", R_TOO_LARGE), {"v": 1, "seq": 2, "type": "cancel", "run": "r"}]
            )
            assert rx.seq == 2 and rx.buffered == 0

    def test_exactly_65535_ok_65536_too_large(self, backend: ModuleType) -> None:
        rx = backend.Receiver("control")
        ok_line = prompt_of_size(65535, seq=1)
        big_line = prompt_of_size(65536, seq=2)
        out = rx.feed(ok_line + b"\n" + big_line + b"\n" + cancel(3) + b"\n")
        assert len(out) == 3
        assert out[0]["seq"] == 1 and len(out[0]["text"]) == 65535 - len(
            b'{"v":1,"seq":1,"type":"prompt","run":"r","text":""}'
        )
        assert_strict_equal(out[1], Rejection("too-large", R_TOO_LARGE))
        assert out[2]["seq"] == 3
        assert rx.seq == 3  # the too-large line's seq was never read

    def test_65535_with_crlf(self, backend: ModuleType) -> None:
        # \r counts: 65535 bytes of JSON + \r is a 65536-byte line
        rx = backend.Receiver("control")
        out = rx.feed(prompt_of_size(65535) + b"\r\n")
        assert_strict_equal(out, [Rejection("too-large", R_TOO_LARGE)])

    def test_feed_and_receive_share_seq(self, backend: ModuleType) -> None:
        rx = backend.Receiver("control")
        assert rx.receive(cancel(4))[1] is None
        out = rx.feed(cancel(3) + b"\n" + cancel(5) + b"\n")
        assert out[0].code == "out-of-order" and out[1]["seq"] == 5
        assert rx.receive(cancel(5))[1].code == "out-of-order"

    def test_feed_matches_receive_line_by_line(self, backend: ModuleType) -> None:
        lines = [
            cancel(1),
            cancel("2.0"),
            b'{"v":1,"seq":3,"type":"prompt","run":"r","text":"x","text":5}',
            b'{"v":1,"seq":3,"type":"prompt","run":"r","text":"x"}',
            b'{"v":1,"seq":4,"type":"prompt","run":"r","text":"x"}',
            b'{"v":1.0,"seq":5,"type":"steer","run":"r","text":"x"}',
            b'{"v":true,"seq":6,"type":"steer","run":"r","text":"x"}',
            b'{"v":1,"seq":6,"type":"steer","run":"r","text":"x","extra":[1]}',
            b'{"v":1,"seq":7,"type":"finalize","run":"r","note":null}',
            b'{"v":1,"seq":8,"type":"finalize","run":"r"}',
            b'{"v":1,"seq":true,"type":"close","run":"r"}',
            b'{"v":1,"seq":9,"type":"close","run":5}',
            b'{"v":1,"seq":10,"type":"close","run":"r"}\xff',
            b'{"v":1,"seq":11,"type":"close","run":"r"}',
        ]
        rx1 = backend.Receiver("control")
        want = []
        seqs = []
        for line in lines:
            msg, rej = rx1.receive(line)
            want.append(rej if msg is None else msg)
            seqs.append(rx1.seq)
        rx2 = backend.Receiver("control")
        got = rx2.feed(b"\n".join(lines) + b"\n")
        assert_strict_equal(got, want)
        assert rx2.seq == rx1.seq == 11
        rx3 = backend.Receiver("control")
        for line, seq_after in zip(lines, seqs, strict=True):
            rx3.feed(line + b"\n")
            assert rx3.seq == seq_after

    def test_feed_event_fast_path_types(self, backend: ModuleType) -> None:
        # values a fast path might take for granted: bool is not int, -0.0, big ints, [] as object
        lines = [
            b'{"v":1,"seq":1,"type":"assistant-text-delta","run":"r","content-index":true}',
            b'{"v":1,"seq":2,"type":"assistant-text-delta","run":"r","content-index":2.0}',
            b'{"v":1,"seq":3,"type":"assistant-stream-end","run":"r","final?":1}',
            b'{"v":1,"seq":4,"type":"llm-end","run":"r","usage":[]}',
            b'{"v":1,"seq":5,"type":"llm-end","run":"r","usage":[1]}',
            b'{"v":1,"seq":6,"type":"info","run":"r","refs":{}}',
            b'{"v":1,"seq":7,"type":"info","run":"r","refs":[1,0]}',
            b'{"v":1,"seq":8,"type":"control-ack","run":"r","status":"accepted"}',
            b'{"v":1,"seq":9,"type":"control-ack","run":"r","status":"rejected"}',
            b'{"v":1,"seq":10,"type":"tool-result","run":"r","name":"n","is-error?":false,"duration-seconds":true}',
            b'{"v":1,"seq":11,"type":"tool-result","run":"r","name":"n","is-error?":false,"duration-seconds":-0.0}',
            b'{"v":1,"seq":12,"type":"turn-started","run":"r","turn":9007199254740992}',
            b'{"v":1,"seq":13,"type":"exit","run":"r","status":"done","error":null}',
            b'{"v":1,"seq":14,"type":"ready","run":"r"}',
            b'{"v":1,"seq":18446744073709551615,"type":"ready","run":"r"}',
            b'{"v":1,"seq":15,"type":"ready","run":"r","summary":1}',
        ]
        rx1 = backend.Receiver("event")
        want = []
        for line in lines:
            msg, rej = rx1.receive(line)
            want.append(rej if msg is None else msg)
        rx2 = backend.Receiver("event")
        assert_strict_equal(rx2.feed(b"\n".join(lines) + b"\n"), want)
        assert rx2.seq == rx1.seq == 15
        assert [type(x).__name__ for x in want] == [
            "Rejection", "dict", "Rejection", "dict", "Rejection", "dict", "Rejection",
            "Rejection", "dict", "Rejection", "dict", "Rejection", "Rejection", "dict", "Rejection", "dict",
        ]  # fmt: skip


def event(seq: int, type_: str = "info", run: str = "r", **fields: object) -> bytes:
    import json

    body = {"v": 1, "seq": seq, "type": type_, "run": run, **fields}
    if type_ == "info" and "message" not in body:
        body["message"] = "m"
    return json.dumps(body).encode() + b"\n"


class TestPlain:
    """``Receiver.plain``: the last ``feed`` brought only messages of ``run``, none of a lifecycle type."""

    def test_run_keyword_and_attribute(self, backend: ModuleType) -> None:
        rx = backend.Receiver("event", run="r")
        assert rx.run == "r" and rx.plain is False
        rx.run = None
        assert rx.run is None
        assert backend.Receiver("event").run is None
        with pytest.raises(TypeError, match="run must be a str or None"):
            rx.run = 3  # type: ignore[assignment]
        with pytest.raises(TypeError, match="run must be a str or None"):
            backend.Receiver("event", run=b"r")

    def test_a_batch_of_this_runs_deltas_is_plain(self, backend: ModuleType) -> None:
        rx = backend.Receiver("event", run="r")
        out = rx.feed(event(1) + event(2, "assistant-text-delta", delta="d") + event(3))
        assert len(out) == 3 and rx.plain is True
        assert rx.feed(b"") == [] and rx.plain is True  # nothing: plain
        assert rx.feed(b'{"v":1,') == [] and rx.plain is True  # an unterminated tail: nothing yet

    @pytest.mark.parametrize("type_", ["ready", "control-ack", "turn-started", "turn-complete", "result", "exit"])
    def test_a_lifecycle_type_is_not_plain(self, backend: ModuleType, type_: str) -> None:
        from fenwire_fast import LIFECYCLE_EVENT_TYPES, Sender

        assert type_ in LIFECYCLE_EVENT_TYPES
        payload = {
            "ready": {},
            "control-ack": {"ref": 1, "status": "accepted"},
            "turn-started": {"turn": 1},
            "turn-complete": {"turn": 1, "stop-reason": "aborted"},
            "result": {"stop-reason": "none"},
            "exit": {"status": "done"},
        }[type_]
        line, rej = Sender("event", "r").next(type_, payload)
        assert rej is None and line is not None
        rx = backend.Receiver("event", run="r")
        out = rx.feed(event(1) + line.replace(b'"seq":1', b'"seq":2') + b"\n")
        assert len(out) == 2 and type(out[1]) is dict and out[1]["type"] == type_
        assert rx.plain is False
        assert rx.feed(event(3)) and rx.plain is True  # the next batch is judged on its own

    def test_another_run_or_a_rejection_is_not_plain(self, backend: ModuleType) -> None:
        rx = backend.Receiver("event", run="r")
        rx.feed(event(1) + event(2, run="other"))
        assert rx.plain is False
        rx.feed(event(3) + b"not json\n")
        assert rx.plain is False
        rx.feed(event(3))  # out of order
        assert rx.plain is False
        rx.run = "other"
        rx.feed(event(4, run="other"))
        assert rx.plain is True
        rx.run = None  # no run: no batch is plain, not even an empty one
        rx.feed(event(5, run="x") + event(6, run="y"))
        assert rx.plain is False
        assert rx.feed(b"") == [] and rx.plain is False
        assert backend.Receiver("event").feed(event(1)) and backend.Receiver("event").plain is False

    def test_receive_and_scan_clear_it(self, backend: ModuleType) -> None:
        rx = backend.Receiver("event", run="r")
        rx.feed(event(1))
        assert rx.plain is True
        rx.receive(event(2).rstrip(b"\n"))
        assert rx.plain is False
        rx.feed(event(3))
        rx.scan(event(4))
        assert rx.plain is False
        rx.feed(event(5))
        rx.scan_rejections(event(6))
        assert rx.plain is False
