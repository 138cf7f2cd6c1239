//! Chat and turns ([`Chat`]): send a message, stop, retry, edit, regenerate, page between
//! alternatives, delete a message, preview the next request, keep drafts, temporary chats
//! (`temporary.rs`: held in memory only). The turn driver is
//! `turn.rs` (its rounds of tool calls `rounds.rs`), the branch changes `branch.rs`. A turn goes first on its server: it tells the memory
//! service when it starts and ends, and asks it for the update that may be due after it.
//! Must not import `ui`.

mod attach;
mod branch;
mod preview;
mod rounds;
mod service;
mod temporary;
mod turn;

pub use attach::Prepared;
pub use preview::{Preview, PreviewDropped, PreviewSection, PreviewSource};
pub use service::{Chat, ChatError, NEW_CHAT_DRAFT};
