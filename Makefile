# The two commands of the README: `make demo` (main job on embedded defaults) and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: setup demo test lint

setup:
	deploy/setup.sh

demo: setup
	deploy/demo.sh

test: setup
	$(VENV)/bin/ruff check .
	$(PY) -m pytest

lint: setup
	$(VENV)/bin/ruff check .
