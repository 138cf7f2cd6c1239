//! The core every domain service shares ([`Core`]): the store, the events out (this tab's UI, the
//! other tabs, sync's capture of local changes), the settings in force, the prompt cache, the
//! clock and ids, and reading the branch on screen. It decides nothing: what to send, save or
//! show is the engine's. Must not import `ui`; imports no service (chat, library, memory,
//! transfer, sync, settings): they build on it.

pub(crate) mod branch;
pub(crate) mod cache;
mod core;
pub(crate) mod digest;
pub(crate) mod error;
pub(crate) mod events;
pub(crate) mod held;
pub(crate) mod image;
pub(crate) mod open;
pub(crate) mod pace;
pub(crate) mod slots;
pub(crate) mod stream;
pub(crate) mod tabs;
pub(crate) mod window;

pub(crate) use self::core::{new_id, now, transport_failure, Capture, Core, SETTINGS_KEY};
