#!/usr/bin/env bash
# Runs Memoire's test layers and prints the count of each. Usage: scripts/test.sh [all|native|browser|e2e]
#   native  : `cargo test` on the host (the engine: pure logic, property tests, architecture rules, the
#             bench runner's dry run), and the native benches compiled (counted as one test)
#   browser : wasm-bindgen-test in headless Chromium (IndexedDB through the real store, transport, and
#             the session against the local agent endpoint, tests/support/agent-endpoint.mjs)
#   e2e     : build dist/ once with trunk, then drive it in Chromium against the local agent endpoint
# Every layer runs even if an earlier one failed; the exit code is non-zero if any failed.
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/tools/node_modules/.bin:$HOME/.cargo/bin:$PATH"
layers=${1:-all}
logs=target/test-logs
mkdir -p "$logs"
export CHROMEDRIVER=${CHROMEDRIVER:-/usr/bin/chromedriver}
export WASM_BINDGEN_TEST_DRIVER_TIMEOUT=${WASM_BINDGEN_TEST_DRIVER_TIMEOUT:-60}
export WASM_BINDGEN_TEST_TIMEOUT=${WASM_BINDGEN_TEST_TIMEOUT:-180}
unset NO_COLOR

declare -A passed failed
status=0

# Sum the `test result:` lines of cargo / wasm-bindgen-test output.
cargo_counts() {
  awk '/test result:/ { for (i=1;i<=NF;i++) { if ($(i)=="passed;") p+=$(i-1); if ($(i)=="failed;") f+=$(i-1) } }
       END { printf "%d %d\n", p, f }' "$1"
}

run_layer() { # name, log, command...
  local name=$1 log=$2; shift 2
  printf '\n== %s tests ==\n' "$name"
  "$@" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  [ "$rc" = 0 ] || status=1
  return "$rc"
}

if [[ $layers == all || $layers == native ]]; then
  # --no-fail-fast: every test target runs and is counted, not only those before the first failing one.
  run_layer native "$logs/native.log" cargo test --quiet --no-fail-fast
  read -r p f < <(cargo_counts "$logs/native.log"); passed[native]=$p; failed[native]=$f
  [ "$status" = 0 ] || [ "$f" != 0 ] || failed[native]=$((f + 1))
  # The native benches compile (`cargo test` builds none; debug, about 10 s): one broken by a change in
  # the engine fails here rather than in `make bench`. tests/bench_runner.rs checks the rest of the run.
  printf '\n== native benches compile (cargo build --benches) ==\n'
  if cargo build --quiet --benches 2>&1 | tee "$logs/benches.log"; [ "${PIPESTATUS[0]}" = 0 ]; then
    echo "the native benches compile"; passed[native]=$((passed[native] + 1))
  else
    echo "the native benches do not compile (see $logs/benches.log)"; failed[native]=$((failed[native] + 1)); status=1
  fi
fi

# The session's browser tests (tests/browser_session*.rs) talk to the local agent endpoint; its URLs
# reach their build through option_env!.
start_agent() {
  coproc AGENT { exec node tests/support/agent-endpoint.mjs; }
  local line
  read -r -t 20 line <&"${AGENT[0]}" || { echo "the local agent endpoint did not start"; return 1; }
  export ${line?}
}

if [[ $layers == all || $layers == browser ]]; then
  before=$status
  start_agent || status=1
  run_layer browser "$logs/browser.log" cargo test --target wasm32-unknown-unknown --test 'browser_*'
  [ -z "${AGENT_PID:-}" ] || kill "$AGENT_PID"
  read -r p f < <(cargo_counts "$logs/browser.log"); passed[browser]=$p; failed[browser]=$f
  [ "$status" = "$before" ] || [ "$f" != 0 ] || failed[browser]=$((f + 1))
fi

if [[ $layers == all || $layers == e2e ]]; then
  before=$status
  printf '\n== building dist/ for the end-to-end tests ==\n'
  if trunk build --release 2>&1 | tee "$logs/trunk.log" | grep -E '(error|warning|success)' ; [ "${PIPESTATUS[0]}" = 0 ]; then
    run_layer e2e "$logs/e2e.log" bash -c 'cd tests/e2e && DIST="$PWD/../../dist" npm test --silent'
  else
    echo "trunk build failed (see $logs/trunk.log)"; status=1
  fi
  p=$(awk '/^# pass /{s+=$3} END{print s+0}' "$logs/e2e.log" 2>/dev/null || echo 0)
  f=$(awk '/^# fail /{s+=$3} END{print s+0}' "$logs/e2e.log" 2>/dev/null || echo 0)
  passed[e2e]=$p; failed[e2e]=$f
  [ "$status" = "$before" ] || [ "$f" != 0 ] || failed[e2e]=$((f + 1))
fi

printf '\n== summary ==\n'
tp=0; tf=0
for l in native browser e2e; do
  [ -n "${passed[$l]+x}" ] || continue
  printf '%-8s %5d passed, %d failed\n' "$l" "${passed[$l]}" "${failed[$l]}"
  tp=$((tp + passed[$l])); tf=$((tf + failed[$l]))
done
[ "$tp" -gt 0 ] || { echo "no test ran"; status=1; }
printf 'total: %d passed, %d failed\n' "$tp" "$tf"
exit $status
