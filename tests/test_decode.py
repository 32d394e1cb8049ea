"""decode / validate: the check order, the rejection fields and the JSON dialect (docs/design-decisions.md:
"The JSON dialect", "Order of checks")."""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any

import orjson
import pytest
from conftest import assert_strict_equal
from fenwire_fast import MAX_LINE_BYTES, Rejection

R_NOT_LINE = "line must be bytes or str"
R_TOO_LARGE = "line is 65536 bytes or more; the limit is 65535"
R_NOT_UTF8 = "line is not valid UTF-8"
R_NOT_JSON = "line is not valid JSON"
R_NOT_OBJECT = "line is not a JSON object"
R_DIRECTION = 'direction must be "event" or "control"'
R_NOT_DICT = "message must be a JSON object"

CANCEL = '{"v":1,"seq":1,"type":"cancel","run":"r"'


def line_with(extra: str) -> str:
    """A valid cancel control with ``extra`` members appended (``"x":...``)."""
    return CANCEL + ("," + extra if extra else "") + "}"


def ok(backend: ModuleType, line: object, direction: str = "control") -> dict[str, Any]:
    msg, rej = backend.decode(line, direction)
    assert rej is None, rej
    assert type(msg) is dict
    return msg


def rejected(backend: ModuleType, line: object, direction: str = "control") -> Rejection:
    msg, rej = backend.decode(line, direction)
    assert msg is None, msg
    assert isinstance(rej, Rejection)
    return rej


def both_forms(line: str) -> list[object]:
    return [line, line.encode("utf-8")]


# ---------------------------------------------------------------------------------------------
# Check order: the first failing step wins.


