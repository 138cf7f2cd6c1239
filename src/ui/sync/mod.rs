//! Sync across devices in the interface: the Settings "Sync" section (server URL, database, user,
//! password, enabled; Save; Test connection, whose verdict says what to fix) and the sidebar's sync
//! indicator (`data-state` = off | synced | syncing | offline | error). Views read the sync store
//! (`store`) and call its actions. Must not import `crate::store`, `crate::transport` or `session`
//! internals.

pub mod store;

use crate::session::SyncSettings;
use crate::ui::stores::use_sync;
use leptos::prelude::*;

/// The Settings section.
#[component]
pub fn SyncSection() -> impl IntoView {
    let sync = use_sync();
    let saved = sync.saved().unwrap_or_default();
    let url = RwSignal::new(saved.url.clone());
    let database = RwSignal::new(if saved.database.is_empty() {
        "memoire".to_string()
    } else {
        saved.database.clone()
    });
    let user = RwSignal::new(saved.user.clone());
    // Empty: keep the saved password (it is never shown).
    let password = RwSignal::new(String::new());
    let enabled = RwSignal::new(saved.enabled);
    let result = RwSignal::new(None::<(bool, String)>);
    let form = move || SyncSettings {
        url: url.get_untracked().trim().to_string(),
        database: database.get_untracked().trim().to_string(),
        user: user.get_untracked().trim().to_string(),
        enabled: enabled.get_untracked(),
    };
    let typed = move || Some(password.get_untracked()).filter(|p| !p.is_empty());
    // What an action says when it is done: its own words on success, the reason otherwise.
    let outcome = move |done: &'static str| {
        move |r: Result<(), String>| {
            result.set(Some(
                r.map(|()| done.to_string())
                    .map_or_else(|e| (false, e), |t| (true, t)),
            ))
        }
    };
    let test = move |_| {
        result.set(Some((true, "Testing…".into())));
        sync.test(
            form(),
            typed(),
            outcome("Connection works: the server, the credentials and the database are right."),
        );
    };
    let save = move |_| sync.save(form(), typed(), outcome("Sync settings saved."));
    let text =
        |sig: RwSignal<String>| move |ev: leptos::ev::Event| sig.set(event_target_value(&ev));
    view! {
        <section data-testid="settings-sync">
            <h3>"Sync"</h3>
            <p class="hint">"Keep conversations in step across devices through your own CouchDB server."</p>
            <label>"Server URL"
                <input data-testid="settings-sync-url" type="url" placeholder="https://couch.example.com:6984"
                    prop:value=move || url.get() on:input=text(url)/>
            </label>
            <label>"Database"
                <input data-testid="settings-sync-database" prop:value=move || database.get() on:input=text(database)/>
            </label>
            <label>"User"
                <input data-testid="settings-sync-user" autocomplete="username" prop:value=move || user.get() on:input=text(user)/>
            </label>
            <label>"Password"
                <input data-testid="settings-sync-password" type="password" autocomplete="current-password"
                    placeholder=move || if saved.user.is_empty() { "" } else { "(saved; type to change)" }
                    prop:value=move || password.get() on:input=text(password)/>
            </label>
            <label class="inline">
                <input type="checkbox" data-testid="settings-sync-enabled"
                    prop:checked=move || enabled.get()
                    on:change=move |ev| enabled.set(event_target_checked(&ev))/>
                " Sync this device"
            </label>
            <div class="row">
                <button data-testid="sync-test" on:click=test>"Test connection"</button>
                <button data-testid="sync-save" on:click=save>"Save sync settings"</button>
            </div>
            <p data-testid="sync-result" role="status"
                class:error=move || result.with(|r| r.as_ref().is_some_and(|(ok, _)| !ok))
                data-ok=move || result.with(|r| r.as_ref().map(|(ok, _)| ok.to_string()).unwrap_or_default())>
                {move || result.get().map(|(_, t)| t).unwrap_or_default()}
            </p>
        </section>
    }
}

/// The sidebar's sync indicator.
#[component]
pub fn SyncIndicator() -> impl IntoView {
    let sync = use_sync();
    let state =
        move || sync.with_view(|v| v.as_ref().map_or("off".to_string(), |v| v.state.clone()));
    let detail =
        move || sync.with_view(|v| v.as_ref().map(|v| v.detail.clone()).unwrap_or_default());
    view! {
        <span class="sync" data-testid="sync-status" data-state=state title=detail
            hidden=move || state() == "off">
            {move || match state().as_str() {
                "synced" => "synced",
                "syncing" => "syncing…",
                "offline" => "sync offline",
                "error" => "sync error",
                _ => "",
            }}
        </span>
    }
}
