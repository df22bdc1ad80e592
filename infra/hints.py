"""How a hint names the `toolcat` program so that it works when pasted: `toolcat` when that is what the
shell finds, else the path of the script of this installation (after `make demo` that is
`.venv/bin/toolcat`, which is not on the PATH until the venv is activated)."""
from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path


def program() -> str:
    script = Path(sys.prefix) / "bin" / "toolcat"
    on_path = shutil.which("toolcat")
    if not script.exists() or (on_path is not None and Path(on_path).resolve() == script.resolve()):
        return "toolcat"
    try:
        relative = os.path.relpath(script, Path.cwd())
    except ValueError:  # another drive (Windows)
        return str(script)
    return relative if not relative.startswith("..") else str(script)


def command(*words: str, home: str | None = None) -> str:
    """A command line to paste, e.g. command("audit", "seal") → '.venv/bin/toolcat audit seal' (with
    `--home HOME` when the command that prints it was given one)."""
    return shlex.join([program(), *(["--home", home] if home else []), *words])
