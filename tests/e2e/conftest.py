"""Fixtures of the end-to-end suite: the auditor's story, written once per session and copied into each
test's home; a real headless Chromium for the HTML pages."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support import run_in_process

_EXTENSION = ["--group", "extension", "--tier", "advanced", "--visibility", "public"]
_MILESTONES = ("canonical_shipped", "docs_shipped", "data_rewrite_shipped", "alias_only_emission")
RETIRED = "acme.ticket.create"  # walked through its whole window and removal path
# Deprecated by renames, never given a milestone; each still named by configuration: a grant, a connector.
OPEN = ("acme.ticket.close", "tickets.list")

# An auditor's story: three tools renamed while an allowlist, a grant and a connector still name their old
# IDs; one old ID walked through its whole window and removal path and retired (its last step, 5, apart),
# the allowlist naming it migrated to the canonical ID on the way (`alias migrate`, before step 2).
AUDIT_STORY = [
    ["init", "--policy", "tyrum"],
    ["release", "publish", "1.0.0"],
    ["tool", "register", "read", "--source", "builtin", "--group", "core", "--tier", "default",
     "--visibility", "public"],
    ["tool", "register", "acme.ticket.create", "--source", "plugin", "--plugin", "acme", *_EXTENSION],
    ["tool", "register", "acme.ticket.close", "--source", "plugin", "--plugin", "acme", *_EXTENSION],
    ["connector", "register", "tickets", "--namespace", "tickets", "--tool", "tickets.list"],
    ["unit", "create", "eng"],
    ["agent", "create", "bot", "--unit", "eng"],
    ["grant", "add", "unit:eng", "acme.ticket.close"],
    ["agent", "allowlist", "bot", "read", RETIRED],
    ["connector", "bind", "tickets", "--unit", "eng"],
    ["tool", "rename", RETIRED, "acme.ticket.open"],
    ["tool", "rename", "acme.ticket.close", "acme.ticket.resolve"],
    ["tool", "rename", "tickets.list", "tickets.search"],
    ["release", "publish", "1.1.0"],
    ["release", "publish", "1.2.0"],
    *(["alias", "milestone", RETIRED, name, "--release", "1.2.0", "--evidence", f"{name} in 1.2.0"]
      for name in _MILESTONES),
    ["alias", "step", RETIRED, "1", "--evidence", "only acme.ticket.open is documented"],
    ["alias", "migrate", RETIRED],  # bot's allowlist names it: rewritten to acme.ticket.open before step 2
    ["alias", "step", RETIRED, "2", "--evidence", "stored tickets rewritten"],
    ["release", "publish", "1.3.0"],
    ["alias", "retire", RETIRED, "--release", "1.3.0"],
]
LAST_STEP = ["alias", "step", RETIRED, "5", "--evidence", "fixtures cleaned"]


@pytest.fixture(scope="session")
def audit_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The story up to the retirement, stored once (no read model: writes never project)."""
    home = tmp_path_factory.mktemp("audit-story") / "home"
    run_in_process(home, AUDIT_STORY, actor="auditor")
    return home


@pytest.fixture
def retired_without_cleanup(audit_template: Path, home: Path) -> Path:
    """This test's home: the story, retired but step 5 not recorded yet."""
    shutil.copytree(audit_template, home)
    return home


@pytest.fixture
def audit_home(retired_without_cleanup: Path) -> Path:
    """This test's home: the whole story, step 5 recorded; no read model yet, no seal."""
    run_in_process(retired_without_cleanup, [LAST_STEP], actor="auditor")
    return retired_without_cleanup
