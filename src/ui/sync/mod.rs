//! Sync across devices in the interface: the Settings "Sync" section (server URL, database, user,
//! password, enabled, end-to-end encryption and its passphrase, saved by the dialog's one Save
//! (and, once encrypted, "Change passphrase": the current one and the new, whose re-encryption
//! shows its progress),
//! through [`SyncForm`]; Test connection, whose verdict
//! says what to fix; after a change of the server's origin, a note that the password must be typed
//! again, since the saved one only goes to its own origin) and the sidebar's sync
//! indicator (`data-state` = off | synced | syncing | offline | error). Views read the sync store
//! (`store`) and call its actions. Must not import `crate::store`, `crate::transport` or `session`
//! internals.

pub mod store;

use crate::engine::sync::keys::{hint, strength};
use crate::engine::sync::origin::same_origin;
use crate::session::SyncSettings;
use crate::ui::stores::use_sync;
use crate::ui::sync::store::SyncStore;
use leptos::prelude::*;

/// The Sync section's form. The settings dialog makes it and passes it to [`SyncSection`], so the
/// dialog's one Save saves sync too ([`SyncForm::save`]).
#[derive(Clone, Copy)]
pub struct SyncForm {
    sync: SyncStore,
    fields: Fields,
    /// What the last action said: `(ok, words)`.
    result: RwSignal<Option<(bool, String)>>,
    /// The sync settings the form opened with.
    saved: StoredValue<SyncSettings>,
}

impl SyncForm {
    /// The form, filled with the sync settings `sync` has saved.
    pub fn new(sync: SyncStore) -> SyncForm {
        let saved = sync.saved().unwrap_or_default();
        SyncForm {
            sync,
            fields: Fields::new(&saved),
            result: RwSignal::new(None),
            saved: StoredValue::new(saved),
        }
    }

    /// Saves the section when something in it changed or a password or passphrase was typed
    /// (sync restarts with it); `on_done` hears how it went, at once when there was nothing to
    /// save. The section's result line says it too.
    pub fn save(&self, on_done: impl FnOnce(Result<(), String>) + 'static) {
        let f = self.fields;
        let settings = f.settings();
        let password = typed(f.password);
        let phrase = typed(f.passphrase);
        let untouched = password.is_none() && phrase.is_none();
        if untouched && self.saved.with_value(|s| *s == settings) {
            on_done(Ok(()));
            return;
        }
        let working = if settings.encrypt {
            "Checking the passphrase…"
        } else {
            "Saving…"
        };
        let result = self.result;
        result.set(Some((true, working.into())));
        f.passphrase.set(String::new());
        self.sync.save(settings, password, phrase, move |r| {
            result.set(Some(match &r {
                Ok(()) => (true, "Sync settings saved.".into()),
                Err(e) => (false, e.clone()),
            }));
            on_done(r)
        })
    }
}

/// What a secret field holds, when something was typed in it.
fn typed(field: RwSignal<String>) -> Option<String> {
    Some(field.get_untracked()).filter(|p| !p.is_empty())
}

/// The Settings section: its fields and Test connection; the dialog's Save saves it.
#[component]
pub fn SyncSection(
    /// The form, made by the dialog whose Save saves it.
    form: SyncForm,
) -> impl IntoView {
    let SyncForm {
        sync,
        fields,
        result,
        ..
    } = form;
    let Fields {
        url,
        database,
        user,
        password,
        enabled,
        encrypt,
        passphrase,
    } = fields;
    let saved = form.saved.get_value();
    // The saved password belongs to its origin: after a change, it must be typed again.
    let saved_origin = sync.password_origin();
    let had_password = !saved.user.is_empty();
    let was_encrypted = saved.encrypt;
    let test = move |_| {
        result.set(Some((true, "Testing…".into())));
        sync.test(fields.settings(), typed(password), move |r| {
            result.set(Some(match r {
                Ok(()) => (
                    true,
                    "Connection works: the server, the credentials and the database are right."
                        .into(),
                ),
                Err(e) => (false, e),
            }))
        });
    };
    view! {
        <section data-testid="settings-sync">
            <h3>"Sync"</h3>
            <p class="hint">"Keep conversations in step across devices through your own CouchDB server. Save below saves these too."</p>
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
            <PasswordField password url had_password saved_origin/>
            <EncryptionFields encrypt passphrase was_encrypted/>
            {was_encrypted.then(|| view! { <ChangePassphrase sync/> })}
            <label class="inline">
                <input type="checkbox" data-testid="settings-sync-enabled"
                    prop:checked=move || enabled.get()
                    on:change=move |ev| enabled.set(event_target_checked(&ev))/>
                " Sync this device"
            </label>
            <div class="row">
                <button data-testid="sync-test" on:click=test>"Test connection"</button>
            </div>
            <ResultLine result/>
        </section>
    }
}

