"""Text primitives (docs/design-decisions.md, "Text bounds"): utf8_prefix, truncate_line, scrub; and text.first_line."""

from __future__ import annotations

import re
from types import ModuleType

import pytest
from fenwire_fast import text as text_module

NOTE = re.compile(r"\[fenwire: (?:(\d+) unsafe characters? escaped)?(?:; )?(?:kept (\d+) of (\d+) bytes)?\]\Z")


def nbytes(s: str) -> int:
    return len(s.encode("utf-8", "surrogatepass"))


class TestUtf8Prefix:
    @pytest.mark.parametrize(
        "text,limit,want",
        [
            ("", 0, ""),
            ("", 5, ""),
            ("abc", 0, ""),
            ("abc", -1, ""),
            ("abc", 2, "ab"),
            ("abc", 3, "abc"),
            ("abc", 100, "abc"),
            ("a\u00e9b", 1, "a"),
            ("a\u00e9b", 2, "a"),
            ("a\u00e9b", 3, "a\u00e9"),
            ("\u20ac\u20ac", 5, "\u20ac"),
            ("\u20ac\u20ac", 6, "\u20ac\u20ac"),
            ("a\U0001f600b", 1, "a"),
            ("a\U0001f600b", 4, "a"),
            ("a\U0001f600b", 5, "a\U0001f600"),
            ("a\U0001f600b", 6, "a\U0001f600b"),
            ("a\ud800b", 3, "a"),
            ("a\ud800b", 4, "a\ud800"),
            ("\U0001f600" * 1000, 4001, "\U0001f600" * 1000),
            ("\U0001f600" * 1000, 3999, "\U0001f600" * 999),
            ("x" * 10 + "\u00e9", 11, "x" * 10),
        ],
    )
    def test_cases(self, backend: ModuleType, text: str, limit: int, want: str) -> None:
        got = backend.utf8_prefix(text, limit)
        assert type(got) is str and got == want

    def test_every_cut_of_mixed_text(self, backend: ModuleType) -> None:
        text = "a\u00e9\u20ac\U0001f600b\u00e9\U0001f600\u20ac"
        total = nbytes(text)
        for limit in range(-2, total + 3):
            got = backend.utf8_prefix(text, limit)
            assert text.startswith(got)
            assert nbytes(got) <= max(limit, 0)
            if len(got) < len(text):
                assert nbytes(text[: len(got) + 1]) > limit  # longest

    def test_rejects_non_str(self, backend: ModuleType) -> None:
        with pytest.raises(TypeError):
            backend.utf8_prefix(b"abc", 2)


class TestTruncateLine:
    @pytest.mark.parametrize(
        "text,limit,want",
        [
            ("abc", 3, "abc"),
            ("abc", 10, "abc"),
            ("", 0, ""),
            ("abcdef", 5, "ab\u2026"),
            ("abcdef", 4, "a\u2026"),
            ("abcdef", 3, "\u2026"),
            ("abcdef", 2, "ab"),
            ("abcdef", 1, "a"),
            ("abcdef", 0, ""),
            ("h\u00e9llo w\u00f6rld", 8, "h\u00e9ll\u2026"),
            ("h\u00e9llo w\u00f6rld", 6, "h\u00e9\u2026"),
            ("h\u00e9llo w\u00f6rld", 5, "h\u2026"),
            ("h\u00e9llo w\u00f6rld", 4, "h\u2026"),
            ("\U0001f600\U0001f600", 8, "\U0001f600\U0001f600"),
            ("\U0001f600\U0001f600", 7, "\U0001f600\u2026"),
            ("\U0001f600\U0001f600", 6, "\u2026"),
            ("\u2026\u2026", 5, "\u2026"),
            ("x" * 200, 160, "x" * 157 + "\u2026"),
        ],
    )
    def test_cases(self, backend: ModuleType, text: str, limit: int, want: str) -> None:
        assert backend.truncate_line(text, limit) == want

    def test_never_over_budget_never_splits(self, backend: ModuleType) -> None:
        text = "a\u00e9\u20ac\U0001f600b" * 5
        for limit in range(0, nbytes(text) + 2):
            got = backend.truncate_line(text, limit)
            assert nbytes(got) <= limit
            got.encode("utf-8")  # whole characters only
            if nbytes(text) <= limit:
                assert got == text
            elif limit >= 3:
                assert got.endswith("\u2026") and text.startswith(got[:-1])

    def test_keeps_newlines(self, backend: ModuleType) -> None:
        assert backend.truncate_line("a\nb", 3) == "a\nb"  # first_line is a separate helper

    def test_rejects_non_str(self, backend: ModuleType) -> None:
        with pytest.raises(TypeError):
            backend.truncate_line(None, 5)


