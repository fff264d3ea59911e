PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
CONFIG ?= config
WORKSPACE ?= workspace

.PHONY: run chat setup doctor test install clean

$(PY):
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(PY) -m messaging_llm_bot --config $(CONFIG) --workspace $(WORKSPACE)

chat: $(STAMP)
	$(PY) -m messaging_llm_bot --config $(CONFIG) --workspace $(WORKSPACE) --frontend console

setup: $(STAMP)
	$(VENV)/bin/assistant setup --config $(CONFIG) --workspace $(WORKSPACE)

doctor: $(STAMP)
	$(VENV)/bin/assistant doctor --config $(CONFIG) --workspace $(WORKSPACE)

test: $(STAMP)
	$(PY) -m pytest

clean:
	rm -rf $(VENV) .pytest_cache
