"""Run a test ACP agent that has a subprocess in its group: ``python3 with_grandchild.py PID_FILE AGENT.py [ARGS...]``.

It starts ``sleep 600`` (in its own process group, with none of its pipes), writes ``"<own pid>
<sleep's pid>"`` to ``PID_FILE`` (atomically), then ``exec`` s the agent in the same process: the
agent leads a group with a member besides itself, as an agent whose tool left a subprocess
running would. A test can then check that what the bridge signals is the group, not its leader.
"""

from __future__ import annotations

import os
import subprocess
import sys

if __name__ == "__main__":
    pid_file, agent, *args = sys.argv[1:]
    quiet = subprocess.DEVNULL
    grandchild = subprocess.Popen(["sleep", "600"], stdin=quiet, stdout=quiet, stderr=quiet, close_fds=True)
    with open(pid_file + ".tmp", "w", encoding="utf-8") as handle:
        handle.write(f"{os.getpid()} {grandchild.pid}")
    os.replace(pid_file + ".tmp", pid_file)
    os.execv(sys.executable, [sys.executable, agent, *args])
