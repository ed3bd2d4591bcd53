# Holdfast — every command sets up what it needs (virtualenv with the emulator, Rust build).
SHELL := /bin/bash
export CARGO_TARGET_DIR ?= $(CURDIR)/target
CARGO ?= cargo
VENV := .venv
LOCAL_PORT ?= $(or $(HOLDFAST_LOCAL_PORT),3000)
EMULATOR_PORT ?= $(or $(HOLDFAST_EMULATOR_PORT),4566)

.PHONY: help venv emulator build run test lint unit e2e cfn-lint checkov demo bench bench-campaigns package clean

help:
	@echo "make run      - start emulator + local stack on 127.0.0.1:$(LOCAL_PORT) (Ctrl-C stops both)"
	@echo "make test     - fmt, clippy, unit tests, emulator/e2e tests, cfn-lint, checkov"
	@echo "make emulator - the emulator alone, in the foreground, on 127.0.0.1:$(EMULATOR_PORT)"
	@echo "make demo     - a 1,000-buyer flash sale with a live progress bar and a report"
	@echo "make bench    - bench/REPORT.md: cost per order, round trips, CPU, cold start, hot-SKU model"
	@echo "make package  - one Lambda bootstrap per function (cargo-lambda), fault-free"

venv:
	@bash scripts/venv.sh

emulator: venv
	HOLDFAST_EMULATOR_PORT=$(EMULATOR_PORT) $(VENV)/bin/python infra/emulator/launcher.py

build:
	$(CARGO) build -p holdfast-local

run: venv build
	@bash scripts/run-local.sh

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

unit:
	$(CARGO) nextest run --workspace --lib --bins --no-fail-fast

# Two passes: everything in parallel, then the tests that run on production SDK budgets
# (HOLDFAST_SDK_TIMEOUT_SCALE=1) alone, on a quiet emulator — in parallel with 70 other tests the
# shared emulator queues requests past an 800 ms attempt timeout, which AWS does not.
BUDGET_TESTS := test(/edges::a_hung_dependency/) | test(/edges::a_throttled_hot_shard/)
e2e: venv
	HOLDFAST_QUIET_METRICS=1 bash scripts/with-emulator.sh $(CARGO) nextest run -p holdfast-tests --no-fail-fast -E 'not ($(BUDGET_TESTS))'
	HOLDFAST_QUIET_METRICS=1 bash scripts/with-emulator.sh $(CARGO) nextest run -p holdfast-tests --no-fail-fast -E '$(BUDGET_TESTS)'


# A flash sale against a fresh local stack; flags via DEMO_ARGS (see infra/src/bin/demo.rs).
demo: venv
	$(CARGO) build -p holdfast-local --bin demo
	bash scripts/with-emulator.sh $(CARGO_TARGET_DIR)/debug/demo $(DEMO_ARGS)

cfn-lint: venv
	$(VENV)/bin/cfn-lint template.yaml

# checkov from its own pinned virtualenv; remaining checks are judged in docs/deploy.md.
checkov:
	bash scripts/checkov.sh

test: lint cfn-lint checkov unit e2e

# One bootstrap per function under $(CARGO_TARGET_DIR)/lambda/<name>/ (cargo-lambda from PyPI),
# checked to contain no fault-injection code.
package: venv
	bash scripts/package.sh

# bench/REPORT.md + bench/report.json + bench/ceiling.svg: criterion CPU figures, release
# binary sizes and cold starts, then cost / round trips / false sold-outs on the local stack.
# Sizes and cold starts are measured on a plain `cargo build --release` of the functions (same
# profile as `make package`, host toolchain): it shares its dependency build with criterion.
bench: venv
	HOLDFAST_PACKAGE_BUILDER=cargo bash scripts/package.sh
	$(CARGO) bench -p holdfast-bench -- --warm-up-time 1 --measurement-time 3
	python3 bench/criterion_summary.py > bench/criterion.json
	$(VENV)/bin/python scripts/coldstart.py --json bench/coldstart.json --markdown bench/coldstart-table.md
	$(CARGO) build -p holdfast-local --bin bench
	HOLDFAST_QUIET_METRICS=1 bash scripts/with-emulator.sh $(CARGO_TARGET_DIR)/debug/bench

# Only the campaign figures of make bench (debug local stack; no release build): bench/CAMPAIGNS.md.
bench-campaigns: venv
	$(CARGO) build -p holdfast-local --bin bench
	HOLDFAST_QUIET_METRICS=1 HOLDFAST_BENCH_ONLY=campaigns bash scripts/with-emulator.sh $(CARGO_TARGET_DIR)/debug/bench

clean:
	rm -rf $(VENV) .local
	$(CARGO) clean
