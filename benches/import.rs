//! Backup import benchmark (native, median of several runs, deterministic input): the engine's part of
//! importing the app benchmark's file (tests/e2e/bench/app.bench.mjs: one conversation of 10,000
//! ~200-character messages, ~2.8 MB).
//! - `check_import_10k_ms`: [`check_import`] (UTF-8, depth scan, one parse, every check).
//! - `plan_import_10k_ms`: [`CheckedImport::plan`] against an empty store.
//! - `read_chatgpt_10k_ms`: a generated ChatGPT `conversations.json` (10 conversations of 1,000
//!   ~200-character messages, each with a regenerated answer on a branch not shown), detected, read
//!   (`engine::import::detect`) and converted and checked (`to_checked`): the engine's part of
//!   `import_chatgpt_10k_msgs_ms`.
use std::hint::black_box;
use std::time::Instant;

use memoire::engine::backup::{check_import, ExistingIds, ImportLimits};
use memoire::engine::import::{detect, to_checked, Detected};

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

/// ChatGPT's export shape: per conversation a `mapping` chain with one abandoned answer per user
/// message, and `current_node` at the end of the chain.
fn chatgpt_file(conversations: usize, per: usize) -> String {
    let mut out = Vec::with_capacity(conversations);
    for c in 0..conversations {
        let mut mapping = serde_json::Map::new();
        mapping.insert(
            "root".into(),
            serde_json::json!({"id": "root", "message": null, "parent": null, "children": ["m0"]}),
        );
        let mut parent = "root".to_string();
        for i in 0..per {
            let id = format!("m{i}");
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            let text = format!(
                "Message {i}: the quick brown fox jumps over the lazy dog while Memoire keeps every \
                 word, and the agent answers with a little more text to reach two hundred chars."
            );
            let node = |id: &str, parent: &str, text: &str| {
                serde_json::json!({"id": id, "parent": parent, "children": [], "message": {
                    "id": id, "author": {"role": role, "metadata": {}},
                    "create_time": 1_700_000_000.0 + i as f64,
                    "content": {"content_type": "text", "parts": [text]},
                    "metadata": {}, "recipient": "all", "status": "finished_successfully"}})
            };
            mapping.insert(id.clone(), node(&id, &parent, &text));
            if role == "assistant" {
                let alt = format!("{id}-alt");
                mapping.insert(alt.clone(), node(&alt, &parent, "An abandoned answer."));
            }
            parent = id;
        }
        out.push(
            serde_json::json!({"title": format!("Bench {c}"), "create_time": 1_700_000_000.0,
            "update_time": 1_700_001_000.0, "mapping": mapping, "current_node": parent,
            "conversation_id": format!("bench-{c}"), "id": format!("bench-{c}")}),
        );
    }
    serde_json::Value::Array(out).to_string()
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

    let chatgpt = chatgpt_file(10, N / 10);
    let mut read = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let t = Instant::now();
        let Ok(Detected::Foreign(i)) = detect(black_box(chatgpt.as_bytes()), &limits) else {
            panic!("the ChatGPT bench file is read")
        };
        let checked = to_checked(&i, 1_700_000_000_000, &limits).expect("it passes the checks");
        read.push(t.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(black_box(checked).counts(), (10, N));
    }
    eprintln!("chatgpt file: {} bytes", chatgpt.len());
    println!("bench read_chatgpt_10k_ms {:.2} ms", median(read));
}
