"""The forwarder's names: a run id escaped into one subject token and back, and message ids.

Pure functions with no server; they need nothing of the ``nats`` extra (``names`` imports no NATS
module), so they run in every environment, on both backends.
"""

from __future__ import annotations

import pytest
from fenwire_fast.forward.names import check_prefix, message_id, run_of, seq_of_id, subject
from hypothesis import given
from hypothesis import strategies as st


@pytest.mark.parametrize(
    ("run", "token"),
    [
        ("child-1", "child-1"),
        ("a.b", "a%2Eb"),
        ("x y", "x%20y"),
        ("*>", "%2A%3E"),
        ("%", "%25"),
        ("é", "%C3%A9"),
        ("", "%"),
    ],
)
def test_subject_tokens(run: str, token: str) -> None:
    assert subject("fenwire", run) == f"fenwire.{token}"
    assert run_of("fenwire", f"fenwire.{token}") == run


@given(st.text())
def test_every_run_id_round_trips_through_one_token(run: str) -> None:
    name = subject("a.b", run)
    token = name.removeprefix("a.b.")
    assert token and all(c.isascii() and (c.isalnum() or c in "_-%") for c in token)
    assert run_of("a.b", name) == run
    assert seq_of_id(message_id(run, 7)) == 7


@pytest.mark.parametrize("name", ["other.x", "fenwire", "fenwire.a.b", "fenwire.%zz", "fenwire.%4", "fenwire.a b"])
def test_names_not_made_by_subject(name: str) -> None:
    assert run_of("fenwire", name) is None


@pytest.mark.parametrize("msg_id", [None, "", "x", "x:", "x:-1", "x:1e3", "x:" + "9" * 17, "x:١٢"])
def test_ids_not_made_by_message_id(msg_id: str | None) -> None:
    assert seq_of_id(msg_id) is None


@pytest.mark.parametrize("prefix", ["", ".", "a.", "a..b", "a*", "a>", "a b", "é"])
def test_bad_prefixes(prefix: str) -> None:
    with pytest.raises(ValueError, match="subject prefix"):
        check_prefix(prefix)
