//! What this browser remembers of the layout, in local storage: whether the memory panel is open,
//! and whether the memory pane's "What the model receives" is open. Browser plumbing only: it holds
//! no state (the shell's store does) and decides nothing. Must not import `crate::store`,
//! `crate::transport` or the session, nor any store.

/// The key of the memory panel's state ("open" or "closed").
const MEMORY_PANEL_KEY: &str = "memoire.memory-panel";
/// The key of the inspector's state ("open" or "closed").
const INSPECTOR_KEY: &str = "memoire.inspector";

fn storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok()?
}

fn read(key: &str) -> Option<bool> {
    match storage()?.get_item(key).ok()??.as_str() {
        "open" => Some(true),
        "closed" => Some(false),
        _ => None,
    }
}

fn write(key: &str, open: bool) {
    if let Some(s) = storage() {
        let _ = s.set_item(key, if open { "open" } else { "closed" });
    }
}

/// Whether the memory panel was left open (`None`: never chosen in this browser).
pub fn memory_panel() -> Option<bool> {
    read(MEMORY_PANEL_KEY)
}

/// Remembers the memory panel open or closed.
pub fn remember_memory_panel(open: bool) {
    write(MEMORY_PANEL_KEY, open);
}

/// Whether "What the model receives" was left open (`None`: never chosen).
pub fn inspector() -> Option<bool> {
    read(INSPECTOR_KEY)
}

/// Remembers "What the model receives" open or closed.
pub fn remember_inspector(open: bool) {
    write(INSPECTOR_KEY, open);
}

/// Whether the window is wide enough to show the memory panel beside the chat by default.
pub fn wide_window() -> bool {
    web_sys::window()
        .and_then(|w| w.match_media("(min-width: 1001px)").ok().flatten())
        .is_some_and(|m| m.matches())
}
