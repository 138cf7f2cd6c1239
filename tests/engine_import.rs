#![cfg(not(target_arch = "wasm32"))]
//! Importing other apps' exports: one fixture per source (tests/fixtures/import/, written from each
//! app's export shape) read through content detection, with the shown branch exact and nothing hidden,
//! abandoned, failed or secret let through; re-imports that add nothing or only what is new; ZIPs
//! (and ZIP bombs); a hostile-input corpus where each case names its error; property tests that the
//! readers never panic and always return messages in order.

use memoire::engine::backup::{ExistingIds, ExistingMessage, ImportLimits, ImportPlan};
use memoire::engine::import::slice::{
    prepare_all, prepare_whole, ItemScan, Pace, Phase, Prepare, Prepared, ScanState,
};
use memoire::engine::import::{
    conversation_id, describe, detect, to_bundles, to_checked, zip, Detected, ImportError,
    Imported, Source,
};
use memoire::engine::model::Role;
use proptest::prelude::*;
use serde_json::{json, Value};

const NOW: i64 = 1_763_700_000_000;

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!(
        "{}/tests/fixtures/import/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap_or_else(|e| panic!("fixture {name}: {e}"))
}

fn foreign(bytes: &[u8]) -> Imported {
    match detect(bytes, &ImportLimits::default()) {
        Ok(Detected::Foreign(i)) => i,
        Ok(Detected::Backup(_)) => panic!("read as a Memoire backup"),
        Err(e) => panic!("not imported: {e}"),
    }
}

/// A message as `u: text`, `a: text` or `s: text` (system).
fn line(role: Role, content: &str) -> String {
    let r = match role {
        Role::User => "u",
        Role::Assistant => "a",
        Role::System => "s",
        Role::Tool => "t",
    };
    format!("{r}: {content}")
}

/// The stored form of conversation `n`: title, then its own system prompt as `s: text` (kept as
/// the conversation's prompt, never as a stored message) and every message in seq order.
fn stored(i: &Imported, n: usize) -> (String, Vec<String>) {
    let b = &to_bundles(i, NOW)[n];
    let mut seqs: Vec<u64> = b.messages.iter().map(|m| m.seq).collect();
    seqs.dedup();
    assert_eq!(seqs, (0..b.messages.len() as u64).collect::<Vec<_>>());
    assert!(
        b.messages.iter().all(|m| m.role != Role::System),
        "an imported system prompt is the conversation's own, not a stored message"
    );
    let prompt = b.conversation.memory_overrides.system_prompt.as_deref();
    (
        b.conversation.title.clone(),
        prompt
            .map(|p| line(Role::System, p))
            .into_iter()
            .chain(b.messages.iter().map(|m| line(m.role, &m.content)))
            .collect(),
    )
}

/// One family's check: the source, then per conversation its title and messages.
fn check(file: &str, source: Source, expect: &[(&str, &[&str])]) -> Imported {
    let i = foreign(&fixture(file));
    assert_eq!(i.source, source, "{file}");
    assert_eq!(i.conversations.len(), expect.len(), "{file}: conversations");
    for (n, (title, messages)) in expect.iter().enumerate() {
        let (t, m) = stored(&i, n);
        assert_eq!(t, *title, "{file}: title of conversation {n}");
        assert_eq!(m, *messages, "{file}: messages of conversation {n}");
    }
    no_leak(&i);
    // Every fixture passes the backup checks and plans fully against an empty store.
    let plan = plan(&i, &ExistingIds::default());
    assert_eq!(plan.added.conversations, expect.len());
    i
}

/// Text the fixtures mark as never to be imported.
fn no_leak(i: &Imported) {
    for b in to_bundles(i, NOW) {
        for m in &b.messages {
            for bad in [
                "HIDDEN",
                "ABANDONED",
                "FAILED",
                "SWIPE",
                "SECRET",
                "FEW-SHOT",
            ] {
                assert!(!m.content.contains(bad), "{bad} leaked: {:?}", m.content);
            }
        }
    }
}

fn plan(i: &Imported, existing: &ExistingIds) -> ImportPlan {
    to_checked(i, NOW, &ImportLimits::default())
        .unwrap_or_else(|e| panic!("check: {e}"))
        .plan(existing)
        .unwrap_or_else(|e| panic!("plan: {e}"))
}

/// What the store holds after writing `plans`.
fn existing_after(plans: &[&ImportPlan]) -> ExistingIds {
    let mut e = ExistingIds::default();
    for p in plans {
        for c in &p.conversations {
            e.conversations.insert(c.id.clone());
        }
        for m in &p.messages {
            e.messages.insert(
                m.id.clone(),
                ExistingMessage {
                    conversation_id: m.conversation_id.clone(),
                    seq: m.seq,
                },
            );
            let last = e.last_seqs.entry(m.conversation_id.clone()).or_insert(0);
            *last = (*last).max(m.seq);
        }
        for s in &p.summaries {
            e.summaries.insert((s.conversation_id.clone(), s.version));
        }
    }
    e
}

// ---------------------------------------------------------------------------------------------
// One check per family.

#[test]
fn chatgpt_keeps_the_current_branch_and_drops_hidden_tool_and_reasoning_nodes() {
    let i = check(
        "chatgpt.json",
        Source::ChatGpt,
        &[
            (
                "Rust and Leptos",
                &[
                    "u: What is Rust?",
                    "a: Rust is a systems programming language.",
                    "u: [image: file-abc]\n\nAnd Leptos? See the screenshot.",
                    "a: Leptos is a Rust web framework.",
                ],
            ),
            (
                "Bonjour, ça va ?",
                &["u: Bonjour, ça va ?", "a: Très bien, merci !"],
            ),
        ],
    );
    let s = i.skipped;
    // The browser call and its result are kept on the reply (engine_import_tools.rs).
    assert_eq!(
        (s.other_branches, s.hidden, s.tool, s.reasoning),
        (1, 2, 0, 1)
    );
    let b = &to_bundles(&i, NOW)[0];
    let call = &b.messages[3].meta.tool_calls[0];
    let kept = (call.name.as_str(), call.result.as_deref());
    assert_eq!(kept, ("browser", Some("HIDDEN TOOL OUTPUT")));
    let b = &to_bundles(&i, NOW)[0];
    assert_eq!(
        b.conversation.id,
        "chatgpt-6630a1b2-0000-4000-8000-000000000001"
    );
    assert_eq!(b.conversation.created_at, 1_714_000_000_123);
    assert_eq!(b.messages[0].created_at, 1_714_000_010_250);
    assert_eq!(b.messages[1].meta.model.as_deref(), Some("gpt-4o"));
}

#[test]
fn chatgpt_citation_markers_become_their_sources_or_go() {
    // Written as ChatGPT's export writes a searched reply: private-use markers explained by
    // `metadata.content_references` (an `alt`, or the pages in `items`; a `hidden` one; a footnote
    // whose `matched_text` is a plain space, never applied), one no entry explains, an entity
    // marker; and an older reply's `【11†source】` explained by `metadata.citations`.
    check(
        "chatgpt-citations.json",
        Source::ChatGpt,
        &[(
            "Eiffel Tower",
            &[
                "u: How tall is the Eiffel Tower?",
                "a: The Eiffel Tower is 330 m tall. ([Wikipedia](https://en.wikipedia.org/wiki/Eiffel_Tower)) \
                 It was finished in 1889 ([The Eiffel Tower official](https://www.toureiffel.paris/en)). \
                 The tower is in Paris. Tickets sell out in summer.",
                "u: What should I wear?",
                "a: Bring a jacket ([Visiting the Eiffel Tower](https://example.org/visit)); \
                 it can be windy on top ([Weather at 300 m](https://example.org/wind)). \
                 Your notes say the same.",
            ],
        )],
    );
}

/// A ChatGPT reply `text` with `metadata`, as imported.
fn chatgpt_reply(text: &str, metadata: Value) -> String {
    let bytes = chatgpt_with(|v| {
        let m = &mut v[0]["mapping"]["a2"]["message"];
        m["content"]["parts"] = json!([text]);
        m["metadata"] = metadata;
    });
    let i = foreign(&bytes);
    // The reply to the first question; none when nothing of it is left (then the next question
    // follows the first).
    let b = &to_bundles(&i, NOW)[0];
    Some(&b.messages[1])
        .filter(|m| m.role == Role::Assistant)
        .map(|m| m.content.clone())
        .unwrap_or_default()
}

fn check_citations(text: &str, metadata: Value, shown: &str) {
    assert_eq!(chatgpt_reply(text, metadata), shown, "{text:?}");
}

