# The two commands of the README: `make book` and `make test`. Both set up .venv first.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
CHROMEDRIVER := /usr/bin/chromedriver
BWRAP        := /usr/bin/bwrap

.PHONY: book test bench publish lock clean mutants

# uv installs the pinned toolchain in seconds where pip takes half a minute of the
# suite's ten; where uv cannot (its own index or certificates), pip does it as before.
# Compiled to bytecode as pip does: the sandboxed grading processes cannot write it, and
# would compile every module they import, each time (a clean `make test` 40 s slower).
UV := $(PY) -m uv pip install -q --native-tls --compile-bytecode --python $(PY)
$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q uv==0.13.9
	$(UV) --upgrade pip -r requirements.txt || \
	  ($(PY) -m pip install -q --upgrade pip && $(PY) -m pip install -q -r requirements.txt)
	$(UV) --no-deps -e . || $(PY) -m pip install -q --no-deps -e .
	touch $@

book: $(STAMP)  ## build the HTML book, every chapter executed (simulator without a GPU); a figure a reader could not read fails it
	COURSE_STRICT_FIGURES=1 $(VENV)/bin/jupyter-book build . --all --warningiserror --keep-going
	@echo "The book is at file://$(CURDIR)/_build/html/index.html"

# Both cores: tests that share an expensive fixture stay on one worker (conftest.py).
test: $(STAMP) $(CHROMEDRIVER) $(BWRAP)  ## the test suite (what .ci/run runs)
	$(PY) -m pytest -n auto --dist loadgroup

# Debian's Chromium and its ChromeDriver run the browser tests of the built site
# (tests/test_site.py, through Selenium). CI runs as root on Debian; elsewhere sudo.
$(CHROMEDRIVER):
	$(if $(filter 0,$(shell id -u)),,sudo) apt-get update -qq
	$(if $(filter 0,$(shell id -u)),,sudo) env DEBIAN_FRONTEND=noninteractive \
	  apt-get install -y -qq --no-install-recommends chromium chromium-driver fonts-liberation

# Debian's bubblewrap: the OS sandbox that `python -m kernels grade` runs each
# submission in (kernels/grading/sandbox.py; tests/test_grading_sandbox.py).
$(BWRAP):
	$(if $(filter 0,$(shell id -u)),,sudo) apt-get update -qq
	$(if $(filter 0,$(shell id -u)),,sudo) env DEBIAN_FRONTEND=noninteractive \
	  apt-get install -y -qq --no-install-recommends bubblewrap

# Every mutant of the reference solutions graded on the simulator (tens of minutes):
# writes tests/mutation_results.json and the table on book/instructors.md, which
# `make test` checks (tests/test_mutants.py grades one round of them again).
mutants: $(STAMP) $(BWRAP)  ## grade every mutant of the exercises' solutions (tests/mutation_runs.py)
	$(PY) tests/mutation_runs.py --jobs 2

bench: $(STAMP)  ## run every benchmark on a GPU and record it under book/_data/bench/
	$(PY) -m kernels bench

publish: book  ## push _build/html to the gh-pages branch (GitHub Pages), by hand
	$(VENV)/bin/ghp-import --no-jekyll --push --force _build/html

lock:  ## re-resolve requirements.in into the pinned requirements.txt
	rm -rf /tmp/lock-venv && $(PYTHON) -m venv /tmp/lock-venv
	/tmp/lock-venv/bin/pip install -q -r requirements.in
	(echo "# Pinned toolchain, resolved from requirements.in on Python 3.11 (make lock)."; \
	 /tmp/lock-venv/bin/pip freeze) > requirements.txt

# Every chapter of the book and of the student edition on an emulated fresh Colab
# runtime (tests/test_colab.py), and every notebook with the course installed
# (tests/test_notebooks.py); `make test` runs four of them.
.PHONY: colab
colab: $(STAMP)  ## run every notebook as a fresh Colab runtime would, first cell included
	COLAB_CHAPTERS=all $(PY) -m pytest tests/test_colab.py \
	  tests/test_notebooks.py::test_notebook_runs_top_to_bottom

.PHONY: notebooks student
# A chapter whose prose glues numbers runs once on the simulator for them when its code
# cells or the recordings changed (book/_tools/glue_values.py; kept in book/_data/glue).
notebooks: $(STAMP)  ## regenerate the Colab notebooks book/*.ipynb from the chapters
	$(PY) book/_tools/notebooks.py

# STUDENT_REPO / STUDENT_BRANCH: where the student edition's sources will be pushed
# (its notebooks install the package from there); default: this repository.
student: $(STAMP)  ## the student edition without solutions: _build/student/{src,_build/html}
	$(PY) book/_tools/student.py $(if $(STUDENT_REPO),--repository $(STUDENT_REPO)) \
	  $(if $(STUDENT_BRANCH),--branch $(STUDENT_BRANCH))

# SUBMISSIONS: notebooks or folders of them; OUT: where grades.csv and feedback/ go.
.PHONY: grade
grade: $(STAMP)  ## grade submitted notebooks: make grade SUBMISSIONS=class/ [OUT=grades]
	$(PY) -m kernels grade $(SUBMISSIONS) --out $(or $(OUT),grades)

clean:
	rm -rf _build