class TestCheckOrder:
    @pytest.mark.parametrize("line", [None, 1, 1.5, ["{}"], {"v": 1}, bytearray(b"{}"), memoryview(b"{}"), object()])
    def test_not_a_line(self, backend: ModuleType, line: object) -> None:
        for direction in ("control", "sideways"):
            assert_strict_equal(rejected(backend, line, direction), Rejection("malformed", R_NOT_LINE))

    def test_too_large_before_json_and_direction(self, backend: ModuleType) -> None:
        for line in [b"x" * MAX_LINE_BYTES, b"[" * MAX_LINE_BYTES, b"\xff" * MAX_LINE_BYTES, b" " * MAX_LINE_BYTES]:
            for direction in ("control", "sideways"):
                assert_strict_equal(rejected(backend, line, direction), Rejection("too-large", R_TOO_LARGE))
                assert_strict_equal(
                    rejected(backend, line.decode("latin-1"), direction), Rejection("too-large", R_TOO_LARGE)
                )

    def test_too_large_str_with_lone_surrogate(self, backend: ModuleType) -> None:
        # a str that cannot be UTF-8 encoded but is long enough: too-large wins over not-UTF-8
        for line in ["\ud800" * MAX_LINE_BYTES, "a" * (MAX_LINE_BYTES - 3) + "\ud800", "\ud800" * 21846]:
            assert_strict_equal(rejected(backend, line), Rejection("too-large", R_TOO_LARGE))
        # 21845 lone surrogates = 65535 bytes (surrogatepass): not too large, not UTF-8
        assert_strict_equal(rejected(backend, "\ud800" * 21845), Rejection("malformed", R_NOT_UTF8))

    def test_utf8_before_json(self, backend: ModuleType) -> None:
        for line in [b"\xff", b"[\xff", b'{"v":1,"x":"\xc3"}', line_with("").encode() + b"\x80"]:
            assert_strict_equal(rejected(backend, line, "sideways"), Rejection("malformed", R_NOT_UTF8))
        assert_strict_equal(rejected(backend, "{\ud800}"), Rejection("malformed", R_NOT_UTF8))
        assert_strict_equal(rejected(backend, '{"x":"\udfff"}'), Rejection("malformed", R_NOT_UTF8))

    def test_invalid_utf8_after_a_json_error_is_still_not_utf8(self, backend: ModuleType) -> None:
        # the whole line must be UTF-8; where the JSON error is does not matter
        assert_strict_equal(rejected(backend, b'{"v":,\xff}'), Rejection("malformed", R_NOT_UTF8))
        assert_strict_equal(rejected(backend, b"nope \xe2\x82"), Rejection("malformed", R_NOT_UTF8))

    def test_json_before_object(self, backend: ModuleType) -> None:
        assert_strict_equal(rejected(backend, "[1,", "sideways"), Rejection("malformed", R_NOT_JSON))

    def test_object_before_direction(self, backend: ModuleType) -> None:
        for line in ["[]", "1", '"x"', "null"]:
            assert_strict_equal(rejected(backend, line, "sideways"), Rejection("malformed", R_NOT_OBJECT))

    @pytest.mark.parametrize("direction", ["sideways", "", "Event", "events", None, 1, b"event", ["event"]])
    def test_direction_before_v(self, backend: ModuleType, direction: object) -> None:
        for line in ["{}", '{"v":2}', line_with("")]:
            assert_strict_equal(rejected(backend, line, direction), Rejection("invalid", R_DIRECTION))  # type: ignore[arg-type]
        assert_strict_equal(backend.validate({}, direction)[1], Rejection("invalid", R_DIRECTION))
        assert_strict_equal(backend.validate("nope", direction)[1], Rejection("invalid", R_DIRECTION))

    @pytest.mark.parametrize("msg", [None, [], [("v", 1)], "x", 1, b"{}", ({"v": 1},)])
    def test_validate_not_a_dict(self, backend: ModuleType, msg: object) -> None:
        assert_strict_equal(backend.validate(msg, "event")[1], Rejection("invalid", R_NOT_DICT))
        assert_strict_equal(backend.encode(msg, "event")[1], Rejection("invalid", R_NOT_DICT))

    def test_v_required_before_version(self, backend: ModuleType) -> None:
        assert_strict_equal(
            rejected(backend, '{"seq":2,"type":"x","run":"r"}'), Rejection("invalid", "v is required", 2, "x", "r")
        )
        assert_strict_equal(rejected(backend, '{"v":null,"seq":2}'), Rejection("invalid", "v is required", 2))

    def test_version_before_envelope(self, backend: ModuleType) -> None:
        rej = rejected(backend, '{"v":2,"seq":"bad","type":9}')
        assert_strict_equal(rej, Rejection("version-mismatch", "wire version 2 is not supported; expected 1"))
        assert rej.fatal is True

    def test_envelope_before_type(self, backend: ModuleType) -> None:
        rej = rejected(backend, '{"v":1,"seq":0,"type":"pause","run":"r"}')
        assert_strict_equal(
            rej, Rejection("invalid", "seq must be at least 1", None, "pause", "r", (("seq", "must be at least 1"),))
        )

    def test_type_before_payload(self, backend: ModuleType) -> None:
        rej = rejected(backend, '{"v":1,"seq":3,"type":"turn-started","run":"r","turn":0}', "control")
        assert_strict_equal(
            rej, Rejection("unknown-type", "turn-started is an event type, not a control type", 3, "turn-started", "r")
        )

    def test_payload_last(self, backend: ModuleType) -> None:
        rej = rejected(backend, '{"v":1,"seq":3,"type":"turn-started","run":"r","turn":0}', "event")
        assert_strict_equal(
            rej,
            Rejection(
                "invalid-payload", "turn must be at least 1", 3, "turn-started", "r", (("turn", "must be at least 1"),)
            ),
        )


# ---------------------------------------------------------------------------------------------
# Rejection fields


