# Holdfast — every command sets up what it needs (virtualenv with the emulator, Rust build).
SHELL := /bin/bash
export CARGO_TARGET_DIR ?= $(CURDIR)/target
CARGO ?= cargo
VENV := .venv
LOCAL_PORT ?= $(or $(HOLDFAST_LOCAL_PORT),3000)
EMULATOR_PORT ?= $(or $(HOLDFAST_EMULATOR_PORT),4566)

.PHONY: help venv emulator build run test lint unit e2e cfn-lint demo clean

help:
	@echo "make run      - start emulator + local stack on 127.0.0.1:$(LOCAL_PORT) (Ctrl-C stops both)"
	@echo "make test     - fmt, clippy, unit tests, emulator/e2e tests, cfn-lint"
	@echo "make emulator - the emulator alone, in the foreground, on 127.0.0.1:$(EMULATOR_PORT)"
	@echo "make demo     - a 1,000-buyer flash sale with a live progress bar and a report"

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

e2e: venv
	HOLDFAST_QUIET_METRICS=1 bash scripts/with-emulator.sh $(CARGO) nextest run -p holdfast-tests --no-fail-fast

# A flash sale against a fresh local stack; flags via DEMO_ARGS (see infra/src/bin/demo.rs).
demo: venv
	$(CARGO) build -p holdfast-local --bin demo
	bash scripts/with-emulator.sh $(CARGO_TARGET_DIR)/debug/demo $(DEMO_ARGS)

cfn-lint: venv
	$(VENV)/bin/cfn-lint template.yaml

test: lint cfn-lint unit e2e

clean:
	rm -rf $(VENV) .local
	$(CARGO) clean
