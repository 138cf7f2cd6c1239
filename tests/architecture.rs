#![cfg(not(target_arch = "wasm32"))]
//! Architecture rules, checked on the source tree (the README's code map and `ARCHITECTURE.md`'s
//! invariants, as code):
//! 1. Imports only point down: ui -> session -> {store, transport} -> engine; `main.rs` only mounts
//!    the ui.
//! 2. The engine uses nothing of the shells, no web crate, clock or randomness.
//! 3. In the ui, only the backend (and the mount in `ui/mod.rs`, with its `opening`) holds the session; views read the
//!    stores' signals and call their actions.
//! 4. Only the store speaks IndexedDB; only the transport fetches.
//! 5. Every module opens with a `//!` header that says what it owns.
//! 6. The README's code map names every module: a row per folder (`src/engine/memory/` names the
//!    files in it and `memory.rs` beside it; `src/ui/*/` every domain folder) or per file
//!    (`src/session.rs`, `{a,b}.rs`, `*.rs`).
//! 7. No function is over 80 lines (`MAX_FUNCTION_LINES`).
//! 8. No child imports its parent (`NO_UPWARD_IMPORTS`: the session and the ui): a path is "up"
//!    when the longest prefix of it that names a module (a file or folder) is one of the importing
//!    module's ancestors (`crate::session::now` from `session/chat/turn.rs`; not
//!    `crate::session::shared::Core`, a sibling subtree, nor a parent's `pub use child::X`).
//! 9. Each header's "Must not import" sentence holds, for its module and every module under it: a
//!    backticked name is a top-level module (`ui`) or a path read from the header's module
//!    (`super::read`, `crate::engine`); "`x` internals" forbids only modules under `x`; "anything
//!    outside `x`" forbids every `crate::` path elsewhere. A child's header adds to its ancestors'
//!    and cannot lift them. A name that is no module is itself a violation.
//! 10. Each of `ARCHITECTURE.md`'s invariants has a name and names tests that exist, or says
//!     "Untested".
//! 11. UI stores hand out readers, keep their write signals private, hold no other store and have
//!     at most 30 public functions.
//! 12. No `RefCell`/`Cell` field or alias in the session outside the adapters `CELL_ADAPTERS`
//!     names, each with why: a driver keeps one state value behind `Held`.
//! 13. No file circle inside the session: its import graph between modules (ancestors and
//!     descendants aside) has no cycle.
//!
//! Paths are read the way the compiler reads them: `use` trees are expanded (grouped and nested
//! braces, `self`, renames), `super::`/`self::` are resolved against the file's module (or the
//! inline `mod` they sit in), and paths written inline in code count too. Comments are ignored.
//! Every rule is shown firing on planted violations in a scratch tree (one-line cases), and quiet
//! on allowed code.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// Layers of the crate, top to bottom.
const SHELLS: [&str; 4] = ["ui", "session", "store", "transport"];

/// What a rule forbids.
#[derive(Clone, Copy)]
enum Forbid {
    /// A path that starts with these segments (`crate::store`, `web_sys`, `crate::session::Session`).
    Path(&'static str),
    /// An identifier that starts with this (`SystemTime`, `Idb` for every IndexedDB type).
    Ident(&'static str),
}

/// One rule: the files it applies to (a module and everything under it), the modules it spares
/// (`a::b` spares that module alone, `a::b::*` it and everything under it) and what they must not
/// name.
struct Rule {
    name: &'static str,
    applies_to: &'static str,
    except: &'static [&'static str],
    forbid: &'static [Forbid],
}

use Forbid::{Ident, Path as P};

const WEB_AND_NONDETERMINISM: &[Forbid] = &[
    P("crate::store"),
    P("crate::transport"),
    P("crate::session"),
    P("crate::ui"),
    P("leptos"),
    P("web_sys"),
    P("js_sys"),
    P("wasm_bindgen"),
    P("wasm_bindgen_futures"),
    P("gloo_timers"),
    P("gloo"),
    P("rexie"),
    P("send_wrapper"),
    P("console_error_panic_hook"),
    P("getrandom"),
    P("rand"),
    Ident("SystemTime"),
    Ident("Instant"),
    Ident("thread_rng"),
];

const RULES: &[Rule] = &[
    Rule {
        name: "the engine is pure",
        applies_to: "crate::engine",
        except: &[],
        forbid: WEB_AND_NONDETERMINISM,
    },
    Rule {
        name: "the store imports no layer above it",
        applies_to: "crate::store",
        except: &[],
        forbid: &[P("crate::transport"), P("crate::session"), P("crate::ui")],
    },
    Rule {
        name: "the transport imports no layer above it",
        applies_to: "crate::transport",
        except: &[],
        forbid: &[P("crate::store"), P("crate::session"), P("crate::ui")],
    },
    Rule {
        name: "the session imports no ui",
        applies_to: "crate::session",
        except: &[],
        forbid: &[P("crate::ui")],
    },
    Rule {
        name: "the ui goes through the session",
        applies_to: "crate::ui",
        except: &[],
        forbid: &[P("crate::store"), P("crate::transport")],
    },
    Rule {
        name: "views do not hold the session",
        applies_to: "crate::ui",
        except: &["crate::ui::backend", "crate::ui", "crate::ui::opening"],
        forbid: &[P("crate::session::Session")],
    },
    Rule {
        name: "main only mounts the ui",
        applies_to: "main",
        except: &[],
        forbid: &[
            P("memoire::engine"),
            P("memoire::store"),
            P("memoire::transport"),
            P("memoire::session"),
        ],
    },
    Rule {
        name: "only the store speaks IndexedDB",
        applies_to: "crate",
        except: &["crate::store::*"],
        forbid: &[Ident("Idb")],
    },
    Rule {
        name: "only the transport fetches",
        applies_to: "crate",
        except: &["crate::transport::*"],
        forbid: &[
            Ident("fetch_with_request"),
            Ident("fetch_with_str"),
            Ident("RequestInit"),
        ],
    },
];

// ---------------------------------------------------------------------------------------------
// Reading the tree.

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

/// The module a file is (`src/engine/backup/mod.rs` -> `crate::engine::backup`); `main.rs` is its
/// own crate, `main`.
fn module_of(root: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(root).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts == ["main"] {
        return "main".into();
    }
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    std::iter::once("crate".to_string())
        .chain(parts)
        .collect::<Vec<_>>()
        .join("::")
}

/// Source text with `//` comments removed, so doc prose can name forbidden crates.
fn code_of(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The index of the `}` that closes the `{` at `open`.
fn closing(s: &str, open: usize) -> usize {
    let mut depth = 0;
    for (i, c) in s.char_indices().skip_while(|(i, _)| *i < open) {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
    }
    s.len()
}

/// Splits at commas outside braces.
fn top_level_items(s: &str) -> Vec<&str> {
    let (mut items, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&s[start..]);
    items.into_iter().filter(|i| !i.trim().is_empty()).collect()
}

/// Every path a `use` tree names: `a::{b, c::{d as e, self}}` -> `a::b`, `a::c::d`, `a::c`.
fn expand_use(tree: &str, prefix: &str, out: &mut Vec<String>) {
    let tree: String = tree.split_whitespace().collect::<Vec<_>>().join(" ");
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let head = format!("{prefix}{}", &tree[..open]);
        let inner = &tree[open + 1..closing(tree, open)];
        for item in top_level_items(inner) {
            expand_use(item, &head, out);
        }
        return;
    }
    let path = tree.split(" as ").next().unwrap_or(tree).replace(' ', "");
    let full = format!("{prefix}{path}");
    out.push(full.strip_suffix("::self").unwrap_or(&full).to_string());
}

/// Every `use` tree in `code`.
fn use_trees(code: &str) -> Vec<&str> {
    let mut trees = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("use ") {
        let before = rest[..i].chars().last();
        let after = &rest[i + 4..];
        if before.is_some_and(is_ident) {
            rest = after;
            continue;
        }
        let end = after.find(';').unwrap_or(after.len());
        trees.push(&after[..end]);
        rest = &after[end..];
    }
    trees
}

/// Paths written inline in code (`crate::store::Store::open(..)`, `web_sys::window()`).
fn inline_paths(code: &str) -> Vec<String> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let starts =
            is_ident(chars[i]) && (i == 0 || (!is_ident(chars[i - 1]) && chars[i - 1] != ':'));
        if !starts {
            i += 1;
            continue;
        }
        let mut j = i;
        let mut segments = 0;
        loop {
            while j < chars.len() && is_ident(chars[j]) {
                j += 1;
            }
            segments += 1;
            if chars.get(j) == Some(&':')
                && chars.get(j + 1) == Some(&':')
                && chars.get(j + 2).is_some_and(|c| is_ident(*c))
            {
                j += 2;
            } else {
                break;
            }
        }
        // `a::b::{..}` is a use tree's head, read with the tree.
        let head = chars.get(j..j + 3) == Some(&[':', ':', '{']);
        if segments > 1 && !head {
            out.push(chars[i..j].iter().collect());
        }
        i = j.max(i + 1);
    }
    out
}