class TestRejectionFields:
    def test_fatal_only_for_version_mismatch(self, backend: ModuleType) -> None:
        cases = {
            "malformed": "nope",
            "too-large": "x" * MAX_LINE_BYTES,
            "invalid": "{}",
            "version-mismatch": '{"v":2}',
            "unknown-type": '{"v":1,"seq":1,"type":"pause","run":"r"}',
            "invalid-payload": '{"v":1,"seq":1,"type":"prompt","run":"r"}',
        }
        for code, line in cases.items():
            rej = rejected(backend, line)
            assert rej.code == code
            assert rej.fatal is (code == "version-mismatch")
        rx = backend.Receiver("control")
        rx.receive(b'{"v":1,"seq":1,"type":"cancel","run":"r"}')
        _, rej = rx.receive(b'{"v":1,"seq":1,"type":"cancel","run":"r"}')
        assert rej.code == "out-of-order" and rej.fatal is False

    @pytest.mark.parametrize(
        "seq_json,want",
        [
            ("1", 1),
            ("1.0", 1),
            ("7", 7),
            ("7.0", 7),
            ("1e1", 10),
            ("9007199254740991", 2**53 - 1),
            ("9007199254740991.0", 2**53 - 1),
            ("9007199254740992", None),
            ("9007199254740992.0", None),
            ("0", None),
            ("-0.0", None),
            ("-1", None),
            ("0.5", None),
            ("1.5", None),
            ('"1"', None),
            ("true", None),
            ("false", None),
            ("null", None),
            ("[1]", None),
            ("{}", None),
            ("1e300", None),
            ("18446744073709551615", None),
            ("18446744073709551616", None),
            ("-9223372036854775808", None),
        ],
    )
    def test_seq_only_when_usable(self, backend: ModuleType, seq_json: str, want: int | None) -> None:
        # through an unknown type (so the envelope may or may not be valid) and through a fatal
        for line in [
            '{"v":1,"seq":%s,"type":"pause","run":"r"}' % seq_json,
            '{"v":2,"seq":%s,"type":"pause","run":"r"}' % seq_json,
            '{"v":null,"seq":%s}' % seq_json,
        ]:
            rej = rejected(backend, line)
            assert rej.seq == want
            assert type(rej.seq) is (int if want is not None else type(None))

    @pytest.mark.parametrize("value_json", ['"t"', '""', "1", "1.0", "null", "true", "[]", '["t"]', "{}", '{"a":"t"}'])
    def test_type_and_run_only_when_strings(self, backend: ModuleType, value_json: str) -> None:
        want = orjson.loads(value_json)
        want = want if isinstance(want, str) else None
        rej = rejected(backend, '{"v":2,"type":%s,"run":%s}' % (value_json, value_json))
        assert (rej.type, rej.run) == (want, want)
        rej = rejected(backend, '{"run":%s,"type":%s}' % (value_json, value_json))
        assert (rej.type, rej.run) == (want, want)

    def test_no_fields_without_a_message(self, backend: ModuleType) -> None:
        for line in ["nope", "x" * MAX_LINE_BYTES, "[]", b"\xff"]:
            rej = rejected(backend, line)
            assert (rej.seq, rej.type, rej.run, rej.errors) == (None, None, None, None)
        _, rej = backend.decode(line_with(""), "sideways")
        assert (rej.seq, rej.type, rej.run, rej.errors) == (None, None, None, None)

    def test_errors_only_for_invalid_envelope_and_payload(self, backend: ModuleType) -> None:
        assert rejected(backend, "{}").errors is None  # v is required: no errors list
        assert rejected(backend, '{"v":2}').errors is None
        assert rejected(backend, '{"v":1,"seq":1,"type":"pause","run":"r"}').errors is None
        assert rejected(backend, '{"v":1}').errors == (
            ("seq", "is required"),
            ("type", "is required"),
            ("run", "is required"),
        )
        assert rejected(backend, '{"v":1,"seq":1,"type":"prompt","run":"r"}').errors == (("text", "is required"),)

    def test_errors_pairs_order_required_then_fields(self, backend: ModuleType) -> None:
        rej = rejected(
            backend,
            '{"v":1,"seq":1,"type":"tool-result","run":"r","summary":2,"result":null,"duration-seconds":"x","id":5}',
            "event",
        )
        assert rej.errors == (
            ("name", "is required"),
            ("is-error?", "is required"),
            ("id", "must be a string"),
            ("duration-seconds", "must be a number"),
            ("summary", "must be a string"),
        )
        assert rej.reason == "; ".join(f"{f} {m}" for f, m in rej.errors)

    def test_ack_rule_comes_last(self, backend: ModuleType) -> None:
        rej = rejected(
            backend, '{"v":1,"seq":1,"type":"control-ack","run":"r","status":"accepted","reason":1}', "event"
        )
        assert rej.errors == (("reason", "must be a string"), ("ref", "is required unless status is rejected"))

    def test_ack_rule_needs_status_present(self, backend: ModuleType) -> None:
        rej = rejected(backend, '{"v":1,"seq":1,"type":"control-ack","run":"r"}', "event")
        assert rej.errors == (("status", "is required"),)

    def test_ack_rejected_without_ref_is_valid(self, backend: ModuleType) -> None:
        ok(backend, '{"v":1,"seq":1,"type":"control-ack","run":"r","status":"rejected"}', "event")
        ok(
            backend,
            '{"v":1,"seq":1,"type":"control-ack","run":"r","status":"rejected","ref":null}'.replace(',"ref":null', ""),
            "event",
        )
        # a null ref is present, so it is type-checked
        rej = rejected(
            backend, '{"v":1,"seq":1,"type":"control-ack","run":"r","status":"rejected","ref":null}', "event"
        )
        assert rej.errors == (("ref", "must be an integer"),)


# ---------------------------------------------------------------------------------------------
# The version field


