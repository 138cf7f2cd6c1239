#![cfg(all(target_arch = "wasm32", feature = "bench"))]
//! Browser benchmarks of the store against plain JavaScript IndexedDB code doing the same work on the
//! same schema in the same page, writing the same records (the store's bulk shape) with the same call
//! (`add`, one transaction, default durability). The import figure times what the app's import
//! (`session/import.rs`) asks of the store for a checked file: `existing_ids_for`, then the plan,
//! then `write_import`. Run: `make bench` (or `WASM_BINDGEN_TEST_TIMEOUT=1800 cargo test --profile
//! browser-bench --target wasm32-unknown-unknown --features bench --test browser_bench_store --
//! --nocapture`: the six imports of 100,000 messages take minutes, far over the runner's default
//! limit and the test layer's 180 s). Each figure is the median of several
//! runs and printed as `bench <name> <value> <unit>`.

use memoire::engine::backup::{CheckedImport, ConversationBundle, ImportLimits};
use memoire::engine::model::*;
use memoire::store::Store;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen(inline_js = r#"
function openDb(name) {
  return new Promise((res, rej) => {
    const r = indexedDB.open(name);
    r.onsuccess = () => res(r.result);
    r.onerror = () => rej(r.error);
  });
}
export async function js_import(name, conv, n, content, termsJson) {
  const terms = JSON.parse(termsJson);
  const db = await openDb(name);
  const t0 = performance.now();
  await new Promise((res, rej) => {
    const tx = db.transaction(["messages"], "readwrite");
    const store = tx.objectStore("messages");
    for (let i = 0; i < n; i++) {
      // The record the store writes on its bulk path (slim: absent fields are left out, the search
      // terms under the multiEntry `by_term` index), with `add`.
      store.add({
        id: conv + "-" + i, conversation_id: conv, seq: i + 1,
        role: i % 2 ? "assistant" : "user", content: content, status: "complete",
        created_at: 1700000000000 + i, terms,
      });
    }
    tx.oncomplete = res;
    tx.onabort = () => rej(tx.error);
  });
  const ms = performance.now() - t0;
  db.close();
  return ms;
}
export async function js_load_last(name, conv, k) {
  const db = await openDb(name);
  const t0 = performance.now();
  const out = await new Promise((res, rej) => {
    const tx = db.transaction(["messages"], "readonly");
    const idx = tx.objectStore("messages").index("by_conversation_seq");
    const req = idx.openCursor(IDBKeyRange.bound([conv], [conv, []]), "prev");
    const got = [];
    req.onsuccess = () => {
      const c = req.result;
      if (c && got.length < k) { got.push(c.value); if (got.length < k) { c.continue(); return; } }
      res(got.reverse());
    };
    req.onerror = () => rej(req.error);
  });
  const ms = performance.now() - t0;
  db.close();
  if (out.length !== k) throw new Error("js_load_last read " + out.length);
  return ms;
}
"#)]
extern "C" {
    #[wasm_bindgen(catch)]
    async fn js_import(
        name: &str,
        conv: &str,
        n: u32,
        content: &str,
        terms_json: &str,
    ) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(catch)]
    async fn js_load_last(name: &str, conv: &str, k: u32) -> Result<JsValue, JsValue>;
}

