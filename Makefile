# The README's commands, each doing all its set-up on a fresh clone:
#   make run    set up .venv (torch, the extras), then run the main job (placerl-train)
#   make test   set up the same .venv, then run the test suite (.ci/run calls this)
#   make docs   set up the same .venv, then build the documentation site (docs/_build/html)
# Pass arguments to the main job with ARGS, e.g. make run ARGS="graph=cifar10 total_steps=40000".
# torch: `pip install torch==2.13.0`. On a machine without a GPU, avoid PyPI's CUDA build with
# make run TORCH_INDEX=https://download.pytorch.org/whl/cpu

PYTHON ?= python3
VENV ?= .venv
TORCH ?= torch==2.13.0
TORCH_INDEX ?=
ARGS ?=
BIN := $(VENV)/bin

.PHONY: run test setup docs

run: setup
	$(BIN)/placerl-train $(ARGS)

test: setup
	WANDB_MODE=disabled $(BIN)/ruff check .
	$(BIN)/ruff format --check .
	WANDB_MODE=disabled $(BIN)/python -m pytest -q

# The documentation site (docs/_build/html): the results pages generated from the committed
# result files, the API reference from the docstrings; any warning or broken reference fails.
docs: setup
	$(BIN)/python -m sphinx -W --keep-going -n -j auto -b html docs docs/_build/html

setup: $(VENV)/.installed

# Rebuilt when pyproject.toml changes; torch first, so that `torch>=2.4` keeps that build.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet $(TORCH) $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(BIN)/python -m pip install --quiet -e ".[all,dev,docs]"
	touch $@
