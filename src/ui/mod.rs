//! The Leptos interface: sidebar, chat pane (about 60%), memory pane (about 40%), settings dialog,
//! context inspector. Views read signals (`state`) and call the `controller`; they never touch
//! IndexedDB or fetch. Must not import `store` or `transport`.

pub mod chat;
pub mod controller;
pub mod inspector;
pub mod memory;
pub mod settings;
pub mod sidebar;
pub mod state;
pub mod sync;
pub mod time;

use crate::session::{Session, DB_NAME};
use controller::Controller;
use leptos::prelude::*;
use leptos::task::spawn_local;
use state::{AppState, EventApplier};
use std::rc::Rc;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;

/// The whole app.
#[component]
pub fn App() -> impl IntoView {
    let state = AppState::new();
    let ctl = Controller::new(state);
    provide_context(state);
    provide_context(ctl);

    let applier = EventApplier::new(
        state,
        Rc::new(move |_| ctl.reload_memory()),
        Rc::new(move |_| ctl.refresh_preview()),
        Rc::new(move |id| ctl.open(id, None)),
    );
    spawn_local(async move {
        let sink: Rc<dyn Fn(crate::session::SessionEvent)> = Rc::new(move |e| applier.apply(e));
        match Session::open(DB_NAME, sink).await {
            Ok(session) => {
                state.settings.set(session.settings());
                ctl.set_session(session.clone());
                state.ready.set(true);
                match session.list_conversations().await {
                    Ok(list) => state.conversations.set(list),
                    Err(e) => state.error.set(Some(e.to_string())),
                }
                if let Some(id) = controller::route() {
                    ctl.open(id, None);
                }
                ctl.refresh_storage();
            }
            Err(e) => state.error.set(Some(e.to_string())),
        }
    });
    install_window_listeners(ctl);
    // A conversation closed (deleted here or in another tab, or the address cleared): the address
    // must stop naming it, or a reload would try to open what is gone, and its draft leaves the
    // composer (it stays stored with the conversation, if that still exists).
    Effect::new(move |was_open: Option<bool>| {
        let open = state.current.with(Option::is_some);
        if was_open == Some(true) && !open {
            controller::set_route(None);
            state.draft_of.set(None);
            state.draft.set(String::new());
        }
        open
    });

    view! {
        <div class="app" class:memory-open=move || state.memory_open.get()>
            <sidebar::Sidebar/>
            <chat::ChatPane/>
            <memory::MemoryPane/>
            <settings::SettingsDialog/>
        </div>
    }
}

/// Back/forward (`hashchange`), online/offline, Ctrl/Cmd+K, and saving the draft on hide.
fn install_window_listeners(ctl: Controller) {
    let Some(w) = web_sys::window() else { return };
    let st = ctl.state;
    st.online.set(w.navigator().on_line());
    let on_hash = Closure::<dyn Fn()>::new(move || match controller::route() {
        Some(id) if st.current.get_untracked().as_deref() != Some(id.as_str()) => {
            ctl.open(id, None)
        }
        Some(_) => {}
        None => {
            st.current.set(None);
            st.messages.set(Vec::new());
        }
    });
    let on_online = Closure::<dyn Fn()>::new(move || {
        st.online.set(true);
        st.notice.set(Some("You are back online.".into()));
    });
    let on_offline = Closure::<dyn Fn()>::new(move || {
        st.online.set(false);
        st.notice.set(Some(
            "You are offline. Everything stored can still be read and searched.".into(),
        ));
    });
    let on_key =
        Closure::<dyn Fn(web_sys::KeyboardEvent)>::new(move |e: web_sys::KeyboardEvent| {
            if (e.ctrl_key() || e.meta_key()) && e.key().eq_ignore_ascii_case("k") {
                e.prevent_default();
                focus_testid("conversation-search");
            } else if e.key() == "Escape" && st.settings_open.get_untracked() {
                // Focus may have left the dialog (a click on the backdrop): Esc still closes it.
                st.settings_open.set(false);
            } else if e.key() == "Escape"
                && !e.default_prevented()
                && !st.settings_open.get_untracked()
                && st.current_streaming_untracked()
            {
                // Esc stops the reply from anywhere on the page (the composer handles its own).
                ctl.stop();
            }
        });
    let on_hide = Closure::<dyn Fn()>::new(move || ctl.save_draft());
    let _ = w.add_event_listener_with_callback("hashchange", on_hash.as_ref().unchecked_ref());
    let _ = w.add_event_listener_with_callback("online", on_online.as_ref().unchecked_ref());
    let _ = w.add_event_listener_with_callback("offline", on_offline.as_ref().unchecked_ref());
    let _ = w.add_event_listener_with_callback("keydown", on_key.as_ref().unchecked_ref());
    let _ = w.add_event_listener_with_callback("pagehide", on_hide.as_ref().unchecked_ref());
    // The app lives as long as the page: these listeners are never removed.
    on_hash.forget();
    on_online.forget();
    on_offline.forget();
    on_key.forget();
    on_hide.forget();
}

/// Focuses the element with this `data-testid`.
pub fn focus_testid(testid: &str) {
    let el = web_sys::window().and_then(|w| w.document()).and_then(|d| {
        d.query_selector(&format!("[data-testid=\"{testid}\"]"))
            .ok()
            .flatten()
    });
    if let Some(el) = el.and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok()) {
        let _ = el.focus();
    }
}