class TestVersion:
    @pytest.mark.parametrize("v_json", ["1", "1.0", "1e0", "10e-1", "0.1e1"])
    def test_number_one(self, backend: ModuleType, v_json: str) -> None:
        msg = ok(backend, '{"v":%s,"seq":1,"type":"cancel","run":"r"}' % v_json)
        assert_strict_equal(msg["v"], orjson.loads(v_json))  # kept exactly as the JSON gave it

    @pytest.mark.parametrize(
        "v_json,reason",
        [
            ("true", "wire version must be the number 1, not a boolean"),
            ('"1"', "wire version must be the number 1, not a string"),
            ("2", "wire version 2 is not supported; expected 1"),
            ("2.0", "wire version 2 is not supported; expected 1"),
            ("0", "wire version 0 is not supported; expected 1"),
            ("-0.0", "wire version 0 is not supported; expected 1"),
            ("1.0000001", "wire version must be the number 1, not a non-integral number"),
            ("18446744073709551615", "wire version 18446744073709551615 is not supported; expected 1"),
            ("18446744073709551616", "wire version 18446744073709551616 is not supported; expected 1"),
            ("[1]", "wire version must be the number 1, not an array"),
            ('{"v":1}', "wire version must be the number 1, not an object"),
        ],
    )
    def test_anything_else_is_a_fatal_mismatch(self, backend: ModuleType, v_json: str, reason: str) -> None:
        rej = rejected(backend, '{"v":%s,"seq":4,"type":"cancel","run":"r"}' % v_json)
        assert_strict_equal(rej, Rejection("version-mismatch", reason, 4, "cancel", "r"))
        assert rej.fatal is True

    def test_null_and_missing_are_invalid(self, backend: ModuleType) -> None:
        for line in ['{"v":null,"seq":4,"type":"cancel","run":"r"}', '{"seq":4,"type":"cancel","run":"r"}']:
            rej = rejected(backend, line)
            assert_strict_equal(rej, Rejection("invalid", "v is required", 4, "cancel", "r"))
            assert rej.fatal is False

    def test_validate_version_values(self, backend: ModuleType) -> None:
        base = {"seq": 1, "type": "cancel", "run": "r"}
        for v in (1, 1.0):
            msg = {"v": v, **base}
            got, rej = backend.validate(msg, "control")
            assert rej is None and got is msg
        for v, reason in [
            (True, "wire version must be the number 1, not a boolean"),
            (2, "wire version 2 is not supported; expected 1"),
            (float("nan"), "wire version must be the number 1, not a non-integral number"),
            (float("inf"), "wire version must be the number 1, not a non-integral number"),
            ((1,), "wire version must be the number 1, not a non-JSON value"),
        ]:
            assert_strict_equal(
                backend.validate({"v": v, **base}, "control")[1],
                Rejection("version-mismatch", reason, 1, "cancel", "r"),
            )


# ---------------------------------------------------------------------------------------------
# The JSON dialect: one pinned test per edge.


