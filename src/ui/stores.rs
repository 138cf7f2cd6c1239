//! The stores as one context: [`Stores`] holds every domain's store (each `Copy`), `ui/mod.rs`
//! provides it once, and a view takes the one store it needs through that store's accessor
//! (`use_chat()`, …): one typed context lookup in the wasm instead of one per store type. Must not
//! import `crate::store` or `crate::transport`, nor the session.

use crate::ui::about::store::AboutStore;
use crate::ui::chat::store::composer::ComposerStore;
use crate::ui::chat::store::messages::MessagesStore;
use crate::ui::chat::store::turn::TurnStore;
use crate::ui::chat::store::ChatStore;
use crate::ui::library::store::LibraryStore;
use crate::ui::memory::store::MemoryStore;
use crate::ui::projects::store::ProjectsStore;
use crate::ui::settings::store::SettingsStore;
use crate::ui::shell::store::ShellStore;
use crate::ui::sync::store::SyncStore;
use crate::ui::transfer::store::TransferStore;
use leptos::prelude::*;

/// Every store of the app: what an event may change, and the one context views take their store
/// from.
#[derive(Clone, Copy)]
pub struct Stores {
    /// The app-wide state (banner, network).
    pub shell: ShellStore,
    /// The conversation list and the search.
    pub library: LibraryStore,
    /// The open conversation.
    pub chat: ChatStore,
    /// The composer: its draft, attachments, the message being edited.
    pub composer: ComposerStore,
    /// The open conversation's mounted messages and the paging through them.
    pub messages: MessagesStore,
    /// The turns in flight.
    pub turn: TurnStore,
    /// The memory shown, updates and builds.
    pub memory: MemoryStore,
    /// The settings in force.
    pub settings: SettingsStore,
    /// Sync's state.
    pub sync: SyncStore,
    /// Import and export.
    pub transfer: TransferStore,
    /// The facts about the user (the Memory page).
    pub about: AboutStore,
    /// The projects (the sidebar).
    pub projects: ProjectsStore,
}

/// The stores the app provided (`ui/mod.rs`); only views under the app call it. Actions that span
/// domains are its methods (`ui/flow.rs`).
pub fn use_stores() -> Stores {
    expect_context::<Stores>()
}

/// The shell's store (banner, network, drawer).
pub fn use_shell() -> ShellStore {
    use_stores().shell
}

/// The library's store (the conversation list, the search).
pub fn use_library() -> LibraryStore {
    use_stores().library
}

/// The chat store (the open conversation).
pub fn use_chat() -> ChatStore {
    use_stores().chat
}

/// The composer's store (draft, attachments, the message being edited).
pub fn use_composer() -> ComposerStore {
    use_stores().composer
}

/// The message list's store (the mounted messages, paging, the message to scroll to).
pub fn use_messages() -> MessagesStore {
    use_stores().messages
}

/// The memory store (the memory shown, updates, builds).
pub fn use_memory() -> MemoryStore {
    use_stores().memory
}

/// The settings store.
pub fn use_settings() -> SettingsStore {
    use_stores().settings
}

/// The sync store.
pub fn use_sync() -> SyncStore {
    use_stores().sync
}

/// The transfer store (import, export, storage).
pub fn use_transfer() -> TransferStore {
    use_stores().transfer
}

/// The about-you store (the Memory page).
pub fn use_about() -> AboutStore {
    use_stores().about
}

/// The projects' store (the sidebar's projects, the one open).
pub fn use_projects() -> ProjectsStore {
    use_stores().projects
}
