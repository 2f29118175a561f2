# kafkalab: `make lab` opens the book, `make test` runs every test. Both set up .venv first if
# it is missing or older than pyproject.toml. Only Python >= 3.11 and pip are needed.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.kafkalab-installed
LAB_PORT ?= 8888
# Extra pytest arguments, e.g. `make test PYTEST_ARGS="-k records"`.
PYTEST_ARGS ?=
# Parallel test workers (pytest-xdist); each test file or notebook stays on one worker.
JOBS ?= 2
# Extra pytest arguments for `make campaign`, e.g. CAMPAIGN_ARGS="-k crash --count 5".
CAMPAIGN_ARGS ?=

.PHONY: setup lab test test-fast campaign bench typecheck clean classroom grade

setup: $(STAMP)

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "kafkalab needs Python >= 3.11; found " + sys.version.split()[0])'
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --editable '.[dev]'
	@touch $(STAMP)

# JupyterLab refuses to run as root unless told; containers and CI machines often are root.
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root,)

lab: $(STAMP)
	@echo "Starting JupyterLab on book/ -- open the http://127.0.0.1:$(LAB_PORT)/lab?token=... URL printed below."
	$(VENV)/bin/jupyter lab --no-browser --ip=127.0.0.1 --port=$(LAB_PORT) $(ALLOW_ROOT) \
		--ServerApp.root_dir=book --ServerApp.open_browser=False

# The tests marked slow (long fault campaigns) belong to `make campaign`, not to CI's suite.
test: $(STAMP)
	KAFKALAB_STATIC_WIDGETS=1 $(PY) -m pytest -n $(JOBS) --dist loadfile -m "not slow" --nbval \
		--nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-current-env $(PYTEST_ARGS)

test-fast: $(STAMP)
	$(PY) -m pytest tests -m "not slow and not interop and not browser and not spark" $(PYTEST_ARGS)

# Long fault campaigns: 1,000 seeds of the replication campaign in the simulation, then the
# tests marked slow (the KRaft quorum's campaign, crash campaigns, large fuzz runs).
# pytest exits 5 when nothing is selected; that is reported, not treated as a failure.
CAMPAIGN_SEEDS ?= 1000
campaign: $(STAMP)
	$(PY) -m kafkalab.sim.campaign --seeds $(CAMPAIGN_SEEDS)
	@status=0; $(PY) -m pytest tests -m slow $(CAMPAIGN_ARGS) || status=$$?; \
	if [ $$status -eq 5 ]; then echo "make campaign: no test matched (none is marked slow?)"; \
	else exit $$status; fi

bench: $(STAMP)
	$(PY) -m kafkalab.bench $(BENCH_ARGS)

# Classroom mode: a student pack (blank exercises, no solutions, no hidden checks) and an
# instructor pack (an nbgrader course) under dist/classroom; `make grade SUBMISSIONS=dir` grades
# dir/<student>/NN-title.ipynb offline into grades.csv. See README.md, "Classroom".
CLASSROOM_DIR ?= dist/classroom
SUBMISSIONS ?= submissions
GRADES_CSV ?= grades.csv
classroom: $(STAMP)
	$(PY) -m kafkalab.classroom pack --out $(CLASSROOM_DIR)

grade: $(STAMP)
	$(PY) -m kafkalab.classroom grade $(SUBMISSIONS) --course $(CLASSROOM_DIR)/instructor --csv $(GRADES_CSV)

typecheck: $(STAMP)
	$(PY) -m mypy kafkalab

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .mypy_cache
