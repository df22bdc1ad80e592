# The two set-up commands of the README. Each creates .venv when missing and installs the project into it.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test bench install-dev clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev,postgres]'
	touch $@ $(VENV)/.installed

install-dev: $(VENV)/.installed-dev

demo: $(VENV)/.installed
	$(BIN)/toolcat --home $(or $(TOOLCAT_DEMO_HOME),.toolcat-demo) demo

# Two pytest workers, one per core: every test has its own home, schema and topics, so they run apart.
PYTEST_ARGS ?= -n 2

test: $(VENV)/.installed-dev
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# A mid-size run of the performance figures (a few minutes on 2 cores); JSON on stdout.
bench: $(VENV)/.installed-dev
	@$(BIN)/toolcat bench --events $(or $(BENCH_EVENTS),20000) --json

clean:
	rm -rf $(VENV) .toolcat .toolcat-demo
