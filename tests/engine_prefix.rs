#![cfg(not(target_arch = "wasm32"))]
//! Prompts a server can reuse (`engine::prefix`, issue 41): when a prompt holds to its anchor and
//! when it moves on, what a memory update continues, and the reuse a single-slot server gets over a
//! whole conversation: the 30 turns of `benches/prompt_reuse.rs`, replayed with the replies its run
//! recorded (`tests/fixtures/prompt_reuse.json`) through the app's own prompt order, each request
//! read as a ChatML server reads it (the cache: the last prompt and its reply).

#[path = "../benches/common/mod.rs"]
mod common;

use common::reuse::{converse, Kind, Order, Replies, Sent, TURNS};
use memoire::engine::assemble::{assemble, AssemblyInput, SectionKind};
use memoire::engine::memory::{MemoryForm, UpdateRequest, MEMORY_REQUEST_OPENING};
use memoire::engine::model::*;
use memoire::engine::prefix::{
    assemble_held, update_continues, Anchor, LastPrompt, MIN_HELD_TOKENS, SLACK_MESSAGES_PER_RECENT,
};
use memoire::engine::request::{OutputForm, RequestOptions};
use memoire::engine::tokens::HeuristicEstimator;

// ---------- builders ----------

fn msg(seq: u64, role: Role, content: &str) -> Message {
    Message {
        id: format!("m{seq}"),
        conversation_id: "c1".into(),
        seq,
        role,
        content: content.into(),
        status: MessageStatus::Complete,
        created_at: seq as i64 * 60_000,
        meta: MessageMeta::default(),
    }
}

/// A conversation of `pairs` exchanges, each reply long enough that prompts pass `MIN_HELD_TOKENS`.
fn talk(pairs: u64) -> Vec<Message> {
    let reply =
        "That depends on a few things, such as the time you have and what you want in the end; \
                 start small, check the result and adjust step by step. "
            .repeat(8);
    (1..=pairs)
        .flat_map(|p| {
            [
                msg(
                    2 * p - 1,
                    Role::User,
                    &format!("Question number {p} about bread?"),
                ),
                msg(2 * p, Role::Assistant, &reply),
            ]
        })
        .collect()
}

fn summary(text: &str, version: u32, covers: u64) -> ConversationSummary {
    ConversationSummary {
        conversation_id: "c1".into(),
        version,
        text: text.into(),
        covers_up_to_seq: covers,
        message_count: covers,
        updated_at: covers as i64 * 60_000,
    }
}

fn fact(id: &str, text: &str) -> UserFact {
    UserFact {
        id: id.into(),
        text: text.into(),
        kind: FactKind::Home,
        claim_key: String::new(),
        source: None,
        valid_from: 0,
        valid_to: None,
        forgotten: None,
        scope: None,
        updated_at: 0,
    }
}

struct Case {
    history: Vec<Message>,
    summary: Option<ConversationSummary>,
    facts: Vec<UserFact>,
    config: MemoryConfig,
}

impl Case {
    fn new(history: &[Message]) -> Self {
        Case {
            history: history.to_vec(),
            summary: None,
            facts: Vec::new(),
            config: MemoryConfig::default(),
        }
    }

    /// The turn after `history` with `text`, on `anchor`: whether it held, and the next anchor.
    fn turn(&self, text: &str, anchor: Option<&Anchor>) -> (bool, Anchor, Prompt) {
        let seq = self.history.last().map_or(1, |m| m.seq + 1);
        let new = msg(seq, Role::User, text);
        let input = AssemblyInput {
            system_prompt: "You are a helpful assistant.",
            summary: self.summary.as_ref(),
            entities: &[],
            history: &self.history,
            new_message: &new,
            config: &self.config,
            protocol: Protocol::OpenAiChat,
            user_facts: &self.facts,
            project: None,
            recall: &[],
        };
        let (a, next) = assemble_held(&input, anchor, &HeuristicEstimator);
        let held = anchor.is_some_and(|x| *x == next && a.prompt.system == x.system);
        (held, next, a.prompt)
    }
}

/// Turn `pairs + 1` of [`talk`] made the anchor; turn `pairs + 1 + more` on it, with `change` applied
/// to that later case: whether it held.
fn check_holds(pairs: u64, more: u64, change: impl Fn(&mut Case), want: bool) {
    let first = talk(pairs);
    let (_, anchor, _) = Case::new(&first).turn("Next question?", None);
    let later = talk(pairs + more);
    let mut case = Case::new(&later);
    change(&mut case);
    let (held, _, _) = case.turn("And another one?", Some(&anchor));
    assert_eq!(held, want, "pairs {pairs} +{more}");
}

