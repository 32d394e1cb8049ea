"""A child's process group, signalled as one, and only while it is known to be ours.

Every child leads a group of its own (``start_new_session``: its pid is the group's id). A group
id is a pid, and pids are reused, so the group is signalled only while the id cannot have been
reused:

- while the leader is not reaped (running, or a zombie): its pid is held. The leader's end is seen
  with ``waitid(..., WNOWAIT)``, which leaves it a zombie, the group gets SIGTERM, and only then is
  the leader reaped;
- after that, only right after ``killpg(pgid, 0)`` found members: a member holds the id (a group id
  is not reused while the group has members), so the id can only have been reused if the group
  emptied in the microseconds between the probe and the signal and the whole pid space was cycled
  through meanwhile.

A group whose leader has ended but whose members remain (a tool's subprocess that ignores SIGTERM)
is probed with a short back-off (2 ms doubling to 100 ms) until it is empty, and gets SIGKILL
``term_grace`` seconds after its first SIGTERM; its supervision is then over. ESRCH and EPERM are
never raised.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

__all__ = ["ProcessGroup"]

_FIRST_PROBE = 0.002
_LAST_PROBE = 0.1
_WAITID = hasattr(os, "waitid") and hasattr(os, "WNOWAIT")


class ProcessGroup:
    """The group led by ``process`` (started in a session of its own); see the module docstring."""

    def __init__(self, process: subprocess.Popen[bytes], term_grace: float) -> None:
        self.process = process
        self.pgid = process.pid
        self.term_grace = term_grace
        #: when (``time.monotonic()``) the group first got SIGTERM
        self.term_at: float | None = None
        #: SIGKILL was sent to the group
        self.kill_sent = False
        #: the leader has ended and been reaped (by :meth:`leader_ended`)
        self.leader_gone = False
        #: the leader is gone and the group is empty, or got SIGKILL after the leader's end
        self.done = False
        self._probe_delay = _FIRST_PROBE
        self._probe_at = 0.0

    def _signal(self, sig: int) -> bool:
        """``killpg``; ``False`` when the group is empty (ESRCH). EPERM counts as members. A group
        id below 2 (a run adopted with no process found: 0) is never signalled: ``killpg(0, ...)``
        would be the caller's own group."""
        if self.pgid < 2:
            return False
        try:
            os.killpg(self.pgid, sig)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        except OSError:
            return False
        return True

    def _ours(self) -> bool:
        """The id is held: the leader is not reaped, or a probe finds members now."""
        return self.process.returncode is None or self._signal(0)

    def leader_exited(self) -> bool:
        """The leader has ended (a zombie not reaped yet, or reaped). Does not reap it."""
        if self.process.returncode is not None:
            return True
        if not _WAITID:  # pragma: no cover - no waitid: reaping is the only way to know
            return self.process.poll() is not None
        try:
            info = os.waitid(os.P_PID, self.pgid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:  # reaped behind Popen's back: let Popen find out
            return self.process.poll() is not None
        return info is not None

    def terminate(self) -> None:
        """SIGTERM the group (the backstop, with the leader still running)."""
        if self.term_at is None:
            self.term_at = time.monotonic()
        if self._ours():
            self._signal(signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL the group now, if it is still ours; its supervision is then over once the
        leader is gone."""
        if not self.done and self._ours():
            self._signal(signal.SIGKILL)
        self.kill_sent = True
        if self.leader_gone:
            self.done = True

    def leader_ended(self) -> None:
        """The leader has ended (:meth:`leader_exited`): SIGTERM the group while the zombie holds
        its id, reap the leader, and see whether members remain."""
        if self.leader_gone:
            return
        held = self.process.returncode is None
        if held and not self.kill_sent:
            self._signal(signal.SIGTERM)
        self.process.poll()  # reap
        if self.process.returncode is None:  # pragma: no cover - waitid said it ended
            self.process.wait()
        self.leader_gone = True
        if self.kill_sent:
            self.done = True  # every member had SIGKILL while the id was held
            return
        if not held:  # reaped elsewhere: it had no SIGTERM yet
            if not self._signal(signal.SIGTERM):
                self.done = True
                return
        elif not self._signal(0):
            self.done = True
            return
        if self.term_at is None:
            self.term_at = time.monotonic()
        self._probe_at = time.monotonic() + self._probe_delay

    def supervise(self, now: float) -> None:
        """With the leader gone: probe the group; SIGKILL it once ``term_grace`` has passed."""
        if self.done or not self.leader_gone:
            return
        if now < self._probe_at and (self.term_at is None or now < self.term_at + self.term_grace):
            return
        if not self._signal(0):
            self.done = True
            return
        assert self.term_at is not None
        if now >= self.term_at + self.term_grace:
            self._signal(signal.SIGKILL)
            self.kill_sent = True
            self.done = True
            return
        self._probe_delay = min(self._probe_delay * 2, _LAST_PROBE)
        self._probe_at = now + self._probe_delay

    def next_timer(self) -> float | None:
        """When :meth:`supervise` has something to do (the leader gone, members remaining)."""
        if self.done or not self.leader_gone or self.term_at is None:
            return None
        return min(self._probe_at, self.term_at + self.term_grace)

    def empty(self) -> bool:
        """No process is left in the group (only meaningful once the leader is reaped)."""
        return not self._signal(0)
