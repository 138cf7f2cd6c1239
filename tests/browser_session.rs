#![cfg(target_arch = "wasm32")]
//! Browser tests of the session layer (src/session/): a real `Session` over a fresh database, talking
//! to the local agent endpoint (tests/e2e/agent-server.mjs, started with a control server by
//! tests/support/agent-endpoint.mjs; scripts/test.sh passes both URLs to this build). Each test has a
//! database and a model name of its own (unique per run); a scripted reply answers only its model.
//!
//! What they check: a turn streams into the stored reply; a held save is written on its deadline
//! while no chunk arrives; reading a reply leaves no timer behind; stop keeps the partial reply; a
//! memory update goes through the same pump; a draft saved again unchanged writes nothing.

use memoire::engine::model::{MessageStatus, Protocol, Role, TurnPath};
use memoire::engine::tabs::Change;
use memoire::session::{EventSink, Session, SessionEvent};
use serde_json::{json, Value};
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

mod support;
use support::fresh_name;

wasm_bindgen_test_configure!(run_in_browser);

const AGENT: Option<&str> = option_env!("MEMOIRE_TEST_AGENT");
const CONTROL: Option<&str> = option_env!("MEMOIRE_TEST_AGENT_CONTROL");

fn url(of: Option<&'static str>) -> &'static str {
    of.expect(
        "no local agent endpoint: run `scripts/test.sh browser`, or start \
         `node tests/support/agent-endpoint.mjs` and export the two variables it prints before \
         `cargo test --target wasm32-unknown-unknown --test browser_session`",
    )
}

#[wasm_bindgen(inline_js = "
export function live_timers() {
  if (!globalThis.__memoireTimers) {
    const live = new Set();
    const set = globalThis.setTimeout, clear = globalThis.clearTimeout;
    globalThis.setTimeout = function (f, ms, ...args) {
      const id = set.call(globalThis, (...a) => { live.delete(id); if (typeof f === 'function') f(...a); }, ms, ...args);
      live.add(id);
      return id;
    };
    globalThis.clearTimeout = function (id) { live.delete(id); return clear.call(globalThis, id); };
    globalThis.__memoireTimers = live;
  }
  return globalThis.__memoireTimers.size;
}")]
extern "C" {
    /// Timers set since the first call that have neither fired nor been cleared.
    fn live_timers() -> u32;
}

#[wasm_bindgen(inline_js = "
export function settings_writes() {
  if (!globalThis.__memoireSettingsWrites) {
    globalThis.__memoireSettingsWrites = { n: 0 };
    const tx = IDBDatabase.prototype.transaction;
    IDBDatabase.prototype.transaction = function (stores, mode, ...rest) {
      if (mode === 'readwrite' && [].concat(stores).includes('settings')) globalThis.__memoireSettingsWrites.n += 1;
      return tx.call(this, stores, mode, ...rest);
    };
  }
  return globalThis.__memoireSettingsWrites.n;
}")]
extern "C" {
    /// Readwrite transactions over the `settings` store since the first call.
    fn settings_writes() -> u32;
}

async fn sleep(ms: u32) {
    gloo_timers::future::TimeoutFuture::new(ms).await;
}

/// A request to the control server; its JSON answer.
async fn control(method: &str, path: &str, body: Option<Value>) -> Value {
    let init = web_sys::RequestInit::new();
    init.set_method(method);
    if let Some(b) = body {
        init.set_body(&JsValue::from_str(&b.to_string()));
    }
    let window = web_sys::window().unwrap();
    let url = format!("{}{path}", url(CONTROL));
    let resp: web_sys::Response = JsFuture::from(window.fetch_with_str_and_init(&url, &init))
        .await
        .expect("the control server answers")
        .unchecked_into();
    let text = JsFuture::from(resp.text().unwrap()).await.unwrap();
    serde_json::from_str(&text.as_string().unwrap()).unwrap()
}

/// One session over a fresh database, pointed at the agent with its own model name, and every event
/// it reported with the time it came.
struct Harness {
    session: Rc<Session>,
    events: Rc<RefCell<Vec<(f64, SessionEvent)>>>,
    model: String,
}

impl Harness {
    /// `model` names the test; a run's model is unique (the endpoint outlives runs).
    async fn new(model: &str, every_pairs: usize) -> Harness {
        let model = fresh_name(model);
        let events: Rc<RefCell<Vec<(f64, SessionEvent)>>> = Rc::default();
        let log = events.clone();
        let sink: EventSink = Rc::new(move |e| log.borrow_mut().push((js_sys::Date::now(), e)));
        let session = Session::open(&fresh_name("session"), sink).await.unwrap();
        let mut s = session.preferences().current();
        s.endpoint.base_url = format!("{}/v1", url(AGENT));
        s.endpoint.protocol = Protocol::OpenAiChat;
        s.endpoint.model = model.clone();
        s.memory.summary_every_pairs = every_pairs;
        session.preferences().save_settings(s).await.unwrap();
        Harness {
            session,
            events,
            model,
        }
    }

    /// Queues replies for this harness's model.
    async fn script(&self, replies: Value, memory: bool) {
        let replies: Vec<Value> = replies
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let mut r = r.clone();
                r["model"] = json!(self.model);
                r
            })
            .collect();
        control(
            "POST",
            "/script",
            Some(json!({ "replies": replies, "memory": memory })),
        )
        .await;
    }

    /// The streaming saves of the reply reported so far: (time, content).
    fn progress(&self) -> Vec<(f64, String, MessageStatus)> {
        self.events
            .borrow()
            .iter()
            .filter_map(|(t, e)| match e {
                SessionEvent::Shared(Change::MessageProgress(m)) if m.role == Role::Assistant => {
                    Some((*t, m.content.clone(), m.status))
                }
                _ => None,
            })
            .collect()
    }

    /// A new conversation, `text` sent in it; the conversation's id.
    async fn chat(&self, text: &str) -> String {
        let c = self
            .session
            .library()
            .create_conversation(Default::default())
            .await
            .unwrap();
        self.session.chat().send(&c.id, text.into()).await.unwrap();
        c.id
    }
}

