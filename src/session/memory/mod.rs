//! Memory ([`Memory`]): live memory updates after turns and the scheduler that lets a chat turn go
//! first (`update.rs`), building memory from a history (`catchup.rs`), and the memory pane's reads
//! and edits (`edits.rs`), the facts about the user (`user.rs`), and the passages of other
//! conversations a new message refers back to (`recall.rs`), and the title the model writes after
//! the first reply (`title.rs`). What is due, what is sent, how a reply is read and merged are the
//! engine's (`engine::memory`). Must not import `ui`; imports no other service.

mod catchup;
mod edits;
mod recall;
mod service;
mod title;
mod update;
mod user;

pub use service::{Memory, MemoryError, MemorySnapshot};
