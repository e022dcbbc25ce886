# The two commands of the README. Both set up a virtualenv in .venv on first use.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STACK ?= dev

.PHONY: preview test benchmark clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

## Offline preview of a stack (default dev): prints the resource tree, writes build/preview/<stack>.
preview: $(VENV)/.installed
	$(PY) -m components.preview --stack $(STACK) --out build/preview/$(STACK)

## The test suite.
test: $(VENV)/.installed
	$(PY) -m pytest

## Wall time and peak memory of the offline preview of dev and prod.
benchmark: $(VENV)/.installed
	$(PY) benchmarks/preview_benchmark.py

clean:
	rm -rf build $(VENV)