#[test]
fn citation_markers_never_stay_whatever_the_metadata() {
    let none = json!({});
    check_citations(
        "Plain text 【not a marker】 stays.",
        none.clone(),
        "Plain text 【not a marker】 stays.",
    );
    check_citations(
        "Dropped \u{e200}cite\u{e202}turn0search0\u{e201}.",
        none.clone(),
        "Dropped.",
    );
    check_citations(
        "Cut short \u{e200}cite\u{e202}turn0\nNext line.",
        none.clone(),
        "Cut short\nNext line.",
    );
    check_citations("Old 【4:2†source】 form.", none.clone(), "Old form.");
    check_citations(
        "An entity: \u{e200}entity\u{e202}[\"person\",\"Ada Lovelace\"]\u{e201}!",
        none.clone(),
        "An entity: Ada Lovelace!",
    );
    check_citations(
        "Broken entity \u{e200}entity\u{e202}[oops\u{e201} here",
        none.clone(),
        "Broken entity here",
    );
    check_citations("\u{e200}cite\u{e202}turn0search0\u{e201}", none.clone(), "");
    // A link only to a web address; a reference without one shows nothing.
    let refs = |r: Value| json!({ "content_references": [r] });
    let m = "\u{e200}cite\u{e202}turn0search0\u{e201}";
    check_citations(
        &format!("Said {m}."),
        refs(
            json!({ "matched_text": m, "items": [{ "title": "T", "url": "javascript:alert(1)" }] }),
        ),
        "Said.",
    );
    check_citations(
        &format!("Said {m}."),
        refs(json!({ "matched_text": m, "items": [{ "url": "https://a.example/(x) y" }] })),
        "Said ([https://a.example/(x) y](https://a.example/xy)).",
    );
    // Metadata that is not what the export writes changes nothing but the markers.
    check_citations(
        &format!("Said {m}."),
        json!({ "content_references": "no", "citations": [{ "start_ix": 9, "end_ix": 2 }] }),
        "Said.",
    );
    check_citations(
        "A 【1†a】",
        json!({ "citations": [{ "start_ix": 2, "end_ix": 99 }] }),
        "A",
    );
}

#[test]
fn claude_keeps_text_blocks_and_falls_back_to_text() {
    let i = check(
        "claude.json",
        Source::Claude,
        &[
            (
                "Packing for Iceland",
                &[
                    "u: What should I pack for Iceland in March?\n[attachment: itinerary.txt]",
                    "a: Layers: a waterproof shell, wool base layers and good boots.\n\nAlso bring a swimsuit for the hot springs.",
                ],
            ),
            (
                "Translate 'good morning' to German",
                &["u: Translate 'good morning' to German", "a: Guten Morgen"],
            ),
        ],
    );
    // The thinking block is kept as the reply's reasoning (not text, not skipped).
    // The web search and its result are kept as the reply's tool call.
    assert_eq!((i.skipped.reasoning, i.skipped.tool), (0, 0));
    assert_eq!(
        to_bundles(&i, NOW)[0].conversation.created_at,
        1_739_178_900_000
    );
}

/// A Claude.ai assistant message whose text is `text` imports as `content` with `reasoning`.
fn check_ant_thinking(text: &str, content: &str, reasoning: Option<&str>) {
    let file = json!([{"uuid": "c", "name": "Older export", "chat_messages": [
        {"uuid": "q", "sender": "human", "text": "Make me a chart"},
        {"uuid": "a", "sender": "assistant", "text": text}]}]);
    let i = foreign(file.to_string().as_bytes());
    let b = &to_bundles(&i, NOW)[0];
    let reply = &b.messages[1];
    assert_eq!(reply.content, content, "{text:?}");
    let got = reply.meta.reasoning.as_ref().map(|r| r.text.as_str());
    assert_eq!(got, reasoning, "{text:?}");
    if let Some(r) = &reply.meta.reasoning {
        assert_eq!((r.started_at, r.ended_at), (reply.created_at, None));
    }
}

#[test]
fn claude_ant_thinking_becomes_the_replys_reasoning() {
    check_ant_thinking("Plain answer.", "Plain answer.", None);
    check_ant_thinking(
        "<antThinking>A chart suits an artifact.</antThinking>\n\nHere is your chart.",
        "Here is your chart.",
        Some("A chart suits an artifact."),
    );
    check_ant_thinking(
        "Sure.\n\n<antThinking>First thought.</antThinking>\n\nMiddle.\n<antThinking> Second. </antThinking>\n    indented code",
        "Sure.\n\nMiddle.\n\n    indented code",
        Some("First thought.\n\nSecond."),
    );
    check_ant_thinking(
        "Answer.<antThinking>never closed",
        "Answer.",
        Some("never closed"),
    );
    check_ant_thinking("<antThinking></antThinking>Only text", "Only text", None);
    // The `thinking` blocks of newer exports are the reasoning too; redacted ones are left out.
    let i = foreign(&fixture("claude.json"));
    let reply = &to_bundles(&i, NOW)[0].messages[1];
    let r = reply.meta.reasoning.as_ref().map(|r| r.text.as_str());
    assert_eq!(r, Some("HIDDEN REASONING about weather"));
    assert!(!reply.content.contains("HIDDEN"));
}

#[test]
fn claude_artifacts_are_shown_as_fenced_blocks() {
    // Written as Claude.ai's export writes them: an `artifacts` tool_use that creates, then one
    // that rewrites (its content holding a fence of its own), between them an `update` and another
    // tool, which are not shown; an older reply's `<antArtifact>` tags in its text.
    let i = check(
        "claude-artifacts.json",
        Source::Claude,
        &[
            (
                "Reverse a string in Python",
                &[
                    "u: Write a Python function to reverse a string.",
                    "a: Here is the function:\n\n**Reverse a string**\n\n```python\ndef reverse(s):\n    return s[::-1]\n```\n\nCall it with any string.",
                    "u: Make it handle None.",
                    "a: **Reverse a string**\n\n````python\ndef reverse(s):\n    \"\"\"Reverse s; None gives \"\".\n\n    ```\n    >>> reverse(\"abc\")\n    'cba'\n    ```\n    \"\"\"\n    return (s or \"\")[::-1]\n````\n\nDone: None now gives an empty string.",
                ],
            ),
            (
                "A poem about Rust",
                &[
                    "u: Write me a poem about Rust and a logo.",
                    "a: Sure, here is a short poem.\n\n**Ode to Rust**\n\n```markdown\n# Ode to Rust\nNo null, no fear.\n```\n\nAnd a logo:\n\n**Crab**\n\n```svg\n<svg viewBox=\"0 0 10 10\"><circle r=\"4\"/></svg>\n```\n\nEnjoy!",
                ],
            ),
        ],
    );
    // Not shown, as tools: the update and the three artifacts' results (the web search and its
    // result are kept as the reply's tool call).
    assert_eq!(i.skipped.tool, 4);
}

/// A Claude.ai reply whose text (an older export's `text` field) is `text`, as imported.
fn claude_reply(text: &str) -> String {
    let file = json!([{
        "uuid": "c1", "name": "t", "created_at": "2024-06-01T10:00:00Z",
        "chat_messages": [
            { "uuid": "q", "sender": "human", "text": "Q?", "created_at": "2024-06-01T10:00:00Z" },
            { "uuid": "r", "sender": "assistant", "text": text, "created_at": "2024-06-01T10:00:01Z" },
        ],
    }]);
    let i = foreign(file.to_string().as_bytes());
    to_bundles(&i, NOW)[0].messages[1].content.clone()
}

fn check_artifact(text: &str, shown: &str) {
    assert_eq!(claude_reply(text), shown, "{text:?}");
}

#[test]
fn an_artifact_tag_in_any_shape_becomes_a_block() {
    // Cut short: the block runs to the end.
    check_artifact(
        "Start <antArtifact type=\"application/vnd.ant.code\" language=\"rust\">fn main() {}",
        "Start\n\n```rust\nfn main() {}\n```",
    );
    // `title` is not `data-title`; a language is one word; a title's `*` cannot end its bold.
    check_artifact(
        "<antArtifact data-title=\"no\" title=\"Yes *this*\" language=\"c++ <b>\">x</antArtifact>",
        "**Yes this**\n\n```c++b\nx\n```",
    );
    check_artifact(
        "<antArtifact title=\"Empty\"></antArtifact>",
        "**Empty**\n\n```\n\n```",
    );
    // A tag never closed with `>` is text.
    check_artifact("A <antArtifact title=\"x\"", "A <antArtifact title=\"x\"");
    check_artifact("No artifact here.", "No artifact here.");
    // Two in a row, each on lines of its own.
    check_artifact(
        "<antArtifact type=\"text/html\">a</antArtifact><antArtifact type=\"application/vnd.ant.mermaid\">b</antArtifact>",
        "```html\na\n```\n\n```mermaid\nb\n```",
    );
}

