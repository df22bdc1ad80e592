"""What the command line shows: a command's `Reply` (infra/reply.py: one JSON document for machines, a
readable sentence or table for people, the same the server answers with), errors with their CLI hints, and
notices (progress is infra/progress.py).

Handlers compute a `Reply` and print nothing (long-running commands excepted, which report as they go);
`show` prints it. So `infra.cli.run` answers any command with its document without touching stdout.

Data is never markup and never hidden: whatever comes from the history (or the command line) is printed
as the characters it holds, with control characters and bidi controls written as escapes (`\u202e`), so
an event recorded with one can never make the terminal show something other than what was recorded.
Handlers put values into sentences through `plain`; tables, text and errors are escaped when printed.
"""
from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from domain.errors import ToolcatError
from domain.grammar import visible
from infra.cli.tables import cell_text, fitted_table
# The reply is both entry points'; the command line prints it (handlers import it from here or there).
from infra.reply import AS_JSON, Block, Reply, Table  # noqa: F401

if TYPE_CHECKING:  # the CLI imports what a command needs when it runs (rich only to print a table)
    from rich.console import Console


def show(reply: Reply, as_json: bool) -> None:
    for note in reply.notes:
        sys.stderr.write(f"toolcat: note: {note}\n")
    if reply.human is AS_JSON or (as_json and reply.document is not None):
        print_json(reply.document)
        return
    for block in reply.human:
        print_table(block) if isinstance(block, Table) else print_text(block)


def plain(value: Any) -> str:
    """A value as a sentence shows it: every hidden character escaped, newline and tab included (a value
    never starts a line of its own)."""
    return cell_text(value)


def print_json(document: Any) -> None:
    # ensure_ascii (the default) writes every control, bidi and other non-ASCII character as \uXXXX: a
    # terminal showing the JSON shows the escapes, and the document still decodes to what was recorded.
    sys.stdout.write(json.dumps(document, indent=2, sort_keys=False, default=str) + "\n")


def print_text(text: str) -> None:
    sys.stdout.write(visible(text.rstrip("\n"), multiline=True) + "\n")


def print_table(table: Table, console: Console | None = None) -> None:
    """On a terminal, fitted to its width; to a pipe or file, as wide as the values need (nothing cut)."""
    from rich.console import Console
    console = console or Console(soft_wrap=False)
    if console.is_terminal:
        console.print(fitted_table(table, console.width)[0])
        return
    rich, needed = fitted_table(table, None)
    console.width = needed
    console.print(rich)


# -- errors and their hints -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Hint:
    """The CLI's advice for an error `code` that carries the detail `detail`. The domain's messages name
    no command or option; the command line adds how to act on them with its own commands."""
    code: str
    detail: str
    text: str  # formatted with {value} (the detail), {name} (the part after "kind:") and the other text details
    prefix: str = ""  # only when the detail starts with this
    writes_only: bool = False  # only when a write command failed
    marker: str = ""  # a message holding this already gives the hint (default: the hint's own text)

    def applies(self, error: ToolcatError, kind: str | None) -> str | None:
        value = error.details.get(self.detail)
        if error.code != self.code or not isinstance(value, str) or not value.startswith(self.prefix):
            return None
        if self.writes_only and kind != "write":
            return None
        texts = {k: v for k, v in error.details.items() if isinstance(v, str)}
        text = self.text.format(**texts, value=value, name=value.partition(":")[2])
        return None if (self.marker or text) in error.message else text


HINTS = (
    # A write named a unit that does not exist (a read of a missing subject asks nothing to be created).
    Hint("unknown_subject", "subject", "create it with 'toolcat unit create {name}'", prefix="unit:",
         writes_only=True),
    Hint("unknown_release", "release", "publish it first with 'toolcat release publish {value}'"),
    Hint("usage", "effective_at", "check --effective-at", marker="--effective-at"),
    # The seed rules (docs/operators.md, "Naming, ownership and window rules"): the command that does it
    # the allowed way.
    Hint("reserved_prefix", "move_to", "rename it with 'toolcat tool rename {old_id} {tool_id} --source {move_to}'"),
    Hint("shim_id", "shim_of", "record it as a shim with 'toolcat alias add {shim_of} {tool_id} --shim'"),
    Hint("risk_required", "tool_id", "register it with --risk and one of {write_risks}"),
)


def message_with_hint(error: ToolcatError, kind: str | None = None) -> str:
    hints = [text for hint in HINTS if (text := hint.applies(error, kind))]
    return "; ".join([error.message, *hints])


def print_error(error: ToolcatError, as_json: bool, kind: str | None = None, secrets: Collection[str] = ()
                ) -> None:
    """The error on stderr, every one of `secrets` masked; the hint goes into the message (text and JSON
    alike)."""
    message = message_with_hint(error, kind)
    if as_json:
        document = error.as_document()
        document["error"]["message"] = message
        text = json.dumps(document, default=str)  # ensure_ascii: see print_json
    else:
        text = f"toolcat: error: {visible(message, multiline=True)} [{error.code}]"
    from infra.settings import scrub
    sys.stderr.write(scrub(text, secrets) + "\n")


# -- notices --------------------------------------------------------------------------------------------
def notices(as_json: bool) -> Callable[[str], None]:
    """Where a long-running command's notices go: stderr for people, nowhere with --json."""
    if as_json:
        return lambda message: None
    return lambda message: sys.stderr.write(message + "\n")


@contextmanager
def stdout_kept_for_the_answer() -> Iterator[None]:
    """While a long command works (bench), whatever else would write to stdout's file descriptor (a
    library's C code, a child process that inherits it) writes to stderr instead: stdout holds the answer
    printed after the block, and only it. Python's own `sys.stdout` is flushed on both sides."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
