"""The fixed scripts of the test ACP agents, as plain data (no SDK import).

The agents (``*_agent.py`` here) play them; ``tests/live/acp_oracle.py`` and the tests read them to
know what a bridged child must show. Keeping both sides on one copy means a script change cannot
leave the expectation behind.
"""

from __future__ import annotations

#: the session id every test agent answers ``session/new`` with
SESSION = "sess-1"

#: stream_agent: thought chunks, then message chunks, then (last chunk) the prompt it answered
STREAM_THOUGHTS = ["Thinking about ", 'the "task"\u2026\n', "done thinking."]
STREAM_MESSAGE = [
    "Here is the plan:\n",
    "1. say \"hello\" \u2014 with 'quotes' and a tab\there\n",
    '```python\nprint("h\u00e9llo, w\u00f6rld")\n```\n',
    "Done \u2713 \u65e5\u672c\u8a9e \U0001f389",
]


def stream_echo(turn: int, prompt: str) -> str:
    """stream_agent's last message chunk: which prompt (count from 1) it answered, and its text."""
    return f"\n[prompt {turn}: {prompt}]"


def flood_chunk(i: int) -> str:
    """stream_agent --flood's ``i``-th extra chunk (from 0)."""
    return f"{i}\u00b7"


def stream_text(turn: int, prompt: str, flood: int = 0) -> str:
    """stream_agent's whole answer to its ``turn``-th prompt."""
    return "".join(STREAM_MESSAGE) + "".join(map(flood_chunk, range(flood))) + stream_echo(turn, prompt)


#: tools_agent: a plan, then tool calls (id, title, raw input or None, in-progress updates,
#: final status, raw output or None, content text or None), then a closing message
TOOLS_PLAN = ["read the file", "run the tests", "deploy"]
TOOLS = [
    ("call-read", "read_file", {"path": "README.md"}, 1, "completed", None, "# README\nh\u00e9llo"),
    ("call-test", "run_tests", {"pattern": "test_*"}, 2, "completed", {"passed": 3, "failed": 0}, None),
    ("call-deploy", "deploy", None, 1, "failed", None, "deploy refused: no credentials"),
]
TOOLS_TEXT = "All tools ran; deploy failed."
#: the tool whose final update tools_agent sends twice
TOOLS_REPEATED = "call-test"

#: cancel_agent: a tool call left open, then one message chunk every CANCEL_TICK seconds
CANCEL_TOOL = ("call-wait", "wait_for_event")
CANCEL_TICK = 0.05
CANCEL_LIMIT = 60.0


def cancel_chunk(i: int) -> str:
    return f"tick {i}\n"


def cancel_later_text(prompt: str) -> str:
    """cancel_agent's answer to its second and later prompts (given at once)."""
    return f"answered at once: {prompt}"


#: permission_agent: the tool call it asks about, and the options it offers (id, name, kind)
PERMISSION_TOOL = ("call-write", "write_file", {"path": "out.txt"})
PERMISSION_OPTIONS = [
    ("opt-once", "Allow once", "allow_once"),
    ("opt-always", "Allow always", "allow_always"),
    ("opt-reject", "Reject", "reject_once"),
]
#: with --no-reject-once: the reject option is a reject_always one instead
PERMISSION_OPTIONS_NO_REJECT_ONCE = [
    ("opt-once", "Allow once", "allow_once"),
    ("opt-always", "Allow always", "allow_always"),
    ("opt-never", "Never allow", "reject_always"),
]

#: with --allow-only: nothing to reject with (a deny policy must answer ``cancelled``)
PERMISSION_OPTIONS_ALLOW_ONLY = PERMISSION_OPTIONS[:2]


def permission_text(allowed: bool, option: str | None) -> str:
    """permission_agent's answer: ``allowed``/``denied`` and the option chosen (None: cancelled)."""
    return f"{'allowed' if allowed else 'denied'} ({option or 'cancelled'})"


#: bad_agent: the message it streams when it works normally (the misbehaviour comes between)
BAD_MESSAGE = ["bad agent ", "still works"]
BAD_UNKNOWN_SESSION = "no-such-session"
#: what bad_agent says on stderr before it exits (exit-at-start, exit-mid-turn)
BAD_START_STDERR = "bad-agent: no API key configured"
BAD_MID_TURN_STDERR = "bad-agent: lost its model \u2014 connection reset"
BAD_GARBAGE_LINE = "this is not JSON-RPC {"
BAD_BANNER = "Welcome to bad-agent 1.0 (stdout banner)"
BAD_LONG_LINE_BYTES = 2 * 1024 * 1024
#: bad_agent stderr-flood: how much it writes to stderr (three times the bridge's cap on it)
BAD_STDERR_FLOOD_BYTES = 12 * 1024 * 1024

#: raw_agent: how many ``[`` its deep line has (deep-line), the id of a request it answers that
#: was never sent (unknown-id), and how many updates it sends before answering session/new
#: (early-flood)
RAW_DEEP_BRACKETS = 100_000
RAW_UNKNOWN_ID = 4242
RAW_EARLY_UPDATES = 300_000
#: raw_agent early-garbage: how many lines that are not JSON (100 bytes each: more than a few reads
#: of the pipe) it writes before answering session/new
RAW_EARLY_GARBAGE = 10_000
#: raw_agent request-flood: how many requests it writes without reading the answers
RAW_REQUESTS = 100_000
#: raw_agent lone-surrogate: what its last chunk ends with
RAW_LONE = "\ud800"