/// The form's fields (password and passphrase start empty: they are never shown).
#[derive(Clone, Copy)]
struct Fields {
    url: RwSignal<String>,
    database: RwSignal<String>,
    user: RwSignal<String>,
    /// Empty: keep the saved password (for its own origin only).
    password: RwSignal<String>,
    enabled: RwSignal<bool>,
    encrypt: RwSignal<bool>,
    /// Never stored: only the keys derived from it are kept.
    passphrase: RwSignal<String>,
}

impl Fields {
    fn new(saved: &SyncSettings) -> Fields {
        let database = if saved.database.is_empty() {
            "memoire"
        } else {
            &saved.database
        };
        Fields {
            url: RwSignal::new(saved.url.clone()),
            database: RwSignal::new(database.to_string()),
            user: RwSignal::new(saved.user.clone()),
            password: RwSignal::new(String::new()),
            enabled: RwSignal::new(saved.enabled),
            encrypt: RwSignal::new(saved.encrypt),
            passphrase: RwSignal::new(String::new()),
        }
    }

    fn settings(&self) -> SyncSettings {
        SyncSettings {
            url: self.url.get_untracked().trim().to_string(),
            database: self.database.get_untracked().trim().to_string(),
            user: self.user.get_untracked().trim().to_string(),
            enabled: self.enabled.get_untracked(),
            encrypt: self.encrypt.get_untracked(),
        }
    }
}

/// The password, and after a change of the server's origin the note that it must be typed again
/// (the saved one only goes to the origin it was saved for).
#[component]
fn PasswordField(
    password: RwSignal<String>,
    url: RwSignal<String>,
    had_password: bool,
    saved_origin: String,
) -> impl IntoView {
    let password_needed = move || {
        had_password
            && password.with(String::is_empty)
            && !url.with(|u| u.trim().is_empty() || same_origin(&saved_origin, u))
    };
    view! {
            <label>"Password"
                <input data-testid="settings-sync-password" type="password" autocomplete="current-password"
                    placeholder=move || if had_password { "(saved; type to change)" } else { "" }
                    prop:value=move || password.get() on:input=text(password)/>
            </label>
            <p class="hint error" data-testid="sync-password-needed" hidden=move || !password_needed()>
                "The server's address changed: type its password again. The saved password is only sent to the server it was saved for."
            </p>
    }
}

/// An input's handler that keeps `sig` at the input's text.
fn text(sig: RwSignal<String>) -> impl Fn(leptos::ev::Event) + Copy {
    move |ev: leptos::ev::Event| sig.set(event_target_value(&ev))
}

/// End-to-end encryption: the switch, what it means (the passphrase cannot be recovered, said
/// before it is set), the passphrase, and how strong it looks as it is typed
/// (`engine::sync::keys`: a hint, a floor only for a new key, which the session enforces).
#[component]
fn EncryptionFields(
    encrypt: RwSignal<bool>,
    passphrase: RwSignal<String>,
    was_encrypted: bool,
) -> impl IntoView {
    view! {
            <label class="inline">
                <input type="checkbox" data-testid="settings-sync-encrypt"
                    prop:checked=move || encrypt.get()
                    on:change=move |ev| encrypt.set(event_target_checked(&ev))/>
                " Encrypt end to end (the server stores only ciphertext)"
            </label>
            <div hidden=move || !encrypt.get()>
                <p class="hint" data-testid="sync-passphrase-warning">
                    "Conversations, memory and facts are encrypted on this device before they leave; the server sees only sizes and scrambled data. "
                    <strong>"The passphrase cannot be recovered: if it is lost, the copy on the server cannot be read by anyone."</strong>
                    " Each device keeps its own data. Use the same passphrase on every device."
                </p>
                <label>"Encryption passphrase"
                    <input data-testid="settings-sync-passphrase" type="password" autocomplete="new-password"
                        placeholder=move || if was_encrypted { "(unlocked on this device)" } else { "" }
                        prop:value=move || passphrase.get() on:input=text(passphrase)/>
                </label>
                <p class="hint" data-testid="sync-passphrase-strength" aria-live="polite"
                    hidden=move || passphrase.with(String::is_empty)
                    data-level=move || passphrase.with(|p| format!("{:?}", strength(p).level).to_lowercase())>
                    {move || passphrase.with(|p| hint(strength(p)))}
                </p>
            </div>
    }
}

