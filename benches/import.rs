//! Backup import benchmark (native, median of several runs, deterministic input): the engine's part of
//! importing the app benchmark's file (tests/e2e/bench/app.bench.mjs: one conversation of 10,000
//! ~200-character messages, ~2.8 MB).
//! - `check_import_10k_ms`: [`check_import`] (UTF-8, depth scan, one parse, every check).
//! - `plan_import_10k_ms`: [`CheckedImport::plan`] against an empty store.
use std::hint::black_box;
use std::time::Instant;

use memoire::engine::backup::{check_import, ExistingIds, ImportLimits};

const N: usize = 10_000;
const RUNS: usize = 21;

/// The same file as the app benchmark's `backupFile`.
fn backup_file(conv: &str, n: usize) -> String {
    let t0: i64 = 1_700_000_000_000;
    let mut messages = Vec::with_capacity(n);
    for i in 0..n {
        let content = format!(
            "Message {i}: the **quick** brown fox jumps over the lazy dog while Memoire keeps every word, \
             and the agent answers with a `code span`, a [link](https://example.org/{i}) and a little more text."
        );
        messages.push(format!(
            r#"{{"id":"{conv}-m{i}","conversation_id":"{conv}","seq":{},"role":"{}","content":{},"status":"complete","created_at":{},"tool_calls":[],"usage":null,"error":null,"path":null,"model":null}}"#,
            i + 1,
            if i % 2 == 1 { "assistant" } else { "user" },
            serde_json::to_string(&content).unwrap(),
            t0 + i as i64 * 1000,
        ));
    }
    format!(
        r#"{{"format":"memoire-backup","version":1,"exported_at":{},"conversations":[{{"conversation":{{"id":"{conv}","title":"Bench {conv}","title_is_custom":true,"created_at":{t0},"updated_at":{},"message_count":{n},"endpoint_profile_id":null,"remote_handle":null,"last_path":null,"memory_overrides":{{"recent_messages":null,"summary_every_pairs":null,"context_tokens":null,"reply_reserve_tokens":null,"max_message_chars":null,"history_format":null}}}},"messages":[{}],"summaries":[],"entities":[]}}],"shared_entities":[]}}"#,
        t0 + n as i64 * 1000,
        t0 + n as i64 * 1000,
        messages.join(",")
    )
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let file = backup_file("bench-10k", N);
    let limits = ImportLimits::default();
    let existing = ExistingIds::default();
    let mut check = Vec::with_capacity(RUNS);
    let mut plan = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let t = Instant::now();
        let checked =
            check_import(black_box(file.as_bytes()), &limits).expect("the bench file is valid");
        check.push(t.elapsed().as_secs_f64() * 1000.0);
        let t = Instant::now();
        let p = checked.plan(&existing).expect("nothing is stored");
        plan.push(t.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(black_box(p).messages.len(), N);
    }
    eprintln!("file: {} bytes", file.len());
    println!("bench check_import_10k_ms {:.2} ms", median(check));
    println!("bench plan_import_10k_ms {:.2} ms", median(plan));
}
