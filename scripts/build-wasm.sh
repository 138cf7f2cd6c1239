#!/usr/bin/env bash
# Trunk post-build hook, the first of its steps: builds the app's wasm split in parts and writes them,
# the js glue and the start-up script into the built directory (ARCHITECTURE.md "The split build").
#   1. cargo builds the wasm with its split points (feature `split`) and its relocations kept
#      (`-Clink-arg=--emit-relocs`, the bin only);
#   2. wasm-split-cli (wasm_split_cli_support, pinned in scripts/setup.sh) cuts out every
#      `#[wasm_split(name)]` split point and what only it reaches: `split_<name>.wasm` per split point,
#      `chunk_*.wasm` for code several of them share, and `__wasm_split.js`, the loader that fetches
#      them on first use;
#   3. wasm-bindgen runs on the main part (keeping the exports the chunks link against), and wasm-opt
#      on every part with index.html's former flags (WASM_OPT_FLAGS below);
#   4. scripts/place-wasm.mjs folds the loader into the js glue (one request less on the first visit),
#      names every file with one id, the hash of all of them, and gives index.html the start-up
#      script and the preloads of what the first screen needs (the js, the main wasm) with their
#      integrity hashes; the chunks are only listed in sw.js, which precaches them for offline use.
# Then minify-js.mjs, csp.mjs and stamp-sw.mjs (the service worker's file list and build id) run (Trunk.toml).
# Usage outside Trunk: TRUNK_STAGING_DIR=dist scripts/build-wasm.sh (after a trunk build of the rest).
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${TRUNK_STAGING_DIR:?run by trunk (or set TRUNK_STAGING_DIR to the built directory)}"
export PATH="$PWD/tools/node_modules/.bin:$HOME/.cargo/bin:$PATH"
# The same settings index.html's data-wasm-opt(-params) had: -Os, then flatten + rereloop and -Os
# again; the producers and target-features sections (no browser reads them) dropped. Then the
# functions in the order of their (mangled) names: a module's functions side by side, which brotli
# compresses better (the main wasm 4.6 KB smaller; the code is the same; scripts/size.sh shows it).
WASM_OPT_FLAGS=(-Os --flatten --rereloop -Os --reorder-functions-by-name --strip-producers
  --strip-target-features --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext)

work=target/split
raw=target/wasm32-unknown-unknown/wasm-release/memoire.wasm
cargo rustc --profile wasm-release --target wasm32-unknown-unknown --bin memoire --features split --quiet -- -Clink-arg=--emit-relocs
rm -rf "$work" && mkdir -p "$work/split" "$work/bindgen" "$work/out"
wasm-split-cli "$raw" "$work/split" --target web --out-name memoire
wasm-bindgen --target web --keep-lld-exports --no-demangle --out-dir "$work/bindgen" --out-name memoire "$work/split/memoire.wasm"

# Every part optimised on its own, as many at once as the machine has cores (not all 140-odd at
# once: each wasm-opt is a node process of some 200 MB), the main part first, as the longest.
{
  printf '%s\0%s\0' "$work/bindgen/memoire_bg.wasm" "$work/out/memoire_bg.wasm"
  for f in "$work/split"/*.wasm; do
    name=$(basename "$f")
    [ "$name" = memoire.wasm ] && continue
    printf '%s\0%s\0' "$f" "$work/out/$name"
  done
} | OPT="${WASM_OPT_FLAGS[*]}" xargs -0 -n 2 -P "$(nproc)" sh -c 'wasm-opt $OPT "$0" -o "$1"'
cp "$work/bindgen/memoire.js" "$work/split/__wasm_split.js" "$work/out/"

node scripts/place-wasm.mjs "$work/out" "$dir"
