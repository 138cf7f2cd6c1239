#!/usr/bin/env bash
# Where the app's wasm bytes go: by crate (memoire by module), the largest functions, the data section,
# by area (what the first screen needs against import, sync, memory and backup), and, when twiggy is
# installed, the generic functions with the most monomorphised copies.
# Usage: scripts/size.sh [--no-build]
#   Builds dist/ (trunk build --release) unless --no-build, then re-runs wasm-bindgen and wasm-opt on
#   the same cargo output with names kept (-g), so the figures are those of the shipped wasm with names.
#   Sizes are uncompressed bytes of function bodies; brotli of the whole file is printed for reference.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/tools/node_modules/.bin:$HOME/.cargo/bin:$PATH"
unset NO_COLOR
[ "${1:-}" = --no-build ] || trunk build --release >/dev/null
raw=target/wasm32-unknown-unknown/wasm-release/memoire.wasm
out=target/size
mkdir -p "$out"
wasm-bindgen --target web --out-dir "$out" "$raw"
# Same flags as index.html's data-wasm-opt(-params), plus -g to keep the name section.
wasm-opt -Os -g --flatten --rereloop -Os --strip-producers --strip-target-features --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
  "$out/memoire_bg.wasm" -o "$out/named.wasm"
for f in dist/*.wasm; do echo "shipped $f: $(wc -c <"$f") bytes, brotli $(brotli -c -q 11 "$f" | wc -c)"; done
# The figure of #16 (scripts/bench.sh prints it too): wasm + js + css + html, brotli -q 11.
total=0
for f in dist/*.wasm dist/*.js dist/*.css dist/index.html; do total=$((total + $(brotli -c -q 11 "$f" | wc -c))); done
echo "bundle_total_brotli $total bytes (goal: no more than 430,000)"
python3 scripts/wasm_size.py "$out/named.wasm" --depth2 --areas
# twiggy (cargo install twiggy), when installed: the generic functions with the most copies.
if command -v twiggy >/dev/null; then twiggy monos -g -m 20 "$out/named.wasm" | cut -c1-200; fi