#[test]
fn claude_follows_the_current_leaf_when_messages_are_linked() {
    let m = |id: &str, parent: &str, sender: &str, text: &str| {
        json!({"uuid": id, "parent_message_uuid": parent, "sender": sender,
               "content": [{"type": "text", "text": text}]})
    };
    let root = "00000000-0000-4000-8000-000000000000";
    let file = json!([{"uuid": "c", "name": "Retried", "current_leaf_message_uuid": "a2",
        "chat_messages": [m("q", root, "human", "Hi"), m("a1", "q", "assistant", "ABANDONED"),
                          m("a2", "q", "assistant", "Hello")]}]);
    let i = foreign(file.to_string().as_bytes());
    assert_eq!(stored(&i, 0).1, ["u: Hi", "a: Hello"]);
    assert_eq!(i.skipped.other_branches, 1);
    let broken = file.to_string().replace(
        "\"current_leaf_message_uuid\":\"a2\"",
        "\"current_leaf_message_uuid\":\"zz\"",
    );
    hostile(broken.as_bytes(), |e| {
        e.to_string().contains("\"current_leaf_message_uuid\" zz")
    });
}

#[test]
fn open_webui_follows_current_id_and_strips_reasoning_details() {
    let i = check(
        "openwebui.json",
        Source::OpenWebUi,
        &[
            (
                "Sourdough help",
                &[
                    "s: You are a patient baking teacher.",
                    "u: Why is my sourdough flat?",
                    "a: Your starter may be weak; feed it twice a day.",
                    "u: How long should it proof?",
                    "a: About 4 to 6 hours at room temperature.",
                ],
            ),
            (
                "Old export without history",
                &["s: Answer in French.", "u: Hello", "a: Bonjour"],
            ),
        ],
    );
    let s = i.skipped;
    assert_eq!((s.other_branches, s.reasoning, s.tool), (1, 1, 1));
    assert_eq!(
        to_bundles(&i, NOW)[0].messages[0].created_at,
        1_720_000_000_000
    );
}

#[test]
fn nextchat_imports_the_summary_and_mask_system_prompt_never_the_keys() {
    let i = check(
        "nextchat.json",
        Source::NextChat,
        &[(
            "Garden planning",
            &[
                "s: You are an expert gardener.",
                "u: Which vegetables grow on a balcony?",
                "a: Tomatoes, lettuce and herbs do well.",
                "u: Is this pot big enough?\n\n[image]",
                "a: Yes, 20 litres is enough for a tomato.",
            ],
        )],
    );
    assert!(i.settings_ignored);
    assert_eq!(i.skipped.errors, 1);
    let b = &to_bundles(&i, NOW)[0];
    assert_eq!(b.summaries.len(), 1);
    assert!(b.summaries[0].text.contains("balcony in Lyon"));
    // lastSummarizeIndex 2: the first two messages (seqs 0 and 1; the system prompt is the
    // conversation's own, not a message).
    assert_eq!(
        (
            b.summaries[0].covers_up_to_seq,
            b.summaries[0].message_count
        ),
        (1, 2)
    );
    assert!(describe(&i).contains("never imported"));
}

#[test]
fn lobechat_makes_one_conversation_per_topic_in_time_order() {
    let i = check(
        "lobechat.json",
        Source::LobeChat,
        &[
            (
                "Weekend in Rome",
                &[
                    "s: You plan trips on a budget.",
                    "u: Plan a weekend in Rome.",
                    "a: Two days: the Colosseum, then Trastevere.",
                    "a: Book the Vatican museums ahead.",
                ],
            ),
            ("Hi there", &["u: Hi there", "a: Hello! How can I help?"]),
        ],
    );
    let s = i.skipped;
    assert_eq!((s.tool, s.errors, s.reasoning), (2, 1, 1));
    assert!(i.settings_ignored);
    assert_eq!(to_bundles(&i, NOW)[0].conversation.id, "lobechat-top-1");
    assert_eq!(
        to_bundles(&i, NOW)[1].conversation.id,
        "lobechat-inbox:default"
    );
}

#[test]
fn llama_cpp_json_follows_curr_node_and_drops_root_and_reasoning() {
    let i = check(
        "llamacpp.json",
        Source::LlamaCpp,
        &[(
            "Explain borrowing",
            &[
                "u: Explain borrowing in Rust.\n[attachment: main.rs]",
                "a: A borrow is a reference that does not own the value.",
                "u: And mutable borrows?",
                "a: Only one mutable borrow at a time.",
            ],
        )],
    );
    assert_eq!((i.skipped.other_branches, i.skipped.reasoning), (1, 2));
}

#[test]
fn llama_cpp_jsonl_reads_the_session_line_then_messages() {
    let i = check(
        "llamacpp.jsonl",
        Source::LlamaCpp,
        &[(
            "Haiku",
            &[
                "u: Write a haiku about rain.",
                "a: Soft rain on the roof\nthe kettle begins to sing\nnobody is home",
            ],
        )],
    );
    assert_eq!(i.skipped.other_branches, 1);
}

#[test]
fn sillytavern_keeps_the_chosen_swipe_and_fills_in_the_names() {
    // Its chat shows every line, a narrator's (`/sys`) and those kept out of the prompt
    // (`is_system`: a `/hide`, a hidden narrator's note) too: all are kept, the latter hidden from
    // the model.
    let i = check(
        "sillytavern.jsonl",
        Source::SillyTavern,
        &[(
            "Seraphina and Ana",
            &[
                "a: Welcome, Ana. I am Seraphina, guardian of this forest.",
                "u: Where am I?",
                "a: You are in the Glade, Ana. Rest here.",
                "a: *The fire crackles; Seraphina keeps watch.*",
                "a: A wolf howls in the distance.",
                "u: (OOC: let's pause here)",
            ],
        )],
    );
    let s = i.skipped;
    assert_eq!((s.other_branches, s.hidden, s.reasoning), (2, 0, 1));
    let hidden: Vec<bool> = to_bundles(&i, NOW)[0]
        .messages
        .iter()
        .map(|m| m.meta.hidden)
        .collect();
    assert_eq!(hidden, [false, false, false, true, false, true]);
}

#[test]
fn big_agi_reads_text_fragments_and_old_text_fields() {
    let i = check(
        "bigagi.agi.json",
        Source::BigAgi,
        &[
            (
                "French Revolution causes",
                &[
                    "s: You are a concise research assistant.",
                    "u: Summarise the causes of the French Revolution.\n\n[attachment: notes.pdf]",
                    "a: Debt, inequality and Enlightenment ideas.",
                ],
            ),
            ("Arithmetic", &["u: What is 2+2?", "a: 4"]),
        ],
    );
    assert!(i.settings_ignored);
    assert_eq!((i.skipped.errors, i.skipped.reasoning), (1, 1));
}

#[test]
fn our_own_backup_is_still_a_backup() {
    let backup = memoire::engine::backup::export_json(&[], &[], NOW);
    assert!(matches!(
        detect(backup.as_bytes(), &ImportLimits::default()),
        Ok(Detected::Backup(_))
    ));
}

#[test]
fn the_file_name_plays_no_part_detection_reads_the_content() {
    // The same ChatGPT content, whatever it was called, and with a byte-order mark.
    let mut bytes = "\u{FEFF}".as_bytes().to_vec();
    bytes.extend(fixture("chatgpt.json"));
    assert_eq!(foreign(&bytes).source, Source::ChatGpt);
    // A single conversation object (not in a list) is read too.
    let v: Value = serde_json::from_slice(&fixture("claude.json")).unwrap();
    assert_eq!(foreign(v[0].to_string().as_bytes()).source, Source::Claude);
}

// ---------------------------------------------------------------------------------------------
// Idempotence.

#[test]
fn importing_the_same_file_twice_adds_nothing() {
    for file in [
        "chatgpt.json",
        "claude.json",
        "openwebui.json",
        "nextchat.json",
        "lobechat.json",
        "llamacpp.json",
        "llamacpp.jsonl",
        "sillytavern.jsonl",
        "bigagi.agi.json",
    ] {
        let i = foreign(&fixture(file));
        let first = plan(&i, &ExistingIds::default());
        let again = plan(&i, &existing_after(&[&first]));
        assert_eq!(
            again.added.conversations + again.added.messages,
            0,
            "{file}"
        );
        assert_eq!(again.added.summaries, 0, "{file}");
        assert_eq!(again.skipped.messages, first.added.messages, "{file}");
    }
}

/// The ChatGPT fixture continued in ChatGPT: one more exchange under the current node.
fn chatgpt_continued(regenerate_last: bool) -> Vec<u8> {
    let mut v: Value = serde_json::from_slice(&fixture("chatgpt.json")).unwrap();
    let conv = &mut v[0];
    let parent = if regenerate_last { "think" } else { "a3" };
    let node = |id: &str, role: &str, parent: &str, text: &str| {
        json!({"id": id, "parent": parent, "children": [], "message": {
            "id": id, "author": {"role": role}, "create_time": 1714000500.0,
            "content": {"content_type": "text", "parts": [text]}, "metadata": {}, "recipient": "all"}})
    };
    if regenerate_last {
        conv["mapping"]["a3b"] = node(
            "a3b",
            "assistant",
            parent,
            "Leptos is fine-grained and reactive.",
        );
        conv["current_node"] = json!("a3b");
    } else {
        conv["mapping"]["u4"] = node("u4", "user", parent, "Thanks!");
        conv["mapping"]["a4"] = node("a4", "assistant", "u4", "You're welcome.");
        conv["current_node"] = json!("a4");
    }
    v.to_string().into_bytes()
}

