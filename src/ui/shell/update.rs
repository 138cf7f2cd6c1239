//! A new version of the app: the page's side of `index.html`'s service-worker glue. Hears that a
//! new version is installed and waiting (the window event `memoire-update-ready`, or the flag
//! `memoireUpdateReady` when it came before the app listened), shows "A new version is ready —
//! Reload", and on Reload saves the composer's draft, then asks the glue to let the waiting worker
//! take over (the window event `memoire-apply-update`; the page reloads once the new worker controls
//! it). Must not import `crate::store` or `crate::transport`.

use super::store::ShellStore;
use crate::ui::stores::{use_composer, use_shell};
use leptos::prelude::*;
use leptos::task::spawn_local;
use wasm_bindgen::JsValue;

/// Marks the shell's store when a new version waits, now or later; the listener goes with the app.
pub fn use_update_ready(shell: ShellStore) {
    let waiting = web_sys::window()
        .and_then(|w| js_sys::Reflect::get(&w, &JsValue::from_str("memoireUpdateReady")).ok())
        .is_some_and(|v| v.is_truthy());
    if waiting {
        shell.set_update_ready();
    }
    let on_ready =
        window_event_listener_untyped("memoire-update-ready", move |_| shell.set_update_ready());
    on_cleanup(move || on_ready.remove());
}

/// "A new version is ready — Reload", while one waits.
#[component]
pub fn UpdateReady() -> impl IntoView {
    let shell = use_shell();
    let composer = use_composer();
    let reloading = RwSignal::new(false);
    let reload = move |_| {
        reloading.set(true);
        let saved = composer.draft_saved();
        spawn_local(async move {
            saved.await;
            apply_update();
        });
    };
    view! {
        <Show when=move || shell.update_ready()>
            <div class="update-ready" role="status" data-testid="update-ready">
                <span>"A new version is ready —"</span>
                <button data-testid="update-reload" disabled=move || reloading.get()
                    on:click=reload>"Reload"</button>
            </div>
        </Show>
    }
}

/// Asks `index.html`'s glue to let the waiting worker take over and reload the page.
fn apply_update() {
    if let (Some(w), Ok(e)) = (
        web_sys::window(),
        web_sys::Event::new("memoire-apply-update"),
    ) {
        let _ = w.dispatch_event(&e);
    }
}