/// A path as seen from the crate root: `super::`/`self::` resolved against `module`, `memoire::`
/// (as `main.rs` writes it) left as is.
fn resolve(path: &str, module: &str) -> String {
    let mut here: Vec<&str> = module.split("::").collect();
    let mut segments = path.split("::").peekable();
    match segments.peek() {
        Some(&"super") => {
            while segments.peek() == Some(&"super") {
                segments.next();
                here.pop();
            }
        }
        Some(&"self") => {
            segments.next();
        }
        _ => return path.to_string(),
    }
    here.into_iter()
        .chain(segments)
        .collect::<Vec<_>>()
        .join("::")
}

/// One file as the rules see it.
struct Source {
    file: String,
    module: String,
    text: String,
    paths: BTreeSet<String>,
    idents: BTreeSet<String>,
}

/// Where the next inline `mod name {` of `code` is: its name and the index of its `{`.
fn next_inline_mod(code: &str) -> Option<(String, usize)> {
    let mut from = 0;
    while let Some(i) = code[from..].find("mod ") {
        let at = from + i;
        from = at + 4;
        let name: String = code[from..].chars().take_while(|c| is_ident(*c)).collect();
        let after = code[from + name.len()..].trim_start();
        if !code[..at].ends_with(is_ident) && !name.is_empty() && after.starts_with('{') {
            return Some((name, code.len() - after.len()));
        }
    }
    None
}

/// The code of `module` and of each inline `mod x { .. }` in it, as (module, code), so that
/// `super::` in a file's `mod tests` resolves to the file's own module.
fn inline_modules(code: &str, module: &str) -> Vec<(String, String)> {
    let (mut out, mut outer, mut rest) = (Vec::new(), String::new(), code);
    while let Some((name, open)) = next_inline_mod(rest) {
        let close = closing(rest, open);
        outer.push_str(&rest[..open]);
        let inner = rest.get(open + 1..close).unwrap_or("");
        out.extend(inline_modules(inner, &format!("{module}::{name}")));
        rest = rest.get(close + 1..).unwrap_or("");
    }
    outer.push_str(rest);
    out.push((module.to_string(), outer));
    out
}

fn read_source(root: &Path, file: &Path) -> Source {
    let text = fs::read_to_string(file).unwrap();
    let code = code_of(&text);
    let module = module_of(root, file);
    let mut paths = BTreeSet::new();
    for (inner, code) in inline_modules(&code, &module) {
        let mut raw = Vec::new();
        for tree in use_trees(&code) {
            expand_use(tree, "", &mut raw);
        }
        raw.extend(inline_paths(&code));
        paths.extend(raw.iter().map(|p| resolve(p, &inner)));
    }
    let idents = code
        .split(|c: char| !is_ident(c))
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect();
    Source {
        file: file.display().to_string(),
        module,
        text,
        paths,
        idents,
    }
}

fn within(module: &str, scope: &str) -> bool {
    module == scope || module.starts_with(&format!("{scope}::"))
}