#[wasm_bindgen_test]
async fn a_turn_stores_the_streamed_reply() {
    let h = Harness::new("session-turn", 100).await;
    h.script(json!([{ "text": "Hello from the scripted agent." }]), false)
        .await;
    let id = h.chat("hi").await;
    let page = h
        .session
        .library()
        .load_page(&id, None, 10, None)
        .await
        .unwrap();
    let m = &page.messages;
    assert_eq!(m.len(), 2, "{m:?}");
    assert_eq!((m[0].role, m[0].content.as_str()), (Role::User, "hi"));
    assert_eq!(m[1].content, "Hello from the scripted agent.");
    assert_eq!(m[1].status, MessageStatus::Complete);
    assert_eq!(m[1].meta.path, Some(TurnPath::Fresh));
    let last = h.progress().pop().unwrap();
    assert_eq!(
        (last.1.as_str(), last.2),
        (m[1].content.as_str(), MessageStatus::Complete)
    );
}

#[wasm_bindgen_test]
async fn a_held_save_is_written_on_its_deadline_while_no_chunk_arrives() {
    let h = Harness::new("session-held-save", 100).await;
    // "one " is saved at once; "two " comes within the second and is held; then nothing for 2.5 s.
    h.script(
        json!([{ "chunks": ["one ", "two ", "three"], "stall": { "after": 2, "ms": 2500 } }]),
        false,
    )
    .await;
    h.chat("count").await;
    let progress = h.progress();
    let held = progress
        .iter()
        .find(|p| p.1 == "one two ")
        .unwrap_or_else(|| panic!("the held save was never written alone: {progress:?}"));
    assert_eq!(held.2, MessageStatus::Streaming);
    let last = progress.last().unwrap();
    assert_eq!(
        (last.1.as_str(), last.2),
        ("one two three", MessageStatus::Complete)
    );
    assert!(
        last.0 - held.0 >= 1000.0,
        "the held save waited for the next chunk: written {} ms before the end",
        last.0 - held.0
    );
}

