# perfsnake: the two commands a new user needs are `make run` and `make test`.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
SNAKEMAKE := $(VENV)/bin/snakemake
STAMP := $(VENV)/.perfsnake-installed

.PHONY: setup run slurm resume rerun-failed test lint report artifact clean

$(STAMP): requirements.txt pyproject.toml scripts/setup/apt.sh Makefile
	bash scripts/setup/apt.sh
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	# The package itself, C sources included as package data (editable: the workflow stays in this checkout), for the `perfsnake` command.
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	# Our Snakemake plugins (scheduler, logger), importable from the repository. The .pth
	# entry is relative to site-packages, so it follows the checkout when moved.
	$(PY) -c 'import os, sysconfig; site = sysconfig.get_paths()["purelib"]; open(os.path.join(site, "perfsnake-plugins.pth"), "w").write(os.path.relpath("plugins", site) + "\n")'
	touch $(STAMP)

# Flame graphs: inferno from crates.io, pinned, into a project-local directory.
INFERNO_VERSION := 0.12.8
INFERNO := resources/tools/bin/inferno-flamegraph
CARGO := $(or $(shell command -v cargo),$(wildcard $(HOME)/.cargo/bin/cargo))
# Without cargo (a normal user's account often has none) everything else is
# set up; campaigns that draw flame graphs are refused in one line until then.
$(INFERNO):
	@if [ -z "$(CARGO)" ]; then \
	  echo "make setup: no cargo (Rust >= 1.71): flame graphs stay unavailable until inferno is installed (https://rustup.rs, then make setup)"; \
	else $(CARGO) install inferno --locked --version $(INFERNO_VERSION) --root resources/tools; fi

# The git history of the ready regression campaign (regression_heater.yaml).
DEMO_REPO := resources/demo/heater-history/.git
$(DEMO_REPO):
	bash scripts/setup/demo_repo.sh

setup: $(STAMP) $(INFERNO) $(DEMO_REPO)

## Run every campaign listed in config/config.yaml (CAMPAIGN=path runs one;
## CONFIG=config/figures/locks.yaml runs that configuration's campaigns and figures).
run: setup
	$(SNAKEMAKE) --cores 1 all $(if $(CONFIG),--configfile $(CONFIG)) $(if $(CAMPAIGN),--config campaign=$(CAMPAIGN))

## Finish an interrupted campaign without redoing completed runs.
resume: setup
	$(SNAKEMAKE) --unlock all $(if $(CAMPAIGN),--config campaign=$(CAMPAIGN))
	$(SNAKEMAKE) --cores 1 all --rerun-incomplete $(if $(CAMPAIGN),--config campaign=$(CAMPAIGN))

## Re-run only the runs that failed or timed out.
rerun-failed: setup
	$(PY) -m perfsnake rerun-failed $(if $(CAMPAIGN),--config campaign=$(CAMPAIGN))

report: setup
	$(SNAKEMAKE) --cores 1 all --report report.html $(if $(CAMPAIGN),--config campaign=$(CAMPAIGN))

## Run on a Slurm cluster (profiles/slurm; edit its partition and account first).
slurm: setup
	$(SNAKEMAKE) --profile profiles/slurm --workflow-profile none all $(if $(CAMPAIGN),--config campaign=$(CAMPAIGN))

## Pack a finished campaign as a paper artifact (zip; OUTPUT=file.zip to choose where).
artifact: setup
	$(PY) -m perfsnake artifact $(if $(CAMPAIGN),--config campaign=$(CAMPAIGN)) $(if $(OUTPUT),--output $(OUTPUT))

PYTHON_SOURCES := perfsnake tests bench scripts plugins

test: setup
	# Two workers, one test file each at a time: most of a test's time is
	# Snakemake start-up and waiting on runs, so two halve the wall clock.
	# -rs: every skipped test says why (a skip is not a pass).
	$(VENV)/bin/pytest -q -rs -p no:cacheprovider -n 2 --dist loadfile -m "not ready and not long and not matrix"
	$(MAKE) --no-print-directory lint

## The long lane: the minutes-long test files (tests/conftest.py LONG_FILES)
## and every ready campaign (config/campaigns/, config/figures/) shrunk,
## through one Snakemake invocation. About 20 minutes: not part of `make test`.
.PHONY: long smoke
long: setup
	$(VENV)/bin/pytest -q -rs -p no:cacheprovider -n 2 --dist loadfile -m "ready or long"

## The composition matrix (docs/composition.md): its covering campaigns,
## every feature pair, through one Snakemake invocation; each checked.
.PHONY: matrix
matrix: setup
	$(VENV)/bin/pytest -q -rs -p no:cacheprovider -m matrix tests/test_composition_matrix.py

## Both lanes side by side under stress-ng --cpu 2, per-file times to
## bench/results/suite-<date>-<load>.json (CLONE=1: in a fresh clone in a
## private directory whose path has a space). Run it before you push.
.PHONY: loaded
loaded: setup
	$(PY) scripts/suite_under_load.py $(if $(CLONE),--clone)

## The ready campaigns alone.
smoke: setup
	$(VENV)/bin/pytest -q -rs -p no:cacheprovider -n 2 --dist loadfile -m ready tests/test_ready_campaigns.py tests/test_nonroot.py

lint: setup
	$(SNAKEMAKE) --lint
	$(VENV)/bin/snakefmt --check workflow/Snakefile rules/
	$(VENV)/bin/ruff check $(PYTHON_SOURCES)
	$(VENV)/bin/ruff format --check $(PYTHON_SOURCES)
	$(VENV)/bin/mypy

clean:
	rm -rf results .snakemake report.html
