//! The shell's store: what belongs to the app as a whole rather than a domain: whether the database
//! is open, the one banner (an error with what it is about, else a notice), the network status, the
//! drawer and the memory pane on narrow screens, whether the first screen has settled, and whether
//! a new version of the app waits to take over. Its signals are private: views read them and call
//! its actions. Must not import `crate::store` or `crate::transport`, nor the session handle,
//! another store.

use crate::engine::send::{ends_when_online, BACK_ONLINE, WENT_OFFLINE};
use crate::session::ErrorKind;
use crate::ui::prefs;
use leptos::prelude::*;

/// Something went wrong: what to tell the user, and what it is about (which decides the action the
/// banner offers: Settings for a request, "Retry memory update" for a memory update).
#[derive(Clone, Debug, PartialEq)]
pub struct Problem {
    /// What the banner says.
    pub text: String,
    /// What it is about.
    pub kind: ErrorKind,
}

/// The app-wide state. `Copy`, provided as context.
#[derive(Clone, Copy)]
pub struct ShellStore {
    /// False until the database is open.
    ready: RwSignal<bool>,
    /// A message the user can act on, shown in the error banner.
    error: RwSignal<Option<Problem>>,
    /// A transient, non-error notice.
    notice: RwSignal<Option<String>>,
    online: RwSignal<bool>,
    /// The conversation list is shown as a drawer (phones).
    drawer_open: RwSignal<bool>,
    /// The memory panel is open beside the chat on a wide window (remembered in this browser,
    /// `ui::prefs`).
    memory_open: RwSignal<bool>,
    /// The memory panel is open over the chat on a narrow window (closed at every start: it covers
    /// the chat).
    memory_overlay: RwSignal<bool>,
    /// The window is wide enough for the panel beside the chat.
    wide: RwSignal<bool>,
    /// The first screen (composer and conversation list) is shown and the page has been idle since:
    /// what it does not need (the memory pane's sections) mounts then.
    settled: RwSignal<bool>,
    /// A new version of the app is installed and waits for this page to let it take over.
    update_ready: RwSignal<bool>,
}

impl ShellStore {
    /// Not ready, online, nothing to say, drawer closed, the memory panel beside the chat as this
    /// browser left it (open if never chosen), and closed over it on a narrow window.
    pub fn new() -> Self {
        ShellStore {
            ready: RwSignal::new(false),
            error: RwSignal::new(None),
            notice: RwSignal::new(None),
            online: RwSignal::new(true),
            drawer_open: RwSignal::new(false),
            memory_open: RwSignal::new(prefs::memory_panel().unwrap_or(true)),
            memory_overlay: RwSignal::new(false),
            wide: RwSignal::new(prefs::wide_window()),
            settled: RwSignal::new(false),
            update_ready: RwSignal::new(false),
        }
    }

    /// True once the database is open (tracked: read it inside a reactive closure).
    pub fn ready(&self) -> bool {
        self.ready.get()
    }

    /// Reads the error in the banner, if any.
    pub fn with_error<R>(&self, f: impl FnOnce(&Option<Problem>) -> R) -> R {
        self.error.with(f)
    }

    /// Reads the notice in the banner (shown when there is no error).
    pub fn with_notice<R>(&self, f: impl FnOnce(&Option<String>) -> R) -> R {
        self.notice.with(f)
    }

    /// Whether the browser is online.
    pub fn online(&self) -> bool {
        self.online.get()
    }

    /// Whether the conversation list is open as a drawer.
    pub fn drawer_open(&self) -> bool {
        self.drawer_open.get()
    }

    /// Whether the memory panel is open beside the chat (what a wide window shows).
    pub fn memory_open(&self) -> bool {
        self.memory_open.get()
    }

    /// Whether the memory panel is open over the chat (what a narrow window shows).
    pub fn memory_overlay(&self) -> bool {
        self.memory_overlay.get()
    }

    /// Whether the memory panel is on screen at the window's width now.
    pub fn memory_shown(&self) -> bool {
        if self.wide.get() {
            self.memory_open.get()
        } else {
            self.memory_overlay.get()
        }
    }

    /// The window was resized: whether it is wide enough for the panel beside the chat.
    pub fn set_wide(&self, wide: bool) {
        if self.wide.get_untracked() != wide {
            self.wide.set(wide);
        }
    }

    /// Whether the first screen is shown and the page was idle since.
    pub fn settled(&self) -> bool {
        self.settled.get()
    }

    /// Whether a new version of the app is ready ("A new version is ready — Reload").
    pub fn update_ready(&self) -> bool {
        self.update_ready.get()
    }

    /// A new version of the app is installed and waiting.
    pub fn set_update_ready(&self) {
        self.update_ready.set(true);
    }

    /// The database is open.
    pub fn set_ready(&self) {
        self.ready.set(true);
    }

    /// The page has been idle since the first screen: the rest mounts.
    pub fn settle(&self) {
        self.settled.set(true);
    }

    /// Shows an error in the banner (the one place errors are shown; it replaces any notice).
    pub fn fail(&self, text: impl Into<String>, kind: ErrorKind) {
        self.notice.set(None);
        self.error.set(Some(Problem {
            text: text.into(),
            kind,
        }));
    }

    /// Takes the error out of the banner.
    pub fn dismiss_error(&self) {
        self.error.set(None);
    }

    /// Shows a notice.
    pub fn notify(&self, text: String) {
        self.notice.set(Some(text));
    }

    /// Takes the notice out of the banner.
    pub fn dismiss_notice(&self) {
        self.notice.set(None);
    }

    /// The network status as the page opens.
    pub fn set_online(&self, online: bool) {
        self.online.set(online);
    }

    /// The browser is back online: the error that said "offline" is over and gives way to the
    /// notice (other errors stay, with their actions).
    pub fn went_online(&self) {
        self.online.set(true);
        if self
            .error
            .with_untracked(|e| e.as_ref().is_some_and(|p| ends_when_online(&p.text)))
        {
            self.error.set(None);
        }
        self.notice.set(Some(BACK_ONLINE.into()));
    }

    /// The browser went offline: what still works is said.
    pub fn went_offline(&self) {
        self.online.set(false);
        self.notice.set(Some(WENT_OFFLINE.into()));
    }

    /// Opens the drawer (Ctrl+K).
    pub fn open_drawer(&self) {
        self.drawer_open.set(true);
    }

    /// Closes the drawer.
    pub fn close_drawer(&self) {
        self.drawer_open.set(false);
    }

    /// The drawer button.
    pub fn toggle_drawer(&self) {
        self.drawer_open.update(|o| *o = !*o);
    }

    /// The memory button of the chat header: opens or closes the panel at the window's width (beside
    /// the chat: remembered).
    pub fn toggle_memory_pane(&self) {
        if self.wide.get_untracked() {
            self.memory_open.update(|o| *o = !*o);
            prefs::remember_memory_panel(self.memory_open.get_untracked());
        } else {
            self.memory_overlay.update(|o| *o = !*o);
        }
    }

    /// The memory pane's close button.
    pub fn close_memory_pane(&self) {
        if self.wide.get_untracked() {
            self.memory_open.set(false);
            prefs::remember_memory_panel(false);
        } else {
            self.memory_overlay.set(false);
        }
    }
}

impl Default for ShellStore {
    fn default() -> Self {
        Self::new()
    }
}
