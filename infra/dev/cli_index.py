"""`python -m infra.dev.cli_index`: writes infra/cli/index.py, what `toolcat` knows of its top-level
commands without loading their modules (`toolcat --help`'s lines, and which modules register each), read off
the command tree the modules build. tests/unit/test_cli_index.py fails while the file is stale."""
from __future__ import annotations

import importlib
from pathlib import Path

from infra.cli.registry import Commands, Parser

INDEX = Path(__file__).resolve().parents[1] / "cli" / "index.py"
HEADER = '''"""What `toolcat` knows of its top-level commands without loading their modules (infra/cli/__init__.py):
each one's line in `toolcat --help`, in its order, and the command modules (infra/cli/) that register it or
commands under it. Written by `python -m infra.dev.cli_index`; do not edit."""
from __future__ import annotations

'''


def top_level(modules: tuple[str, ...]) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Each top-level command: its help line and the modules (of `modules`, in that order) it needs: those
    registering it or commands under it, and for each of those, the modules making the groups it registers
    into (`route` needs `tools`: the routing module adds commands to the `tool` group `tools` makes)."""
    commands = Commands(Parser(prog="toolcat"))
    touches: dict[str, set[str]] = {}  # module → the top-level commands it registers or registers into
    maker: dict[str, str] = {}  # top-level command → the module that made it
    for name in modules:
        before = set(commands.parents) | set(commands.commands)
        importlib.import_module(f"infra.cli.{name}").register(commands)
        touches[name] = {path.split()[0] for path in (set(commands.parents) | set(commands.commands)) - before
                         if path}
        maker.update((word, name) for word in commands.helps if word not in maker)
    return {word: (help_text, tuple(m for m in modules if m in _needed(word, touches, maker)))
            for word, help_text in commands.helps.items()}


def _needed(word: str, touches: dict[str, set[str]], maker: dict[str, str]) -> set[str]:
    needed = {module for module, touched in touches.items() if word in touched}
    while more := {maker[touched] for module in needed for touched in touches[module]} - needed:
        needed |= more
    return needed


def index_source() -> str:
    from infra.cli import COMMAND_MODULES
    entries = "".join(f"    {word!r}: ({help_text!r}, {modules!r}),\n"
                      for word, (help_text, modules) in top_level(COMMAND_MODULES).items())
    return f"{HEADER}TOP_LEVEL: dict[str, tuple[str, tuple[str, ...]]] = {{\n{entries}}}\n"


if __name__ == "__main__":
    INDEX.write_text(index_source())
    print(f"wrote {INDEX}")