class TestDialect:
    def test_bom(self, backend: ModuleType) -> None:
        for line in ["\ufeff" + line_with(""), b"\xef\xbb\xbf" + line_with("").encode()]:
            assert_strict_equal(rejected(backend, line), Rejection("malformed", R_NOT_JSON))

    @pytest.mark.parametrize("lit", ["NaN", "Infinity", "-Infinity", "nan", "inf"])
    def test_nan_and_infinity_literals(self, backend: ModuleType, lit: str) -> None:
        for line in both_forms(line_with('"x":' + lit)):
            assert_strict_equal(rejected(backend, line), Rejection("malformed", R_NOT_JSON))

    @pytest.mark.parametrize("num", ["1e400", "-1e400", "1.5e309", "123456789e301"])
    def test_double_overflow(self, backend: ModuleType, num: str) -> None:
        assert_strict_equal(rejected(backend, line_with('"x":' + num)), Rejection("malformed", R_NOT_JSON))
        assert_strict_equal(
            rejected(backend, '{"v":1,"seq":%s,"type":"cancel","run":"r"}' % num), Rejection("malformed", R_NOT_JSON)
        )

    @pytest.mark.parametrize(
        "num,want",
        [
            ("1e-400", 0.0),
            ("-1e-400", -0.0),
            ("1.7976931348623157e308", 1.7976931348623157e308),
            ("5e-324", 5e-324),
            ("2.2250738585072014e-308", 2.2250738585072014e-308),
        ],
    )
    def test_extreme_but_finite(self, backend: ModuleType, num: str, want: float) -> None:
        assert_strict_equal(ok(backend, line_with('"x":' + num))["x"], want)

    def test_integer_range(self, backend: ModuleType) -> None:
        cases = {
            "18446744073709551615": 2**64 - 1,
            "18446744073709551616": float(2**64),
            "-9223372036854775808": -(2**63),
            "-9223372036854775809": -float(2**63),
            "9223372036854775808": 2**63,
            "0": 0,
            "-0": 0,
            "100000000000000000000": 1e20,
            "-18446744073709551615": -1.8446744073709552e19,
        }
        for num, want in cases.items():
            got = ok(backend, line_with('"x":' + num))["x"]
            assert_strict_equal(got, want)

    def test_floats_stay_floats(self, backend: ModuleType) -> None:
        for num, want in {
            "1.0": 1.0,
            "1e2": 100.0,
            "1E2": 100.0,
            "-0.0": -0.0,
            "0.1": 0.1,
            "2.5e-3": 0.0025,
            "1e+2": 100.0,
        }.items():
            got = ok(backend, line_with('"x":' + num))["x"]
            assert_strict_equal(got, want)
            assert math.copysign(1.0, got) == math.copysign(1.0, want)

    @pytest.mark.parametrize("kind", ["array", "object"])
    def test_depth_1024_ok_1025_malformed(self, backend: ModuleType, kind: str) -> None:
        def nest(total: int) -> str:
            inner = total - 1  # the message object is level 1
            if kind == "array":
                return line_with('"x":' + "[" * inner + "]" * inner)
            return line_with('"x":' + '{"a":' * (inner - 1) + "{}" + "}" * (inner - 1))

        msg = ok(backend, nest(1024))
        depth, value = 2, msg["x"]
        while value:
            value = value[0] if kind == "array" else value["a"]
            depth += 1
        assert depth == 1024
        for form in both_forms(nest(1025)):
            assert_strict_equal(rejected(backend, form), Rejection("malformed", R_NOT_JSON))

    def test_depth_counts_mixed_nesting(self, backend: ModuleType) -> None:
        inner = '[{"a":' * 511 + "1" + "}]" * 511  # 1022 levels
        ok(backend, line_with('"x":[' + inner + "]"))  # 1 + 1 + 1022 = 1024
        assert rejected(backend, line_with('"x":[[' + inner + "]]")).code == "malformed"

    def test_lone_surrogate_escapes(self, backend: ModuleType) -> None:
        for esc in ["\\ud800", "\\udbff", "\\udc00", "\\udfff", "\\ud800\\u0041", "\\ude00\\ud83d", "\\ud800\\ud800"]:
            assert_strict_equal(rejected(backend, line_with('"x":"%s"' % esc)), Rejection("malformed", R_NOT_JSON))
            assert_strict_equal(rejected(backend, line_with('"%s":1' % esc)), Rejection("malformed", R_NOT_JSON))

    def test_valid_surrogate_pair(self, backend: ModuleType) -> None:
        msg = ok(backend, line_with('"x":"\\ud83d\\ude00","\\uD83D\\uDE00":"\\u00e9\\u2603"'))
        assert msg["x"] == "\U0001f600"
        assert msg["\U0001f600"] == "\u00e9\u2603"

    def test_escapes(self, backend: ModuleType) -> None:
        msg = ok(backend, line_with(r'"x":"\"\\\/\b\f\n\r\t\u0000\u001f\u007f"'))
        assert msg["x"] == '"\\/\b\f\n\r\t\x00\x1f\x7f'

    @pytest.mark.parametrize(
        "raw",
        [
            b"\xff",
            b"\xfe",
            b"\x80",
            b"\xbf",
            b"\xc3",
            b"\xc3\x28",
            b"\xe2\x82",
            b"\xe2\x28\xa1",
            b"\xf0\x9f\x98",
            b"\xc0\x80",
            b"\xc1\xbf",
            b"\xe0\x80\x80",
            b"\xf0\x80\x80\x80",
            b"\xed\xa0\x80",
            b"\xed\xbf\xbf",
            b"\xf4\x90\x80\x80",
            b"\xf5\x80\x80\x80",
            b"\xf8\x88\x80\x80\x80",
        ],
    )
    def test_invalid_utf8(self, backend: ModuleType, raw: bytes) -> None:
        for line in [
            line_with('"x":"').encode()[:-1] + raw + b'"}',
            CANCEL.encode() + b',"' + raw + b'":1}',
            line_with("").encode() + raw,
            raw,
        ]:
            assert_strict_equal(rejected(backend, line), Rejection("malformed", R_NOT_UTF8))

    def test_valid_utf8_boundaries(self, backend: ModuleType) -> None:
        for ch in ["\x7f", "\x80", "\u07ff", "\u0800", "\ud7ff", "\ue000", "\uffff", "\U00010000", "\U0010ffff"]:
            assert ok(backend, line_with('"x":"%s"' % ch).encode("utf-8"))["x"] == ch

    @pytest.mark.parametrize("ch", [chr(c) for c in [*range(0, 0x20)]])
    def test_raw_control_character_in_string(self, backend: ModuleType, ch: str) -> None:
        if ch == "\n":
            line = line_with('"x":"a\nb"')  # decode is given one line; a newline inside is still raw
        else:
            line = line_with('"x":"a%sb"' % ch)
        assert_strict_equal(rejected(backend, line), Rejection("malformed", R_NOT_JSON))

    def test_del_and_c1_in_strings_are_fine(self, backend: ModuleType) -> None:
        assert ok(backend, line_with('"x":"a\x7f\x80\x9fb"'))["x"] == "a\x7f\x80\x9fb"

    @pytest.mark.parametrize(
        "tail", ["x", "}", "]", ",", "{}", "0", " x", "\x0b", "\x0c", "\xa0", "\u2028", "\x00", "//"]
    )
    def test_trailing_garbage(self, backend: ModuleType, tail: str) -> None:
        assert_strict_equal(rejected(backend, line_with("") + tail), Rejection("malformed", R_NOT_JSON))

    @pytest.mark.parametrize("ws", [" ", "\t", "\r", "\n", " \t\r\n ", "\r\n"])
    def test_json_whitespace_ok(self, backend: ModuleType, ws: str) -> None:
        msg = ok(backend, ws + line_with("").replace(",", ws + "," + ws).replace(":", ws + ":" + ws) + ws)
        assert list(msg.items()) == [("v", 1), ("seq", 1), ("type", "cancel"), ("run", "r")]

    @pytest.mark.parametrize("line", ["", " ", "\t", "\r", "   \t  ", "\r\n", "\n"])
    def test_empty_and_whitespace_only_are_malformed(self, backend: ModuleType, line: str) -> None:
        for form in both_forms(line):
            assert_strict_equal(rejected(backend, form), Rejection("malformed", R_NOT_JSON))

    @pytest.mark.parametrize(
        "num", ["01", "-01", "00", "+1", ".5", "1.", "-", "1e", "1e+", "0x10", "1_000", "- 1", "--1"]
    )
    def test_bad_numbers(self, backend: ModuleType, num: str) -> None:
        assert_strict_equal(rejected(backend, line_with('"x":' + num)), Rejection("malformed", R_NOT_JSON))

    def test_duplicate_keys_last_wins_first_position(self, backend: ModuleType) -> None:
        msg = ok(backend, '{"v":1,"seq":1,"type":"prompt","run":"r","text":"a","x":1,"text":"b"}')
        assert list(msg.items()) == [("v", 1), ("seq", 1), ("type", "prompt"), ("run", "r"), ("text", "b"), ("x", 1)]
        msg = ok(backend, '{"seq":0,"v":1,"seq":2,"type":"cancel","run":"r","v":1.0}')
        assert_strict_equal(msg, {"seq": 2, "v": 1.0, "type": "cancel", "run": "r"})
        # the last value is the one validated
        rej = rejected(backend, '{"v":1,"seq":1,"type":"prompt","run":"r","text":"a","text":5}')
        assert rej.errors == (("text", "must be a string"),)
        ok(backend, '{"v":1,"seq":1,"type":"prompt","run":"r","text":5,"text":"a"}')
        assert rejected(backend, '{"v":1,"v":2,"seq":1,"type":"cancel","run":"r"}').code == "version-mismatch"
        # nested objects too
        msg = ok(backend, line_with('"x":{"a":1,"b":2,"a":3}'))
        assert list(msg["x"].items()) == [("a", 3), ("b", 2)]

    def test_values_kept_exactly(self, backend: ModuleType) -> None:
        line = '{"v":1.0,"seq":3.0,"type":"turn-complete","run":"r","turn":2.0,"stop-reason":"s","usage":{"a":-0.0,"b":1e2,"c":[]},"x":null}'
        msg = ok(backend, line, "event")
        assert_strict_equal(msg, orjson.loads(line))

    def test_str_and_bytes_lines_agree(self, backend: ModuleType) -> None:
        line = line_with('"x":"caf\u00e9 \u2603 \U0001f600"')
        assert_strict_equal(ok(backend, line), ok(backend, line.encode()))