// ---------- when a prompt holds ----------

#[test]
fn a_long_enough_prompt_holds_its_start_while_history_grows() {
    check_holds(6, 1, |_| {}, true);
    check_holds(6, 5, |_| {}, true);
    // History from the anchor on no longer fits the budget: it moves on.
    check_holds(6, 30, |_| {}, false);
    // More than SLACK_MESSAGES_PER_RECENT times the last N beyond what a fresh prompt carries (a
    // summary covers the rest), in a context that would hold them all.
    let wide = MemoryConfig {
        context_tokens: 200_000,
        ..MemoryConfig::default()
    };
    let first = talk(6);
    let mut case = Case::new(&first);
    case.config = wide.clone();
    let (_, anchor, _) = case.turn("Next?", None);
    let slack = (SLACK_MESSAGES_PER_RECENT * wide.recent_messages) as u64;
    for (more, want) in [(slack / 2 - 1, true), (slack / 2 + 1, false)] {
        let later = talk(6 + more);
        let mut case = Case::new(&later);
        case.config = wide.clone();
        case.summary = Some(summary("The user asks about bread.", 1, 2 * (6 + more)));
        assert_eq!(
            case.turn("More?", Some(&anchor)).0,
            want,
            "{more} more pairs"
        );
    }
}

#[test]
fn a_short_prompt_is_assembled_afresh() {
    let short = vec![msg(1, Role::User, "Hi"), msg(2, Role::Assistant, "Hello!")];
    let (_, anchor, _) = Case::new(&short).turn("How are you?", None);
    let mut more = short.clone();
    more.extend([
        msg(3, Role::User, "How are you?"),
        msg(4, Role::Assistant, "Fine."),
    ]);
    let (held, _, _) = Case::new(&more).turn("Good.", Some(&anchor));
    assert!(!held, "under {MIN_HELD_TOKENS} tokens nothing is held");
}

#[test]
fn a_held_prompt_starts_with_the_one_before_it() {
    let first = talk(6);
    let (_, anchor, before) = Case::new(&first).turn("Question number 7 about bread?", None);
    let later = talk(8);
    let (held, _, after) = Case::new(&later).turn("And another one?", Some(&anchor));
    assert!(held);
    assert_eq!(after.system, before.system);
    assert_eq!(after.messages[..before.messages.len()], before.messages[..]);
}

#[test]
fn a_landed_summary_waits_while_history_holds_what_it_covers() {
    let s = summary("The user asks about bread.", 1, 8);
    check_holds(6, 2, |c| c.summary = Some(s.clone()), true);
}

#[test]
fn what_is_no_longer_true_moves_the_prompt_on() {
    // A fact the anchor carries, forgotten since.
    let facts = [fact("f1", "I live in Porto.")];
    let first = talk(6);
    let mut case = Case::new(&first);
    case.facts = facts.to_vec();
    let (_, anchor, before) = case.turn("Next question?", None);
    assert!(before.system.contains("I live in Porto."));
    let mut forgotten = facts.clone();
    forgotten[0].forgotten = Some(1);
    let later = talk(7);
    let mut case = Case::new(&later);
    case.facts = forgotten.to_vec();
    let (held, _, after) = case.turn("And another one?", Some(&anchor));
    assert!(!held && !after.system.contains("I live in Porto."));

    // A summary rolled back or cleared.
    let s2 = summary("The user lives in Porto.", 2, 4);
    let s1 = summary("The user lives in Porto.", 1, 4);
    let first = talk(6);
    let mut case = Case::new(&first);
    case.summary = Some(s2.clone());
    let (_, anchor, _) = case.turn("Next?", None);
    for back in [None, Some(s1.clone())] {
        let later = talk(7);
        let mut case = Case::new(&later);
        case.summary = back;
        assert!(!case.turn("More?", Some(&anchor)).0);
    }

    // A user message that makes a sentence of the summary past.
    let later: Vec<Message> = talk(7)
        .into_iter()
        .map(|mut m| {
            if m.seq == 13 {
                m.content = "I moved to Braga last week.".into();
            }
            m
        })
        .collect();
    let mut case = Case::new(&later);
    case.summary = Some(s2.clone());
    let (held, _, after) = case.turn("More?", Some(&anchor));
    assert!(
        !held,
        "the move makes 'lives in Porto' past: {}",
        after.system
    );
}

#[test]
fn other_settings_move_the_prompt_on() {
    check_holds(6, 1, |c| c.config.context_tokens = 16_000, false);
    check_holds(6, 1, |c| c.config.recent_messages = 4, false);
}

// ---------- what a memory update continues ----------

