# Tied: every target installs what it needs into .venv first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
NODE_STAMP := node_modules/.installed

.PHONY: book test lab serve release bench clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[lab]'
	touch $(STAMP)

# MathJax, require.js and the widget manager, at the versions of package-lock.json, and
# thebe's prebuilt bundle (package.json's prebuiltBundles, tools/npm_bundles.py); the build
# copies them into the book (tools/offline_assets.py), so that it works offline.
$(NODE_STAMP): package.json package-lock.json tools/npm_bundles.py
	npm ci --ignore-scripts --no-audit --no-fund
	$(PYTHON) tools/npm_bundles.py
	touch $(NODE_STAMP)

book: $(STAMP) $(NODE_STAMP)
	$(BIN)/jupyter-book build . --path-output . -W --keep-going
	@echo "Book built: $(CURDIR)/_build/html/index.html"

# The whole suite: the linter (ruff, pyproject.toml's [tool.ruff]) and the type check
# (mypy, [tool.mypy]), exercises in step with
# solutions, the book built with every cell run and no warning, then pytest (grader,
# robustness, languages, the built pages offline and in headless chromium).  nbval runs
# each solution once, inside the grader (tests/test_chapters.py's full marks: every cell
# runs, every worked example prints what the solution stored, which `release --check`
# keeps equal to grader/expected/); the check() cell's own run is test_selfcheck's.
test: $(STAMP) $(NODE_STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/grader release --check
	$(BIN)/jupyter-book build . --path-output . -W --keep-going
	$(BIN)/python -m pytest -q -n 2 --dist loadfile tests

# JupyterLab on exercises/, its terminals with .venv/bin first on PATH (`grader check
# 01_linen.ipynb` works where a terminal opens, in exercises/); as root, Jupyter refuses
# to start without --allow-root (a container's usual user).
lab: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/jupyter lab exercises/ $(if $(filter 0,$(shell id -u)),--allow-root)

# The built book with live code: serves _build/html and a Jupyter server for its "Run code"
# button, both on 127.0.0.1, and prints the address to open (tools/serve.py). Ctrl-C stops both.
serve: $(STAMP)
	$(BIN)/python tools/serve.py

release: $(STAMP)
	$(BIN)/grader release

bench: $(STAMP)
	$(BIN)/python benchmarks/grader_speed.py
	$(BIN)/python benchmarks/mlm_speed.py
	$(BIN)/python benchmarks/sandbox_overhead.py

clean:
	rm -rf _build .jupyter_cache