# ---------------------------------------------------------------------------------------------
# Field types


class TestFieldTypes:
    @pytest.mark.parametrize("empty", ["{}", "[]"])
    def test_empty_object_and_array_interchange(self, backend: ModuleType, empty: str) -> None:
        msg = ok(backend, '{"v":1,"seq":1,"type":"llm-end","run":"r","usage":%s}' % empty, "event")
        assert_strict_equal(msg["usage"], orjson.loads(empty))
        msg = ok(backend, '{"v":1,"seq":1,"type":"info","run":"r","refs":%s}' % empty, "event")
        assert_strict_equal(msg["refs"], orjson.loads(empty))
        ok(
            backend,
            '{"v":1,"seq":1,"type":"turn-complete","run":"r","turn":1,"stop-reason":"s","usage":%s}' % empty,
            "event",
        )
        ok(backend, '{"v":1,"seq":1,"type":"result","run":"r","stop-reason":"s","usage":%s}' % empty, "event")

    @pytest.mark.parametrize(
        "field,value,message",
        [
            ("usage", "[1]", "must be an object"),
            ("usage", "[{}]", "must be an object"),
            ("usage", "[[]]", "must be an object"),
            ("refs", '{"a":1}', "must be an array"),
            ("refs", '{"0":1}', "must be an array"),
        ],
    )
    def test_non_empty_do_not_interchange(self, backend: ModuleType, field: str, value: str, message: str) -> None:
        t = "llm-end" if field == "usage" else "info"
        rej = rejected(backend, '{"v":1,"seq":1,"type":"%s","run":"r","%s":%s}' % (t, field, value), "event")
        assert rej.errors == ((field, message),)

    @pytest.mark.parametrize(
        "value",
        ["1", "-5", "0", "1.0", "-2.0", "1e3", "9007199254740993", "18446744073709551615", "-9223372036854775808"],
    )
    def test_integer_field_accepts(self, backend: ModuleType, value: str) -> None:
        msg = ok(backend, '{"v":1,"seq":1,"type":"assistant-text-delta","run":"r","content-index":%s}' % value, "event")
        assert_strict_equal(msg["content-index"], orjson.loads(value))

    @pytest.mark.parametrize("value", ["1.5", "true", "false", '"1"', "null", "[]", "{}", "1e-5", "-0.5"])
    def test_integer_field_rejects(self, backend: ModuleType, value: str) -> None:
        rej = rejected(
            backend, '{"v":1,"seq":1,"type":"assistant-text-delta","run":"r","content-index":%s}' % value, "event"
        )
        assert rej.errors == (("content-index", "must be an integer"),)

    def test_big_float_integral_is_integer(self, backend: ModuleType) -> None:
        # 18446744073709551616 decodes as a float with an integral value: an integer
        ok(
            backend,
            '{"v":1,"seq":1,"type":"assistant-text-delta","run":"r","content-index":18446744073709551616}',
            "event",
        )
        ok(backend, '{"v":1,"seq":1,"type":"assistant-text-delta","run":"r","content-index":1e300}', "event")

    @pytest.mark.parametrize("value", ["1", "-1", "0.5", "1e300", "-0.0", "18446744073709551616"])
    def test_number_field_accepts(self, backend: ModuleType, value: str) -> None:
        ok(
            backend,
            '{"v":1,"seq":1,"type":"tool-result","run":"r","name":"n","is-error?":false,"duration-seconds":%s}' % value,
            "event",
        )

    @pytest.mark.parametrize("value", ["true", "false", '"1"', "null", "[]", "{}"])
    def test_number_field_rejects(self, backend: ModuleType, value: str) -> None:
        rej = rejected(
            backend,
            '{"v":1,"seq":1,"type":"tool-result","run":"r","name":"n","is-error?":false,"duration-seconds":%s}' % value,
            "event",
        )
        assert rej.errors == (("duration-seconds", "must be a number"),)

    @pytest.mark.parametrize("value", ["1", "0", '"true"', "null", "[]", "{}"])
    def test_boolean_field_rejects(self, backend: ModuleType, value: str) -> None:
        rej = rejected(backend, '{"v":1,"seq":1,"type":"assistant-stream-end","run":"r","final?":%s}' % value, "event")
        assert rej.errors == (("final?", "must be a boolean"),)

    @pytest.mark.parametrize("value", ["1", "true", "null", "[]", "{}", '["a"]'])
    def test_string_field_rejects(self, backend: ModuleType, value: str) -> None:
        rej = rejected(backend, '{"v":1,"seq":1,"type":"steer","run":"r","text":%s}' % value, "control")
        assert rej.errors == (("text", "must be a string"),)

    @pytest.mark.parametrize("value", ["null", "1", "true", '"x"', "[]", "{}", "[null]", '{"a":[{}]}'])
    def test_any_fields_accept_everything(self, backend: ModuleType, value: str) -> None:
        msg = ok(backend, '{"v":1,"seq":1,"type":"tool-call","run":"r","name":"n","arguments":%s}' % value, "event")
        assert_strict_equal(msg["arguments"], orjson.loads(value))
        ok(
            backend,
            '{"v":1,"seq":1,"type":"tool-result","run":"r","name":"n","is-error?":true,"result":%s}' % value,
            "event",
        )

    def test_unknown_extra_fields_anywhere(self, backend: ModuleType) -> None:
        msg = ok(backend, '{"x-a":null,"v":1,"seq":1,"type":"cancel","run":"r","text":5,"note":[1],"final?":"no"}')
        assert list(msg) == ["x-a", "v", "seq", "type", "run", "text", "note", "final?"]
        ok(backend, '{"v":1,"seq":1,"type":"ready","run":"r","timestamp":5,"summary":null}', "event")  # not display

    def test_seq_float_valid(self, backend: ModuleType) -> None:
        msg = ok(backend, '{"v":1,"seq":1.0,"type":"cancel","run":"r"}')
        assert_strict_equal(msg["seq"], 1.0)
        msg = ok(backend, '{"v":1,"seq":9007199254740991.0,"type":"cancel","run":"r"}')
        assert_strict_equal(msg["seq"], 9007199254740991.0)

    def test_pos_fields(self, backend: ModuleType) -> None:
        for value, errs in [
            ("1", ()),
            ("1.0", ()),
            ("9007199254740991", ()),
            ("0", (("ref", "must be at least 1"),)),
            ("-0.0", (("ref", "must be at least 1"),)),
            ("9007199254740992", (("ref", "must be at most 9007199254740991"),)),
            ("1.5", (("ref", "must be an integer"),)),
            ("0.5", (("ref", "must be an integer"), ("ref", "must be at least 1"))),
            ("1e300", (("ref", "must be at most 9007199254740991"),)),
            ("-1e300", (("ref", "must be at least 1"),)),
            ("true", (("ref", "must be an integer"),)),
            ('"1"', (("ref", "must be an integer"),)),
        ]:
            line = '{"v":1,"seq":1,"type":"control-ack","run":"r","ref":%s,"status":"accepted"}' % value
            msg, rej = backend.decode(line, "event")
            if errs:
                assert rej is not None and rej.errors == errs, (value, rej)
            else:
                assert rej is None, (value, rej)


