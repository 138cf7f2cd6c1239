//! Export and import ([`Transfer`]): backups of one conversation or all (`backup.rs`) and importing
//! any file the Import control accepts (`import.rs`). Formats, checks and plans are the engine's
//! (`engine::backup`, `engine::import`). Must not import `ui`; imports no other service.

mod backup;
mod import;
mod service;

pub use import::{ImportCancel, ImportStep, PreparedImport};
pub use service::{Transfer, TransferError};
