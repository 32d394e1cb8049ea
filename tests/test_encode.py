"""encode, message, rejection_ack and Sender (docs/design-decisions.md: "Encoding", "Sequence numbers")."""

from __future__ import annotations

from collections import OrderedDict
from types import ModuleType
from typing import Any

import orjson
import pytest
from conftest import FIXTURES, assert_strict_equal
from fenwire_fast import MAX_LINE_BYTES, Rejection

WIRE_EVENTS = (FIXTURES / "wire" / "events.jsonl").read_bytes().splitlines()
WIRE_CONTROLS = (FIXTURES / "wire" / "controls.jsonl").read_bytes().splitlines()


def tool_call(arguments: Any, **extra: Any) -> dict[str, Any]:
    return {"v": 1, "seq": 1, "type": "tool-call", "run": "r", "name": "n", "arguments": arguments, **extra}


def nest(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


class TestEncodeOutput:
    def test_orjson_identical_for_fixture_messages(self, backend: ModuleType) -> None:
        for lines, direction in [(WIRE_EVENTS, "event"), (WIRE_CONTROLS, "control")]:
            for line in lines:
                msg = orjson.loads(line)
                out, rej = backend.encode(msg, direction)
                assert rej is None
                assert type(out) is bytes
                assert out == orjson.dumps(msg) == line

    @pytest.mark.parametrize(
        "arguments",
        [
            None,
            True,
            False,
            0,
            -1,
            2**64 - 1,
            -(2**63),
            2**63,
            0.0,
            -0.0,
            0.1,
            1e300,
            5e-324,
            1.7976931348623157e308,
            123456789.123456789,
            1e16,
            1e-7,
            "",
            "caf\u00e9 \u2603 \U0001f600",
            "\x00\x01\x1f\x7f\x80\x9f\u2028\u2029",
            '"\\/\b\f\n\r\t',
            "</script>",
            [],
            {},
            [[], {}, [None]],
            {"b": 1, "a": 2, "": 3, "\U0001f600": [1.5, "x"]},
        ],
    )
    def test_orjson_identical_values(self, backend: ModuleType, arguments: Any) -> None:
        msg = tool_call(arguments)
        out, rej = backend.encode(msg, "event")
        assert rej is None
        assert out == orjson.dumps(msg)
        assert not out.endswith(b"\n")

    def test_key_order_as_given(self, backend: ModuleType) -> None:
        msg = {"run": "r", "x": 1, "type": "cancel", "seq": 2, "v": 1}
        assert backend.encode(msg, "control")[0] == b'{"run":"r","x":1,"type":"cancel","seq":2,"v":1}'

    def test_integral_floats_keep_their_form(self, backend: ModuleType) -> None:
        msg = {"v": 1.0, "seq": 3.0, "type": "turn-started", "run": "r", "turn": 2.0}
        assert backend.encode(msg, "event")[0] == b'{"v":1.0,"seq":3.0,"type":"turn-started","run":"r","turn":2.0}'

    def test_dict_subclass_values(self, backend: ModuleType) -> None:
        msg = tool_call(OrderedDict([("b", 1), ("a", 2)]))
        out, rej = backend.encode(msg, "event")
        assert rej is None and out == orjson.dumps(msg)

    def test_nesting_254_ok_orjson_limit(self, backend: ModuleType) -> None:
        # the message object is level 1; arguments add 253 -> 254 levels: orjson's limit
        msg = tool_call(nest(253))
        out, rej = backend.encode(msg, "event")
        assert rej is None and out == orjson.dumps(msg)
        msg = tool_call({"a": nest(252)})
        assert backend.encode(msg, "event")[0] == orjson.dumps(msg)

    def test_nesting_255_rejected(self, backend: ModuleType) -> None:
        msg = tool_call(nest(254))
        with pytest.raises(orjson.JSONEncodeError):
            orjson.dumps(msg)
        out, rej = backend.encode(msg, "event")
        assert out is None
        path = "arguments" + "[0]" * 253
        assert_strict_equal(
            rej, Rejection("invalid", f"{path} cannot be encoded: nesting deeper than 254", 1, "tool-call", "r")
        )

    def test_nesting_in_objects_rejected(self, backend: ModuleType) -> None:
        value: Any = {}
        for _ in range(252):
            value = {"k": value}
        assert backend.encode(tool_call(value), "event")[0] == orjson.dumps(tool_call(value))  # 254 levels
        value = {"k": value}  # 255 levels
        with pytest.raises(orjson.JSONEncodeError):
            orjson.dumps(tool_call(value))
        out, rej = backend.encode(tool_call(value), "event")
        assert out is None and rej.code == "invalid"
        assert rej.reason == "arguments" + ".k" * 253 + " cannot be encoded: nesting deeper than 254"


class TestEncodeRejections:
    @pytest.mark.parametrize(
        "arguments,where,problem",
        [
            (float("nan"), "arguments", "NaN or infinite number"),
            (float("inf"), "arguments", "NaN or infinite number"),
            (float("-inf"), "arguments", "NaN or infinite number"),
            ({"x": [1, 2, float("nan")]}, "arguments.x[2]", "NaN or infinite number"),
            (2**64, "arguments", "integer outside the 64-bit range"),
            (-(2**63) - 1, "arguments", "integer outside the 64-bit range"),
            ([0, [2**100]], "arguments[1][0]", "integer outside the 64-bit range"),
            ({1: 2}, "arguments", "non-string key"),
            ({"a": {(1, 2): 3}}, "arguments.a", "non-string key"),
            ({None: 1}, "arguments", "non-string key"),
            ({"\ud800": 1}, "arguments", "key with a lone surrogate"),
            ("\udc00", "arguments", "string with a lone surrogate"),
            (["ok", "a\ud83d"], "arguments[1]", "string with a lone surrogate"),
            ((1, 2), "arguments", "unsupported value of type tuple"),
            ({1, 2}, "arguments", "unsupported value of type set"),
            (frozenset(), "arguments", "unsupported value of type frozenset"),
            (b"x", "arguments", "unsupported value of type bytes"),
            (bytearray(b"x"), "arguments", "unsupported value of type bytearray"),
            (object(), "arguments", "unsupported value of type object"),
            ({"a": [1, {"b": (1,)}]}, "arguments.a[1].b", "unsupported value of type tuple"),
            ([float("nan"), 2**64], "arguments[0]", "NaN or infinite number"),
            ({"a": 2**64, "b": float("nan")}, "arguments.a", "integer outside the 64-bit range"),
        ],
    )
    def test_what_json_cannot_carry(self, backend: ModuleType, arguments: Any, where: str, problem: str) -> None:
        out, rej = backend.encode(tool_call(arguments), "event")
        assert out is None
        assert_strict_equal(rej, Rejection("invalid", f"{where} cannot be encoded: {problem}", 1, "tool-call", "r"))

    def test_top_level_problems(self, backend: ModuleType) -> None:
        msg = {1: 2, "v": 1, "seq": 4, "type": "cancel", "run": "r"}
        assert_strict_equal(
            backend.encode(msg, "control")[1],
            Rejection("invalid", "message cannot be encoded: non-string key", 4, "cancel", "r"),
        )
        msg = {"v": 1, "seq": 4, "type": "cancel", "run": "r", "x": float("nan")}
        assert_strict_equal(
            backend.encode(msg, "control")[1],
            Rejection("invalid", "x cannot be encoded: NaN or infinite number", 4, "cancel", "r"),
        )
        msg = {"v": 1, "seq": 4, "type": "prompt", "run": "r", "text": "\ud800"}
        assert_strict_equal(
            backend.encode(msg, "control")[1],
            Rejection("invalid", "text cannot be encoded: string with a lone surrogate", 4, "prompt", "r"),
        )

    def test_validation_first(self, backend: ModuleType) -> None:
        msg = {"v": 1, "seq": 4, "type": "prompt", "run": "r", "text": 5, "x": float("nan")}
        assert_strict_equal(
            backend.encode(msg, "control")[1],
            Rejection("invalid-payload", "text must be a string", 4, "prompt", "r", (("text", "must be a string"),)),
        )
        assert backend.encode({"v": 2, "x": float("nan")}, "control")[1].code == "version-mismatch"
        assert backend.encode({"v": 1, "seq": 1, "type": "x" * 70000, "run": "r"}, "control")[1].code == "unknown-type"
        assert backend.encode(tool_call(None), "sideways")[1] == Rejection(
            "invalid", 'direction must be "event" or "control"'
        )

    def test_validate_returns_the_same_object(self, backend: ModuleType) -> None:
        msg = tool_call({"a": [1]})
        got, rej = backend.validate(msg, "event")
        assert rej is None and got is msg
        assert msg == tool_call({"a": [1]})  # not modified

    def test_encode_does_not_modify(self, backend: ModuleType) -> None:
        msg = tool_call({"a": [1, float("nan")]}, seq=2.0)
        before = repr(msg)
        backend.encode(msg, "event")
        backend.encode(tool_call({"a": 1}), "event")
        assert repr(msg) == before


class TestEncodeLineLimit:
    @staticmethod
    def msg_of(size: int, ch: str = "a") -> dict[str, Any]:
        head = len(b'{"v":1,"seq":1,"type":"prompt","run":"r","text":""}')
        width = len(ch.encode())
        n, rest = divmod(size - head, width)
        return {"v": 1, "seq": 1, "type": "prompt", "run": "r", "text": "b" * rest + ch * n}

    @pytest.mark.parametrize("ch", ["a", "\u00e9", "\u20ac", "\U0001f600"])
    def test_65535_ok_65536_too_large(self, backend: ModuleType, ch: str) -> None:
        msg = self.msg_of(MAX_LINE_BYTES - 1, ch)
        out, rej = backend.encode(msg, "control")
        assert rej is None and len(out) == 65535 and out == orjson.dumps(msg)
        msg = self.msg_of(MAX_LINE_BYTES, ch)
        out, rej = backend.encode(msg, "control")
        assert out is None
        assert_strict_equal(
            rej, Rejection("too-large", "encoded line is 65536 bytes; the limit is 65535", 1, "prompt", "r")
        )

    def test_escapes_count(self, backend: ModuleType) -> None:
        # \u0001 is 1 character, 6 bytes on the wire
        msg = {"v": 1, "seq": 9, "type": "prompt", "run": "r", "text": "\x01" * 11000}
        out, rej = backend.encode(msg, "control")
        n = len(orjson.dumps(msg))
        assert n > MAX_LINE_BYTES
        assert out is None
        assert_strict_equal(
            rej, Rejection("too-large", f"encoded line is {n} bytes; the limit is 65535", 9, "prompt", "r")
        )

    def test_huge(self, backend: ModuleType) -> None:
        msg = {"v": 1, "seq": 1, "type": "prompt", "run": "r", "text": "x" * 1_000_000}
        assert backend.encode(msg, "control")[1].reason == "encoded line is 1000051 bytes; the limit is 65535"


class TestMessage:
    def test_envelope_first(self, backend: ModuleType) -> None:
        msg = backend.message("prompt", "r", 3, {"text": "hi", "x": 1})
        assert list(msg.items()) == [("v", 1), ("seq", 3), ("type", "prompt"), ("run", "r"), ("text", "hi"), ("x", 1)]

    def test_payload_envelope_never_wins(self, backend: ModuleType) -> None:
        payload = {"seq": 9, "x": 1, "v": 2, "run": "z", "type": "t", "y": 2}
        msg = backend.message("a", "b", 3, payload)
        assert list(msg.items()) == [("v", 1), ("seq", 3), ("type", "a"), ("run", "b"), ("x", 1), ("y", 2)]
        assert payload == {"seq": 9, "x": 1, "v": 2, "run": "z", "type": "t", "y": 2}

    def test_no_payload(self, backend: ModuleType) -> None:
        for msg in [
            backend.message("ready", "r", 1),
            backend.message("ready", "r", 1, None),
            backend.message("ready", "r", 1, {}),
        ]:
            assert_strict_equal(msg, {"v": 1, "seq": 1, "type": "ready", "run": "r"})

    def test_new_dict_each_time(self, backend: ModuleType) -> None:
        payload = {"text": "x"}
        a = backend.message("prompt", "r", 1, payload)
        b = backend.message("prompt", "r", 1, payload)
        assert a == b and a is not b and a is not payload
        a["text"] = "changed"
        assert payload == {"text": "x"}

    def test_values_kept_as_given(self, backend: ModuleType) -> None:
        value = {"nested": [1]}
        msg = backend.message("tool-call", "r", 2, {"name": "n", "arguments": value})
        assert msg["arguments"] is value
        assert_strict_equal(
            backend.message("x", "r", 2.0, {"f": -0.0}), {"v": 1, "seq": 2.0, "type": "x", "run": "r", "f": -0.0}
        )


class TestRejectionAck:
    def test_with_seq(self, backend: ModuleType) -> None:
        rej = Rejection("invalid-payload", "text is required", 4, "prompt", "r", (("text", "is required"),))
        ack = backend.rejection_ack(rej)
        assert list(ack.items()) == [("ref", 4), ("status", "rejected"), ("reason", "text is required")]

    def test_without_seq(self, backend: ModuleType) -> None:
        ack = backend.rejection_ack(Rejection("malformed", "line is not valid JSON"))
        assert list(ack.items()) == [("status", "rejected"), ("reason", "line is not valid JSON")]

    def test_acks_are_valid_control_acks(self, backend: ModuleType) -> None:
        for line in [b"nope", b'{"v":1,"seq":7,"type":"prompt","run":"r"}', b'{"v":1,"seq":0}']:
            _, rej = backend.decode(line, "control")
            payload = backend.rejection_ack(rej)
            out, bad = backend.encode(backend.message("control-ack", "r", 1, payload), "event")
            assert bad is None and out is not None
        rx = backend.Receiver("control")
        rx.receive(b'{"v":1,"seq":5,"type":"cancel","run":"r"}')
        _, rej = rx.receive(b'{"v":1,"seq":5,"type":"cancel","run":"r"}')
        assert list(backend.rejection_ack(rej).items()) == [
            ("status", "rejected"),
            ("reason", "seq 5 does not follow 5"),
        ]


class TestSender:
    def test_stamps_increasing_seq(self, backend: ModuleType) -> None:
        s = backend.Sender("event", "run-1")
        assert s.next("ready") == (b'{"v":1,"seq":1,"type":"ready","run":"run-1"}', None)
        assert s.next("turn-started", {"turn": 1}) == (
            b'{"v":1,"seq":2,"type":"turn-started","run":"run-1","turn":1}',
            None,
        )
        assert s.seq == 2 and type(s.seq) is int

    def test_advances_only_on_success(self, backend: ModuleType) -> None:
        s = backend.Sender("control", "r")
        assert s.next("prompt", {"text": "a"})[1] is None
        line, rej = s.next("prompt", {"text": 1})
        assert line is None
        assert_strict_equal(
            rej,
            Rejection("invalid-payload", "text must be a string", 2, "prompt", "r", (("text", "must be a string"),)),
        )
        assert s.seq == 1
        line, rej = s.next("pause")
        assert_strict_equal(rej, Rejection("unknown-type", "unknown control type: pause", 2, "pause", "r"))
        line, rej = s.next("ready")
        assert_strict_equal(
            rej, Rejection("unknown-type", "ready is an event type, not a control type", 2, "ready", "r")
        )
        line, rej = s.next("prompt", {"text": "x" * 70000})
        assert_strict_equal(
            rej, Rejection("too-large", "encoded line is 70051 bytes; the limit is 65535", 2, "prompt", "r")
        )
        line, rej = s.next("prompt", {"text": "\ud800"})
        assert_strict_equal(
            rej, Rejection("invalid", "text cannot be encoded: string with a lone surrogate", 2, "prompt", "r")
        )
        assert s.seq == 1
        assert s.next("prompt", {"text": "b"}) == (b'{"v":1,"seq":2,"type":"prompt","run":"r","text":"b"}', None)
        assert s.seq == 2

    def test_payload_envelope_fields_ignored(self, backend: ModuleType) -> None:
        s = backend.Sender("control", "r")
        line, rej = s.next("cancel", {"seq": 99, "v": 2, "run": "other", "type": "x"})
        assert line == b'{"v":1,"seq":1,"type":"cancel","run":"r"}' and s.seq == 1

    def test_non_dict_payload_is_rejected_with_would_be_seq(self, backend: ModuleType) -> None:
        s = backend.Sender("control", "r")
        for payload in ["text", ["text"], 5]:
            line, rej = s.next("prompt", payload)
            assert line is None
            assert_strict_equal(rej, Rejection("invalid", "payload must be a JSON object", 1, "prompt", "r"))
        assert s.seq == 0

    @pytest.mark.parametrize("direction", ["sideways", "events", "", None, 1, ["event"]])
    def test_bad_direction_is_refused_at_construction(self, backend: ModuleType, direction: object) -> None:
        with pytest.raises(ValueError, match='^direction must be "event" or "control", not ') as info:
            backend.Sender(direction, "r")
        assert str(info.value).endswith(repr(direction))

    def test_a_direction_changed_later_rejects(self, backend: ModuleType) -> None:
        s = backend.Sender("control", "r")
        s.direction = "sideways"
        assert s.next("prompt", {"text": "x"}) == (None, Rejection("invalid", 'direction must be "event" or "control"'))
        assert s.seq == 0

    def test_many(self, backend: ModuleType) -> None:
        s = backend.Sender("event", "r")
        rx = backend.Receiver("event")
        for i in range(1, 301):
            line, rej = s.next("assistant-text-delta", {"delta": str(i), "content-index": 0})
            assert rej is None
            msg, rej = rx.receive(line)
            assert rej is None and msg["seq"] == i and msg["delta"] == str(i)
        assert s.seq == rx.seq == 300

    def test_seq_attribute_settable(self, backend: ModuleType, pure: ModuleType) -> None:
        # a child that writes a line by other means may set it by hand; both backends allow it
        s = backend.Sender("event", "r")
        s.seq = 41
        assert s.next("ready")[0] == b'{"v":1,"seq":42,"type":"ready","run":"r"}'
        assert s.seq == 42