# ---------------------------------------------------------------------------------------------
# The line limit on decode


class TestLineLimit:
    @staticmethod
    def line_of(size: int, ch: str = "a") -> str:
        head = '{"v":1,"seq":1,"type":"prompt","run":"r","text":"'
        room = size - len(head) - 2
        width = len(ch.encode())
        n, rest = divmod(room, width)
        return head + "b" * rest + ch * n + '"}'

    @pytest.mark.parametrize("ch", ["a", "\u00e9", "\u20ac", "\U0001f600"])
    def test_65535_ok_65536_too_large(self, backend: ModuleType, ch: str) -> None:
        ok_line = self.line_of(MAX_LINE_BYTES - 1, ch)
        big_line = self.line_of(MAX_LINE_BYTES, ch)
        assert len(ok_line.encode()) == 65535 and len(big_line.encode()) == 65536
        for form in both_forms(ok_line):
            assert ok(backend, form)["text"].endswith(ch + "")
        for form in both_forms(big_line):
            assert_strict_equal(rejected(backend, form), Rejection("too-large", R_TOO_LARGE))

    def test_str_counts_utf8_bytes_not_characters(self, backend: ModuleType) -> None:
        line = self.line_of(MAX_LINE_BYTES, "\U0001f600")
        assert len(line) < 20000
        assert rejected(backend, line).code == "too-large"

    def test_whitespace_padding_counts(self, backend: ModuleType) -> None:
        core = line_with("")
        assert ok(backend, core + " " * (MAX_LINE_BYTES - 1 - len(core)))
        assert rejected(backend, core + " " * (MAX_LINE_BYTES - len(core))).code == "too-large"