#[test]
fn a_newer_export_adds_only_the_new_messages_after_the_last_seq() {
    let first = plan(&foreign(&fixture("chatgpt.json")), &ExistingIds::default());
    let mut existing = existing_after(&[&first]);
    // The user also chatted on here: the conversation's last seq moved to 9.
    let id = "chatgpt-6630a1b2-0000-4000-8000-000000000001";
    existing.last_seqs.insert(id.into(), 9);
    let newer = plan(&foreign(&chatgpt_continued(false)), &existing);
    assert_eq!(newer.added.conversations, 0);
    let added: Vec<(u64, &str)> = newer
        .messages
        .iter()
        .map(|m| (m.seq, m.content.as_str()))
        .collect();
    assert_eq!(added, [(10, "Thanks!"), (11, "You're welcome.")]);
    // A regenerated last answer is new too: appended, never a collision.
    let regenerated = plan(&foreign(&chatgpt_continued(true)), &existing);
    assert_eq!(regenerated.added.messages, 1);
    assert_eq!(regenerated.messages[0].seq, 10);
}

#[test]
fn conversation_ids_come_from_source_and_source_id() {
    let i = foreign(&fixture("sillytavern.jsonl"));
    let id = conversation_id(Source::SillyTavern, &i.conversations[0]);
    assert!(id.starts_with("sillytavern-"), "{id}");
    // A long or odd source id is hashed, never cut or passed through.
    let mut c = i.conversations[0].clone();
    c.source_id = Some("x/".repeat(300));
    let hashed = conversation_id(Source::SillyTavern, &c);
    assert!(hashed.len() < 40 && !hashed.contains('/'), "{hashed}");
    assert_eq!(hashed, conversation_id(Source::SillyTavern, &c));
}

// ---------------------------------------------------------------------------------------------
// ZIP.

/// A ZIP of `(name, data, deflate)` entries, sizes as given (the header may lie: `claimed`).
fn zip_of(entries: &[(&str, &[u8], bool)], claimed: Option<u32>) -> Vec<u8> {
    let mut out = Vec::new();
    let mut central = Vec::new();
    for (name, data, deflate) in entries {
        let body = if *deflate {
            miniz_oxide::deflate::compress_to_vec(data, 6)
        } else {
            data.to_vec()
        };
        let crc = zip::crc32(data);
        let size = claimed.unwrap_or(data.len() as u32);
        let offset = out.len() as u32;
        let method: u16 = if *deflate { 8 } else { 0 };
        let head = |sig: u32, central_dir: bool| {
            let mut h = Vec::new();
            h.extend(sig.to_le_bytes());
            if central_dir {
                h.extend(20u16.to_le_bytes());
            }
            h.extend(20u16.to_le_bytes());
            h.extend(0u16.to_le_bytes());
            h.extend(method.to_le_bytes());
            h.extend([0u8; 4]);
            h.extend(crc.to_le_bytes());
            h.extend((body.len() as u32).to_le_bytes());
            h.extend(size.to_le_bytes());
            h.extend((name.len() as u16).to_le_bytes());
            h.extend(0u16.to_le_bytes());
            if central_dir {
                h.extend([0u8; 10]);
                h.extend(offset.to_le_bytes());
            }
            h.extend(name.as_bytes());
            h
        };
        out.extend(head(0x0403_4b50, false));
        out.extend(&body);
        central.extend(head(0x0201_4b50, true));
    }
    let cd_offset = out.len() as u32;
    out.extend(&central);
    out.extend(0x0605_4b50u32.to_le_bytes());
    out.extend([0u8; 4]);
    out.extend((entries.len() as u16).to_le_bytes());
    out.extend((entries.len() as u16).to_le_bytes());
    out.extend((central.len() as u32).to_le_bytes());
    out.extend(cd_offset.to_le_bytes());
    out.extend(0u16.to_le_bytes());
    out
}

#[test]
fn a_zip_is_read_for_its_conversations_json() {
    let chatgpt = fixture("chatgpt.json");
    let z = zip_of(
        &[
            ("user.json", b"{\"id\": \"user-1\"}", true),
            ("chat.html", b"<html></html>", false),
            ("conversations.json", &chatgpt, true),
        ],
        None,
    );
    let i = foreign(&z);
    assert_eq!((i.source, i.conversations.len()), (Source::ChatGpt, 2));
    // Stored (method 0) works as well.
    let z = zip_of(
        &[("export/conversations.json", &fixture("claude.json"), false)],
        None,
    );
    assert_eq!(foreign(&z).source, Source::Claude);
}

#[test]
fn a_zip_of_llama_cpp_jsonl_files_merges_them() {
    let a = fixture("llamacpp.jsonl");
    let b = String::from_utf8(a.clone())
        .unwrap()
        .replace("conv-jsonl-1", "conv-jsonl-2")
        .replace("Haiku", "Second haiku");
    let z = zip_of(
        &[("a.jsonl", &a, true), ("b.jsonl", b.as_bytes(), true)],
        None,
    );
    let i = foreign(&z);
    assert_eq!(i.conversations.len(), 2);
    assert_eq!(i.conversations[1].title, "Second haiku");
}

fn small() -> ImportLimits {
    ImportLimits {
        max_bytes: 100_000,
        ..ImportLimits::default()
    }
}

#[test]
fn zip_bombs_and_broken_zips_get_clear_errors() {
    let zeros = vec![b' '; 1_000_000];
    let bomb = zip_of(&[("conversations.json", &zeros, true)], None);
    assert!(bomb.len() < 100_000);
    let e = detect(&bomb, &small()).unwrap_err();
    assert!(matches!(e, ImportError::ZipTooLarge { .. }), "{e}");
    // The header claims 10 bytes; inflating stops at the limit anyway.
    let liar = zip_of(&[("conversations.json", &zeros, true)], Some(10));
    let e = detect(&liar, &small()).unwrap_err();
    assert!(matches!(e, ImportError::ZipTooLarge { .. }), "{e}");
    let cut = &bomb[..bomb.len() - 30];
    assert!(matches!(
        detect(cut, &small()),
        Err(ImportError::Zip { .. })
    ));
    let nothing = zip_of(&[("readme.txt", b"hello", false)], None);
    assert_eq!(
        detect(&nothing, &small()).unwrap_err(),
        ImportError::ZipHasNoExport
    );
    let mut bad_crc = zip_of(&[("conversations.json", b"[]", false)], None);
    let at = bad_crc.windows(2).position(|w| w == b"[]").unwrap();
    bad_crc[at] = b'{';
    assert!(matches!(
        detect(&bad_crc, &small()),
        Err(ImportError::Zip { .. })
    ));
}

// ---------------------------------------------------------------------------------------------
// Hostile and broken files: each names its error.

/// Detection, reading and the backup checks (the whole path before anything is looked up or
/// written) must refuse `bytes` with the expected error.
fn hostile(bytes: &[u8], expect: fn(&ImportError) -> bool) {
    let limits = ImportLimits::default();
    let read = detect(bytes, &limits).and_then(|d| match d {
        Detected::Foreign(i) => to_checked(&i, NOW, &limits).map(|_| ()),
        Detected::Backup(_) => Ok(()),
    });
    match read {
        Err(e) => assert!(expect(&e), "unexpected error: {e}"),
        Ok(_) => panic!(
            "accepted: {}",
            String::from_utf8_lossy(&bytes[..bytes.len().min(200)])
        ),
    }
}

fn chatgpt_with(f: impl FnOnce(&mut Value)) -> Vec<u8> {
    let mut v: Value = serde_json::from_slice(&fixture("chatgpt.json")).unwrap();
    f(&mut v);
    v.to_string().into_bytes()
}