fn last(tokens: u32, reply_id: &str) -> LastPrompt {
    LastPrompt {
        endpoint_key: "openai-chat|http://x/v1|m".into(),
        prompt: Prompt {
            system: "sys".into(),
            messages: vec![WireMessage::text(Role::User, "q".into())],
        },
        tokens,
        reply_id: reply_id.into(),
    }
}

#[test]
fn an_update_continues_the_chat_prompt_only_on_its_server_after_its_reply() {
    let messages = talk(6);
    let key = "openai-chat|http://x/v1|m";
    let check = |l: LastPrompt, key: &str, to: u64| {
        update_continues(&l, key, &messages, to, 2000).is_some()
    };
    assert!(check(last(2000, "m12"), key, 12));
    assert!(
        !check(last(2000, "m12"), "openai-chat|http://other/v1|m", 12),
        "another server"
    );
    assert!(
        !check(last(500, "m12"), key, 12),
        "too short to be worth it"
    );
    assert!(
        !check(last(2000, "m10"), key, 12),
        "not the newest reply the update reads"
    );
    let mut with_image = last(2000, "m12");
    with_image.prompt.messages[0].images.push(WireImage {
        name: "a.png".into(),
        mime: "image/png".into(),
        hash: "h".into(),
        width: 1,
        height: 1,
        size: 1,
        data: String::new(),
    });
    assert!(!check(with_image, key, 12), "the update reads no image");
}

#[test]
fn a_continued_update_is_the_chat_prompt_its_reply_and_the_instruction() {
    let messages = talk(3);
    let req = memoire::engine::memory::build_update_request(
        None,
        &messages,
        &[],
        &memoire::engine::memory::UpdateLimits::default(),
    )
    .unwrap();
    let chat = Prompt {
        system: "You are a helpful assistant.".into(),
        messages: vec![WireMessage::text(
            Role::User,
            "Question number 3 about bread?".into(),
        )],
    };
    let reply = WireMessage::text(Role::Assistant, messages[5].content.clone());
    for form in [
        MemoryForm::Sections,
        MemoryForm::Constrained(OutputForm::JsonObject),
    ] {
        let p = req.prompt_after(form, &chat, &reply);
        assert_eq!(p.system, chat.system);
        assert_eq!(p.messages[..2], [chat.messages[0].clone(), reply.clone()]);
        let ask = &p.messages[2];
        assert_eq!(ask.role, Role::User);
        assert!(ask.content.starts_with(MEMORY_REQUEST_OPENING), "{form:?}");
        assert!(ask.content.contains("Question number 1 about bread?"));
    }
}

// ---------- a whole conversation, as a single-slot server reads it ----------

/// A request as a ChatML server renders it, up to where the reply starts.
fn chatml(p: &Prompt) -> String {
    let mut out = String::new();
    if !p.system.is_empty() {
        out.push_str(&format!("<|im_start|>system\n{}<|im_end|>\n", p.system));
    }
    for m in &p.messages {
        let role = match m.role {
            Role::Assistant => "assistant",
            _ => "user",
        };
        out.push_str(&format!("<|im_start|>{role}\n{}<|im_end|>\n", m.content));
    }
    out.push_str("<|im_start|>assistant\n");
    out
}

/// (characters read from the cache, characters sent) over `sent`, one slot: each request reuses the
/// longest common prefix with the last one and its reply.
fn single_slot(sent: &[Sent]) -> (usize, usize) {
    let mut cache = String::new();
    let (mut reused, mut total) = (0, 0);
    for s in sent {
        let text = chatml(&s.prompt);
        let common = cache
            .bytes()
            .zip(text.bytes())
            .take_while(|(a, b)| a == b)
            .count();
        reused += common;
        total += text.len();
        cache = text + &s.reply;
    }
    (reused, total)
}

/// The replies of the recorded run, by kind, in order (a replay whose decisions differ from the
/// run's still gets a reply of each kind: the last one again once those of its kind run out).
struct Recorded {
    replies: std::collections::HashMap<String, std::collections::VecDeque<String>>,
    forms: std::collections::VecDeque<String>,
}

impl Recorded {
    fn load() -> Recorded {
        let text = include_str!("fixtures/prompt_reuse.json");
        let v: serde_json::Value = serde_json::from_str(text).unwrap();
        let mut replies: std::collections::HashMap<String, std::collections::VecDeque<String>> =
            Default::default();
        for r in v["replies"].as_array().unwrap() {
            let kind = r["kind"].as_str().unwrap().to_string();
            let text = r["reply"].as_str().unwrap().to_string();
            replies.entry(kind).or_default().push_back(text);
        }
        let forms = v["forms"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap().to_string())
            .collect();
        Recorded { replies, forms }
    }

