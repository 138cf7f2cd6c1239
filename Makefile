# Memoire: the two commands are `make serve` and `make test` (see README.md).
SHELL := /bin/bash
export PATH := $(CURDIR)/tools/node_modules/.bin:$(HOME)/.cargo/bin:$(PATH)
# Trunk 0.21 fails when NO_COLOR=1 is set.
unexport NO_COLOR
export CHROMEDRIVER ?= /usr/bin/chromedriver
export WASM_BINDGEN_TEST_DRIVER_TIMEOUT ?= 60
export WASM_BINDGEN_TEST_TIMEOUT ?= 180

.PHONY: serve build test test-native test-browser test-e2e bench setup setup-build fmt

## Install what is missing, build the app, serve it at http://127.0.0.1:8080
serve: setup-build
	trunk serve --release --address 127.0.0.1 --port 8080

## Build the static app into dist/ (relative URLs: works from any host and sub-path)
build: setup-build
	trunk build --release

## Install what is missing and run every test layer (native, browser, end-to-end)
test: setup
	scripts/test.sh all

test-native:
	scripts/test.sh native
test-browser:
	scripts/test.sh browser
test-e2e: build
	scripts/test.sh e2e

## Run every benchmark; each figure prints as `bench <name> <value> <unit>`
bench: setup
	scripts/bench.sh

setup:
	scripts/setup.sh test
setup-build:
	scripts/setup.sh build

fmt:
	cargo fmt
