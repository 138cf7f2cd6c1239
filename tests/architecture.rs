#![cfg(not(target_arch = "wasm32"))]
//! Architecture rules, checked on the source tree:
//! 1. `src/engine` uses nothing of the crate outside the engine and no web crate, clock or randomness.
//! 2. Every module opens with a `//!` header that says what it owns.
//! 3. Imports only point down: ui -> session -> {store, transport} -> engine.

use std::fs;
use std::path::{Path, PathBuf};

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out.sort();
    out
}

fn src(sub: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(sub)
}

/// Source text with `//` comments removed, so doc prose can name forbidden crates.
fn code_of(path: &Path) -> String {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every file under `dir` must avoid each of `forbidden` (as a path prefix like `web_sys::`).
fn check_forbidden(dir: &str, forbidden: &[&str]) -> Vec<String> {
    let mut violations = Vec::new();
    let root = src(dir);
    let files = if root.is_dir() {
        rust_files(&root)
    } else {
        vec![root.with_extension("rs")]
    };
    for file in files {
        let code = code_of(&file);
        for f in forbidden {
            if code.contains(f) {
                violations.push(format!("{} uses `{f}`", file.display()));
            }
        }
    }
    violations
}

#[test]
fn engine_is_pure() {
    let forbidden = [
        "leptos",
        "web_sys",
        "js_sys",
        "rexie",
        "gloo",
        "wasm_bindgen",
        "send_wrapper",
        "crate::store",
        "crate::transport",
        "crate::session",
        "crate::ui",
        "super::super::super",
        "SystemTime",
        "Instant::now",
        "thread_rng",
        "getrandom",
    ];
    let v = check_forbidden("engine", &forbidden);
    assert!(v.is_empty(), "engine must stay pure:\n{}", v.join("\n"));
}

#[test]
fn imports_point_down() {
    let rules: [(&str, &[&str]); 3] = [
        (
            "store",
            &["crate::transport", "crate::session", "crate::ui"],
        ),
        (
            "transport",
            &["crate::store", "crate::session", "crate::ui"],
        ),
        ("session", &["crate::ui"]),
    ];
    let mut all = Vec::new();
    for (dir, forbidden) in rules {
        if src(dir).is_dir() || src(dir).with_extension("rs").is_file() {
            all.extend(check_forbidden(dir, forbidden));
        }
    }
    assert!(
        all.is_empty(),
        "imports must point down:\n{}",
        all.join("\n")
    );
}

#[test]
fn every_module_has_a_header() {
    let missing: Vec<String> = rust_files(&src(""))
        .into_iter()
        .filter(|f| {
            let text = fs::read_to_string(f).unwrap();
            !text
                .lines()
                .find(|l| !l.trim().is_empty() && !l.starts_with("#!"))
                .is_some_and(|l| l.starts_with("//!"))
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        missing.is_empty(),
        "modules without a //! header: {missing:?}"
    );
}

#[test]
fn the_checks_can_fail() {
    // The forbidden-import scan must see through to code, and must ignore comments.
    let dir = std::env::temp_dir().join(format!("memoire-arch-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.rs");
    fs::write(
        &bad,
        "//! doc mentions web_sys:: harmlessly\nuse web_sys::Window;\n",
    )
    .unwrap();
    assert!(code_of(&bad).contains("web_sys"));
    let good = dir.join("good.rs");
    fs::write(&good, "//! doc mentions web_sys:: harmlessly\nfn f() {}\n").unwrap();
    assert!(!code_of(&good).contains("web_sys"));
    fs::remove_dir_all(&dir).unwrap();
}
