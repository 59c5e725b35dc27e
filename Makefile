# radsift: two commands do all set-up on a fresh machine.
#   make demo   create .venv, install, build an index of the bundled demo corpus, search it, serve it
#   make test   install the dev extras and run the tests
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
DEMO := demo-out
# `make demo SERVE=0` stops after the searches instead of starting the web page.
SERVE ?= 1
PORT ?= 8000

.PHONY: demo test install install-dev browser clean bench

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	# The CPU build of torch first: a plain `torch` requirement would pull a multi-GB CUDA build.
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e .
	touch $@

install: $(VENV)/.installed

$(VENV)/.installed-dev: $(VENV)/.installed
	$(PIP) install -q -e '.[dev]'
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
	$(VENV)/bin/radsift demo --out $(DEMO) $(if $(filter 1,$(SERVE)),--serve --port $(PORT),)

test: install-dev browser
	@$(PY) -m pytest -q; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests: treating that as a failure"; exit 1; fi; \
	exit $$rc

bench: install
	$(PY) benchmarks/bench_foundation.py

clean:
	rm -rf $(VENV) $(DEMO) .pytest_cache test-artifacts
