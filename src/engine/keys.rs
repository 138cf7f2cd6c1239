//! Which key does what: the app's keyboard shortcuts as one table (`SHORTCUTS`, read both by the
//! key handler through [`action_for`] and by the shortcuts sheet, so the sheet cannot drift from what
//! the keys do), and the roving focus inside a group that is one tab stop (a message's actions, the
//! model picker's list): [`roving_step`]. Pure: the ui passes what it knows of the page (is a dialog
//! open, does focus sit in a text field, is a reply streaming) as a [`KeyScene`]. Must not import
//! anything outside `crate::engine`.

/// A key press as the browser reports it (`KeyboardEvent.key` and its modifiers).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyPress {
    /// `KeyboardEvent.key` ("k", "K", "Escape", "?", "ArrowDown", …).
    pub key: String,
    /// Ctrl held.
    pub ctrl: bool,
    /// Cmd (Meta) held.
    pub meta: bool,
    /// Shift held.
    pub shift: bool,
    /// Alt (Option) held.
    pub alt: bool,
}

/// What the page is doing when the key is pressed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeyScene {
    /// Focus is in a text field (input, textarea, select, editable content): plain keys type.
    pub in_text_field: bool,
    /// The shortcuts sheet is open.
    pub sheet_open: bool,
    /// The settings dialog is open.
    pub dialog_open: bool,
    /// The Memory page is open.
    pub page_open: bool,
    /// The conversation drawer (phones) is open.
    pub drawer_open: bool,
    /// A reply is being written.
    pub streaming: bool,
    /// A menu or list box (Backup, the model picker) is open: Esc is its own, and closes it.
    pub popup_open: bool,
    /// Something nearer the focus (a menu, the search box, a rename field) already took the key.
    pub handled: bool,
}

/// What a key asks the app to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyAction {
    /// Start a new conversation and put the focus in the composer.
    NewChat,
    /// Put the focus in the composer.
    FocusComposer,
    /// Show the search box (opening the drawer on a phone) and focus it.
    Search,
    /// Stop the reply being written.
    Stop,
    /// Show the shortcuts sheet.
    ShowShortcuts,
    /// Close the shortcuts sheet.
    CloseShortcuts,
    /// Close the settings dialog.
    CloseSettings,
    /// Close the Memory page.
    ClosePage,
    /// Close the conversation drawer.
    CloseDrawer,
}

/// Which modifier a shortcut needs besides Shift.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Modifier {
    /// None.
    None,
    /// Ctrl, or Cmd on a Mac (either is taken everywhere).
    Primary,
}

/// One row of the shortcuts table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shortcut {
    /// What it does.
    pub action: KeyAction,
    /// The key (`KeyboardEvent.key`, compared without case for letters).
    pub key: &'static str,
    /// Ctrl/Cmd needed.
    pub modifier: Modifier,
    /// Shift needed.
    pub shift: bool,
    /// Taken while focus is in a text field.
    pub in_text_fields: bool,
    /// What the sheet says it does.
    pub label: &'static str,
}

/// Every shortcut, in the order the sheet lists them. Esc while a reply streams stops it (after
/// closing whatever is open above the chat: see [`action_for`]).
pub const SHORTCUTS: &[Shortcut] = &[
    Shortcut {
        action: KeyAction::NewChat,
        key: "o",
        modifier: Modifier::Primary,
        shift: true,
        in_text_fields: true,
        label: "New chat",
    },
    Shortcut {
        action: KeyAction::FocusComposer,
        key: "Escape",
        modifier: Modifier::None,
        shift: true,
        in_text_fields: true,
        label: "Focus the message box",
    },
    Shortcut {
        action: KeyAction::Search,
        key: "k",
        modifier: Modifier::Primary,
        shift: false,
        in_text_fields: true,
        label: "Search conversations",
    },
    Shortcut {
        action: KeyAction::Stop,
        key: "Escape",
        modifier: Modifier::None,
        shift: false,
        in_text_fields: true,
        label: "Stop the reply being written",
    },
    Shortcut {
        action: KeyAction::ShowShortcuts,
        key: "?",
        modifier: Modifier::None,
        shift: false,
        in_text_fields: false,
        label: "Show these shortcuts",
    },
];

