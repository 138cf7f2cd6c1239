#![cfg(not(target_arch = "wasm32"))]
//! The lists the docs share with the code, held to the code, each check shown failing on a planted
//! name (ARCHITECTURE.md, "Testing"):
//! 1. Split points: ARCHITECTURE.md's table ("The split build", first column `split point`) names
//!    every `#[wasm_split(name, …)]` of `src/` and no other, and each file its row names splits
//!    there; a "split point `x`" in either doc's prose is one of the code's.
//! 2. Testids: every testid of ARCHITECTURE.md's "UI contract" table (the first column's backticked
//!    names outside parentheses) is written in `src/` or `www/index.html` (`"name"`, or `\"name\"`
//!    inside a string).
//! 3. Figures: the README's figure table (first column `figure`) names every figure of
//!    `benches/figures.txt`, and every figure either doc names is listed there. A backticked name is
//!    taken for a figure when it ends in a unit (`_ms`, `_us`, `_per_s`, `_ratio`, `_brotli`,
//!    `_rate`) or starts with the first two words of a listed figure (`memory_eval_…`), unless it
//!    names a bench (`benches/<name>.rs`); `{a,b}` and a final `*` are expanded against the list.
//!
//! 4. The README is a README: at most [`README_MAX_LINES`] lines, and no lab notes in it (a
//!    session's number, a branch name like `s20-keys`, a commit hash, a machine's load): git
//!    history keeps those.
//!
//! `benches/figures.txt` itself is held to the benches' sources by `scripts/bench.sh --dry`
//! (`tests/bench_runner.rs`).

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Every `.rs` file under `dir`, as (path relative to `dir`, text).
fn rust_files(dir: &Path) -> Vec<(String, String)> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
        for entry in fs::read_dir(dir).unwrap() {
            let path: PathBuf = entry.unwrap().path();
            if path.is_dir() {
                walk(base, &path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(base).unwrap().display().to_string();
                out.push((rel, fs::read_to_string(&path).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// The text of `doc` under `## heading`, up to the next `## `.
fn section(doc: &str, heading: &str) -> String {
    let doc = format!("\n{doc}");
    let start = format!("\n## {heading}\n");
    let Some(at) = doc.find(&start) else {
        return String::new();
    };
    let rest = &doc[at + start.len()..];
    rest[..rest.find("\n## ").unwrap_or(rest.len())].to_string()
}

/// The rows of each table in `text` whose header's first cell is `first`, each as its cells.
fn table_rows(text: &str, first: &str) -> Vec<Vec<String>> {
    let (mut rows, mut inside) = (Vec::new(), false);
    for line in text.lines() {
        let cells: Vec<String> = line
            .trim()
            .trim_matches('|')
            .split('|')
            .map(|c| c.trim().to_string())
            .collect();
        if !line.trim_start().starts_with('|') {
            inside = false;
        } else if cells[0] == first {
            inside = true;
        } else if inside && !cells[0].starts_with("---") {
            rows.push(cells);
        }
    }
    rows
}

/// The backticked words of `text`.
fn ticked(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// `cell` without what it says in parentheses.
fn outside_parentheses(cell: &str) -> String {
    let (mut out, mut depth) = (String::new(), 0);
    for c in cell.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

/// Source text with `//` comments removed.
fn code_of(text: &str) -> String {
    text.lines()
        .map(|l| l.find("//").map_or(l, |i| &l[..i]))
        .collect::<Vec<_>>()
        .join("\n")
}

// ---------------------------------------------------------------------------------------------
// Split points.

/// The split points `text` declares: the first argument of each `wasm_split(…)` in its code.
fn split_points_in(text: &str) -> BTreeSet<String> {
    let code = code_of(text);
    code.match_indices("wasm_split(")
        .map(|(at, m)| {
            code[at + m.len()..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect()
        })
        .collect()
}

/// What is wrong with `doc`'s split-point table and prose against `code` (files under `src/`): a
/// name no file splits at, a file its row names that does not split there, a split point of the
/// code a table leaves out.
fn split_point_faults(doc: &str, code: &[(String, String)]) -> Vec<String> {
    let in_code: BTreeSet<String> = code.iter().flat_map(|(_, t)| split_points_in(t)).collect();
    let mut out = Vec::new();
    let mut listed = BTreeSet::new();
    for row in table_rows(doc, "split point") {
        let Some(name) = ticked(&row[0]).into_iter().next() else {
            continue;
        };
        if !in_code.contains(&name) {
            out.push(format!(
                "split point `{name}` is in no `wasm_split(` of src/"
            ));
        }
        for file in ticked(row.get(1).map_or("", String::as_str)) {
            let splits = code.iter().find(|(f, _)| *f == file);
            if !splits.is_some_and(|(_, t)| split_points_in(t).contains(&name)) {
                out.push(format!(
                    "split point `{name}`: `{file}` does not split there"
                ));
            }
        }
        listed.insert(name);
    }
    // A doc with the table lists every split point; one without it only names some.
    for name in in_code.difference(&listed).filter(|_| !listed.is_empty()) {
        out.push(format!("split point `{name}` of src/ is not in the table"));
    }
    for (at, m) in doc.match_indices("split point `") {
        let name: String = doc[at + m.len()..]
            .chars()
            .take_while(|c| *c != '`')
            .collect();
        if !in_code.contains(&name) {
            out.push(format!(
                "split point `{name}` is in no `wasm_split(` of src/"
            ));
        }
    }
    out
}

#[test]
fn the_split_points_the_docs_name_are_the_codes() {
    let code = rust_files(&root().join("src"));
    let mut faults = Vec::new();
    for doc in ["ARCHITECTURE.md", "README.md"] {
        let text = read(doc);
        if doc == "README.md" {
            assert!(
                table_rows(&text, "split point").is_empty(),
                "README: the table is ARCHITECTURE.md's"
            );
        }
        faults.extend(
            split_point_faults(&text, &code)
                .into_iter()
                .map(|f| format!("{doc}: {f}")),
        );
    }
    assert!(faults.is_empty(), "{}", faults.join("\n"));
    assert!(!table_rows(&read("ARCHITECTURE.md"), "split point").is_empty());
}

#[test]
fn the_split_point_check_can_fail() {
    let code = |files: &[(&str, &str)]| -> Vec<(String, String)> {
        files
            .iter()
            .map(|(f, t)| (f.to_string(), t.to_string()))
            .collect()
    };
    let src = code(&[
        ("a.rs", "#[cfg_attr(feature = \"split\", wasm_split_helpers::wasm_split(one, fallible))]\nfn f() {}"),
        ("b.rs", "// `#[wasm_split(name)]` in a comment is none\n#[wasm_split(two)]\nfn g() {}"),
    ]);
    let doc = "| split point | where |\n| --- | --- |\n| `one` | `a.rs` |\n| `two` | `b.rs` |\n\nAt split point `two`.\n";
    assert_eq!(split_point_faults(doc, &src), Vec::<String>::new());
    let planted = "| split point | where |\n| --- | --- |\n| `one` | `b.rs` |\n| `gone` | `a.rs` |\n\nAt split point `nope`.\n";
    assert_eq!(
        split_point_faults(planted, &src),
        [
            "split point `one`: `b.rs` does not split there",
            "split point `gone` is in no `wasm_split(` of src/",
            "split point `gone`: `a.rs` does not split there",
            "split point `two` of src/ is not in the table",
            "split point `nope` is in no `wasm_split(` of src/",
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Testids.

/// The testids of `doc`'s "UI contract" table that `ui` (the source text) does not write.
fn testid_faults(doc: &str, ui: &str) -> Vec<String> {
    let rows = table_rows(&section(doc, "UI contract"), "testid");
    if rows.is_empty() {
        return vec!["no UI contract table".into()];
    }
    let mut out = Vec::new();
    for row in rows {
        for id in ticked(&outside_parentheses(&row[0])) {
            let written =
                ui.contains(&format!("\"{id}\"")) || ui.contains(&format!("\\\"{id}\\\""));
            if !written {
                out.push(format!("testid `{id}` is in no source"));
            }
        }
    }
    out
}

#[test]
fn the_testids_the_docs_name_are_in_the_ui() {
    let mut ui: String = rust_files(&root().join("src"))
        .into_iter()
        .map(|(_, t)| t)
        .collect();
    ui.push_str(&read("www/index.html"));
    let faults = testid_faults(&read("ARCHITECTURE.md"), &ui);
    assert!(faults.is_empty(), "ARCHITECTURE.md: {}", faults.join("\n"));
}

#[test]
fn the_testid_check_can_fail() {
    let doc = "## UI contract\n\n| testid | element |\n| --- | --- |\n\
               | `send-button`, `gone-button` (+ `data-role`) | composer |\n\
               | `list` (a `<details>`) | list |\n\n## Next\n\n| testid | x |\n| `after` | y |\n";
    let ui = "view! { <button data-testid=\"send-button\"/> } const L: &str = \"[data-testid=\\\"list\\\"]\";";
    assert_eq!(
        testid_faults(doc, ui),
        ["testid `gone-button` is in no source"]
    );
    assert_eq!(
        testid_faults("## UI contract\n\nnone\n", ui),
        ["no UI contract table"]
    );
}

// ---------------------------------------------------------------------------------------------
// Figures.

/// The figures of `benches/figures.txt`'s text.
fn figures_listed(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

const UNITS: [&str; 6] = ["_ms", "_us", "_per_s", "_ratio", "_brotli", "_rate"];

/// Whether a backticked `word` is a figure's name (see the header): not a bench's.
fn looks_like_figure(word: &str, listed: &BTreeSet<String>, benches: &BTreeSet<String>) -> bool {
    let shaped = word.contains('_')
        && word.starts_with(|c: char| c.is_ascii_lowercase())
        && word
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "_{},*".contains(c));
    let two = |w: &str| w.splitn(3, '_').take(2).collect::<Vec<_>>().join("_");
    shaped
        && !benches.contains(word)
        && (UNITS.iter().any(|u| word.ends_with(u)) || listed.iter().any(|f| two(f) == two(word)))
}

/// `a_{b,c}_d` -> `a_b_d`, `a_c_d`.
fn expand(word: &str) -> Vec<String> {
    match (word.find('{'), word.find('}')) {
        (Some(open), Some(close)) if open < close => word[open + 1..close]
            .split(',')
            .flat_map(|alt| expand(&format!("{}{alt}{}", &word[..open], &word[close + 1..])))
            .collect(),
        _ => vec![word.to_string()],
    }
}

/// What is wrong with the figures `docs` (name, text) name, against `listed`: a figure named and
/// not listed, and, in the README, a listed figure its figure table leaves out.
fn figure_faults(
    docs: &[(&str, &str)],
    listed: &BTreeSet<String>,
    benches: &BTreeSet<String>,
) -> Vec<String> {
    let mut out = Vec::new();
    for (name, text) in docs {
        let mut named = BTreeSet::new();
        for word in ticked(text)
            .iter()
            .filter(|w| looks_like_figure(w, listed, benches))
        {
            for figure in expand(word) {
                let known = match figure.strip_suffix('*') {
                    Some(stem) => listed.iter().any(|f| f.starts_with(stem)),
                    None => listed.contains(&figure),
                };
                if !known && named.insert(figure.clone()) {
                    out.push(format!("{name}: `{figure}` is not in benches/figures.txt"));
                }
            }
        }
        if *name != "README.md" {
            continue;
        }
        let in_table: Vec<String> = table_rows(text, "figure")
            .iter()
            .flat_map(|row| ticked(&row[0]))
            .flat_map(|w| expand(&w))
            .collect();
        for figure in listed {
            let shown = in_table.iter().any(|w| match w.strip_suffix('*') {
                Some(stem) => figure.starts_with(stem),
                None => w == figure,
            });
            if !shown {
                out.push(format!("{name}: the figure table lacks `{figure}`"));
            }
        }
    }
    out
}

fn bench_names() -> BTreeSet<String> {
    fs::read_dir(root().join("benches"))
        .unwrap()
        .filter_map(|e| {
            let path = e.unwrap().path();
            let stem = path.file_stem()?.to_string_lossy().into_owned();
            path.extension().is_some_and(|x| x == "rs").then_some(stem)
        })
        .collect()
}

#[test]
fn the_figures_the_docs_name_are_the_benches() {
    let listed = figures_listed(&read("benches/figures.txt"));
    assert!(listed.len() > 50, "{listed:?}");
    let (readme, architecture) = (read("README.md"), read("ARCHITECTURE.md"));
    let docs = [
        ("README.md", readme.as_str()),
        ("ARCHITECTURE.md", architecture.as_str()),
    ];
    let faults = figure_faults(&docs, &listed, &bench_names());
    assert!(faults.is_empty(), "{}", faults.join("\n"));
}

#[test]
fn the_figure_check_can_fail() {
    let listed = figures_listed("# a comment\nopen_app_ms  tests/e2e/x.mjs\nmemory_eval_x benches/m.rs\n\
                                 memory_eval_answer_y benches/m.rs optional\nsize_brotli scripts/bench.sh\n");
    let benches: BTreeSet<String> = ["memory_eval".to_string()].into();
    let readme = "| figure | what |\n| --- | --- |\n| `open_app_ms`, `memory_eval_{x,answer_*}`, `size_brotli` | a |\n\n\
                  `size_brotli` in prose; `memory_eval` is a bench; `covers_up_to_seq` is no figure.\n";
    assert_eq!(
        figure_faults(&[("README.md", readme)], &listed, &benches),
        Vec::<String>::new()
    );
    let planted = "| figure | what |\n| --- | --- |\n| `open_app_ms`, `memory_eval_z` | a |\n\n\
                   `size_brotli`, `gone_ratio`, `memory_eval_{x,w}`, `other_*_ms`.\n";
    assert_eq!(
        figure_faults(
            &[("README.md", planted), ("ARCHITECTURE.md", "`open_ap_ms`")],
            &listed,
            &benches
        ),
        [
            "README.md: `memory_eval_z` is not in benches/figures.txt",
            "README.md: `gone_ratio` is not in benches/figures.txt",
            "README.md: `memory_eval_w` is not in benches/figures.txt",
            "README.md: `other_*_ms` is not in benches/figures.txt",
            "README.md: the figure table lacks `memory_eval_answer_y`",
            "README.md: the figure table lacks `memory_eval_x`",
            "README.md: the figure table lacks `size_brotli`",
            "ARCHITECTURE.md: `open_ap_ms` is not in benches/figures.txt",
        ]
    );
}

/// The most lines the README may have.
const README_MAX_LINES: usize = 500;

/// What makes `readme` a lab notebook rather than a README (module doc, item 4), one line each.
fn readme_faults(readme: &str) -> Vec<String> {
    let mut out = Vec::new();
    let lines = readme.lines().count();
    if lines > README_MAX_LINES {
        out.push(format!("{lines} lines, more than {README_MAX_LINES}"));
    }
    for (i, line) in readme.lines().enumerate() {
        let words: Vec<&str> = line
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .filter(|w| !w.is_empty())
            .collect();
        let lower = line.to_ascii_lowercase();
        let branch = words.iter().any(|w| {
            let b = w.as_bytes();
            b.len() > 4
                && b[0] == b's'
                && b[1].is_ascii_digit()
                && b[2].is_ascii_digit()
                && b[3] == b'-'
        });
        let hash = words.iter().any(|w| {
            (7..=40).contains(&w.len())
                && w.bytes()
                    .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
                && w.bytes().any(|c| c.is_ascii_digit())
                && w.bytes().any(|c| c.is_ascii_alphabetic())
        });
        let numbered = |word: &str| {
            lower
                .match_indices(word)
                .any(|(at, _)| lower[at + word.len()..].starts_with(|c: char| c.is_ascii_digit()))
        };
        for (found, what) in [
            (branch, "a branch name"),
            (hash, "a commit hash"),
            (numbered("session "), "a session's number"),
            (numbered("load "), "a machine's load"),
        ] {
            if found {
                out.push(format!("line {}: {what}", i + 1));
            }
        }
    }
    out
}

#[test]
fn the_readme_is_short_and_keeps_no_lab_notes() {
    assert_eq!(readme_faults(&read("README.md")), Vec::<String>::new());
}

#[test]
fn the_readme_check_can_fail() {
    let planted = "Measured in session 20 on s20-keys at load 5-6, commit 3d4d4dd.\n";
    assert_eq!(
        readme_faults(planted),
        vec![
            "line 1: a branch name",
            "line 1: a commit hash",
            "line 1: a session's number",
            "line 1: a machine's load",
        ]
    );
    let long = "a line\n".repeat(README_MAX_LINES + 1);
    assert_eq!(readme_faults(&long), vec!["501 lines, more than 500"]);
}