#[wasm_bindgen_test]
async fn reading_a_reply_leaves_no_timer_behind() {
    let h = Harness::new("session-timers", 100).await;
    let text = "abcdefghij".repeat(6);
    h.script(
        json!([{ "text": text, "chunkSize": 1, "delayMs": 5 }]),
        false,
    )
    .await;
    let before = live_timers();
    let id = h.chat("stream slowly").await;
    // The tab channel's coalescing timer (40 ms) fires by then.
    sleep(200).await;
    let left = live_timers() - before;
    let page = h
        .session
        .library()
        .load_page(&id, None, 10, None)
        .await
        .unwrap();
    assert_eq!(page.messages[1].content, text, "every chunk was read");
    assert_eq!(left, 0, "timers left behind after a 60-chunk reply");
}

#[wasm_bindgen_test]
async fn stop_keeps_the_partial_reply() {
    let h = Harness::new("session-stop", 100).await;
    h.script(
        json!([{ "chunks": ["partial ", "never sent"], "stall": { "after": 1, "ms": 10000 } }]),
        false,
    )
    .await;
    let c = h
        .session
        .library()
        .create_conversation(Default::default())
        .await
        .unwrap();
    let done: Rc<RefCell<Option<bool>>> = Rc::default();
    let (session, id, slot) = (h.session.clone(), c.id.clone(), done.clone());
    wasm_bindgen_futures::spawn_local(async move {
        let r = session.chat().send(&id, "go".into()).await;
        *slot.borrow_mut() = Some(r.is_ok());
    });
    for _ in 0..100 {
        if h.progress().iter().any(|p| p.1 == "partial ") {
            break;
        }
        sleep(50).await;
    }
    h.session.chat().stop(&c.id);
    for _ in 0..100 {
        if done.borrow().is_some() {
            break;
        }
        sleep(50).await;
    }
    assert_eq!(
        *done.borrow(),
        Some(true),
        "send ends, without an error, once stopped"
    );
    let page = h
        .session
        .library()
        .load_page(&c.id, None, 10, None)
        .await
        .unwrap();
    let reply = &page.messages[1];
    assert_eq!(
        (reply.content.as_str(), reply.status),
        ("partial ", MessageStatus::Interrupted)
    );
}

#[wasm_bindgen_test]
async fn a_memory_update_runs_through_the_same_pump() {
    let h = Harness::new("session-memory", 1).await;
    h.script(json!([{ "text": "Noted, Ada." }]), false).await;
    let summary = "=== CONVERSATION MEMORY ===\nThe user is Ada, a mathematician.\n=== ENTITY MEMORY ===\n[]\n";
    h.script(json!([{ "text": summary, "chunkSize": 7 }]), true)
        .await;
    let id = h.chat("I am Ada, a mathematician.").await;
    let mut versions = vec![];
    for _ in 0..200 {
        versions = h.session.memory().snapshot(&id).await.unwrap().versions;
        if !versions.is_empty() {
            break;
        }
        sleep(50).await;
    }
    assert_eq!(versions.len(), 1, "one summary version after the update");
    assert!(
        versions[0].text.contains("Ada, a mathematician"),
        "{:?}",
        versions[0].text
    );
    let requests = control("GET", "/requests", None).await;
    let memory = requests
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["model"] == json!(h.model) && r["kind"] == json!("memory"))
        .count();
    assert_eq!(memory, 1);
}

/// A draft saved again unchanged (the composer's pause, the page hidden) writes nothing; a changed
/// one is written, and reads back.
#[wasm_bindgen_test]
async fn a_draft_saved_unchanged_writes_nothing() {
    let events: EventSink = Rc::new(|_| {});
    let session = Session::open(&fresh_name("drafts"), events).await.unwrap();
    let chat = session.chat();
    assert_eq!(chat.draft("c-1").await.unwrap(), "");
    let start = settings_writes();
    let check = |text: &'static str, writes: u32| {
        let chat = chat.clone();
        async move {
            chat.set_draft("c-1", text).await.unwrap();
            assert_eq!(settings_writes() - start, writes, "after saving {text:?}");
            assert_eq!(chat.draft("c-1").await.unwrap(), text);
        }
    };
    check("", 0).await;
    check("hello", 1).await;
    check("hello", 1).await;
    check("hello again", 2).await;
    check("", 3).await;
    check("", 3).await;
    // A conversation deleted: its draft is deleted whatever this tab last knew of it.
    chat.drop_draft("c-1").await.unwrap();
    assert_eq!(
        settings_writes() - start,
        4,
        "the draft of a deleted conversation"
    );
}
