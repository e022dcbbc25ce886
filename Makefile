# The two commands of the README. Both set up a virtualenv in .venv on first use.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# checkov, the security scan's scanner, in a virtualenv of its own: its pins conflict with the package's
SCAN_VENV := .venv-scan
STACK ?= dev
WORKERS ?= 2
# The engine tier's modules run this many at a time, each in a box (network namespace) of its own.
ENGINE_WORKERS ?= 2

.PHONY: preview test test-fast test-engine engine-tools engine-box lint benchmark preflight cost leak-check kubeflow-fetch charts-fetch config-reference clean

# The package and what it runs on (the preview, `pulumi up`, the tools), then, for the tests and lint only, their
# extras: `make preview` on a fresh machine installs the first alone. Each step says what it is doing; pip lists
# every package it fetches, so the first run is never silent.
$(VENV)/.installed: pyproject.toml
	@echo "== Setting up $(VENV) (first run: a few minutes, mostly the Pulumi providers' SDKs)"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --progress-bar off -e .
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed
	@echo "== Adding the test and lint tools to $(VENV) (pytest, moto, mypy, ruff, ...)"
	$(PY) -m pip install --progress-bar off -e '.[test,lint]'
	touch $@

## Offline preview of a stack (default dev): prints the resource tree, writes build/preview/<stack>.
preview: $(VENV)/.installed kubeflow-fetch charts-fetch
	$(PY) -m components.preview --stack $(STACK) --out build/preview/$(STACK)

$(SCAN_VENV)/.installed: tests/checkov-requirements.txt
	@echo "== Setting up $(SCAN_VENV) (checkov, the security scan's scanner)"
	$(PYTHON) -m venv $(SCAN_VENV)
	$(SCAN_VENV)/bin/python -m pip install --quiet -r tests/checkov-requirements.txt
	touch $@

## The whole suite: the offline tier spread over WORKERS processes (pytest-xdist; WORKERS=auto: one per core; a test
## module stays on one process, --dist loadscope, so its module fixtures are computed once), then the engine tier
## (test-engine). The security scan's checkov is installed into .venv-scan first.
test: $(VENV)/.installed-dev $(SCAN_VENV)/.installed
	$(PY) -m pytest -n $(WORKERS) --dist loadscope -m "not engine"
	$(MAKE) test-engine

## The engine tools (Pulumi CLI and language host, the Kubernetes provider, etcd, the control plane, kwok) built
## from their pinned Go modules into the per-user cache; only what is missing is built (cold: see README).
engine-tools: $(VENV)/.installed-dev
	$(PY) -m engine.tools.build

## The engine tier: the real Pulumi CLI deploys the dev stack into the cluster in a box and destroys it (root, Linux:
## it makes a network namespace with only loopback up). Its modules run ENGINE_WORKERS at a time, longest first
## (tests/engine/scheduling.py), each module on one process with a box of its own.
test-engine: engine-tools
	$(PY) -m pytest -n $(ENGINE_WORKERS) --dist loadscope -m engine tests/engine

## A cluster in a box for a person: the control plane, kwok and the stack's nodes in a network namespace; Ctrl-C
## stops it. Deploy into it with the steps in docs/engine.md.
engine-box: engine-tools preview
	$(PY) -m engine.box --stack $(STACK)

## The pure tests, the loop to run while editing: all but those marked `slow` (stack previews, processes,
## refcheck, Kubeflow renders, whole preflight runs; see tests/conftest.py). T=tests/test_x.py runs one file;
## WORKERS=0 runs in this process, quicker for a file or two.
test-fast: $(VENV)/.installed-dev
	$(PY) -m pytest -n $(WORKERS) -m "not slow" $(T)

## Lint, formatting and types (ruff check, ruff format --check; mypy on components/, engine/, tests/), run first in CI.
lint: $(VENV)/.installed-dev
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy

## Read-only checks of the AWS account a stack deploys to (needs its credentials); fails on any FAIL (make: `Error 1`).
preflight: $(VENV)/.installed
	$(PY) -m components.tools.preflight --stack $(STACK)

## What a stack costs idle (the platform's own pods included, from its offline preview) and with every pool at its
## limit, at the pinned prices (no credentials).
cost: $(VENV)/.installed kubeflow-fetch charts-fetch
	-$(PY) -m components.preview --stack $(STACK) --out build/preview/$(STACK) > /dev/null
	$(PY) -m components.tools.cost --stack $(STACK) --preview build/preview/$(STACK)

## After `pulumi destroy`: the check fails with its status 1 if anything tagged for the stack's cluster is left in AWS,
## 3 if AWS cannot be asked (no credentials, an endpoint down; docs/teardown.md lists the codes). make shows it as
## `Error N` and itself exits 2.
leak-check: $(VENV)/.installed
	$(PY) -m components.tools.sweep --stack $(STACK) --check

## The pinned Kubeflow tree, digest-checked, into the per-user cache: from ../shared when it is beside the
## repository (this workplace's test data), else downloaded from GitHub.
kubeflow-fetch: $(VENV)/.installed
	@if [ -d ../shared/reference/kubeflow/26.03.1 ]; then $(PY) -m components.kubeflow fetch --from ../shared/reference/kubeflow/26.03.1; \
	else $(PY) -m components.kubeflow fetch; fi

## The pinned Helm charts the preview's model renders, digest-checked, into the per-user cache: from ../shared when it
## is beside the repository (this workplace's reference copies), else pulled from each chart's repository. A chart
## that cannot be fetched does not stop the preview: its model lists that release as not judged, with the reason.
charts-fetch: $(VENV)/.installed
	@if [ -d ../shared/reference/charts ]; then $(PY) -m components.tools.charts fetch --from ../shared/reference/charts; \
	else $(PY) -m components.tools.charts fetch || echo "== Some charts were not fetched: the preview lists what it cannot judge"; fi

## The three loops the project holds to targets (preview against the SDK floor, the offline tier of `make test`, `make
## test-fast`), each beside its target; exits 1 when one is missed or a timed suite fails. ARGS="--only preview"
## measures a subset. The offline tier is timed with what `make test` installs first (the security scan's checkov).
benchmark: $(VENV)/.installed-dev $(SCAN_VENV)/.installed kubeflow-fetch charts-fetch
	$(PY) benchmarks/loops.py $(ARGS)

## Rewrite docs/configuration.md's reference tables from the config models (their fields' descriptions and defaults).
config-reference: $(VENV)/.installed
	$(PY) -m components.tools.config_reference --write docs/configuration.md

clean:
	rm -rf build $(VENV) $(SCAN_VENV)
