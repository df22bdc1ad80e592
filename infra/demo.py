"""`toolcat demo`: builds the bundled example catalog in a fresh home and walks through what it shows."""
from __future__ import annotations

import contextlib
import io
import json
import shlex
import shutil
from pathlib import Path

from domain.errors import UsageError
from infra.context import Context

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
MARKER = ".toolcat-demo"


def script_lines(path: Path) -> list[list[str]]:
    lines = []
    for raw in path.read_text().splitlines():
        text = raw.split(" #", 1)[0].strip()
        if text and not text.startswith("#"):
            lines.append(shlex.split(text))
    return lines


def prepare_home(home: Path) -> None:
    """The demo owns its home: it refuses a catalog it did not create, and starts its own afresh."""
    if (home / "events.sqlite").exists() and not (home / MARKER).exists():
        raise UsageError(f"{home} holds a catalog that is not a demo; run the demo with --home pointing "
                         "at an empty or demo directory", home=str(home))
    if home.exists():
        shutil.rmtree(home)
    home.mkdir(parents=True)
    (home / MARKER).write_text("created by toolcat demo\n")


def toolcat(home: Path, *args: str, quiet: bool = False) -> str:
    """Run one toolcat command in-process; returns what it printed, fails loudly if it failed."""
    from infra.cli import main
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([*args, "--home", str(home)])
    if code != 0:
        raise UsageError(f"demo step failed: toolcat {' '.join(args)}: {err.getvalue().strip()}")
    if not quiet:
        print(out.getvalue().rstrip())
    return out.getvalue()


def heading(text: str) -> None:
    print(f"\n== {text} " + "=" * max(0, 70 - len(text)))


def cmd_demo(ctx: Context) -> int:
    home = ctx.settings.home
    prepare_home(home)
    script = EXAMPLES / "tyrum.toolcat"
    commands = script_lines(script)
    heading(f"Building the example catalog ({script.name}: {len(commands)} commands)")
    for args in commands:
        toolcat(home, *args, quiet=True)
    events = json.loads(toolcat(home, "sql", "select count(*) AS n, max(position) AS head FROM events",
                                "--format", "json", quiet=True))[0]
    print(f"{events['n']} events recorded, head position {events['head']}, home {home}")
    revoked = json.loads(toolcat(home, "sql", "select position from events where type = 'Grants.Revoked'",
                                 "--format", "json", quiet=True))[0]["position"]

    heading("The effective tool set of agent:triage (provenance, inheritance, exposure)")
    toolcat(home, "effective", "agent:triage")
    heading("Why does triage see memory.write?")
    toolcat(home, "explain", "agent:triage", "memory.write")
    heading(f"As of position {revoked - 1}, before websearch was revoked")
    toolcat(home, "effective", "agent:triage", "--at", str(revoked - 1))
    heading("Resolving legacy and retired IDs")
    for tool_id in ("tool.fs.read", "mcp.memory.seed"):
        toolcat(home, "resolve", tool_id)
    print("mcp.memory.search → rejected: it was retired in 1.3.0 (use memory.search)")
    heading("The audit timeline of the retired alias mcp.memory.search")
    toolcat(home, "audit", "alias", "mcp.memory.search")
    heading("The hash chain, recomputed from the event store")
    toolcat(home, "audit", "verify")
    heading("SQL over history")
    print("Who was granted websearch, and from which position until which?")
    toolcat(home, "sql", "SELECT subject_kind, subject, valid_from, valid_to FROM grant_history "
                         "WHERE target = 'websearch' ORDER BY valid_from")
    print("Every ID that ever resolved to memory.search, and its lifecycle over time:")
    toolcat(home, "sql", "SELECT h.alias, h.lifecycle, h.valid_from, h.valid_to FROM alias_history h "
                         "JOIN tools t USING (tool_key) WHERE t.canonical_id = 'memory.search' ORDER BY h.valid_from")
    print("Which agents had a tool disabled by their allowlist, right now?")
    toolcat(home, "sql", "SELECT subject, tool_id, exposure FROM effective_tools "
                         "WHERE exposure = 'disabled_by_agent_allowlist' ORDER BY 1, 2")
    print(f"\nDone. Explore it yourself: toolcat --home {home} tool list")
    return 0
