//! Chat and turns ([`Chat`]): send a message, stop, retry, edit, regenerate, page between
//! alternatives, delete a message, preview the next request, keep drafts. The turn driver is
//! `turn.rs`, the branch changes `branch.rs`. A turn goes first on its server: it tells the memory
//! service when it starts and ends, and asks it for the update that may be due after it.
//! Must not import `ui`.

mod branch;
mod preview;
mod service;
mod turn;

pub use preview::{Preview, PreviewDropped, PreviewSection};
pub use service::{Chat, ChatError};
