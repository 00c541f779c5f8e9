# Tied: every target installs what it needs into .venv first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: book test lab release bench clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[lab]'
	touch $(STAMP)

book: $(STAMP)
	$(BIN)/jupyter-book build . --path-output . -W --keep-going
	@echo "Book built: $(CURDIR)/_build/html/index.html"

test: $(STAMP)
	$(BIN)/python -m pytest -q

lab: $(STAMP)
	$(BIN)/jupyter lab exercises/

release: $(STAMP)
	$(BIN)/grader release

bench: $(STAMP)
	$(BIN)/python benchmarks/grader_speed.py

clean:
	rm -rf _build .jupyter_cache
