# Tied: every target installs what it needs into .venv first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
NODE_STAMP := node_modules/.installed

.PHONY: book test lab release bench clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[lab]'
	touch $(STAMP)

# MathJax, require.js and the widget manager, at the versions of package-lock.json; the
# build copies them into the book (tools/offline_assets.py), so that it works offline.
$(NODE_STAMP): package.json package-lock.json
	npm ci --ignore-scripts --no-audit --no-fund
	touch $(NODE_STAMP)

book: $(STAMP) $(NODE_STAMP)
	$(BIN)/jupyter-book build . --path-output . -W --keep-going
	@echo "Book built: $(CURDIR)/_build/html/index.html"

# The whole suite: exercises in step with solutions, the book built with every cell
# run and no warning, then pytest (grader, robustness, languages, the built pages offline
# and in headless chromium) and nbval on the solution notebooks.
test: $(STAMP) $(NODE_STAMP)
	$(BIN)/grader release --check
	$(BIN)/jupyter-book build . --path-output . -W --keep-going
	$(BIN)/python -m pytest -q tests solutions --nbval-lax --nbval-current-env

lab: $(STAMP)
	$(BIN)/jupyter lab exercises/

release: $(STAMP)
	$(BIN)/grader release

bench: $(STAMP)
	$(BIN)/python benchmarks/grader_speed.py
	$(BIN)/python benchmarks/mlm_speed.py

clean:
	rm -rf _build .jupyter_cache