impl Shortcut {
    /// Whether `press` is this shortcut (Shift is not compared for `?`, which most layouts type
    /// with Shift).
    pub fn matches(&self, press: &KeyPress) -> bool {
        let primary = press.ctrl || press.meta;
        let modifier_ok = match self.modifier {
            Modifier::None => !primary,
            Modifier::Primary => primary,
        };
        let shift_ok = self.key == "?" || press.shift == self.shift;
        modifier_ok && shift_ok && !press.alt && press.key.eq_ignore_ascii_case(self.key)
    }

    /// How the sheet writes the keys: "Ctrl+Shift+O", or "⌘⇧O" on a Mac.
    pub fn keys(&self, mac: bool) -> String {
        let key = match self.key {
            "Escape" => "Esc".to_string(),
            k if k.len() == 1 => k.to_ascii_uppercase(),
            k => k.to_string(),
        };
        let primary = self.modifier == Modifier::Primary;
        if mac {
            let mut s = String::new();
            if primary {
                s.push('⌘');
            }
            if self.shift {
                s.push('⇧');
            }
            return s + &key;
        }
        let mut parts = Vec::new();
        if primary {
            parts.push("Ctrl");
        }
        if self.shift {
            parts.push("Shift");
        }
        parts.push(&key);
        parts.join("+")
    }
}

/// What `press` does in `scene`, if anything. Esc closes what is open, nearest first (the sheet,
/// the settings dialog, the Memory page, the drawer), and stops a streaming reply once nothing is
/// left to close (the drawer closing with a reply streaming stops it too: the user pressed Esc at
/// the chat). Any other key that something nearer the focus already took does nothing more.
pub fn action_for(press: &KeyPress, scene: &KeyScene) -> Vec<KeyAction> {
    let plain_esc = press.key == "Escape" && !press.shift && !press.ctrl && !press.meta;
    if plain_esc {
        // An open menu takes its Esc (whichever listener hears it first: `handled` when it
        // already closed, `popup_open` before): nothing else closes, and the reply keeps streaming.
        if scene.popup_open || scene.handled {
            return Vec::new();
        }
        return escape(scene);
    }
    if scene.handled {
        return Vec::new();
    }
    let Some(s) = SHORTCUTS
        .iter()
        .find(|s| s.matches(press) && s.action != KeyAction::Stop)
    else {
        return Vec::new();
    };
    if scene.in_text_field && !s.in_text_fields {
        return Vec::new();
    }
    if s.action == KeyAction::ShowShortcuts && scene.sheet_open {
        return vec![KeyAction::CloseShortcuts];
    }
    vec![s.action]
}

fn escape(scene: &KeyScene) -> Vec<KeyAction> {
    let close = if scene.sheet_open {
        Some(KeyAction::CloseShortcuts)
    } else if scene.dialog_open {
        Some(KeyAction::CloseSettings)
    } else if scene.page_open {
        Some(KeyAction::ClosePage)
    } else if scene.drawer_open {
        Some(KeyAction::CloseDrawer)
    } else {
        None
    };
    let stops = scene.streaming && matches!(close, None | Some(KeyAction::CloseDrawer));
    close
        .into_iter()
        .chain(stops.then_some(KeyAction::Stop))
        .collect()
}

/// Where focus goes inside a group of `count` items that is one tab stop, from item `at`:
/// ArrowRight/ArrowDown the next (wrapping), ArrowLeft/ArrowUp the previous (wrapping), Home the
/// first, End the last; `None` for any other key (or an empty group).
pub fn roving_step(key: &str, at: usize, count: usize) -> Option<usize> {
    if count == 0 {
        return None;
    }
    let at = at.min(count - 1);
    match key {
        "ArrowRight" | "ArrowDown" => Some((at + 1) % count),
        "ArrowLeft" | "ArrowUp" => Some((at + count - 1) % count),
        "Home" => Some(0),
        "End" => Some(count - 1),
        _ => None,
    }
}

/// Enter was pressed in index.html's static first screen, before the app was there: whether the
/// app, once ready, sends what the composer then holds (as the Send button would). Only a message
/// that can go: not blank, not `/clear` (which asks first, in the composer), and only to a
/// configured endpoint (otherwise the text just stays in the composer).
pub fn send_on_start(draft: &str, has_endpoint: bool) -> bool {
    let text = draft.trim();
    has_endpoint && !text.is_empty() && text != "/clear"
}
