//! Which of a llama.cpp server's slots each request goes to. llama.cpp's `llama-server` keeps one
//! KV cache per slot and says how many slots it has at `GET /props` (`total_slots`, beside
//! `default_generation_settings`, [`parse_props`]); a request may name its slot (`id_slot`) and ask
//! to reuse that slot's cache (`cache_prompt`, off by default in builds before mid-2024). Other
//! servers have no `/props` (llama-cpp-python, vLLM and OpenAI answer 404) and are sent neither
//! field: OpenAI refuses request fields it does not know.
//!
//! The rule ([`slot_for`]): every request to a llama.cpp server asks for its slot's cache. With two
//! slots or more, chat turns go to slot 0 and memory updates to slot 1, so an update neither evicts
//! the chat's cache nor makes the next turn wait behind it (the server runs both slots at once); a
//! title goes to the last slot when there are three or more (it is asked once per conversation),
//! else beside memory. With one slot no slot is named: there, the continuation of
//! `engine::prefix` (an update that starts with the chat prompt) is what keeps the one cache useful.
//! Must not import anything outside `crate::engine`.

use crate::engine::context_window::{MAX_WINDOW, MIN_WINDOW};
use serde::Deserialize;
use serde_json::Value;

/// What a llama.cpp server said about itself at `GET /props`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LlamaServer {
    /// How many slots (KV caches) the server keeps, at least 1.
    pub total_slots: u32,
    /// How many tokens each slot's context holds (`default_generation_settings.n_ctx`), when the
    /// server says (`engine::context_window`).
    pub n_ctx: Option<u32>,
}

/// What a request is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// A chat turn (and its Continue).
    Chat,
    /// A memory update (and a catch-up).
    Memory,
    /// A conversation's title.
    Title,
}

/// How a request uses a llama.cpp server's caches: it sends `cache_prompt: true`, and `id_slot`
/// when one is named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotUse {
    pub id_slot: Option<u32>,
}

/// A server that did not answer `/props` at all is asked again after this long (ms).
pub const ASK_AGAIN_MS: i64 = 60_000;

/// Whether a server that did not answer at `failed_at` is asked again at `now`.
pub fn ask_again(failed_at: i64, now: i64) -> bool {
    now.saturating_sub(failed_at) >= ASK_AGAIN_MS
}

/// More slots than this are read as this many (no server has them; the number only picks a slot).
pub const MAX_SLOTS: u32 = 4096;

#[derive(Deserialize)]
struct Props {
    total_slots: u64,
    default_generation_settings: Value,
}

/// The server a `/props` body describes: a JSON object with a positive `total_slots` and a
/// `default_generation_settings` object, as llama-server answers (its `n_ctx` is a slot's context);
/// `None` for anything else.
pub fn parse_props(body: &str) -> Option<LlamaServer> {
    let props: Props = serde_json::from_str(body).ok()?;
    if !props.default_generation_settings.is_object() || props.total_slots == 0 {
        return None;
    }
    let total_slots = u32::try_from(props.total_slots.min(u64::from(MAX_SLOTS))).ok()?;
    let n_ctx = props.default_generation_settings["n_ctx"]
        .as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .filter(|n| (MIN_WINDOW..=MAX_WINDOW).contains(n));
    Some(LlamaServer { total_slots, n_ctx })
}

/// How a request for `purpose` uses `server`'s slots (see the module docs); `None` for a server
/// that is not llama.cpp's, or not known yet.
pub fn slot_for(server: Option<LlamaServer>, purpose: Purpose) -> Option<SlotUse> {
    let slots = server?.total_slots;
    let id_slot = match (purpose, slots) {
        (_, 0 | 1) => None,
        (Purpose::Chat, _) => Some(0),
        (Purpose::Memory, _) | (Purpose::Title, 2) => Some(1),
        (Purpose::Title, n) => Some(n - 1),
    };
    Some(SlotUse { id_slot })
}