#[test]
fn hostile_files() {
    use ImportError as E;
    hostile(b"", |e| matches!(e, E::Empty));
    hostile(b"  \n ", |e| matches!(e, E::Empty));
    hostile(b"\xff\xfe{}", |e| matches!(e, E::NotUtf8 { offset: 0 }));
    hostile(b"[{\"mapping\": ", |e| matches!(e, E::InvalidJson { .. }));
    hostile(b"{\"hello\": 1}", |e| matches!(e, E::UnknownFormat { .. }));
    hostile(b"[]", |e| matches!(e, E::UnknownFormat { .. }));
    hostile(b"42", |e| matches!(e, E::UnknownFormat { .. }));
    hostile(&[b'['; 10_000], |e| matches!(e, E::Backup(_)));
    hostile(b"[{\"mapping\": []}]", |e| matches!(e, E::Shape { .. }));
    hostile(b"[{\"chat_messages\": {}}]", |e| {
        matches!(e, E::Shape { .. })
    });
    hostile(b"[{\"chat\": {\"history\": {\"messages\": 3}}}]", |e| {
        matches!(e, E::Shape { .. })
    });
    hostile(b"{\"chat-next-web-store\": []}", |e| {
        matches!(e, E::Shape { .. })
    });
    hostile(b"{\"exportType\": \"all\", \"state\": 1}", |e| {
        matches!(e, E::Shape { .. })
    });
    hostile(b"{\"conversations\": []}", |e| {
        matches!(e, E::NoConversations { .. })
    });
    hostile(
        &chatgpt_with(|v| v[0]["current_node"] = json!("nope")),
        |e| {
            e.to_string()
                .contains("\"current_node\" nope is not in \"mapping\"")
        },
    );
    hostile(&chatgpt_with(|v| v[0]["current_node"] = Value::Null), |e| {
        matches!(e, E::Shape { .. })
    });
    hostile(
        &chatgpt_with(|v| v[0]["mapping"]["root"]["parent"] = json!("a3")),
        |e| matches!(e, E::Cycle { .. }) && e.to_string().contains("Rust and Leptos"),
    );
    hostile(
        &chatgpt_with(|v| {
            v[0]["mapping"]["a3"]["message"]["content"]["parts"] = json!(["x".repeat(1_000_001)])
        }),
        |e| e.to_string().contains("limit is 1000000"),
    );
    hostile(
        &chatgpt_with(|v| v[1]["conversation_id"] = v[0]["conversation_id"].clone()),
        |e| e.to_string().contains("more than once"),
    );
    let loop_webui = json!([{"id": "w", "chat": {"history": {"currentId": "a",
        "messages": {"a": {"parentId": "b", "role": "user", "content": "x"},
                     "b": {"parentId": "a", "role": "user", "content": "y"}}}}}]);
    hostile(loop_webui.to_string().as_bytes(), |e| {
        matches!(e, E::Cycle { .. })
    });
    let jsonl_orphan = "{\"type\":\"message\",\"id\":\"1\"}\n{\"type\":\"message\",\"id\":\"2\"}\n";
    hostile(jsonl_orphan.as_bytes(), |e| matches!(e, E::Shape { .. }));
    let big = vec![b' '; 60 * 1024 * 1024];
    hostile(&big, |e| matches!(e, E::TooLarge { .. }));
}

// ---------------------------------------------------------------------------------------------
// Properties.

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        "[a-z0-9 ]{0,8}".prop_map(Value::from),
        prop_oneof![
            Just("user"),
            Just("assistant"),
            Just("system"),
            Just("tool"),
            Just("text"),
            Just("root"),
            Just("human"),
            Just("session"),
            Just("message"),
            Just("a"),
            Just("b")
        ]
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec(
                (
                    prop_oneof![
                        Just("mapping"),
                        Just("current_node"),
                        Just("parent"),
                        Just("message"),
                        Just("author"),
                        Just("role"),
                        Just("content"),
                        Just("parts"),
                        Just("chat_messages"),
                        Just("sender"),
                        Just("chat"),
                        Just("history"),
                        Just("messages"),
                        Just("currentId"),
                        Just("parentId"),
                        Just("conv"),
                        Just("currNode"),
                        Just("id"),
                        Just("type"),
                        Just("state"),
                        Just("exportType"),
                        Just("chat-next-web-store"),
                        Just("sessions"),
                        Just("conversations"),
                        Just("fragments"),
                        Just("mes"),
                        Just("is_user"),
                        Just("topicId"),
                        Just("sessionId"),
                        Just("a"),
                        Just("b"),
                        Just("text")
                    ],
                    inner
                ),
                0..6
            )
            .prop_map(|kv| Value::Object(
                kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
            )),
        ]
    })
}

/// A random message tree: per node its parent (any node, so cycles happen), role and time step;
/// and which node is current (possibly one that does not exist).
type Tree = (Vec<(Option<usize>, bool, i64)>, usize);

fn arb_tree() -> impl Strategy<Value = Tree> {
    (1usize..12).prop_flat_map(|n| {
        (
            prop::collection::vec((prop::option::of(0..n), any::<bool>(), -2i64..3), n),
            0..n + 1,
        )
    })
}

/// Reads the parent of node `id` in a file.
type ParentOf = Box<dyn Fn(&Value, &str) -> Option<String>>;

/// The tree as each tree-shaped source writes it, with the parent of node `id` in that file.
fn tree_files((nodes, current): &Tree) -> Vec<(Value, ParentOf)> {
    let role = |u: bool| if u { "user" } else { "assistant" };
    let parent = |p: &Option<usize>| p.map(|p| format!("n{p}"));
    let t = |i: usize, step: i64| 1_700_000_000 + step * i as i64;
    let mut chatgpt = serde_json::Map::new();
    let mut webui = serde_json::Map::new();
    let mut llama = Vec::new();
    for (i, (p, u, step)) in nodes.iter().enumerate() {
        let id = format!("n{i}");
        chatgpt.insert(
            id.clone(),
            json!({"id": id, "parent": parent(p), "message": {
            "id": id, "author": {"role": role(*u)}, "create_time": t(i, *step),
            "content": {"content_type": "text", "parts": [format!("text {i}")]}}}),
        );
        webui.insert(
            id.clone(),
            json!({"id": id, "parentId": parent(p), "role": role(*u),
            "content": format!("text {i}"), "timestamp": t(i, *step)}),
        );
        llama.push(
            json!({"id": id, "type": "text", "parent": parent(p), "role": role(*u),
            "content": format!("text {i}"), "timestamp": t(i, *step) * 1000}),
        );
    }
    let cur = format!("n{current}");
    vec![
        (
            json!([{"id": "c", "mapping": chatgpt, "current_node": cur}]),
            Box::new(|f: &Value, id: &str| {
                f[0]["mapping"][id]["parent"].as_str().map(str::to_string)
            }),
        ),
        (
            json!([{"id": "c", "chat": {"history": {"messages": webui, "currentId": cur}}}]),
            Box::new(|f: &Value, id: &str| {
                f[0]["chat"]["history"]["messages"][id]["parentId"]
                    .as_str()
                    .map(str::to_string)
            }),
        ),
        (
            json!({"conv": {"id": "c", "name": "t", "currNode": cur}, "messages": llama}),
            Box::new(|f: &Value, id: &str| {
                f["messages"].as_array()?.iter().find(|m| m["id"] == id)?["parent"]
                    .as_str()
                    .map(str::to_string)
            }),
        ),
    ]
}

