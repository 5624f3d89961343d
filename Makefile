# Developer entry points. `make test` is the project's test command (README, .ci/run).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test test-slow test-all lint bench clean
DEMO := out/demo

# The bundled example: a 4-rank synthetic training step, linked, converted and simulated.
# It needs only the package itself (the tests' extras install with the first `make test`).
demo: $(VENV)/.installed-package
	$(BIN)/chakra_synth --output-dir $(DEMO)/traces --ranks 4 --seed 1 --ops-per-step 200 --gzip \
		--log-level WARNING
	$(BIN)/chakra_pipeline --trace-dir $(DEMO)/traces --output-dir $(DEMO)/results -j 2 \
		--log-level WARNING

# The fast set (every test not marked `slow`: under 2 minutes on 2 cores); the slow set alone;
# both. `slow` is registered in pyproject.toml's [tool.pytest.ini_options].
test: $(VENV)/.installed
	$(BIN)/python -m pytest -m "not slow"

test-slow: $(VENV)/.installed
	$(BIN)/python -m pytest -m slow

test-all: $(VENV)/.installed
	$(BIN)/python -m pytest

lint: $(VENV)/.installed
	$(BIN)/ruff check src tests schema benchmarks ci_tools
	$(BIN)/ruff format --check src tests schema benchmarks ci_tools

bench: $(VENV)/.installed
	$(BIN)/python benchmarks/et_io.py

$(VENV)/.installed-package: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[plot]'
	touch $@

$(VENV)/.installed: $(VENV)/.installed-package
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $@

clean:
	rm -rf $(VENV) build src/*.egg-info .pytest_cache .hypothesis
