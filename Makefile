# Tollgate: `make run` and `make test` work on a fresh Debian machine (as root, or with sudo).

SHELL        := /bin/bash
SWIFT        ?= swift
CONFIG       ?= examples/dev.yaml
APT_PACKAGES := pkg-config librdkafka-dev libssl-dev kcat libsqlite3-dev postgresql
SUDO         := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)
BUILD_LOG    := .build/tollgate-build.log
## What scripts/validate-deploy.py, scripts/check-interfaces.py and scripts/console-browser-test.py need
## besides the build: Debian packages (prometheus for promtool, Chromium and its chromedriver for the
## console's browser test), and Python tools in a venv (Selenium among them).
DEPLOY_APT   := docker-compose python3-venv openssl prometheus chromium chromium-driver
DEPLOY_VENV  := .build/deploy-venv

.PHONY: deps deploy-tools build build-tests run test validate-deploy interfaces conformance bench bench-soak bench-projection profile fuzz fuzz-build fuzz-corpus clean

## Install the system packages Tollgate builds and tests against, when missing.
deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi
	@command -v $(SWIFT) >/dev/null || { echo "swift is not on PATH (expected the Swift 6 toolchain)"; exit 1; }

## The deployment and interface checks' tools, when missing: docker-compose (parses compose files without
## a Docker engine), promtool (Debian's prometheus package), and kubernetes-validate,
## openapi-spec-validator, jsonschema, schemathesis, aiokafka, the CloudEvents SDK
## (scripts/deploy-requirements.txt) in a venv under .build, reinstalled only when the requirements change.
deploy-tools: $(DEPLOY_VENV)/requirements.txt
	@missing=""; for p in $(DEPLOY_APT); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

$(DEPLOY_VENV)/requirements.txt: scripts/deploy-requirements.txt
	@dpkg -s python3-venv >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq python3-venv; }
	@[ -x $(DEPLOY_VENV)/bin/python ] || python3 -m venv $(DEPLOY_VENV)
	@echo "installing the deployment checks' Python tools into $(DEPLOY_VENV)"
	@$(DEPLOY_VENV)/bin/pip install --quiet --disable-pip-version-check -r $<
	@cp $< $@

build: deps
	$(SWIFT) build

## Builds everything and fails on any compiler warning in the project's own code.
build-tests: deps
	@mkdir -p .build
	$(SWIFT) build --build-tests 2>&1 | tee $(BUILD_LOG); test $${PIPESTATUS[0]} -eq 0
	@if grep -E "^$(CURDIR)/(Sources|Tests)/.*: warning:" $(BUILD_LOG); then echo "compiler warnings in project code"; exit 1; fi

## Starts everything in one process: embedded broker, gateway on :8080, workers.
run: build
	.build/debug/tollgate dev --config $(CONFIG)

## Every test: the module imports against docs/architecture.md, the conformance checks against
## ../shared/conformance when it is present (as it is in CI), then the Swift tests (Kafka against the
## embedded broker, verifiers, HTTP status codes, CLI; four at a time) while, beside them, the deployment
## artifacts and interface documents are checked against the built binary (validate-deploy) and the
## interfaces held by the tools their users run (schemathesis, promtool, aiokafka + CloudEvents SDK):
## scripts/run-tests.sh. docs/architecture.md's testing section says where the time goes.
test: build-tests deploy-tools
	python3 scripts/check-imports.py
	scripts/conformance.sh
	scripts/run-tests.sh

## deploy/ (compose, Kubernetes, Dockerfile, alerts) and docs/openapi.yaml, docs/asyncapi.yaml against
## the real `tollgate` (scripts/validate-deploy.py says what each check does).
validate-deploy: deploy-tools
	$(SWIFT) build --product tollgate
	$(DEPLOY_VENV)/bin/python scripts/validate-deploy.py

## docs/openapi.yaml, /metrics, deploy/alerts.yaml and the topics against the real `tollgate dev` and
## `tollgate work`, with schemathesis, promtool, aiokafka and the CloudEvents SDK (docs/interfaces.md).
interfaces: deploy-tools
	$(SWIFT) build --product tollgate
	$(DEPLOY_VENV)/bin/python scripts/check-interfaces.py

## Third-party sender data only: the Swift conformance suites and `tollgate verify` over the real files.
conformance: build-tests
	$(SWIFT) test --skip-build --filter Conformance
	scripts/conformance.sh

## Release build; the gateway pinned to one core under signed load from `tollgate-load` (broker and load
## generator on the other core), the raw ES256/RS256 verify rates in the same run: bench/results/latest.json
## and a table. Then the verifier micro-benchmarks, the workers' projection throughput and what a spooled
## delivery costs on this disk (fsynced appends, alone and with group commit), as before
## (scripts/bench.sh says how; docs/performance.md what the figures mean).
bench: deps
	SWIFT=$(SWIFT) scripts/bench.sh

## Five minutes of every sender's traffic at a fixed rate, the gateway's memory sampled (bench/results/soak.json).
## Separate from `make bench` to keep that one under ten minutes.
bench-soak: deps
	SWIFT=$(SWIFT) scripts/bench.sh soak

## Where the gateway's CPU goes: `perf record` during each sender's closed loop, by layer (bench/results/profile.json).
profile: deps
	@dpkg -s linux-perf >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq linux-perf; }
	SWIFT=$(SWIFT) scripts/bench.sh profile

## The projection benchmark alone (SQLite and PostgreSQL).
bench-projection: deps
	$(SWIFT) build -c release --product tollgate-bench
	scripts/with-postgres.sh bash -c 'BENCH_POSTGRES_URL="$$TEST_POSTGRES_URL" .build/release/tollgate-bench --projection --json bench/results/projection.json'
	.build/release/tollgate-bench --spool --json bench/results/spool.json

## libFuzzer targets (Fuzz/, docs/fuzzing.md): the JSON parser, compact JWS, Pub/Sub envelope, form parser
## and each sender's decoding, with AddressSanitizer, built in their own package under Fuzz/.build.
FUZZ_SECONDS ?= 600
FUZZ_JOBS    ?= 1
fuzz-build: deps
	cd Fuzz && $(SWIFT) build -c release --scratch-path .build -Xswiftc -sanitize=fuzzer,address -Xswiftc -enable-testing

## Every target for FUZZ_SECONDS each (`make fuzz FUZZ_SECONDS=60` for a quick run), FUZZ_JOBS at a time; fails
## on any crash, leak, hang or broken invariant, leaving the input in Fuzz/.build/fuzz/<target>/artifacts/.
fuzz: fuzz-build
	FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_JOBS=$(FUZZ_JOBS) scripts/fuzz.sh run

## Minimizes the committed corpus (Fuzz/corpus) together with what `make fuzz` found.
fuzz-corpus: fuzz-build
	scripts/fuzz.sh merge

clean:
	rm -rf .build .tollgate Fuzz/.build