fn now() -> f64 {
    js_sys::Reflect::get(&js_sys::global(), &"performance".into())
        .ok()
        .and_then(|p| p.dyn_into::<web_sys::Performance>().ok())
        .map(|p| p.now())
        .unwrap_or_else(js_sys::Date::now)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// ~200 bytes of text, deterministic.
fn content() -> String {
    let base = "The quick brown fox jumps over the lazy dog while Memoire keeps every word. ";
    base.repeat(3)[..200].to_string()
}

fn conversation(id: &str) -> Conversation {
    Conversation {
        id: id.into(),
        title: id.into(),
        title_is_custom: false,
        created_at: 0,
        updated_at: 0,
        message_count: 0,
        endpoint_profile_id: None,
        remote_handle: None,
        last_path: None,
        memory_overrides: MemoryOverrides::default(),
    }
}

fn messages(conv: &str, n: usize) -> Vec<Message> {
    let text = content();
    (0..n)
        .map(|i| Message {
            id: format!("{conv}-{i}"),
            conversation_id: conv.into(),
            seq: i as u64 + 1,
            role: if i % 2 == 1 {
                Role::Assistant
            } else {
                Role::User
            },
            content: text.clone(),
            status: MessageStatus::Complete,
            created_at: 1_700_000_000_000 + i as i64,
            meta: MessageMeta::default(),
        })
        .collect()
}

/// One conversation of `n` messages, checked as the app checks another app's export.
fn checked(conv: &str, n: usize) -> CheckedImport {
    let bundle = ConversationBundle {
        conversation: conversation(conv),
        messages: messages(conv, n),
        summaries: Vec::new(),
        entities: Vec::new(),
    };
    CheckedImport::from_bundles(&[bundle], 0, &ImportLimits::default()).unwrap()
}

/// What the app's import does with a checked file (`session/import.rs`): look up what is stored,
/// plan, write in one transaction. Returns the messages added.
async fn import(s: &Store, checked: CheckedImport) -> usize {
    let existing = s.existing_ids_for(&checked).await.unwrap();
    let plan = checked.plan(&existing).unwrap();
    s.write_import(&plan).await.unwrap();
    plan.added.messages
}

fn db_name(tag: &str, run: usize) -> String {
    format!("memoire-bench-{tag}-{run}-{}", js_sys::Date::now() as u64)
}

const N: usize = 100_000;
const RUNS: usize = 3;

#[wasm_bindgen_test]
async fn bench_store_import_and_load() {
    let mut store_rates = Vec::new();
    let mut js_rates = Vec::new();
    for run in 0..RUNS {
        // Store: bulk import of 100k messages into a fresh database.
        let name = db_name("import", run);
        let s = Store::open(&name).await.unwrap();
        let checked = checked("c", N);
        let t0 = now();
        let inserted = import(&s, checked).await;
        let ms = now() - t0;
        assert_eq!(inserted, N);
        store_rates.push(N as f64 / (ms / 1000.0));
        s.close();
        Store::delete_database(&name).await.unwrap();

        // Plain JS: the same records into the same schema, one transaction.
        let name = db_name("import-js", run);
        Store::open(&name).await.unwrap().close();
        let terms =
            serde_json::to_string(&memoire::engine::search::index_terms(&content())).unwrap();
        let ms = js_import(&name, "c", N as u32, &content(), &terms)
            .await
            .unwrap()
            .as_f64()
            .unwrap();
        js_rates.push(N as f64 / (ms / 1000.0));
        Store::delete_database(&name).await.unwrap();
    }
    let store_rate = median(store_rates);
    let js_rate = median(js_rates);
    console_log!("bench import_100k_msgs_per_s {:.0} msgs/s", store_rate);
    console_log!(
        "bench plain_js_import_100k_msgs_per_s {:.0} msgs/s",
        js_rate
    );

    // Load the last 50 of 10k messages.
    let name = db_name("load", 0);
    let s = Store::open(&name).await.unwrap();
    assert_eq!(import(&s, checked("c", 10_000)).await, 10_000);
    let mut store_ms = Vec::new();
    let mut js_ms = Vec::new();
    for _ in 0..21 {
        let t0 = now();
        let got = s.load_last("c", 50).await.unwrap();
        store_ms.push(now() - t0);
        assert_eq!(got.len(), 50);
        assert_eq!(got[49].seq, 10_000);
    }
    let store_load = median(store_ms.clone());
    for _ in 0..21 {
        js_ms.push(
            js_load_last(&name, "c", 50)
                .await
                .unwrap()
                .as_f64()
                .unwrap(),
        );
    }
    let js_load = median(js_ms);
    console_log!("bench load_last_50_of_10k_ms {:.2} ms", store_load);
    console_log!("bench plain_js_load_last_50_of_10k_ms {:.2} ms", js_load);
    console_log!(
        "bench store_vs_plain_js_ratio {:.2} ratio",
        store_rate / js_rate
    );
    console_log!(
        "bench store_vs_plain_js_load_ratio {:.2} ratio",
        js_load / store_load
    );
    s.close();
    Store::delete_database(&name).await.unwrap();
}
