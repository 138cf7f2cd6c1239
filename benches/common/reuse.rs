//! The conversation of the prompt-reuse figures and its driver, shared by `benches/prompt_reuse.rs`
//! (the real server; its figures are the server's own accounting) and `tests/engine_prefix.rs` (the
//! replies that run recorded, `tests/fixtures/prompt_reuse.json`; reuse computed on the prompts as a
//! single-slot server would read them). The driver makes the app's own decisions in the app's order:
//! each turn's prompt by `engine::prefix::assemble_held` (or, for the old order, `assemble`), the chat
//! request with its reply cap, the title after the first reply, and the memory update when `due` says
//! so (or history overflows), continuing the chat prompt when `engine::prefix::update_continues`
//! says so, applied before the next turn (the user reads the reply meanwhile; the server is idle).
#![allow(dead_code)]

use memoire::engine::assemble::Assembly;
use memoire::engine::memory::*;
use memoire::engine::model::*;
use memoire::engine::prefix::{update_continues, Anchor, LastPrompt};
use memoire::engine::request::{chat_options, reply_cap, RequestOptions};
use memoire::engine::title::title_request;

use super::Memory;

/// What a request was for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Chat,
    Title,
    Memory,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Chat => "chat",
            Kind::Title => "title",
            Kind::Memory => "memory",
        }
    }
}

/// Where the replies come from: a server, or a recording.
pub trait Replies {
    /// The reply to a chat or title request.
    fn reply(&mut self, kind: Kind, prompt: &Prompt, options: &RequestOptions) -> String;
    /// The reply to a memory update (`req`, as a continuation of `after` when there is one), and the
    /// prompt that got it (in the form the server took).
    fn update(
        &mut self,
        req: &UpdateRequest,
        after: Option<&(Prompt, WireMessage)>,
    ) -> (String, Prompt);
}

/// How the prompts are built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// The app's: prompts held on an anchor, updates continuing the chat prompt.
    Held,
    /// Before issue 41: every prompt afresh, every update a prompt of its own.
    Fresh,
}

/// The 30 turns: a user who tells about themselves between questions, long enough that history
/// outgrows the window (written for this figure, apart from the rules' tests).
pub const TURNS: [&str; 30] = [
    "Hello! I'm Marisol, and I just started learning to bake sourdough bread.",
    "My starter is five days old and smells a bit like nail polish. Is that normal?",
    "I live in a small flat in Porto with a very warm kitchen.",
    "How often should I feed the starter when the kitchen is that warm?",
    "What flour works best for a first loaf?",
    "I work nights as a radiographer, so I bake in the mornings after my shift.",
    "Can I leave the dough in the fridge overnight while I'm at work?",
    "My partner Tiago says the last loaf was too sour. How do I make it milder?",
    "What does autolyse mean, and is it worth doing?",
    "How do I know when the bulk fermentation is done?",
    "I have a dog called Pimenta who steals bread crusts from the counter.",
    "Is sourdough crust safe for dogs in small amounts?",
    "What is the difference between a banneton and a simple bowl with a towel?",
    "My oven only goes up to 230 degrees. Is that hot enough?",
    "Should I use a Dutch oven or a baking stone?",
    "How do I get those big open holes in the crumb?",
    "I tried a higher hydration and the dough was like soup. What went wrong?",
    "Can I add olives and rosemary, and when should they go in?",
    "How long does a loaf keep, and should I store it in the fridge?",
    "We are moving from Porto to Braga next month, to a bigger flat.",
    "Will the starter survive a two-hour car trip in a jar?",
    "The new kitchen in Braga is much colder. How do I keep the starter active?",
    "What is a levain, and how is it different from the starter?",
    "How do I score the loaf so it opens nicely?",
    "Can I make sourdough pizza with the discard?",
    "What about crackers from the discard?",
    "Tiago wants a rye loaf for his birthday. Any tips for rye?",
    "How much rye flour can I use before the dough gets too sticky?",
    "Is it normal that rye dough does not rise much?",
    "Thanks! Before I go: what do you remember about me and my baking?",
];

/// One request as it went.
#[derive(Debug, Clone)]
pub struct Sent {
    pub kind: Kind,
    pub prompt: Prompt,
    /// Its reply, as text.
    pub reply: String,
}

/// The conversation of `turns` in `order` with `config`, its replies from `replies`: every request
/// as it went.
pub fn converse(
    config: &MemoryConfig,
    endpoint: &EndpointProfile,
    turns: &[&str],
    order: Order,
    replies: &mut impl Replies,
) -> (Memory, Vec<Sent>) {
    let mut mem = Memory::new(config.clone());
    let mut anchor: Option<Anchor> = None;
    let mut sent = Vec::new();
    let options = chat_options(reply_cap(config), None);
    for (i, user) in turns.iter().enumerate() {
        let (assembly, next) = prompt(&mem, endpoint, user, order, anchor.as_ref());
        anchor = next;
        mem.push(Role::User, user);
        let reply = replies.reply(Kind::Chat, &assembly.prompt, &options);
        let reply = if reply.trim().is_empty() {
            "…".to_string()
        } else {
            reply
        };
        sent.push(Sent {
            kind: Kind::Chat,
            prompt: assembly.prompt.clone(),
            reply: reply.clone(),
        });
        let reply_id = mem.push(Role::Assistant, &reply).id.clone();
        let mut last = Some(LastPrompt {
            endpoint_key: endpoint.key(),
            prompt: assembly.prompt.clone(),
            tokens: assembly.total_tokens,
            reply_id,
        });
        if i == 0 {
            let (prompt, options) = title_request(user, &reply);
            let title = replies.reply(Kind::Title, &prompt, &options);
            sent.push(Sent {
                kind: Kind::Title,
                prompt,
                reply: title,
            });
            // The title's prompt took the slot: nothing of the chat's is left to continue.
            if order == Order::Fresh {
                last = None;
            }
        }
        let due = mem.due() || assembly.history_overflow;
        if !due {
            continue;
        }
        let Some(req) = mem.request() else { continue };
        let after = match order {
            Order::Held => last.as_ref().and_then(|l| {
                update_continues(
                    l,
                    &endpoint.key(),
                    &mem.messages,
                    req.span.to_seq,
                    config.max_message_chars,
                )
                .map(|reply| (l.prompt.clone(), reply))
            }),
            Order::Fresh => None,
        };
        let (text, prompt) = replies.update(&req, after.as_ref());
        sent.push(Sent {
            kind: Kind::Memory,
            prompt,
            reply: text.clone(),
        });
        mem.apply(&req, &text);
    }
    (mem, sent)
}

/// The prompt for `text` as the next message, in `order`; the anchor the next turn holds to.
fn prompt(
    mem: &Memory,
    endpoint: &EndpointProfile,
    text: &str,
    order: Order,
    anchor: Option<&Anchor>,
) -> (Assembly, Option<Anchor>) {
    match order {
        Order::Held => {
            let (a, next) = mem.prompt_held(endpoint, text, anchor);
            (a, Some(next))
        }
        Order::Fresh => (mem.prompt_for(endpoint, text).0, None),
    }
}