class TestScrub:
    def test_clean_text_unchanged(self, backend: ModuleType) -> None:
        for text in ["", "hello", "tab\there\nnew\r\n", "caf\u00e9 \u2603 \U0001f600 \u2028", "x" * 4096]:
            got = backend.scrub(text, 4096)
            assert got == (text, False)
            assert got[0] is text or got[0] == text

    def test_escapes_controls(self, backend: ModuleType) -> None:
        got = backend.scrub("a\x00b\x1b\x7f\x85\ud800c\t\n\r", 100)
        assert got == ("a\\x00b\\x1B\\x7F\\x85\\uD800c\t\n\r\n\n[fenwire: 5 unsafe characters escaped]", True)

    @pytest.mark.parametrize(
        "ch,esc",
        [("\x00", "\\x00"), ("\x08", "\\x08"), ("\x0b", "\\x0B"), ("\x0c", "\\x0C"), ("\x0e", "\\x0E"), ("\x1f", "\\x1F"),
         ("\x7f", "\\x7F"), ("\x80", "\\x80"), ("\x9f", "\\x9F"), ("\ud800", "\\uD800"), ("\udfff", "\\uDFFF"), ("\udc80", "\\uDC80")],
    )  # fmt: skip
    def test_each_unsafe_character(self, backend: ModuleType, ch: str, esc: str) -> None:
        assert backend.scrub("<" + ch + ">", 1000) == ("<" + esc + ">\n\n[fenwire: 1 unsafe character escaped]", True)

    @pytest.mark.parametrize(
        "ch", ["\t", "\n", "\r", " ", "~", "\xa0", "\u00ff", "\u2028", "\ufeff", "\uffff", "\U0010ffff"]
    )
    def test_safe_characters(self, backend: ModuleType, ch: str) -> None:
        assert backend.scrub("<" + ch + ">", 1000) == ("<" + ch + ">", False)

    def test_cut_with_note(self, backend: ModuleType) -> None:
        got, changed = backend.scrub("x" * 20000, 4096)
        assert changed is True
        assert got == "x" * 4059 + "\n\n[fenwire: kept 4059 of 20000 bytes]"
        assert len(got) == 4096
        assert backend.scrub("x" * 100, 50) == ("x" * 17 + "\n\n[fenwire: kept 17 of 100 bytes]", True)

    def test_cut_and_escape_note(self, backend: ModuleType) -> None:
        got, changed = backend.scrub("\x01" + "y" * 300, 100)
        assert changed
        m = NOTE.search(got)
        assert m is not None and m.group(1) == "1" and m.group(3) == "301"
        assert got.startswith("\\x01yyy")
        assert nbytes(got) <= 100
        assert int(m.group(2)) == nbytes(got[: got.index("\n\n[fenwire")])

    def test_note_dropped_when_it_cannot_fit(self, backend: ModuleType) -> None:
        assert backend.scrub("ab", 1) == ("a", True)
        assert backend.scrub("\x01", 4) == ("\\x01", True)
        assert backend.scrub("\x01", 3) == ("\\x0", True)
        assert backend.scrub("\u00e9" * 10, 9) == ("\u00e9" * 4, True)
        assert backend.scrub("a", 0) == ("", True)
        assert backend.scrub("a", -5) == ("", True)
        assert backend.scrub("", 0) == ("", False)
        assert backend.scrub("", -1) == ("", False)

    def test_fits_exactly(self, backend: ModuleType) -> None:
        assert backend.scrub("x" * 50, 50) == ("x" * 50, False)
        assert backend.scrub("\u00e9" * 25, 50) == ("\u00e9" * 25, False)
        got, changed = backend.scrub("x" * 51, 50)
        assert changed and nbytes(got) <= 50

    def test_never_over_budget_never_splits(self, backend: ModuleType) -> None:
        text = "ab\x01\u00e9\u20ac\U0001f600\ud800\x85\n" * 40
        for limit in list(range(0, 80)) + [100, 200, 399, 400, 401, 1000, 5000]:
            got, changed = backend.scrub(text, limit)
            assert nbytes(got) <= limit, limit
            got.encode("utf-8")  # no lone surrogates left, whole characters
            assert changed is True
            assert not re.search("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]", got)

    def test_rejects_non_str(self, backend: ModuleType) -> None:
        with pytest.raises(TypeError):
            backend.scrub(b"x", 10)


class TestFirstLine:
    @pytest.mark.parametrize(
        "value,want",
        [
            (None, ""),
            ("", ""),
            ("a\nb", "a"),
            ("a\r\nb", "a\r"),
            ("\nb", ""),
            ("abc", "abc"),
            (12, "12"),
            ("a\u2028b", "a\u2028b"),
        ],
    )
    def test_cases(self, value: object, want: str) -> None:
        assert text_module.first_line(value) == want

    def test_reexports(self) -> None:
        import fenwire_fast

        assert text_module.utf8_prefix is fenwire_fast.utf8_prefix
        assert text_module.truncate_line is fenwire_fast.truncate_line
        assert text_module.scrub is fenwire_fast.scrub


class TestPrintable:
    def test_controls_separators_overrides_and_bytes_are_escaped(self) -> None:
        from fenwire_fast.text import printable

        assert printable("a\nb\r\t\x00\x1b[1m\x7f\x85") == "a\\x0ab\\x0d\\x09\\x00\\x1b[1m\\x7f\\x85"
        assert printable("\u2028\u2029\u202a\u202e\u2066\u2069") == "\\u2028\\u2029\\u202a\\u202e\\u2066\\u2069"
        assert printable("name-\udcff\udc80") == "name-\\xff\\x80"  # os.fsdecode of bytes 0xff 0x80
        assert printable("\ud800\udfff") == "\\ud800\\udfff"

    def test_everything_else_is_kept(self) -> None:
        from fenwire_fast.text import printable

        text = "plain ASCII, café, 日本語, emoji 😀, quotes \"'` and \\ backslash"
        assert printable(text) == text