proptest! {
    #[test]
    fn readers_never_panic_on_arbitrary_json(v in arb_json()) {
        let _ = detect(v.to_string().as_bytes(), &ImportLimits::default());
        let wrapped = json!([v.clone()]);
        let _ = detect(wrapped.to_string().as_bytes(), &ImportLimits::default());
        let lines = format!("{}\n{}\n", v, v);
        let _ = detect(lines.as_bytes(), &ImportLimits::default());
    }

    #[test]
    fn sliced_reading_gives_what_the_whole_file_gives_on_arbitrary_json(v in arb_json(), w in arb_json()) {
        for text in [v.to_string(), json!([v.clone()]).to_string(), json!([v.clone(), w.clone(), null]).to_string(),
            format!(" \u{FEFF}[{v} , {w}]"), format!("\u{FEFF}[{v},{w}]"), format!("[{v},{w},]"), format!("[{v}] {w}")] {
            same_as_whole(text.as_bytes());
        }
    }

    #[test]
    fn sliced_reading_gives_what_the_whole_file_gives_on_trees(tree in arb_tree(), cut in 0usize..400) {
        for (file, _) in tree_files(&tree) {
            let text = file.to_string();
            same_as_whole(text.as_bytes());
            // Cut anywhere: a broken file gets the whole file's error.
            same_as_whole(&text.as_bytes()[..cut.min(text.len())]);
        }
    }

    #[test]
    fn readers_never_panic_on_arbitrary_bytes(b in prop::collection::vec(any::<u8>(), 0..300)) {
        same_as_whole(&b);
        let _ = detect(&b, &ImportLimits::default());
        let mut z = b"PK\x03\x04".to_vec();
        z.extend(&b);
        let _ = detect(&z, &ImportLimits::default());
    }

    #[test]
    fn the_shown_branch_is_a_parent_chain_in_order(tree in arb_tree()) {
        let n = tree.0.len();
        for (file, parent_of) in tree_files(&tree) {
            match detect(file.to_string().as_bytes(), &ImportLimits::default()) {
                Ok(Detected::Foreign(i)) => {
                    let c = &i.conversations[0];
                    // Every kept message's parent is the one before it (every node is visible here).
                    let ids: Vec<&str> =
                        c.messages.iter().filter_map(|m| m.source_id.as_deref()).collect();
                    for w in ids.windows(2) {
                        let parent = parent_of(&file, w[1]);
                        prop_assert_eq!(parent.as_deref(), Some(w[0]));
                    }
                    prop_assert!(ids.len() <= n);
                    let b = &to_bundles(&i, NOW)[0];
                    for (k, m) in b.messages.iter().enumerate() {
                        prop_assert_eq!(m.seq, k as u64);
                    }
                    for w in b.messages.windows(2) {
                        prop_assert!(w[0].created_at <= w[1].created_at);
                    }
                }
                Ok(Detected::Backup(_)) => prop_assert!(false, "read as a backup"),
                Err(e) => prop_assert!(
                    matches!(e, ImportError::Cycle { .. } | ImportError::Shape { .. }),
                    "{}", e
                ),
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Slices: a large file is read and checked a slice at a time, with exactly the whole file's result.

/// The sliced path (smallest slices) gives exactly what the whole file does, result or error.
fn same_as_whole(bytes: &[u8]) {
    let limits = ImportLimits::default();
    let whole = prepare_whole(bytes, NOW, &limits);
    let sliced = prepare_all(bytes.to_vec(), NOW, &limits);
    assert_eq!(
        sliced,
        whole,
        "{:?}",
        String::from_utf8_lossy(&bytes[..bytes.len().min(200)])
    );
}

#[test]
fn every_fixture_reads_the_same_in_slices() {
    for f in [
        "chatgpt.json",
        "claude.json",
        "openwebui.json",
        "nextchat.json",
        "lobechat.json",
        "llamacpp.json",
        "llamacpp.jsonl",
        "sillytavern.jsonl",
        "bigagi.agi.json",
    ] {
        same_as_whole(&fixture(f));
    }
    same_as_whole(&chatgpt_with(|v| v[1]["current_node"] = json!("nowhere")));
    same_as_whole(&chatgpt_with(|v| v[0]["mapping"] = json!(3)));
    same_as_whole(&chatgpt_with(|v| *v = json!([null, v[0].clone(), null])));
    same_as_whole(b"[null, null]");
    same_as_whole(b"[]");
}

/// The items a scan of `text` finds (with slices of `budget` bytes), or `None` when it is not a
/// list the sliced path reads.
fn scan(text: &str, budget: usize) -> Option<Vec<&str>> {
    let mut s = ItemScan::new(4);
    loop {
        match s.advance(text.as_bytes(), budget) {
            ScanState::Scanning => {}
            ScanState::NotAList => return None,
            ScanState::Done => return Some(s.items().iter().map(|r| &text[r.clone()]).collect()),
        }
    }
}

fn check_scan(text: &str, expect: Option<&[&str]>) {
    for budget in [1, 3, 1 << 20] {
        assert_eq!(
            scan(text, budget).as_deref(),
            expect,
            "{text:?}, slices of {budget}"
        );
    }
}

#[test]
fn the_scan_splits_a_list_into_its_items() {
    check_scan("[]", Some(&[]));
    check_scan(" [ 1, 2 ,3 ] \n", Some(&["1", "2", "3"]));
    check_scan(
        r#"[{"a":"],}"},"x\\\"]",[1,[2]]]"#,
        Some(&[r#"{"a":"],}"}"#, r#""x\\\"]""#, "[1,[2]]"]),
    );
    check_scan("[null,{}]", Some(&["null", "{}"]));
    check_scan("[1 2]", Some(&["1 2"]));
    check_scan("[1,]", None);
    check_scan("[,1]", None);
    check_scan("[1] 2", None);
    check_scan("[1", None);
    check_scan("{}", None);
    check_scan("", None);
    // Nesting deeper than the limit (4 here), as the whole file's depth check refuses it.
    check_scan("[[[[[1]]]]]", None);
    check_scan("[[[[1]]]]", Some(&["[[[1]]]"]));
    check_scan("[1}", None);
}

fn check_pace(steps: &[(usize, f64)], expect: usize) {
    let mut p = Pace::new(100, 10_000);
    for &(units, ms) in steps {
        p.observe(units, ms);
    }
    assert_eq!(p.size(), expect, "{steps:?}");
}

#[test]
fn the_pace_aims_each_slice_at_the_target_time() {
    check_pace(&[], 100);
    // 100 units in 2 ms: 400 would take 8 ms, but a step grows at most 2x.
    check_pace(&[(100, 2.0)], 200);
    check_pace(&[(100, 2.0), (200, 4.0)], 400);
    // Slower than the target: shrinks at once, never below the minimum.
    check_pace(&[(100, 2.0), (200, 4.0), (400, 32.0)], 100);
    check_pace(
        &[
            (1000, 0.0),
            (1000, 0.0),
            (1000, 0.0),
            (1000, 0.0),
            (1000, 0.0),
            (1000, 0.0),
            (1000, 0.0),
        ],
        10_000,
    );
    check_pace(&[(0, 5.0), (100, f64::NAN)], 100);
}

/// A ChatGPT export of `convs` conversations of `per` messages each (a hidden system root first).
fn chatgpt_export(convs: usize, per: usize) -> Vec<u8> {
    let items: Vec<Value> = (0..convs)
        .map(|c| {
            let mut mapping = serde_json::Map::new();
            mapping.insert(format!("c{c}-root"), json!({"id": format!("c{c}-root"), "message": null, "parent": null}));
            let mut parent = format!("c{c}-root");
            for m in 0..per {
                let id = format!("c{c}-m{m}");
                let role = if m % 2 == 0 { "user" } else { "assistant" };
                mapping.insert(id.clone(), json!({"id": id, "parent": parent, "children": [], "message": {
                    "id": id, "author": {"role": role}, "create_time": 1_700_000_000 + m,
                    "content": {"content_type": "text", "parts": [format!("Message {m} of conversation {c}: some words.")]},
                    "metadata": {}, "recipient": "all"}}));
                parent = id;
            }
            json!({"id": format!("conv-{c}"), "title": format!("Conversation {c}"), "mapping": mapping, "current_node": parent})
        })
        .collect();
    serde_json::to_vec(&items).unwrap()
}

#[test]
fn a_large_export_is_read_in_many_slices_with_progress_that_only_grows() {
    let bytes = chatgpt_export(60, 50);
    let mut p = Prepare::new(bytes.clone(), NOW, &ImportLimits::default());
    let (mut steps, mut last) = (0, 0);
    let done = loop {
        let progress = p.progress();
        assert_eq!(progress.phase, Phase::Checking);
        assert!(
            progress.done >= last && progress.done <= progress.total,
            "{progress:?}"
        );
        last = progress.done;
        steps += 1;
        // Every slice "takes" 40 ms: the pace keeps them at their smallest.
        if let Some(done) = p.step(Some(40.0)).unwrap() {
            break done;
        }
    };
    assert!(steps > 20, "{steps} steps");
    assert_eq!(p.progress().done, p.progress().total);
    match &done {
        Prepared::Foreign { imported, checked } => {
            assert_eq!(imported.source, Source::ChatGpt);
            assert_eq!(checked.counts(), (60, 3000));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        Ok(done),
        prepare_whole(&bytes, NOW, &ImportLimits::default())
    );
}

// ---------------------------------------------------------------------------------------------
// Every format in slices: the resumable JSON parse, JSON Lines, the ZIP's inflation, and large
// files of each format read a slice at a time with exactly the whole file's result.

use memoire::engine::import::value::{LinesParse, Parsed, ValueParse};

/// Parses `text` with slices of `budget` bytes.
fn parse_sliced(text: &[u8], budget: usize, strict: bool) -> Parsed<Value> {
    let mut p = ValueParse::new(0, 64, strict);
    loop {
        match p.advance(text, budget) {
            Parsed::More => {}
            done => return done,
        }
    }
}

/// At every slice size the parse gives `serde_json`'s value, or refuses what it refuses; strict,
/// it may also refuse (a repeated key) but never gives anything else.
fn check_parse(text: &[u8]) {
    let whole = serde_json::from_slice::<Value>(text).ok();
    for budget in [1, 2, 7, 64, 1 << 20] {
        let loose = parse_sliced(text, budget, false);
        match &whole {
            Some(v) => assert_eq!(
                loose,
                Parsed::Done(v.clone()),
                "{text:?} in slices of {budget}"
            ),
            None => assert_eq!(loose, Parsed::Refused, "{text:?} in slices of {budget}"),
        }
        match (parse_sliced(text, budget, true), &whole) {
            (Parsed::Done(v), Some(w)) => assert_eq!(&v, w, "{text:?} strict, slices of {budget}"),
            (Parsed::Refused, _) => {}
            (other, _) => panic!("{text:?} strict, slices of {budget}: {other:?}"),
        }
    }
}

#[test]
fn the_sliced_parse_gives_serde_jsons_value_or_refuses() {
    for text in [
        r#"{"a": [1, 2.5, -3e2, true, false, null], "b": {"c": "d\"\\\u00e9\n"}, "e": []}"#,
        " [ ] ",
        "{}",
        r#""just a string""#,
        "12",
        r#"{"a":1,"a":2}"#,
        "[1,]",
        "[1 2]",
        "{\"a\" 1}",
        "[\"unclosed]",
        "[\"ctl\u{1}\"]",
        "[1] x",
        "[01]",
        "[-]",
        "[tru]",
        "nul",
        "",
        "[\"\\ud800\"]",
        "{\"é\": \"ü 日本\"}",
    ] {
        check_parse(text.as_bytes());
    }
    // A repeated key: a `Value` keeps the last, a typed read refuses it: strict refuses.
    assert_eq!(
        parse_sliced(br#"{"a":{"b":1,"b":2}}"#, 1, true),
        Parsed::Refused
    );
    // The key serde_json reads as a raw value (its string parsed in the object's place): refused,
    // so the file is read whole, and the result is serde_json's.
    let raw = r#"{"a": {"$serde_json::private::RawValue": "[1]"}}"#;
    assert_eq!(parse_sliced(raw.as_bytes(), 1, false), Parsed::Refused);
    same_as_whole(
        br#"{"chat-next-web-store": {"sessions": [{"id": "s", "messages": {"$serde_json::private::RawValue": "[{"role":"user","content":"hi"}]"}}]}}"#,
    );
    // Deeper than the limit: refused, as the whole file's depth check refuses it.
    let deep = format!("{}{}", "[".repeat(65), "]".repeat(65));
    assert_eq!(
        parse_sliced(deep.as_bytes(), 1 << 20, false),
        Parsed::Refused
    );
    assert_eq!(parse_sliced(deep.as_bytes(), 3, false), Parsed::Refused);
    let ok = format!("{}{}", "[".repeat(64), "]".repeat(64));
    check_parse(ok.as_bytes());
}

fn lines_sliced(text: &str, budget: usize) -> Parsed<Vec<Value>> {
    let mut p = LinesParse::new(0, 64);
    loop {
        match p.advance(text.as_bytes(), budget) {
            Parsed::More => {}
            done => return done,
        }
    }
}

#[test]
fn json_lines_are_parsed_a_slice_of_lines_at_a_time() {
    for budget in [1, 5, 1 << 20] {
        assert_eq!(
            lines_sliced("{\"a\":1}\r\n\n  [2]\n\"x\"", budget),
            Parsed::Done(vec![json!({"a": 1}), json!([2]), json!("x")])
        );
        assert_eq!(lines_sliced("{\"a\":1}\n", budget), Parsed::Refused);
        assert_eq!(lines_sliced("{\"a\":1}\n{\"a\":", budget), Parsed::Refused);
    }
}

/// A NextChat backup of `n` sessions of `per` messages.
fn nextchat_export(n: usize, per: usize) -> Vec<u8> {
    let sessions: Vec<Value> = (0..n)
        .map(|s| {
            let messages: Vec<Value> = (0..per)
                .map(|m| json!({"id": format!("s{s}m{m}"), "date": "2024/5/3 10:00:00",
                    "role": if m % 2 == 0 { "user" } else { "assistant" },
                    "content": format!("Session {s}, message {m}: \"quoted\" words and more words.")}))
                .collect();
            json!({"id": format!("s{s}"), "topic": format!("Topic {s}"), "memoryPrompt": "",
                "messages": messages, "mask": {"context": []}, "lastUpdate": 1_715_000_000_000i64})
        })
        .collect();
    serde_json::to_vec_pretty(&json!({"chat-next-web-store": {"sessions": sessions},
        "access-control": {"openaiApiKey": "sk-secret"}}))
    .unwrap()
}

/// Reads `bytes` in slices that "take" 40 ms each (the smallest), checks the result is the whole
/// file's and that it was read in slices (not through the whole-file path), and returns how many
/// slices it took.
fn sliced_steps(bytes: &[u8]) -> usize {
    let limits = ImportLimits::default();
    let mut p = Prepare::new(bytes.to_vec(), NOW, &limits);
    let mut steps = 0;
    let done = loop {
        steps += 1;
        if let Some(done) = p.step(Some(40.0)).unwrap() {
            break done;
        }
    };
    assert_eq!(Ok(done), prepare_whole(bytes, NOW, &limits));
    assert!(p.sliced(), "read whole");
    steps
}

fn check_sliced(name: &str, bytes: &[u8], min_steps: usize) {
    let steps = sliced_steps(bytes);
    assert!(steps >= min_steps, "{name}: {steps} slices");
}

#[test]
fn large_files_of_every_format_are_read_in_slices_with_the_whole_files_result() {
    let nextchat = nextchat_export(200, 20);
    check_sliced("nextchat", &nextchat, 10);
    let chatgpt = foreign(&chatgpt_export(100, 20));
    let backup = memoire::engine::backup::export_json(&to_bundles(&chatgpt, NOW), &[], NOW);
    check_sliced("backup", backup.as_bytes(), 10);
    let lobe = {
        let messages: Vec<Value> = (0..3000)
            .map(|i| json!({"id": format!("m{i}"), "role": if i % 2 == 0 { "user" } else { "assistant" },
                "content": format!("Message {i} with some words in it."), "sessionId": "ses-1",
                "topicId": format!("t{}", i / 30), "createdAt": 1_715_000_000_000i64 + i, "parentId": null}))
            .collect();
        let topics: Vec<Value> = (0..100)
            .map(|t| {
                json!({"id": format!("t{t}"), "title": format!("Topic {t}"), "sessionId": "ses-1",
                "createdAt": 1_715_000_000_000i64 + t, "updatedAt": 1_715_000_000_000i64 + t})
            })
            .collect();
        serde_json::to_vec(
            &json!({"exportType": "all", "version": 7, "state": {"sessions": [],
            "topics": topics, "messages": messages}}),
        )
        .unwrap()
    };
    check_sliced("lobechat", &lobe, 10);
    let bigagi = {
        let conversations: Vec<Value> = (0..150)
            .map(|c| {
                let messages: Vec<Value> = (0..20)
                    .map(|m| json!({"id": format!("c{c}m{m}"), "role": if m % 2 == 0 { "user" } else { "assistant" },
                        "fragments": [{"ft": "content", "part": {"pt": "text", "text": format!("Text {c}/{m} of a big-AGI chat.")}}],
                        "created": 1_717_000_000_000i64 + m}))
                    .collect();
                json!({"id": format!("agi-{c}"), "messages": messages, "created": 1_717_000_000_000i64})
            })
            .collect();
        serde_json::to_vec(&json!({"conversations": conversations})).unwrap()
    };
    check_sliced("big-AGI", &bigagi, 10);
    let tavern = {
        let mut out = String::from("{\"user_name\":\"Ana\",\"character_name\":\"Seraphina\"}\n");
        for i in 0..4000 {
            out.push_str(&format!(
                "{}\n",
                json!({"name": if i % 2 == 0 { "Ana" } else { "Seraphina" }, "is_user": i % 2 == 0,
                    "mes": format!("Line {i}: hello {{{{user}}}}, I am {{{{char}}}}."), "swipes": ["a", "b"]})
            ));
        }
        out.into_bytes()
    };
    check_sliced("SillyTavern", &tavern, 10);
    let one = String::from_utf8(fixture("llamacpp.jsonl")).unwrap();
    let llama: Vec<u8> = (0..600)
        .map(|k| {
            one.replace("conv-jsonl-1", &format!("conv-{k}"))
                .replace("\"j", &format!("\"j{k}-"))
        })
        .collect::<Vec<_>>()
        .join("\n")
        .into_bytes();
    check_sliced("llama.cpp JSONL", &llama, 3);
    let zipped = zip_of(&[("backup.json", &nextchat, true)], None);
    check_sliced("nextchat in a ZIP", &zipped, 10);
    let other = one.replace("conv-jsonl-1", "conv-2").replace("\"j", "\"k");
    let two = zip_of(
        &[
            ("a.jsonl", one.as_bytes(), true),
            ("b.jsonl", other.as_bytes(), false),
        ],
        None,
    );
    check_sliced("two llama.cpp files in a ZIP", &two, 2);
}

proptest! {
    #[test]
    fn the_sliced_parse_equals_serde_json_on_arbitrary_and_damaged_text(
        v in arb_json(), cut in any::<prop::sample::Index>(), byte in any::<u8>(), budget in 1usize..40
    ) {
        for text in [v.to_string(), serde_json::to_string_pretty(&v).unwrap()] {
            let text = text.into_bytes();
            check_parse(&text);
            // One byte changed or dropped: the same value as serde_json's, or refused when it refuses.
            let i = cut.index(text.len().max(1)).min(text.len().saturating_sub(1));
            for damaged in [
                { let mut t = text.clone(); if !t.is_empty() { t[i] = byte; } t },
                { let mut t = text.clone(); if !t.is_empty() { t.remove(i); } t },
            ] {
                let whole = serde_json::from_slice::<Value>(&damaged).ok();
                let sliced = parse_sliced(&damaged, budget, false);
                match whole {
                    Some(w) => prop_assert_eq!(sliced, Parsed::Done(w)),
                    None => prop_assert_eq!(sliced, Parsed::Refused),
                }
            }
        }
    }

    #[test]
    fn a_zip_inflated_in_slices_gives_what_the_whole_zip_gives(
        v in arb_json(), deflate in any::<bool>(), keep in 0usize..400
    ) {
        let text = json!({"chat-next-web-store": {"sessions": [{"id": "x", "messages": [{"role": "user", "content": v.to_string()}]}]}}).to_string();
        let zipped = zip_of(&[("a.json", text.as_bytes(), deflate)], None);
        same_as_whole(&zipped);
        // Cut short: the same error as the whole file.
        same_as_whole(&zipped[..keep.min(zipped.len())]);
    }
}

// ---------------------------------------------------------------------------------------------
// Images in a ChatGPT ZIP: each file a message points to becomes its attachment; one the ZIP
// lacks, that is not an image, too large or damaged stays a `[image: name]` line.

use memoire::engine::import::slice::{FoundImage, StoredImage};

/// The driver's part, faked: each image "stored" at a hash made of its bytes, 2x2 pixels.
fn stored_as_given(f: &FoundImage) -> Option<StoredImage> {
    Some(StoredImage {
        hash: format!("{:064x}", zip::crc32(&f.bytes)),
        mime: f.mime.to_string(),
        size: f.bytes.len() as u64,
        width: 2,
        height: 2,
    })
}

/// Runs an import as the session does, `driver` answering each image; the images it was handed
/// (id and type) and the stored messages as `role: text` with `[name (type)]` per attachment.
fn with_driver(
    bytes: Vec<u8>,
    mut driver: impl FnMut(&FoundImage) -> Option<StoredImage>,
) -> (Vec<String>, Vec<String>) {
    let mut p = Prepare::new(bytes, NOW, &ImportLimits::default());
    let mut handed = Vec::new();
    let imported = loop {
        match p.step(Some(1e9)).expect("imports") {
            Some(Prepared::Foreign { imported, .. }) => break imported,
            Some(Prepared::Backup(_)) => panic!("read as a backup"),
            None => {}
        }
        while let Some(f) = p.take_image() {
            handed.push(format!("{} {}", f.id, f.mime));
            let answer = driver(&f);
            p.give_image(&f.id, answer);
        }
    };
    let shown = to_bundles(&imported, NOW)[0]
        .messages
        .iter()
        .map(|m| {
            let files: String = m
                .meta
                .attachments
                .iter()
                .map(|a| format!(" [{} ({})]", a.name, a.mime))
                .collect();
            format!("{}{files}", line(m.role, &m.content))
        })
        .collect();
    (handed, shown)
}

fn check_images(
    bytes: Vec<u8>,
    driver: impl FnMut(&FoundImage) -> Option<StoredImage>,
    handed: &[&str],
    shown: &[&str],
) {
    let (h, s) = with_driver(bytes, driver);
    assert_eq!(h, handed, "images handed to the driver");
    assert_eq!(s, shown, "messages stored");
}

const SQUARES_HANDED: &[&str] = &["file-CatPng1 image/png", "file_00000000dal1e0001 image/png"];

#[test]
fn a_chatgpt_zip_brings_its_images_as_attachments_and_placeholders_for_the_rest() {
    let all_placeholders: &[&str] = &[
        "u: [image: cat.png]\n\nWhat is in this picture?",
        "a: A small red square.",
        "u: Draw a blue one.",
        "a: [image: a blue square]",
        "a: Here is a blue square.",
        "u: [image: lost.jpg]\n\nAnd this one?",
        "a: I cannot see that one.",
        "u: [image: notes.png]\n\nAnd these notes?",
        "a: That file is not a picture.",
    ];
    let zip = fixture("chatgpt-images.zip");
    // Found, checked by its bytes, stored: the upload and the DALL·E image (on the assistant's
    // side). The file the ZIP lacks and the text file named .png stay placeholders.
    check_images(
        zip.clone(),
        stored_as_given,
        SQUARES_HANDED,
        &[
            "u: What is in this picture? [cat.png (image/png)]",
            "a: A small red square.",
            "u: Draw a blue one.",
            "a:  [a blue square (image/png)]",
            "a: Here is a blue square.",
            "u: [image: lost.jpg]\n\nAnd this one?",
            "a: I cannot see that one.",
            "u: [image: notes.png]\n\nAnd these notes?",
            "a: That file is not a picture.",
        ],
    );
    // A driver that could not decode or store them: nothing lost, no error.
    check_images(zip.clone(), |_| None, SQUARES_HANDED, all_placeholders);
    // A stored form no composer makes (over the longest edge) is refused as one.
    let huge = |f: &FoundImage| stored_as_given(f).map(|s| StoredImage { width: 4000, ..s });
    check_images(zip.clone(), huge, SQUARES_HANDED, all_placeholders);
    // No driver at all (and the whole-file path): every image a placeholder, the same result.
    same_as_whole(&zip);
}

/// The conversations.json of the fixture ZIP, alone.
fn squares_json() -> Vec<u8> {
    let z = fixture("chatgpt-images.zip");
    zip::read_candidates(&z, 1 << 20).unwrap().remove(0).1
}

#[test]
fn a_conversations_json_without_its_zip_keeps_every_image_as_a_placeholder() {
    let (handed, shown) = with_driver(squares_json(), stored_as_given);
    assert!(handed.is_empty());
    assert_eq!(shown[0], "u: [image: cat.png]\n\nWhat is in this picture?");
    assert_eq!(shown[3], "a: [image: a blue square]");
}

#[test]
fn image_files_over_the_limits_are_passed_over_and_the_rest_is_imported() {
    let json = squares_json();
    let png = |b: u8| {
        let mut p = b"\x89PNG\r\n\x1a\n".to_vec();
        p.push(b);
        p
    };
    // A bomb: 40 MB of zeros behind a PNG header, deflated to a few KB (over the 30 MB an image
    // may have); and a file whose checksum is wrong. Neither stops the import.
    let mut bomb = png(0);
    bomb.resize(40 * 1024 * 1024, 0);
    let mut z = zip_of(
        &[
            ("conversations.json", &json, true),
            ("file-CatPng1-cat.png", &bomb, true),
            (
                "dalle-generations/file_00000000dal1e0001-8d3e.png",
                &png(1),
                false,
            ),
        ],
        None,
    );
    let at = z
        .windows(9)
        .rposition(|w| w == b"\x89PNG\r\n\x1a\n\x01")
        .unwrap();
    z[at + 8] = 2;
    let (handed, shown) = with_driver(z, stored_as_given);
    assert!(handed.is_empty(), "{handed:?}");
    assert_eq!(shown[0], "u: [image: cat.png]\n\nWhat is in this picture?");
    assert_eq!(shown.len(), 9);
    // The bomb in conversations.json itself is still refused (zip_bombs_and_broken_zips_get_clear_errors).
}

#[test]
fn a_message_keeps_at_most_the_attachments_a_composer_may_send() {
    let mut v: Value = serde_json::from_slice(&squares_json()).unwrap();
    let parts: Vec<Value> = (0..20)
        .map(|i| json!({"content_type": "image_asset_pointer", "asset_pointer": format!("file-service://file-Many{i}")}))
        .chain([json!("Twenty pictures.")])
        .collect();
    v[0]["mapping"]["u1"]["message"]["content"]["parts"] = Value::Array(parts);
    let json = serde_json::to_vec(&v).unwrap();
    let pngs: Vec<(String, Vec<u8>)> = (0..20)
        .map(|i| {
            (
                format!("file-Many{i}-p.png"),
                vec![0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1a, b'\n', i],
            )
        })
        .collect();
    let mut entries: Vec<(&str, &[u8], bool)> = vec![("conversations.json", &json, true)];
    entries.extend(pngs.iter().map(|(n, b)| (n.as_str(), b.as_slice(), false)));
    let (handed, shown) = with_driver(zip_of(&entries, None), stored_as_given);
    assert_eq!(handed.len(), 20);
    let first = &shown[0];
    assert_eq!(first.matches("(image/png)]").count(), 16, "{first}");
    assert_eq!(first.matches("[image: file-Many").count(), 4, "{first}");
}