    fn next(&mut self, kind: Kind) -> String {
        let queue = self
            .replies
            .get_mut(kind.as_str())
            .expect("replies of each kind");
        if queue.len() > 1 {
            queue.pop_front().unwrap()
        } else {
            queue.front().cloned().unwrap_or_default()
        }
    }
}

impl Replies for Recorded {
    fn reply(&mut self, kind: Kind, _: &Prompt, _: &RequestOptions) -> String {
        self.next(kind)
    }
    fn update(
        &mut self,
        req: &UpdateRequest,
        after: Option<&(Prompt, WireMessage)>,
    ) -> (String, Prompt) {
        let form = self
            .forms
            .front()
            .and_then(|f| MemoryForm::parse(f))
            .unwrap_or(MemoryForm::Sections);
        if self.forms.len() > 1 {
            self.forms.pop_front();
        }
        let prompt = match after {
            Some((chat, reply)) => req.prompt_after(form, chat, reply),
            None => req.prompt_for(form),
        };
        (self.next(Kind::Memory), prompt)
    }
}

#[test]
fn the_recorded_conversation_reuses_what_a_single_slot_server_read() {
    let endpoint = common::endpoint("http://127.0.0.1:1/v1");
    let config = MemoryConfig::default();
    let (_, held) = converse(
        &config,
        &endpoint,
        &TURNS,
        Order::Held,
        &mut Recorded::load(),
    );
    let (reused, total) = single_slot(&held);
    let held_ratio = reused as f64 / total as f64;
    let (_, fresh) = converse(
        &config,
        &endpoint,
        &TURNS,
        Order::Fresh,
        &mut Recorded::load(),
    );
    let (f_reused, f_total) = single_slot(&fresh);
    let fresh_ratio = f_reused as f64 / f_total as f64;
    eprintln!(
        "held: {} requests, reuse {held_ratio:.3}, read again {}; fresh: {} requests, reuse {fresh_ratio:.3}, read again {}",
        held.len(),
        total - reused,
        fresh.len(),
        f_total - f_reused
    );
    assert!(
        held.iter().any(|s| s.kind == Kind::Memory),
        "memory updates ran"
    );
    assert!(held_ratio >= 0.85, "the app's order reuses {held_ratio:.3}");
    assert!(
        (total - reused) * 2 < f_total - f_reused,
        "the app's order reads again less than half of what the old one did"
    );
}

#[test]
fn fresh_assembly_is_unchanged_for_short_conversations() {
    // The anchor never changes what a short conversation sends.
    let short = vec![msg(1, Role::User, "Hi"), msg(2, Role::Assistant, "Hello!")];
    let new = msg(3, Role::User, "How are you?");
    let config = MemoryConfig::default();
    let input = AssemblyInput {
        system_prompt: "sys",
        summary: None,
        entities: &[],
        history: &short,
        new_message: &new,
        config: &config,
        protocol: Protocol::OpenAiChat,
        user_facts: &[],
        project: None,
        recall: &[],
    };
    let fresh = assemble(&input, &HeuristicEstimator);
    let (_, anchor) = assemble_held(&input, None, &HeuristicEstimator);
    let (held, _) = assemble_held(&input, Some(&anchor), &HeuristicEstimator);
    assert_eq!(held.prompt, fresh.prompt);
    assert!(held.section(SectionKind::History).is_some());
}

/// The same conversation in a small context, as the real-model pace test sets it (1,400 tokens,
/// 400 for the reply, the last 2 messages, an update after every exchange): history outgrows the
/// window every few turns and the prompt moves on, yet most of what is sent is still read from the
/// one cache (the old order reads almost all of it again).
#[test]
fn a_small_context_still_reuses_most_of_what_it_sends() {
    let endpoint = common::endpoint("http://127.0.0.1:1/v1");
    let config = MemoryConfig {
        context_tokens: 1400,
        reply_reserve_tokens: 400,
        recent_messages: 2,
        summary_every_pairs: 1,
        ..MemoryConfig::default()
    };
    let ratio = |order| {
        let (_, sent) = converse(&config, &endpoint, &TURNS, order, &mut Recorded::load());
        let (reused, total) = single_slot(&sent);
        reused as f64 / total as f64
    };
    let (held, fresh) = (ratio(Order::Held), ratio(Order::Fresh));
    eprintln!("small context: held {held:.3}, fresh {fresh:.3}");
    assert!(held >= 0.6, "the app's order reuses {held:.3}");
    assert!(fresh < 0.1, "the old order reuses {fresh:.3}");
}
