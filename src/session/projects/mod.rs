//! Projects ([`Projects`]): create, rename, set instructions, delete, and moving a conversation in
//! or out of one. What each means (names, the tombstone, what deleting does to conversations and
//! facts) is the engine's (`engine::project`). Must not import `ui`; imports no other service.

mod service;

pub use service::{Projects, ProjectsError};
