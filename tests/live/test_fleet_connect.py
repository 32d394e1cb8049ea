"""What a fleet refuses before it touches a cluster: a Ray Client address, an address where nothing
answers (within ``connect_timeout``), a name that cannot name a fleet. Skipped without Ray."""

from __future__ import annotations

import socket
import time

import pytest

ray = pytest.importorskip("ray")

from fenwire_fast.live.fleet import Fleet  # noqa: E402
from fenwire_fast.live.fleet.named import actor_name, check_name, node_of_actor  # noqa: E402


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_ray_client_address_is_refused() -> None:
    with pytest.raises(ValueError, match="Ray Client"):
        Fleet("ray://127.0.0.1:10001")
    assert not ray.is_initialized()


def test_nothing_answers_within_the_timeout() -> None:
    start = time.monotonic()
    with pytest.raises(ConnectionError, match=r"no Ray cluster answers at 127\.0\.0\.1:\d+"):
        Fleet(f"127.0.0.1:{closed_port()}", connect_timeout=2)
    assert time.monotonic() - start < 10
    assert not ray.is_initialized()


@pytest.mark.parametrize("bad", [0, -1, float("nan"), True, "5"])
def test_connect_timeout_must_be_a_positive_number(bad: object) -> None:
    with pytest.raises(ValueError, match="connect_timeout"):
        Fleet(f"127.0.0.1:{closed_port()}", connect_timeout=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", ["", ".hidden", "-x", "a:b", "a/b", "x" * 65, "é", 7])
def test_a_name_must_be_a_plain_word(bad: object) -> None:
    with pytest.raises(ValueError, match="fleet's name"):
        check_name(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="fleet's name"):
        Fleet(f"127.0.0.1:{closed_port()}", name=bad)  # type: ignore[arg-type]


def test_actor_names_round_trip() -> None:
    assert check_name("nightly-evals.v2_1") == "nightly-evals.v2_1"
    name = actor_name("evals", "abc123")
    assert node_of_actor("evals", name) == "abc123"
    assert node_of_actor("eval", name) is None
    assert node_of_actor("evals", "evals:") is None
    assert node_of_actor("evals", "evals:a:b") is None


@pytest.mark.parametrize(
    ("address", "timeout", "said"),
    [
        ("ray://127.0.0.1:10001", "5", "Ray Client"),
        (None, "0", "--timeout must be a positive"),
        (None, "nan", "--timeout must be a positive"),
        (None, "2", "no Ray cluster answers"),
    ],
)
def test_fenwire_fleet_says_why_it_cannot_list(
    address: str | None, timeout: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from fenwire_fast.cli import parser as cli

    where = address or f"127.0.0.1:{closed_port()}"
    assert cli.main(["fleet", "evals", "--address", where, "--timeout", timeout]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("fenwire fleet: ") and said in err, err
    assert not ray.is_initialized()
