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

.PHONY: help venv book book-strict pdf test test-fast lock bundle gpu-results clean

help:
	@echo "make book        build the HTML book into _build/html"
	@echo "make pdf         build the PDF edition into _build/latex/book.pdf (XeLaTeX; see .ci/run)"
	@echo "make test        the whole test suite (includes a strict build of the book)"
	@echo "make bundle      pack tilelang for an offline GPU machine (.bundle/)"
	@echo "make gpu-results run every kernel suite on a CUDA GPU, rewrite kernels/results/"

$(STAMP): requirements.lock pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 10), "Python >= 3.10 is required"'
	test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install --quiet --upgrade "pip>=24"
	$(VPY) -m pip install --quiet $(PIP_EXTRA) -r requirements.lock
	$(VPY) -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

venv: $(STAMP)

book: venv
	$(VPY) -m coursebook.build

book-strict: venv
	$(VPY) -m coursebook.build --strict

# The PDF edition: the same executed pages (shared execution cache), XeLaTeX + ctex.
# Also copied beside the HTML book (_build/html/tilelang-course.pdf) when that exists.
pdf: venv
	$(VPY) -m coursebook.pdf

test: venv
	$(VPY) -m pytest tests

test-fast: venv
	$(VPY) -m pytest tests -m "not slow and not browser"

lock: venv
	$(VPY) -m coursebook.lock > requirements.lock

bundle: venv
	$(VPY) -m kernels.bundle pack

gpu-results: venv
	$(VPY) -m kernels.runner

clean:
	rm -rf _build
