//! The Leptos interface: sidebar, chat pane (about 60%), memory pane (about 40%), settings dialog,
//! context inspector. Views read signals (`state`) and call the `controller`; they never touch
//! IndexedDB or fetch, and only the controller calls the session. Reusable browser behaviours are
//! in `behaviour`. Must not import `store` or `transport`.

pub mod backup;
pub mod behaviour;
pub mod chat;
pub mod composer;
pub mod controller;
pub mod highlight;
pub mod inspector;
pub mod memory;
pub mod memory_build;
pub mod messages;
pub mod model_picker;
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
        Rc::new(move |_| {
            ctl.reload_memory();
            ctl.refresh_preview();
        }),
        Rc::new(move |_| ctl.refresh_preview()),
        Rc::new(move |id| ctl.open(id, None)),
        Rc::new(move |id| ctl.show_branch(id)),
    );
    spawn_local(async move {
        let sink: Rc<dyn Fn(crate::session::SessionEvent)> = Rc::new(move |e| applier.apply(e));
        match Session::open(DB_NAME, sink).await {
            Ok(session) => ctl.start(session),
            Err(e) => state.fail(e.to_string(), e.kind()),
        }
    });
    use_app_keys(ctl);
    use_page_lifecycle(ctl);
    // A conversation closed (deleted here or in another tab, or the address cleared): the address
    // must stop naming it, or a reload would try to open what is gone.
    Effect::new(move |was_open: Option<bool>| {
        let open = state.current.with(Option::is_some);
        if was_open == Some(true) && !open {
            controller::set_route(None);
        }
        open
    });

    view! {
        <a class="skip-link" href="#composer" data-testid="skip-to-composer"
            on:click=move |ev| { ev.prevent_default(); focus_testid("composer-input"); }>
            "Skip to the message box"
        </a>
        <div class="app" class:memory-open=move || state.memory_open.get()
            class:sidebar-open=move || state.sidebar_open.get()>
            <sidebar::Sidebar/>
            <div class="drawer-backdrop" data-testid="drawer-backdrop" aria-hidden="true"
                on:click=move |_| state.sidebar_open.set(false)></div>
            <chat::ChatPane/>
            <memory::MemoryPane/>
            <settings::SettingsDialog/>
        </div>
    }
}

/// Back/forward (`hashchange`), online/offline, and saving the draft when the page is hidden;
/// removed when the app goes.
fn use_page_lifecycle(ctl: Controller) {
    let st = ctl.state;
    if let Some(w) = web_sys::window() {
        st.online.set(w.navigator().on_line());
    }
    let on_hash =
        window_event_listener(leptos::ev::hashchange, move |_| match controller::route() {
            Some(id) if !st.is_current(&id) => ctl.open(id, None),
            Some(_) => {}
            None => ctl.close(),
        });
    let on_online = window_event_listener(leptos::ev::online, move |_| {
        st.online.set(true);
        // The error that said "offline" is over: it gives way to the notice (other errors stay,
        // with their actions).
        if st.error.with_untracked(|e| {
            e.as_ref()
                .is_some_and(|p| p.text == controller::OFFLINE_SEND)
        }) {
            st.error.set(None);
        }
        st.notice.set(Some("You are back online.".into()));
    });
    let on_offline = window_event_listener(leptos::ev::offline, move |_| {
        st.online.set(false);
        st.notice.set(Some(
            "You are offline. Everything stored can still be read and searched.".into(),
        ));
    });
    let on_hide = window_event_listener(leptos::ev::pagehide, move |_| ctl.save_draft());
    on_cleanup(move || {
        on_hash.remove();
        on_online.remove();
        on_offline.remove();
        on_hide.remove();
    });
}

/// Ctrl/Cmd+K searches; Esc closes the settings dialog or the drawer, else stops the reply.
fn use_app_keys(ctl: Controller) {
    let st = ctl.state;
    let on_key = window_event_listener(leptos::ev::keydown, move |e| {
        if (e.ctrl_key() || e.meta_key()) && e.key().eq_ignore_ascii_case("k") {
            e.prevent_default();
            st.sidebar_open.set(true);
            focus_testid("conversation-search");
        } else if e.key() != "Escape" {
        } else if st.settings_open.get_untracked() {
            // Focus may have left the dialog (a click on the backdrop): Esc still closes it.
            st.settings_open.set(false);
        } else if st.sidebar_open.get_untracked() {
            st.sidebar_open.set(false);
            if st.current_streaming_untracked() {
                ctl.stop();
            }
        } else if !e.default_prevented() && st.current_streaming_untracked() {
            // Esc stops the reply from anywhere on the page (the composer handles its own).
            ctl.stop();
        }
    });
    on_cleanup(move || on_key.remove());
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