/// "Change passphrase" (`engine::sync::rotate`): the current passphrase and the new one (the
/// strength hint and floor of a new key apply), then the re-encryption's progress, as the sync
/// status reports it (it goes on after a reload without asking again).
#[component]
fn ChangePassphrase(sync: SyncStore) -> impl IntoView {
    let current = RwSignal::new(String::new());
    let new = RwSignal::new(String::new());
    let open = RwSignal::new(false);
    let result: RwSignal<Option<(bool, String)>> = RwSignal::new(None);
    let progress = move || {
        sync.with_view(|v| {
            v.as_ref()
                .filter(|v| v.label.starts_with("re-encrypting"))
                .map(|v| v.detail.clone())
        })
    };
    let start = move |_| {
        let (c, n) = (current.get_untracked(), new.get_untracked());
        if c.is_empty() || n.is_empty() {
            result.set(Some((
                false,
                "Type the current passphrase and the new one.".into(),
            )));
            return;
        }
        result.set(Some((true, "Checking the current passphrase…".into())));
        current.set(String::new());
        new.set(String::new());
        sync.change_passphrase(c, n, move |r| {
            result.set(Some(match r {
                Ok(()) => (
                    true,
                    "Passphrase changed: every document is being encrypted again under it. Use the new passphrase on your other devices.".into(),
                ),
                Err(e) => (false, e),
            }))
        });
    };
    view! {
            <div class="row">
                <button data-testid="sync-rotate-open" on:click=move |_| open.update(|o| *o = !*o)>
                    "Change passphrase"
                </button>
            </div>
            <div data-testid="sync-rotate" hidden=move || !open.get()>
                <p class="hint">"Every document on the server is encrypted again under the new passphrase; your other devices then need it. A server that kept copies of the old encrypted data still holds them."</p>
                <label>"Current passphrase"
                    <input data-testid="sync-rotate-current" type="password" autocomplete="current-password"
                        prop:value=move || current.get() on:input=text(current)/>
                </label>
                <label>"New passphrase"
                    <input data-testid="sync-rotate-new" type="password" autocomplete="new-password"
                        prop:value=move || new.get() on:input=text(new)/>
                </label>
                <p class="hint" data-testid="sync-rotate-strength" aria-live="polite"
                    hidden=move || new.with(String::is_empty)
                    data-level=move || new.with(|p| format!("{:?}", strength(p).level).to_lowercase())>
                    {move || new.with(|p| hint(strength(p)))}
                </p>
                <div class="row">
                    <button data-testid="sync-rotate-start" on:click=start>"Change the passphrase"</button>
                </div>
                <p data-testid="sync-rotate-result" role="status"
                    class:error=move || result.with(|r| r.as_ref().is_some_and(|(ok, _)| !ok))
                    data-ok=move || result.with(|r| r.as_ref().map(|(ok, _)| ok.to_string()).unwrap_or_default())>
                    {move || result.get().map(|(_, t)| t).unwrap_or_default()}
                </p>
            </div>
            <p class="hint" data-testid="sync-rotate-progress" aria-live="polite" hidden=move || progress().is_none()>
                {move || progress().unwrap_or_default()}
            </p>
    }
}

/// What the last action said: its own words on success, the reason otherwise.
#[component]
fn ResultLine(result: RwSignal<Option<(bool, String)>>) -> impl IntoView {
    view! {
            <p data-testid="sync-result" role="status"
                class:error=move || result.with(|r| r.as_ref().is_some_and(|(ok, _)| !ok))
                data-ok=move || result.with(|r| r.as_ref().map(|(ok, _)| ok.to_string()).unwrap_or_default())>
                {move || result.get().map(|(_, t)| t).unwrap_or_default()}
            </p>
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
            {move || {
                let label = sync.with_view(|v| v.as_ref().map(|v| v.label.clone()));
                match (label.unwrap_or_default(), state().as_str()) {
                    (l, _) if !l.is_empty() => l,
                    (_, "synced") => "synced".into(),
                    (_, "syncing") => "syncing…".into(),
                    (_, "error") => "sync error".into(),
                    _ => String::new(),
                }
            }}
        </span>
    }
}
