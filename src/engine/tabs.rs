//! What changed in shared data, as the other tabs and sync hear it ([`Change`]), and the versioned
//! wire that carries it between tabs ([`encode`], [`decode`]).
//!
//! Tabs of one origin may run different builds for a while (a tab left open across a deploy). The
//! wire is an envelope `{"v": 1, "conversation": …, "change": {"<kind>": …}}`: the version
//! it was written in, the conversation the change is about (outside the change, so a tab that cannot
//! read the change still knows what to read again), and the change. A tab one version older reads a
//! newer tab's message: fields it does not know are ignored, and a change it cannot read at all
//! (a kind added later, a shape changed) is [`Heard::Unreadable`] with its conversation, which the
//! tab reads again from the store (the store is the truth; the wire only says where to look).
//! A change of a later major version than this build knows is unreadable the same way. Must not
//! import anything outside `crate::engine`.

use crate::engine::model::{Conversation, Message};
use crate::engine::settings::Settings;
use serde::{Deserialize, Serialize};

/// The wire version this build writes. Bump it when a change's shape changes so that an older build
/// could misread it (adding a kind or an optional field does not need a bump: older builds ignore
/// what they do not know).
pub const WIRE_VERSION: u32 = 1;

/// A change of data every tab shares (and sync replicates).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
/// Externally tagged (`{"message_added": {…}}`, `"user_facts"`): an adjacently tagged enum is read
/// through serde's buffered content, a second copy of every model type's deserializer in the wasm.
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// A conversation record was stored or changed.
    Conversation(Conversation),
    /// Many conversation records at once (an import's slice).
    Conversations(Vec<Conversation>),
    ConversationRemoved(String),
    MessageAdded(Message),
    /// A message's content, status or metadata changed (a streaming reply growing or finishing).
    MessageProgress(Message),
    MessagesCleared(String),
    /// The branch on screen of a conversation changed.
    BranchChanged(String),
    MemoryUpdating {
        conversation_id: String,
        running: bool,
    },
    MemoryChanged(String),
    /// Settings were saved (the API key travels too: it never leaves this origin).
    Settings(Box<Settings>),
    /// The facts about the user changed (read them again from the store).
    UserFacts,
    /// The projects changed (read them again from the store). A tab of an older build cannot
    /// read this kind: it hears an unreadable change about no conversation, and reads its
    /// projects again at its next reload.
    Projects,
}

impl Change {
    /// The conversation the change is about, if one.
    pub fn conversation(&self) -> Option<&str> {
        match self {
            Change::Conversation(c) => Some(&c.id),
            Change::MessageAdded(m) | Change::MessageProgress(m) => Some(&m.conversation_id),
            Change::ConversationRemoved(id)
            | Change::MessagesCleared(id)
            | Change::BranchChanged(id)
            | Change::MemoryChanged(id) => Some(id),
            Change::MemoryUpdating {
                conversation_id, ..
            } => Some(conversation_id),
            Change::Conversations(_)
            | Change::Settings(_)
            | Change::UserFacts
            | Change::Projects => None,
        }
    }
}

/// The envelope on the wire.
#[derive(Serialize, Deserialize)]
struct Envelope<C> {
    v: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    conversation: Option<String>,
    change: C,
}

/// What a tab heard from another.
#[derive(Debug, Clone, PartialEq)]
pub enum Heard {
    Change(Change),
    /// A change this build cannot read (a newer build's): the conversation it is about, if it
    /// names one, to be read again from the store.
    Unreadable {
        conversation: Option<String>,
    },
    /// Not a message of this wire at all.
    Garbage,
}

/// The wire text of a change.
pub fn encode(change: &Change) -> String {
    let envelope = Envelope {
        v: WIRE_VERSION,
        conversation: change.conversation().map(str::to_string),
        change,
    };
    serde_json::to_string(&envelope).unwrap_or_default()
}

/// Reads a wire text (see the module header for what a newer build's message reads as). The text
/// is read as text twice (the envelope's head, then the change) rather than through a
/// `serde_json::Value`: a `Value` deserializer of every model type would be a second copy in the
/// wasm of the one the app already has for text (settings and backups are read from text too).
pub fn decode(text: &str) -> Heard {
    let Ok(head) = serde_json::from_str::<Envelope<serde::de::IgnoredAny>>(text) else {
        return Heard::Garbage;
    };
    let unreadable = Heard::Unreadable {
        conversation: head.conversation,
    };
    if head.v > WIRE_VERSION {
        return unreadable;
    }
    match serde_json::from_str::<Envelope<Change>>(text) {
        Ok(envelope) => Heard::Change(envelope.change),
        Err(_) => unreadable,
    }
}