/// Every broken rule in the tree at `root`, as (rule, file, what it named).
fn violations(root: &Path) -> Vec<(&'static str, String, String)> {
    let mut out = Vec::new();
    for file in rust_files(root) {
        let s = read_source(root, &file);
        let first = s
            .text
            .lines()
            .find(|l| !l.trim().is_empty() && !l.starts_with("#!"));
        if !first.is_some_and(|l| l.starts_with("//!")) {
            out.push(("every module has a header", s.file.clone(), "no //!".into()));
        }
        for rule in RULES {
            let spared = rule.except.iter().any(|e| match e.strip_suffix("::*") {
                Some(tree) => within(&s.module, tree),
                None => s.module == *e,
            });
            if !within(&s.module, rule.applies_to) || spared {
                continue;
            }
            for f in rule.forbid {
                let hit = match *f {
                    P(p) => s.paths.iter().find(|x| within(x, p)).cloned(),
                    Ident(w) => s.idents.iter().find(|x| x.starts_with(w)).cloned(),
                };
                if let Some(hit) = hit {
                    out.push((rule.name, s.file.clone(), hit));
                }
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// No child imports its parent.

/// Every module of the tree at `root`: each file's, and each folder's on the way to it.
fn modules(root: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for file in rust_files(root) {
        let module = module_of(root, &file);
        let segments: Vec<&str> = module.split("::").collect();
        for n in 1..=segments.len() {
            out.insert(segments[..n].join("::"));
        }
    }
    out
}

/// The longest prefix of `path` that names a module (`crate::session::now` -> `crate::session`).
fn module_named(path: &str, modules: &BTreeSet<String>) -> Option<String> {
    let segments: Vec<&str> = path.split("::").collect();
    (1..=segments.len())
        .rev()
        .map(|n| segments[..n].join("::"))
        .find(|p| modules.contains(p))
}

/// Whether `ancestor` is on `module`'s path (`session` and `session::chat` for
/// `session::chat::turn`; the crate root is no one's parent here).
fn is_ancestor(ancestor: &str, module: &str) -> bool {
    ancestor != "crate" && module.starts_with(&format!("{ancestor}::"))
}

/// Every path that names one of its module's ancestors, as (file, path): `use super::Session`,
/// `crate::session::now()`; `super::cache::Cache` names a sibling and is fine.
fn upward_imports(root: &Path) -> Vec<(String, String)> {
    let modules = modules(root);
    let mut out = Vec::new();
    for file in rust_files(root) {
        let s = read_source(root, &file);
        for path in &s.paths {
            if module_named(path, &modules).is_some_and(|m| is_ancestor(&m, &s.module)) {
                out.push((s.file.clone(), path.clone()));
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// The headers' "Must not import" lines.

/// What a header's "Must not import" sentence says of one module (a path from the crate root).
#[derive(Debug)]
enum Clause {
    /// "Must not import `store` or `transport`": nothing in or under it.
    Not(String),
    /// "… or `session` internals": nothing in a module under it (its own items are fine).
    Internals(String),
    /// "Must not import anything outside `crate::engine`": no `crate::` path elsewhere.
    Only(String),
}

/// A file's `//!` header, its lines joined.
fn header_of(text: &str) -> String {
    text.lines()
        .skip_while(|l| l.trim().is_empty() || l.starts_with("#!"))
        .take_while(|l| l.starts_with("//!"))
        .map(|l| l[3..].trim())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The names of a header's "must not import" sentences, as written, each with its clause: a
/// sentence ends at `.`, `;`, `:` or `(` outside backticks, and its names are its backticked
/// words (so "leptos" unquoted, or "(`now` is an argument)", name nothing).
fn must_not_import(header: &str) -> Vec<(fn(String) -> Clause, String)> {
    let mut out = Vec::new();
    let lower = header.to_ascii_lowercase();
    for (at, phrase) in lower.match_indices("must not import") {
        let rest = header[at + phrase.len()..].trim_start_matches([' ', ':']);
        let mut ticked = false;
        let end = rest.find(|c: char| {
            ticked ^= c == '`';
            !ticked && ".;:(".contains(c)
        });
        let sentence = &rest[..end.unwrap_or(rest.len())];
        let parts: Vec<&str> = sentence.split('`').collect();
        for i in (1..parts.len()).step_by(2) {
            let after = parts.get(i + 1).map_or("", |a| a.trim_start());
            let clause: fn(String) -> Clause = if sentence.starts_with("anything outside") {
                Clause::Only
            } else if after.starts_with("internals") {
                Clause::Internals
            } else {
                Clause::Not
            };
            out.push((clause, parts[i].to_string()));
        }
    }
    out
}

/// A header's name as a module: a path (`crate::engine`, `super::summary`, `super`) read from the
/// header's `module`, a bare name (`ui`) as a top-level module; `None` when no such module exists.
fn header_module(name: &str, module: &str, modules: &BTreeSet<String>) -> Option<String> {
    let path = match name.split("::").next() {
        Some("crate" | "super" | "self") => resolve(name, module),
        _ if !name.contains("::") => format!("crate::{name}"),
        _ => return None,
    };
    modules.contains(&path).then_some(path)
}

fn breaks(clause: &Clause, path: &str, modules: &BTreeSet<String>) -> bool {
    match clause {
        Clause::Not(m) => within(path, m),
        Clause::Internals(m) => {
            module_named(path, modules).is_some_and(|n| n.starts_with(&format!("{m}::")))
        }
        Clause::Only(m) => path.starts_with("crate::") && !within(path, m),
    }
}

/// Every "must not import" broken, as (file, what): a path the header's module names, or any
/// module under it (a folder's header binds its subtree; a child's header adds its own lines and
/// cannot lift its ancestors'), and every header name that is no module (`` `x` names no module``).
fn header_breaks(root: &Path) -> Vec<(String, String)> {
    let modules = modules(root);
    let sources: Vec<Source> = rust_files(root)
        .iter()
        .map(|f| read_source(root, f))
        .collect();
    let (mut clauses, mut out) = (Vec::new(), Vec::new());
    for s in &sources {
        for (clause, name) in must_not_import(&header_of(&s.text)) {
            match header_module(&name, &s.module, &modules) {
                Some(m) => clauses.push((s.module.clone(), clause(m))),
                None => out.push((s.file.clone(), format!("`{name}` names no module"))),
            }
        }
    }
    for s in &sources {
        for (_, clause) in clauses.iter().filter(|(owner, _)| within(&s.module, owner)) {
            for path in s.paths.iter().filter(|p| breaks(clause, p, &modules)) {
                if !out.contains(&(s.file.clone(), path.clone())) {
                    out.push((s.file.clone(), path.clone()));
                }
            }
        }
    }
    out
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn the_source_tree_keeps_every_rule() {
    let v = violations(&src());
    let lines: Vec<String> = v
        .iter()
        .map(|(rule, file, hit)| format!("{rule}: {file} names `{hit}`"))
        .collect();
    assert!(
        lines.is_empty(),
        "architecture rules broken:\n{}",
        lines.join("\n")
    );
}

#[test]
fn every_layer_has_a_rule() {
    for layer in SHELLS.iter().chain(&["engine"]) {
        let scope = format!("crate::{layer}");
        assert!(
            RULES.iter().any(|r| r.applies_to == scope),
            "no rule for {scope}"
        );
        assert!(src().join(layer).is_dir() || src().join(format!("{layer}.rs")).is_file());
    }
}

// ---------------------------------------------------------------------------------------------
// The rules can fail: each planted violation fires its rule, and only it.

/// A scratch tree holding `files` (path under `src/`, text), written in order (a later one
/// replaces an earlier one at the same path).
fn plant<'a>(files: impl IntoIterator<Item = &'a (&'a str, &'a str)>) -> PathBuf {
    // One scratch tree per call: the tests run in parallel and may plant the same path.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let root = std::env::temp_dir().join(format!("memoire-arch-{}-{call}", std::process::id()));
    let _ = fs::remove_dir_all(&root);
    for (rel, code) in files {
        let file = root.join(rel);
        fs::create_dir_all(file.parent().unwrap()).unwrap();
        fs::write(&file, code).unwrap();
    }
    root
}

/// Writes `code` at `rel` in a scratch tree and returns the rules it breaks.
fn check(rel: &str, code: &str, expected: &[&str]) {
    let root = plant(&[(rel, code)]);
    let mut fired: Vec<&str> = violations(&root).into_iter().map(|v| v.0).collect();
    fired.dedup();
    fs::remove_dir_all(&root).unwrap();
    assert_eq!(fired, expected, "{rel}: {code}");
}

const ENGINE: &str = "the engine is pure";

#[test]
fn the_rules_fire_on_planted_violations() {
    check(
        "engine/a.rs",
        "//! h\nuse crate::{store::Store, transport};\n",
        &[ENGINE],
    );
    check(
        "engine/a.rs",
        "//! h\nuse crate::{model::{Message, Role}, session::{self}};\n",
        &[ENGINE],
    );
    check(
        "engine/a/b.rs",
        "//! h\nuse super::super::super::ui::App;\n",
        &[ENGINE],
    );
    check(
        "engine/a.rs",
        "//! h\nfn f() { web_sys::window(); }\n",
        &[ENGINE],
    );
    check(
        "engine/a.rs",
        "//! h\nfn f() { let _ = std::time::SystemTime::now(); }\n",
        &[ENGINE],
    );
    check(
        "engine/a.rs",
        "//! h\nuse gloo_timers::callback::Timeout;\n",
        &[ENGINE],
    );
    check(
        "store/a.rs",
        "//! h\nuse crate::{engine::model, session::Session};\n",
        &["the store imports no layer above it"],
    );
    check(
        "transport/mod.rs",
        "//! h\nuse super::store::Store;\n",
        &["the transport imports no layer above it"],
    );
    check(
        "session/turn.rs",
        "//! h\nuse crate::ui::{self as view};\n",
        &["the session imports no ui"],
    );
    check(
        "ui/sidebar.rs",
        "//! h\nuse crate::{session::{SessionEvent}, transport::{self}};\n",
        &["the ui goes through the session"],
    );
    check(
        "ui/chat.rs",
        "//! h\nuse crate::session::{Session as S, SessionEvent};\n",
        &["views do not hold the session"],
    );
    check(
        "main.rs",
        "//! h\nfn main() { memoire::store::Store::open(\"x\"); }\n",
        &["main only mounts the ui"],
    );
    check(
        "session/a.rs",
        "//! h\nfn f(db: &web_sys::IdbDatabase) {}\n",
        &["only the store speaks IndexedDB"],
    );
    check(
        "ui/a.rs",
        "//! h\nfn f() { let _ = web_sys::RequestInit::new(); }\n",
        &["only the transport fetches"],
    );
    check(
        "engine/a.rs",
        "use super::model::Message;\n",
        &["every module has a header"],
    );
}

#[test]
fn allowed_code_stays_quiet() {
    check(
        "engine/a.rs",
        "//! doc names crate::store and web_sys:: harmlessly\nfn f() {} // SystemTime\n",
        &[],
    );
    check(
        "engine/backup/mod.rs",
        "//! h\nuse super::model::{Message, Role};\nuse crate::engine::{format, sort};\n",
        &[],
    );
    check(
        "ui/backend.rs",
        "//! h\nuse crate::session::{Session, SessionError};\n",
        &[],
    );
    check(
        "ui/mod.rs",
        "//! h\nuse crate::session::{Session, DB_NAME};\n",
        &[],
    );
    check(
        "ui/chat.rs",
        "//! h\nuse crate::session::{SessionEvent, PreparedImport};\n",
        &[],
    );
    check(
        "store/idb.rs",
        "//! h\nuse web_sys::{IdbDatabase, IdbTransaction};\n",
        &[],
    );
    check(
        "main.rs",
        "//! h\nfn main() { leptos::mount::mount_to_body(memoire::ui::App); }\n",
        &[],
    );
}

#[test]
fn use_trees_expand_like_the_compiler_reads_them() {
    let mut out = Vec::new();
    expand_use(
        "crate::{store::{Store, records::{self, X as Y}}, transport}",
        "",
        &mut out,
    );
    assert_eq!(
        out,
        [
            "crate::store::Store",
            "crate::store::records",
            "crate::store::records::X",
            "crate::transport"
        ]
    );
    assert_eq!(
        resolve("super::super::store::Store", "crate::session::turn"),
        "crate::store::Store"
    );
    assert_eq!(resolve("self::x", "crate::engine"), "crate::engine::x");
    assert_eq!(
        module_of(Path::new("/s"), Path::new("/s/engine/backup/mod.rs")),
        "crate::engine::backup"
    );
    assert_eq!(module_of(Path::new("/s"), Path::new("/s/lib.rs")), "crate");
}

// ---------------------------------------------------------------------------------------------
// No child imports its parent; the headers' "Must not import" lines hold.

/// Where no module may import one of its ancestors (issue 27). Not yet the engine (its `decode`,
/// `highlight`, `import`, `backup` and `sync` children read what their `mod.rs` declares), the store
/// (`Store` is `store/mod.rs`'s) or the transport (`text.rs` uses `js_text`).
const NO_UPWARD_IMPORTS: &[&str] = &["crate::session", "crate::ui"];

/// Hits a line per file: `src/session/turn.rs: crate::session::Session, crate::session::now`.
fn listed(hits: Vec<(String, String)>) -> String {
    let mut lines: Vec<(String, Vec<String>)> = Vec::new();
    for (file, hit) in hits {
        let file = file
            .trim_start_matches(env!("CARGO_MANIFEST_DIR"))
            .trim_start_matches('/');
        match lines.last_mut() {
            Some((last, hits)) if last == file => hits.push(hit),
            _ => lines.push((file.to_string(), vec![hit])),
        }
    }
    let lines: Vec<String> = lines
        .iter()
        .map(|(f, h)| format!("{f}: {}", h.join(", ")))
        .collect();
    lines.join("\n")
}

#[test]
fn no_child_imports_its_parent() {
    let root = src();
    let hits: Vec<(String, String)> = upward_imports(&root)
        .into_iter()
        .filter(|(file, _)| {
            let module = module_of(&root, Path::new(file));
            NO_UPWARD_IMPORTS.iter().any(|scope| within(&module, scope))
        })
        .collect();
    assert!(hits.is_empty(), "imports of a parent:\n{}", listed(hits));
}

#[test]
fn the_headers_must_not_import_lines_hold() {
    let hits = header_breaks(&src());
    assert!(
        hits.is_empty(),
        "\"Must not import\" broken:\n{}",
        listed(hits)
    );
}

/// The crate's shape in a scratch tree: the layers, a session with the subtrees `chat` and
/// `shared`, a ui with a `chat` folder; each file a bare header.
const SCAFFOLD: &[(&str, &str)] = &[
    ("lib.rs", "//! h"),
    ("engine/mod.rs", "//! h"),
    ("store/mod.rs", "//! h"),
    ("transport/mod.rs", "//! h"),
    ("session.rs", "//! h"),
    ("session/shared.rs", "//! h"),
    ("session/chat.rs", "//! h"),
    ("session/chat/turn.rs", "//! h"),
    ("session/chat/cache.rs", "//! h"),
    ("ui/mod.rs", "//! h"),
    ("ui/chat/mod.rs", "//! h"),
    ("ui/chat/store.rs", "//! h"),
    ("ui/chat/view.rs", "//! h"),
];

/// Plants `files` over [`SCAFFOLD`] and checks that `family` names exactly `expected` (the second
/// half of each hit, in order).
fn fires(family: fn(&Path) -> Vec<(String, String)>, files: &[(&str, &str)], expected: &[&str]) {
    let root = plant(SCAFFOLD.iter().chain(files));
    let hits: Vec<String> = family(&root).into_iter().map(|h| h.1).collect();
    fs::remove_dir_all(&root).unwrap();
    assert_eq!(hits, expected, "{files:?}");
}

const TURN: &str = "session/chat/turn.rs";

#[test]
fn the_up_rule_fires_on_planted_imports_of_a_parent() {
    let up = |file, code, expected: &[&str]| fires(upward_imports, &[(file, code)], expected);
    up(
        TURN,
        "//! h\nuse crate::session::SessionError;",
        &["crate::session::SessionError"],
    );
    up(
        TURN,
        "//! h\nuse super::{now, Session};",
        &["crate::session::chat::Session", "crate::session::chat::now"],
    );
    up(
        TURN,
        "//! h\nuse super::{cache::{self, Cache}, Session as S};",
        &["crate::session::chat::Session"],
    );
    up(
        TURN,
        "//! h\nuse super::super::Core;",
        &["crate::session::Core"],
    );
    up(
        TURN,
        "//! h\npub use crate::{engine::X, session::{self, chat::{Y}}};",
        &["crate::session", "crate::session::chat::Y"],
    );
    up(
        TURN,
        "//! h\nfn f() { super::Session::open(); }",
        &["crate::session::chat::Session::open"],
    );
    up(
        TURN,
        "//! h\nfn f(s: &crate::session::Session) {}",
        &["crate::session::Session"],
    );
    up(
        TURN,
        "//! h\nfn f() { let _ = crate::session::now(); }",
        &["crate::session::now"],
    );
    up(
        "ui/chat/view.rs",
        "//! h\nuse crate::ui::AppState;",
        &["crate::ui::AppState"],
    );
    up(
        "ui/chat/store.rs",
        "//! h\nmod tests { use super::super::Chat; }",
        &["crate::ui::chat::Chat"],
    );
}

#[test]
fn the_up_rule_spares_siblings_children_and_re_exports() {
    let up = |file, code, expected: &[&str]| fires(upward_imports, &[(file, code)], expected);
    up(TURN, "//! h\nuse crate::session::shared::Core;", &[]);
    up(
        TURN,
        "//! h\nuse super::cache::Cache;\nuse super::super::shared::{self, Core};",
        &[],
    );
    up(
        TURN,
        "//! h\nuse crate::session::{shared::Core};\nuse super::super::{shared};",
        &[],
    );
    up(
        TURN,
        "//! h\nuse self::inner::X;\nuse crate::engine::turn::Turn;",
        &[],
    );
    up(TURN, "//! h\n// use super::Session;\nfn f() {}", &[]);
    up(
        TURN,
        "//! h\nfn f() {}\n#[cfg(test)]\nmod tests { use super::*; }",
        &[],
    );
    up(
        "session.rs",
        "//! h\npub use chat::turn::Begin;\nuse self::shared::Core;",
        &[],
    );
    up(
        "session/chat.rs",
        "//! h\npub use self::turn::{Begin, End};",
        &[],
    );
    up(
        "ui/chat/view.rs",
        "//! h\nuse super::store::ChatStore;\nuse crate::session::Session;",
        &[],
    );
}

#[test]
fn the_header_rule_fires_on_planted_imports_it_forbids() {
    let hdr = |files: &[(&str, &str)], expected: &[&str]| fires(header_breaks, files, expected);
    hdr(
        &[(
            "session.rs",
            "//! Must not import `ui`.\nuse crate::ui::App;",
        )],
        &["crate::ui::App"],
    );
    hdr(
        &[(
            "session.rs",
            "//! Owns it. Must not\n//! import `ui`.\nuse crate::{ui, engine};",
        )],
        &["crate::ui"],
    );
    hdr(
        &[
            ("session.rs", "//! Must not import `ui`."),
            (TURN, "//! h\nfn f() { crate::ui::show(); }"),
        ],
        &["crate::ui::show"],
    );
    hdr(
        &[
            ("session.rs", "//! Must not import `ui`."),
            (TURN, "//! Must not import `store`.\nuse crate::ui::A;"),
        ],
        &["crate::ui::A"],
    );
    hdr(
        &[(
            "ui/chat/view.rs",
            "//! Must not import `store` or `transport`: x.\nuse crate::transport::{self};",
        )],
        &["crate::transport"],
    );
    hdr(
        &[(
            "store/mod.rs",
            "//! Must not import: `ui`, `session`, `transport`, leptos.\nuse super::session::S;",
        )],
        &["crate::session::S"],
    );
    hdr(&[("ui/chat/view.rs", "//! Must not import `session` internals.\nuse crate::session::{Session, chat::turn::B};")], &["crate::session::chat::turn::B"]);
    hdr(&[("engine/mod.rs", "//! Must not import anything outside `crate::engine` (`now` is an argument).\nuse crate::store::Store;")], &["crate::store::Store"]);
    hdr(
        &[(
            "session/chat/cache.rs",
            "//! Must not import anything outside `super`.\nuse super::super::shared::Core;",
        )],
        &["crate::session::shared::Core"],
    );
    hdr(
        &[(
            "session/chat/cache.rs",
            "//! must not import `super::turn`, which uses it.\nuse super::turn::Begin;",
        )],
        &["crate::session::chat::turn::Begin"],
    );
}

#[test]
fn a_header_naming_no_module_is_an_error() {
    let hdr = |files: &[(&str, &str)], expected: &[&str]| fires(header_breaks, files, expected);
    hdr(
        &[("ui/mod.rs", "//! Must not import `leptos`.")],
        &["`leptos` names no module"],
    );
    hdr(
        &[("ui/mod.rs", "//! Must not import `store` or `controller`.")],
        &["`controller` names no module"],
    );
    hdr(
        &[("ui/chat/view.rs", "//! Must not import `super::nothing`.")],
        &["`super::nothing` names no module"],
    );
    hdr(
        &[("ui/mod.rs", "//! Must not import `session::chat`.")],
        &["`session::chat` names no module"],
    );
}

#[test]
fn the_header_rule_spares_what_it_does_not_name() {
    let hdr = |files: &[(&str, &str)], expected: &[&str]| fires(header_breaks, files, expected);
    hdr(
        &[(
            "session.rs",
            "//! Must not import `ui`.\n// crate::ui::App\nfn f() {}",
        )],
        &[],
    );
    hdr(
        &[
            ("session/chat.rs", "//! Must not import `ui`."),
            ("session/shared.rs", "//! h\nuse crate::ui::App;"),
        ],
        &[],
    );
    hdr(&[("ui/mod.rs", "//! Must not import `store`; reaches the session through `controller`.\nuse crate::session::S;")], &[]);
    hdr(
        &[(
            "ui/chat/view.rs",
            "//! Must not import `session` internals.\nuse crate::session::Session;",
        )],
        &[],
    );
    hdr(&[("engine/mod.rs", "//! Must not import anything outside `crate::engine`: no leptos.\nuse crate::engine::x;\nuse serde::Serialize;")], &[]);
}

// ---------------------------------------------------------------------------------------------
// The README's code map names every module.

/// The paths the code map's rows name (`src/a/{b,c}.rs` and `src/a/*.rs` expanded to patterns).
fn code_map_patterns(readme: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in readme.lines() {
        let Some(rest) = line.strip_prefix("| `src/") else {
            continue;
        };
        let Some(end) = rest.find('`') else { continue };
        let path = format!("src/{}", &rest[..end]);
        match (path.find('{'), path.find('}')) {
            (Some(open), Some(close)) => {
                for alt in path[open + 1..close].split(',') {
                    out.push(format!("{}{alt}{}", &path[..open], &path[close + 1..]));
                }
            }
            _ => out.push(path),
        }
    }
    out
}

/// Whether `file` (`src/engine/x.rs`) is named by `pattern`: a path whose segments may hold a `*`
/// (`src/engine/decode/*.rs`, `src/ui/*/`), or a folder (`src/engine/memory/`), which names the
/// files directly in it and its own `memory.rs` beside it (not its subfolders: each has its row).
fn named_by(file: &str, pattern: &str) -> bool {
    if let Some(folder) = pattern.strip_suffix('/') {
        let own = !folder.ends_with('*') && named_by(file, &format!("{folder}.rs"));
        return own || named_by(file, &format!("{folder}/*.rs"));
    }
    let (f, p): (Vec<&str>, Vec<&str>) = (file.split('/').collect(), pattern.split('/').collect());
    f.len() == p.len()
        && f.iter().zip(&p).all(|(f, p)| match p.split_once('*') {
            Some((head, tail)) => f.starts_with(head) && f.ends_with(tail),
            None => f == p,
        })
}

fn unmapped(files: &[String], readme: &str) -> Vec<String> {
    let patterns = code_map_patterns(readme);
    files
        .iter()
        .filter(|f| !patterns.iter().any(|p| named_by(f, p)))
        .cloned()
        .collect()
}

#[test]
fn the_code_map_names_every_module() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = fs::read_to_string(root.join("README.md")).unwrap();
    let files: Vec<String> = rust_files(&src())
        .iter()
        .map(|f| f.strip_prefix(root).unwrap().display().to_string())
        .collect();
    let missing = unmapped(&files, &readme);
    assert!(missing.is_empty(), "README code map lacks: {missing:?}");
}

#[test]
fn the_code_map_check_can_fail() {
    let readme = "| `src/a.rs` | x | — |\n| `src/b/{c,d}.rs` | x | — |\n| `src/e/*.rs` | x | — |\n\
                  | `src/f/` | x |\n| `src/g/*/` | x |\n";
    let files = |names: &[&str]| names.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let named = [
        "src/a.rs",
        "src/b/c.rs",
        "src/e/f.rs",
        "src/f.rs",
        "src/f/x.rs",
        "src/g/h/i.rs",
    ];
    assert!(unmapped(&files(&named), readme).is_empty());
    assert_eq!(
        unmapped(&files(&["src/b/x.rs", "src/e/g/h.rs", "src/z.rs"]), readme),
        ["src/b/x.rs", "src/e/g/h.rs", "src/z.rs"]
    );
    let unnamed = [
        "src/f/x/y.rs",
        "src/g/j.rs",
        "src/g/h/i/j.rs",
        "src/f/x.txt",
    ];
    assert_eq!(unmapped(&files(&unnamed), readme), unnamed);
}

/// Longest a function may be, in lines from its `fn` to its closing brace.
const MAX_FUNCTION_LINES: usize = 80;

/// The functions of `text` (a Rust file as rustfmt writes it) longer than [`MAX_FUNCTION_LINES`]:
/// name and length. A function ends at the first line that is its indent and `}`.
fn long_functions(text: &str) -> Vec<(String, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let body = line.trim_start();
        let indent = &line[..line.len() - body.len()];
        let mut rest = body;
        for prefix in [
            "pub(crate) ",
            "pub(super) ",
            "pub ",
            "const ",
            "async ",
            "unsafe ",
        ] {
            rest = rest.strip_prefix(prefix).unwrap_or(rest);
        }
        let Some(sig) = rest.strip_prefix("fn ") else {
            continue;
        };
        let name: String = sig.chars().take_while(|c| is_ident(*c)).collect();
        let close = format!("{indent}}}");
        if let Some(end) = lines[i..].iter().position(|l| *l == close) {
            if end + 1 > MAX_FUNCTION_LINES {
                out.push((name, end + 1));
            }
        }
    }
    out
}

#[test]
fn no_function_is_over_80_lines() {
    let long: Vec<String> = rust_files(&src())
        .iter()
        .flat_map(|f| {
            let text = fs::read_to_string(f).unwrap();
            long_functions(&text)
                .into_iter()
                .map(move |(name, n)| format!("{}: {name} ({n} lines)", f.display()))
        })
        .collect();
    assert!(
        long.is_empty(),
        "functions over {MAX_FUNCTION_LINES} lines:\n{}",
        long.join("\n")
    );
    // Planted: one of 81 lines fires, one of 80 does not.
    let planted = |n: usize| {
        format!(
            "    pub fn f() {{\n{}    }}\n",
            "        x();\n".repeat(n - 2)
        )
    };
    assert_eq!(long_functions(&planted(81)), vec![("f".to_string(), 81)]);
    assert!(long_functions(&planted(80)).is_empty());
}

// ---------------------------------------------------------------------------------------------
// ARCHITECTURE.md's invariants each have a name and the tests that check them (or say "Untested").

/// What is wrong with the bullets of `doc`'s "## Invariants" section: one without a `**name**`, one
/// that neither says "Checked by" nor "Untested", and a test it names that `read` (a file's text by
/// its path) does not hold: a `` `tests/x.rs` `` is followed by its tests, `` `fn_name` `` or a
/// quoted title ("tabs: a send…", a prefix of an e2e test's).
fn invariant_faults(doc: &str, read: impl Fn(&str) -> Option<String>) -> Vec<String> {
    let doc = format!("\n{doc}");
    let section = doc.split("\n## Invariants\n").nth(1).unwrap_or("");
    let section = section.split("\n## ").next().unwrap_or("");
    let mut out = Vec::new();
    if !section.contains("\n- ") {
        out.push("no invariants".to_string());
    }
    for bullet in section.split("\n- ").skip(1) {
        let paragraph = bullet.split("\n\n").next().unwrap_or("");
        let bullet = paragraph.split_whitespace().collect::<Vec<_>>().join(" ");
        let Some(name) = bullet.strip_prefix("**").and_then(|b| b.split("**").next()) else {
            out.push(format!("unnamed: {bullet}"));
            continue;
        };
        match bullet.split_once("Checked by ") {
            Some((_, refs)) => out.extend(missing_tests(name, refs, &read)),
            None if !bullet.contains("Untested") => out.push(format!("{name}: no test")),
            None => {}
        }
    }
    out
}

/// The tests `refs` names that do not exist (see [`invariant_faults`]).
fn missing_tests(name: &str, refs: &str, read: impl Fn(&str) -> Option<String>) -> Vec<String> {
    let (mut out, mut file, mut text, mut named) = (Vec::new(), "", None, 0);
    let mut rest = refs;
    while let Some(i) = rest.find(['`', '"']) {
        let quote = &rest[i..i + 1];
        let Some(len) = rest[i + 1..].find(quote) else {
            break;
        };
        let token = &rest[i + 1..i + 1 + len];
        rest = &rest[i + 2 + len..];
        if token.starts_with("tests/") {
            (file, text) = (token, read(token));
        } else if quote == "`" && !token.chars().all(is_ident) {
            continue;
        } else {
            let found = if quote == "`" {
                format!("fn {token}(")
            } else {
                token.to_string()
            };
            named += 1;
            if !text.as_ref().is_some_and(|t| t.contains(&found)) {
                out.push(format!("{name}: no test {quote}{token}{quote} in {file}"));
            }
        }
    }
    if named == 0 {
        out.push(format!("{name}: \"Checked by\" names no test"));
    }
    out
}

#[test]
fn every_invariant_names_its_tests() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let faults = invariant_faults(&doc, |rel| fs::read_to_string(root.join(rel)).ok());
    assert!(
        faults.is_empty(),
        "ARCHITECTURE.md invariants:\n{}",
        faults.join("\n")
    );
}

#[test]
fn the_invariant_check_can_fail() {
    let doc = "## Invariants\n\nSome text.\n\n- **a**: x. Checked by `tests/t.rs`: `f`.\n\
               - **b**: y. Untested.\n- **c**: z (`src/x.rs`). Checked by `tests/t.rs`: `g`;\n  \
               `tests/e.mjs`: \"a\n  title\", \"gone\".\n- **d**: nothing.\n- **e**: Checked by `tests/t.rs`.\n\
               - no name. Untested.\n- **f**: Checked by `tests/none.rs`: `f`.\n\n## Next\n\n- **z**: after.\n";
    let read = |rel: &str| match rel {
        "tests/t.rs" => Some("fn f() {}".to_string()),
        "tests/e.mjs" => Some("test('a title, more', ..)".to_string()),
        _ => None,
    };
    assert_eq!(
        invariant_faults("## Invariants\n\nnone yet\n", read),
        ["no invariants"]
    );
    assert_eq!(
        invariant_faults(doc, read),
        [
            "c: no test `g` in tests/t.rs",
            "c: no test \"gone\" in tests/e.mjs",
            "d: no test",
            "e: \"Checked by\" names no test",
            "unnamed: no name. Untested.",
            "f: no test `f` in tests/none.rs",
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Stores own their signals: no ui item hands out a write signal (a `pub` field of type `RwSignal`,
// or a `pub fn` returning one), so only a store's own actions and event handlers write its state.

/// `(file, line)` of each ui item that hands out a write signal.
fn open_signals(root: &Path) -> Vec<(String, String)> {
    let ui = root.join("ui");
    let mut hits = Vec::new();
    for file in rust_files(&ui) {
        let code = code_of(&fs::read_to_string(&file).unwrap());
        for line in code.lines().map(str::trim) {
            let field = line.starts_with("pub ") && !line.starts_with("pub fn") && {
                let ty = line.split_once(':').map_or("", |(_, t)| t.trim_start());
                ty.starts_with("RwSignal") || ty.starts_with("leptos::prelude::RwSignal")
            };
            let getter = line.starts_with("pub fn") && line.contains("-> RwSignal");
            if field || getter {
                let rel = file.strip_prefix(root).unwrap().display().to_string();
                hits.push((rel, line.to_string()));
            }
        }
    }
    hits
}

/// Store readers that hand out a signal handle: a `pub fn` returning a `ReadSignal`/`Signal`, or a
/// `.read_only()` anywhere in the ui. A store gives out reader methods over its private signals
/// instead: every `ReadSignal<T>` handed out is a copy of leptos's read and track code per `T` in
/// the first download (ARCHITECTURE.md "The split build").
fn handed_out_signals(root: &Path) -> Vec<(String, String)> {
    let ui = root.join("ui");
    let mut hits = Vec::new();
    for file in rust_files(&ui) {
        let code = code_of(&fs::read_to_string(&file).unwrap());
        for line in code.lines().map(str::trim) {
            let getter = line.starts_with("pub fn")
                && (line.contains("-> ReadSignal") || line.contains("-> Signal<"));
            if getter || line.contains(".read_only()") {
                let rel = file.strip_prefix(root).unwrap().display().to_string();
                hits.push((rel, line.to_string()));
            }
        }
    }
    hits
}

#[test]
fn stores_hand_out_readers_not_signals() {
    assert_eq!(listed(handed_out_signals(&src())), "");
}

#[test]
fn the_reader_rule_fires_on_planted_signal_handles() {
    let store = "//! h\npub struct S {\n    open: RwSignal<bool>,\n}\nimpl S {\n    pub fn open(&self) -> bool { self.open.get() }\n    pub fn shown(&self) -> ReadSignal<bool> { self.open.read_only() }\n    pub fn both(&self) -> Signal<bool> {\n        let o = self.open.read_only();\n        Signal::derive(move || o.get())\n    }\n}\n";
    fires(
        handed_out_signals,
        &[("ui/chat/store.rs", store)],
        &[
            "pub fn shown(&self) -> ReadSignal<bool> { self.open.read_only() }",
            "pub fn both(&self) -> Signal<bool> {",
            "let o = self.open.read_only();",
        ],
    );
}

/// UI stores that hold another store: a field of a `pub struct …Store` whose type is another
/// `…Store`. Stores share the `Stores` context instead; what one action means across domains is
/// `ui/flow.rs`'s (ARCHITECTURE.md "UI stores").
fn stores_holding_stores(root: &Path) -> Vec<(String, String)> {
    let mut hits = Vec::new();
    for file in rust_files(&root.join("ui")) {
        let code = code_of(&fs::read_to_string(&file).unwrap());
        let mut in_store = false;
        for line in code.lines().map(str::trim) {
            if line.starts_with("pub struct ") && line.ends_with("Store {") {
                in_store = true;
                continue;
            }
            if in_store && line == "}" {
                in_store = false;
            }
            let ty = line
                .split_once(':')
                .map_or("", |(_, t)| t.trim().trim_end_matches(','));
            let ty = ty.rsplit("::").next().unwrap_or(ty);
            if in_store && ty.ends_with("Store") && ty.chars().all(char::is_alphanumeric) {
                let rel = file.strip_prefix(root).unwrap().display().to_string();
                hits.push((rel, line.to_string()));
            }
        }
    }
    hits
}

#[test]
fn no_store_holds_another_store() {
    assert_eq!(listed(stores_holding_stores(&src())), "");
}

#[test]
fn the_holding_rule_fires_on_a_planted_store_field() {
    let store = "//! h\npub struct ChatStore {\n    backend: Backend,\n    shell: ShellStore,\n    memory: crate::ui::memory::store::MemoryStore,\n    current: RwSignal<Option<String>>,\n}\npub struct Other {\n    chat: ChatStore,\n}\n";
    fires(
        stores_holding_stores,
        &[("ui/chat/store.rs", store)],
        &[
            "shell: ShellStore,",
            "memory: crate::ui::memory::store::MemoryStore,",
        ],
    );
}

#[test]
fn stores_keep_their_write_signals_private() {
    assert_eq!(listed(open_signals(&src())), "");
}

#[test]
fn the_signal_rule_fires_on_planted_open_signals() {
    let store = "//! h\npub struct S {\n    pub items: RwSignal<Vec<u8>>,\n    open: RwSignal<bool>,\n}\nimpl S {\n    pub fn open(&self) -> RwSignal<bool> { self.open }\n    pub fn shown(&self) -> ReadSignal<bool> { self.open.read_only() }\n}\n";
    fires(
        open_signals,
        &[("ui/chat/store.rs", store)],
        &[
            "pub items: RwSignal<Vec<u8>>,",
            "pub fn open(&self) -> RwSignal<bool> { self.open }",
        ],
    );
}

/// Most public functions one UI store may have: past it the store holds more than one domain's
/// state, and splits by what it owns (as the chat's composer, message list and turns did).
const MAX_STORE_FUNCTIONS: usize = 30;

/// UI stores with more than [`MAX_STORE_FUNCTIONS`] public functions (`pub fn` or `pub(crate) fn`
/// items of an `impl` of a type named `…Store`, or of the shared `Stores`, summed over every file
/// under `ui/`): `("NameStore", "31 public functions")`, by name.
fn crowded_stores(root: &Path) -> Vec<(String, String)> {
    let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
    for file in rust_files(&root.join("ui")) {
        let code = code_of(&fs::read_to_string(&file).unwrap());
        let mut store: Option<String> = None;
        for line in code.lines() {
            if let Some(rest) = line.strip_prefix("impl ") {
                let name: String = rest.chars().take_while(|c| is_ident(*c)).collect();
                let is_store = name.ends_with("Store") || name == "Stores";
                store = (is_store && line.trim_end().ends_with('{')).then_some(name);
                continue;
            }
            if line.starts_with('}') {
                store = None;
            }
            // The impl's own items, as rustfmt indents them (a function inside one is not its).
            let public = line.starts_with("    pub fn ") || line.starts_with("    pub(crate) fn ");
            if let (Some(name), true) = (&store, public) {
                *counts.entry(name.clone()).or_default() += 1;
            }
        }
    }
    counts
        .into_iter()
        .filter(|(_, n)| *n > MAX_STORE_FUNCTIONS)
        .map(|(name, n)| (name, format!("{n} public functions")))
        .collect()
}

#[test]
fn no_store_has_more_than_30_public_functions() {
    assert_eq!(listed(crowded_stores(&src())), "");
}

#[test]
fn the_store_size_rule_fires_on_a_planted_crowded_store() {
    let fns = |prefix: &str, n: usize| -> String {
        (0..n)
            .map(|i| format!("    {prefix} fn f{i}(&self) {{}}\n"))
            .collect()
    };
    // 31 in one store (over two impl blocks in two files), exactly 30 in another, 31 in a type
    // that is no store, and private or nested functions that do not count.
    let chat = format!(
        "//! h\npub struct ChatStore {{}}\nimpl ChatStore {{\n{}{}}}\nimpl Other {{\n{}}}\n",
        fns("pub", 20),
        fns("", 5),
        fns("pub", 31)
    );
    let more = format!(
        "//! h\nimpl ChatStore {{\n{}    fn g(&self) {{\n        pub fn inner() {{}}\n    }}\n}}\n",
        fns("pub(crate)", 11)
    );
    let full = format!("//! h\nimpl ShellStore {{\n{}}}\n", fns("pub", 30));
    let flow = format!("//! h\nimpl Stores {{\n{}}}\n", fns("pub", 31));
    fires(
        crowded_stores,
        &[
            ("ui/chat/store.rs", chat.as_str()),
            ("ui/chat/view.rs", more.as_str()),
            ("ui/shell/store.rs", full.as_str()),
            ("ui/flow.rs", flow.as_str()),
        ],
        &["31 public functions", "31 public functions"],
    );
}

// ---------------------------------------------------------------------------------------------
// The session's drivers hold one state value, not a bag of cells.

/// The session files that may hold a `RefCell` or `Cell` field, each with why: browser glue, or
/// state every handle of a service shares. Any other driver keeps what it remembers between its
/// awaits in one value behind `Held` (`session/shared/held.rs`), borrowed inside a closure only.
const CELL_ADAPTERS: &[(&str, &str)] = &[
    ("session/shared/held.rs", "`Held<T>` itself: a driver's one state value"),
    ("session/sync/browser.rs", "sync's browser glue: the `online` listener, the `AbortController`, the wake-up"),
    ("session/shared/tabs.rs", "the tab channel's browser glue: a `BroadcastChannel`'s pending messages and its flush timer"),
    ("session/shared/core.rs", "what every service shares: the settings in force, the caches, the capture hook, what servers said"),
    ("session/shared/open.rs", "the persistent-storage answer a browser promise delivers after opening"),
    ("session/chat/turn.rs", "a one-shot slot the early write fills while the request is already out"),
];

/// Whether `line` names a cell type (`RefCell`, `Cell`, `OnceCell`, `UnsafeCell`).
fn names_cell(line: &str) -> bool {
    line.split(|c: char| !is_ident(c))
        .any(|w| matches!(w, "RefCell" | "Cell" | "OnceCell" | "UnsafeCell"))
}

/// Fields (in a struct's braces, or a tuple struct's parentheses) and type aliases naming a cell
/// in `session.rs` and `session/**`, outside [`CELL_ADAPTERS`]: `(file, line)`.
fn cell_fields(root: &Path) -> Vec<(String, String)> {
    let mut files = rust_files(&root.join("session"));
    files.extend(Some(root.join("session.rs")).filter(|f| f.is_file()));
    let mut hits = Vec::new();
    for file in files {
        let rel = file.strip_prefix(root).unwrap().display().to_string();
        if CELL_ADAPTERS.iter().any(|(f, _)| *f == rel) {
            continue;
        }
        let mut in_struct = false;
        for line in code_of(&fs::read_to_string(&file).unwrap()).lines() {
            let t = line.trim();
            let words: Vec<&str> = t.split(|c: char| !is_ident(c)).collect();
            let is_struct = words.iter().take(4).any(|w| *w == "struct");
            if is_struct && t.ends_with('{') {
                in_struct = true;
                continue;
            }
            if in_struct && t.starts_with('}') {
                in_struct = false;
            }
            let alias = words.iter().take(4).any(|w| *w == "type") && t.contains('=');
            if (in_struct || is_struct || alias) && names_cell(t) {
                hits.push((rel.clone(), t.to_string()));
            }
        }
    }
    hits
}

#[test]
fn session_drivers_hold_no_cells_outside_the_named_adapters() {
    assert_eq!(listed(cell_fields(&src())), "");
    for (file, why) in CELL_ADAPTERS {
        let code = fs::read_to_string(src().join(file)).unwrap_or_default();
        assert!(
            names_cell(&code_of(&code)),
            "{file} is named but holds no cell"
        );
        assert!(!why.is_empty(), "{file} is named without a reason");
    }
}

#[test]
fn the_cell_rule_fires_on_planted_cell_fields() {
    let driver = "//! h\nuse std::cell::{Cell, RefCell};\npub(super) struct Inner {\n    store: Store,\n    pub(super) rep: RefCell<Option<Replicator>>,\n    gen: std::cell::Cell<u32>,\n    state: Held<State>,\n}\nstruct Slot(Rc<RefCell<u8>>);\ntype Shared = Rc<RefCell<Vec<u8>>>;\nfn f(cache: &Rc<RefCell<Cache>>) {\n    let slot: Rc<RefCell<u8>> = Rc::default();\n}\n";
    let glue = "//! h\nstruct Glue {\n    abort: RefCell<Option<AbortController>>,\n}\n";
    fires(
        cell_fields,
        &[
            ("session/sync/replication.rs", driver),
            ("session/sync/browser.rs", glue),
            (
                "session/chat/cache.rs",
                "//! h\nstruct Spared {\n    // a RefCell in prose\n    n: u8,\n}\n",
            ),
        ],
        &[
            "pub(super) rep: RefCell<Option<Replicator>>,",
            "gen: std::cell::Cell<u32>,",
            "struct Slot(Rc<RefCell<u8>>);",
            "type Shared = Rc<RefCell<Vec<u8>>>;",
        ],
    );
}

// ---------------------------------------------------------------------------------------------
// No file circle inside the session.

/// The session's import graph between modules, from every path a file names (`use super::…`,
/// `use crate::session::…`, inline paths): an edge from a file's module to the module a path
/// names, leaving out a module's own ancestors and descendants (a parent's `pub use child::X`
/// re-exports; a child naming its parent is the up rule's).
fn session_imports(root: &Path) -> std::collections::BTreeMap<String, BTreeSet<String>> {
    let modules = modules(root);
    let mut graph: std::collections::BTreeMap<String, BTreeSet<String>> = Default::default();
    for file in rust_files(root) {
        let s = read_source(root, &file);
        if !within(&s.module, "crate::session") {
            continue;
        }
        for path in &s.paths {
            let Some(to) = module_named(path, &modules) else {
                continue;
            };
            let related =
                to == s.module || is_ancestor(&to, &s.module) || is_ancestor(&s.module, &to);
            if within(&to, "crate::session") && !related {
                graph.entry(s.module.clone()).or_default().insert(to);
            }
        }
    }
    graph
}

/// Every circle of the session's import graph, once each, as `a -> b -> a` from its smallest
/// module: `("circle", "…")`.
fn session_circles(root: &Path) -> Vec<(String, String)> {
    let graph = session_imports(root);
    let mut circles = BTreeSet::new();
    // From each module, every simple path back to it (the session's graph is small).
    fn walk(
        graph: &std::collections::BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        circles: &mut BTreeSet<String>,
    ) {
        let last = path.last().unwrap().clone();
        for next in graph.get(&last).into_iter().flatten() {
            if *next == path[0] {
                let at = (0..path.len()).min_by_key(|&k| &path[k]).unwrap();
                let mut ring: Vec<&str> = path[at..]
                    .iter()
                    .chain(&path[..at])
                    .map(|m| m.as_str())
                    .collect();
                ring.push(ring[0]);
                circles.insert(ring.join(" -> ").replace("crate::session::", ""));
            } else if !path.contains(next) && *next > path[0] {
                path.push(next.clone());
                walk(graph, path, circles);
                path.pop();
            }
        }
    }
    for start in graph.keys() {
        walk(&graph, &mut vec![start.clone()], &mut circles);
    }
    circles
        .into_iter()
        .map(|c| ("circle".to_string(), c))
        .collect()
}

#[test]
fn no_file_circle_inside_the_session() {
    assert_eq!(listed(session_circles(&src())), "");
}

#[test]
fn the_circle_rule_fires_on_planted_circles() {
    let a = "//! h\nuse super::b::B;\npub struct A;\n";
    let b = "//! h\nuse crate::session::sync::c::C;\npub struct B;\n";
    let c = "//! h\npub struct C(super::a::A);\n";
    let two = "//! h\nuse super::cache::Cache;\n";
    let back = "//! h\nuse super::turn::{self};\n";
    fires(
        session_circles,
        &[
            ("session/sync.rs", "//! h\npub use a::A;\nuse self::b::B;\n"),
            ("session/sync/a.rs", a),
            ("session/sync/b.rs", b),
            ("session/sync/c.rs", c),
            ("session/chat/turn.rs", two),
            ("session/chat/cache.rs", back),
        ],
        &[
            "chat::cache -> chat::turn -> chat::cache",
            "sync::a -> sync::b -> sync::c -> sync::a",
        ],
    );
    // A line of siblings, a parent re-exporting its children, and a child naming its parent's
    // item: no circle.
    fires(
        session_circles,
        &[
            ("session/sync.rs", "//! h\npub use a::A;\npub use b::B;\n"),
            ("session/sync/a.rs", "//! h\nuse super::b::B;\n"),
            (
                "session/sync/b.rs",
                "//! h\nuse crate::session::shared::Core;\nuse super::A;\n",
            ),
        ],
        &[],
    );
}
