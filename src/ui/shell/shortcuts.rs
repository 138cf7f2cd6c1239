//! The shortcuts sheet (`?`): the keyboard shortcuts as `engine::keys::SHORTCUTS` lists them (the
//! table the key handler reads too), written for this platform (Ctrl or ⌘). A dialog that keeps the
//! focus while open and gives it back to whatever had it when it closes (Esc, `?` or Close). Must not
//! import `crate::store` or `crate::transport`.

use crate::engine::keys::SHORTCUTS;
use crate::ui::behaviour::use_focus_trap;
use leptos::html;
use leptos::prelude::*;

/// Whether this browser runs on a Mac (the sheet writes ⌘ there).
pub fn is_mac() -> bool {
    web_sys::window()
        .and_then(|w| w.navigator().platform().ok())
        .is_some_and(|p| p.starts_with("Mac") || p.starts_with("iP"))
}

/// The sheet, while `open`.
#[component]
pub fn ShortcutsSheet(
    /// Whether the sheet is shown; Close turns it off.
    open: RwSignal<bool>,
) -> impl IntoView {
    view! {
        <Show when=move || open.get()>
            <SheetBody open=open/>
        </Show>
    }
}

#[component]
fn SheetBody(open: RwSignal<bool>) -> impl IntoView {
    let root = NodeRef::<html::Div>::new();
    use_focus_trap(root);
    let close = NodeRef::<html::Button>::new();
    Effect::new(move |_| {
        if let Some(b) = close.get() {
            let _ = b.focus();
        }
    });
    let mac = is_mac();
    view! {
        <div class="dialog-backdrop" aria-hidden="true" on:click=move |_| open.set(false)></div>
        <div class="dialog shortcuts" role="dialog" aria-modal="true" aria-labelledby="shortcuts-title"
            data-testid="shortcuts-sheet" node_ref=root>
            <div class="dialog-head">
                <h2 id="shortcuts-title">"Keyboard shortcuts"</h2>
                <button node_ref=close data-testid="shortcuts-close" on:click=move |_| open.set(false)>"Close"</button>
            </div>
            <table class="shortcut-table">
                <tbody>
                    {SHORTCUTS.iter().map(|s| view! {
                        <tr data-testid="shortcut">
                            <td><kbd>{s.keys(mac)}</kbd></td>
                            <td>{s.label}</td>
                        </tr>
                    }).collect_view()}
                    <tr>
                        <td><kbd>"← →"</kbd></td>
                        <td>"Move between a message's actions (Tab reaches the first)"</td>
                    </tr>
                </tbody>
            </table>
        </div>
    }
}
