"""Run a test ACP agent after writing its pid to a file: ``python3 with_pid.py PID_FILE AGENT.py [ARGS...]``.

It writes its own pid (atomically), then ``exec`` s the agent in the same process: same pid, same
process group. The pid is written before the agent has imported anything, so a test can check
that the agent's group is gone even when the bridge killed it before it spoke ACP.
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__":
    pid_file, agent, *args = sys.argv[1:]
    with open(pid_file + ".tmp", "w", encoding="utf-8") as handle:
        handle.write(str(os.getpid()))
    os.replace(pid_file + ".tmp", pid_file)
    os.execv(sys.executable, [sys.executable, agent, *args])
