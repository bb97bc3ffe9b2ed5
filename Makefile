# TileLang 算子课 — two commands: `make book` and `make test`.
# Both create .venv when missing and install the pinned stack (requirements.lock).
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
VPY := $(VENV)/bin/python
STAMP := $(VENV)/.course-installed
# Where no CPU wheel of torch is on the default index, point pip at one, e.g.
#   make test PIP_EXTRA="--extra-index-url https://download.pytorch.org/whl/cpu"
PIP_EXTRA ?=

.PHONY: help venv book book-strict pdf test test-fast test-ledger-bare lock lock-check bundle gpu-results clean

help:
	@echo "make book        build the HTML book into _build/html (on a CUDA GPU: live numbers; LIVE=0: recorded)"
	@echo "make pdf         build the PDF edition into _build/latex/book.pdf (XeLaTeX; see .ci/run)"
	@echo "make test        the whole test suite (includes a strict build of the book)"
	@echo "make test-fast   the tests that compile no kernel and build no book, on every core (about a minute)"
	@echo "make test-ledger-bare  the ledger's CLI and tests on a plain interpreter (pytest only)"
	@echo "make bundle      pack tilelang for an offline GPU machine (.bundle/)"
	@echo "make gpu-results run every suite on a CUDA GPU into a new measure/results/raw/ file"

# The supported Pythons are requires-python in pyproject.toml; `coursebook/lock.py check-python`
# (standard library only, runs on Python 3.6 and later) prints the one line that refuses another
# one. An interpreter that cannot run at all is named by its shell's first line of error.
PY_REFUSED = $(shell { $(PYTHON) coursebook/lock.py check-python; } 2>&1 \
  | awk 'NR == 1 { first = $$0 } { last = $$0 } END { print (first ~ /^Traceback/ ? last : first) }')

$(STAMP): requirements.lock pyproject.toml
	$(if $(PY_REFUSED),$(error $(PY_REFUSED)))
	test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install --quiet --upgrade "pip>=24"
	$(VPY) -m pip install --quiet $(PIP_EXTRA) -r requirements.lock
	$(VPY) -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

venv: $(STAMP)

# LIVE=0 forces the recorded GPU numbers on a machine with a CUDA GPU (coursebook/live.py).
book: venv
	LIVE="$(LIVE)" $(VPY) -m coursebook.build

book-strict: venv
	LIVE="$(LIVE)" $(VPY) -m coursebook.build --strict

# The PDF edition: the same executed pages (shared execution cache), XeLaTeX + ctex.
# Also copied beside the HTML book (_build/html/tilelang-course.pdf) when that exists.
pdf: venv
	$(VPY) -m coursebook.pdf

test: venv test-ledger-bare
	$(VPY) -m pytest tests --durations=40

# ledger is standard-library only: run its CLI and tests/ledger from the checkout with a
# throwaway venv holding nothing but pytest (the lock's pins), never the course's .venv.
test-ledger-bare:
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	$(PYTHON) -m venv "$$tmp/venv"; bare="$$tmp/venv/bin/python"; \
	"$$bare" -m pip install --quiet --disable-pip-version-check -c requirements.lock pytest; \
	"$$bare" -c 'import importlib.util as u, sys; bad = [n for n in ("tilelang", "torch", "numpy") if u.find_spec(n)]; sys.exit(f"not bare: {bad}" if bad else None)'; \
	export -n PYTHONPATH LEDGER_MACHINES_DIR; \
	"$$bare" -s -m ledger figures --json > "$$tmp/figures.json"; \
	echo "ledger figures on a bare interpreter: $$(grep -c '^ "' "$$tmp/figures.json") figures"; \
	"$$bare" -s -m pytest tests/ledger -q -p no:cacheprovider -W ignore::pytest.PytestConfigWarning

test-fast: venv
	$(VPY) -m pytest tests -m "not slow and not browser" -n auto

# One lock for every supported Python (uv's universal resolution, markers where versions differ);
# the pins already in requirements.lock are kept wherever they still resolve. UPGRADE=1 lifts them.
lock: venv
	$(VPY) -m coursebook.lock compile $(if $(UPGRADE),--upgrade)

# Every pin applying to each supported Python (and the distributions' system Pythons) is served
# by PyPI for it, and the pins are complete there; needs network (tests/env runs the same check).
lock-check: venv
	$(VPY) -m coursebook.lock check

bundle: venv
	$(VPY) -m tools.bundle pack

gpu-results: venv
	$(VPY) -m measure.runner

clean:
	rm -rf _build
