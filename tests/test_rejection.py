"""Rejection objects made by either backend are the shared Python type (fenwire_fast._types): equality,
hash, repr, immutability, pickling and to_dict behave the same whichever backend made them."""

from __future__ import annotations

import copy
import pickle
from types import ModuleType

import pytest
from fenwire_fast import Rejection

LINES = [
    (b"nope", "control"),
    (b'{"v":2,"seq":3,"type":"prompt","run":"r"}', "control"),
    (b'{"v":1,"seq":3,"type":"prompt","run":"r"}', "control"),
    (b'{"v":1,"seq":3,"type":"info","run":"r","refs":[0]}', "event"),
    (b'{"v":1,"seq":3,"type":"pause"}', "control"),
]


@pytest.mark.parametrize("line,direction", LINES)
def test_rejection_behaves_like_the_shared_type(
    backend: ModuleType, pure: ModuleType, line: bytes, direction: str
) -> None:
    _, rej = backend.decode(line, direction)
    _, ref = pure.decode(line, direction)
    assert type(rej) is Rejection
    assert rej == ref and not (rej != ref) and hash(rej) == hash(ref)
    assert repr(rej) == repr(ref)
    assert rej.to_dict() == ref.to_dict()
    assert list(rej.to_dict()) == list(ref.to_dict())
    for clone in (pickle.loads(pickle.dumps(rej)), copy.copy(rej), copy.deepcopy(rej)):
        assert clone == rej and type(clone) is Rejection
    with pytest.raises(AttributeError):
        rej.reason = "x"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del rej.code  # type: ignore[misc]
    assert rej != ref.to_dict()
    assert {rej, ref} == {rej}


def test_to_dict_shape() -> None:
    rej = Rejection(
        "invalid-payload", "refs[0] must be at least 1", 3, "info", "r", (("refs[0]", "must be at least 1"),)
    )
    assert rej.to_dict() == {
        "code": "invalid-payload",
        "reason": "refs[0] must be at least 1",
        "fatal?": False,
        "seq": 3,
        "type": "info",
        "run": "r",
        "errors": [{"field": "refs[0]", "message": "must be at least 1"}],
    }
    assert Rejection("version-mismatch", "x").to_dict() == {"code": "version-mismatch", "reason": "x", "fatal?": True}
    assert repr(Rejection("malformed", "m")) == "Rejection(code='malformed', reason='m')"
