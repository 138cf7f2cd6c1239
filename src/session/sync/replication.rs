//! Sync's handle ([`Replication`], issue 14, step 4): what the rest of the session calls. It opens
//! sync with the saved settings and password, saves new settings (the password kept for its own
//! origin only, `engine::sync::origin`; encryption unlocked against the server first), changes the
//! encryption passphrase, runs "Test connection", and takes the session's own changes as the
//! core's `Capture` ([`Replication::observe`] for a change of shared data,
//! [`Replication::entity_deleted`] for an entity deleted in the memory pane) into the engine's
//! outbox (`engine::sync::local::Outbox`). Each of these (re)starts or wakes the loop, which is
//! `driver.rs`'s; this file holds no loop and `driver.rs` does not import it. What both remember
//! between awaits is the one `State` value (`state.rs`). With sync disabled (the default) it does
//! nothing at all. Must not import `ui`.

use std::rc::Rc;

use wasm_bindgen_futures::spawn_local;

use super::browser::{self, page_origin, Glue};
use super::driver::{drain, run_again, run_auth};
use super::error::SyncError;
use super::state::{set_view, Emit, Inner, State};
use crate::engine::sync::local::{observed, Tracked};
use crate::engine::sync::origin::{self, basic_auth, origin_of};
use crate::engine::sync::probe::{check_form, diagnose, DbProbe};
use crate::engine::sync::restart::Restart;
use crate::engine::tabs;
use crate::session::shared::error::Boxed;
use crate::session::shared::events::SyncView;
use crate::session::shared::held::Held;
use crate::session::shared::{now, Capture};
use crate::store::{Store, StoreError, SyncSettings};
use crate::transport::{TextLimits, Timeouts, TransportError};

/// "Test connection" waits this long for an answer and reads at most this much of it.
const TEST_LIMITS: TextLimits = TextLimits {
    max_bytes: 1 << 20,
    timeouts: Timeouts {
        first_byte_ms: 10_000,
        idle_ms: 10_000,
    },
    total_ms: 20_000,
};

/// The session's handle on sync. Cheap to clone.
#[derive(Clone)]
pub struct Replication {
    inner: Rc<Inner>,
}

impl Replication {
    /// Reads the sync settings and the saved password (together: one round of reads before the
    /// first screen, not two); starts syncing if they say so.
    pub(crate) async fn open(store: Store) -> Result<Replication, StoreError> {
        let (settings, saved) =
            futures_util::future::join(store.sync_settings(), store.saved_sync_password()).await;
        let (settings, saved) = (settings?, saved?);
        // Saved before origins were kept: it belongs to the saved sync URL.
        let password_origin = saved
            .origin
            .or_else(|| origin_of(&settings.url))
            .unwrap_or_default();
        let password = saved.password;
        let r = Replication {
            inner: Rc::new(Inner {
                store,
                state: Held::new(State::new(settings, password, password_origin)),
                glue: Glue::default(),
            }),
        };
        let weak = Rc::downgrade(&r.inner);
        r.inner.glue.listen_online(move || {
            if let Some(i) = weak.upgrade() {
                i.state.with(|s| {
                    s.restart.handle_online(now());
                    if let Some(rep) = s.rep.as_mut() {
                        rep.retry_now();
                    }
                });
                i.glue.wake();
            }
        });
        Ok(r)
    }

    /// Connects the driver to the session's `emit` and starts it when enabled.
    pub(crate) fn start(&self, emit: Emit) {
        self.inner.state.with(|s| s.emit = Some(emit));
        self.restart();
    }

    pub fn settings(&self) -> SyncSettings {
        self.inner.state.with(|s| s.settings.clone())
    }

    pub fn view(&self) -> SyncView {
        self.inner.state.with(|s| s.view.clone())
    }

    /// The origin the saved password belongs to (the form asks again after an origin change).
    pub fn password_origin(&self) -> String {
        self.inner.state.with(|s| s.password_origin.clone())
    }

    /// The password to send to `s`'s server: the typed one, or the saved one while the origin is
    /// the one it was saved for; an error when a saved password exists but belongs elsewhere, or
    /// when it would go over plain http to another machine.
    fn password_for(&self, s: &SyncSettings, typed: Option<&str>) -> Result<String, SyncError> {
        let (saved, saved_for) =
            (self.inner.state).with(|st| (st.password.clone(), st.password_origin.clone()));
        match origin::password_for(typed, &saved, &saved_for, &s.url) {
            Some(p) => {
                origin::plain_http_check(&s.url, p)?;
                Ok(p.to_string())
            }
            None if saved.is_empty() || s.user.trim().is_empty() => Ok(String::new()),
            None => Err(SyncError::PasswordForOtherOrigin {
                origin: origin_of(&s.url).unwrap_or_else(|| s.url.clone()),
                saved: saved_for,
            }),
        }
    }

    /// Saves new settings (`password`: `None` keeps the saved one, for its own origin only;
    /// `passphrase`: the encryption passphrase, checked against the server before anything is
    /// saved) and restarts sync with them.
    pub async fn save(
        &self,
        s: SyncSettings,
        password: Option<String>,
        passphrase: Option<String>,
    ) -> Result<(), SyncError> {
        let base = if s.enabled || s.encrypt {
            Some(check_form(&s.url, &s.database)?)
        } else {
            None
        };
        let pass = self.password_for(&s, password.as_deref())?;
        let store = &self.inner.store;
        match &base {
            Some(base) if s.encrypt => {
                let auth = basic_auth(&s.user, &pass);
                let db = s.database.trim();
                let p = passphrase.as_deref();
                let first = !unlock_split(store, base, db, auth.as_deref(), p).await?;
                self.inner.state.with(|st| st.first_encryption = first);
            }
            _ if !s.encrypt => store.delete_sync_keys().await?,
            _ => {}
        }
        store.set_sync_settings(&s).await?;
        let origin = origin_of(&s.url).unwrap_or_default();
        store.set_sync_password_for(&pass, Some(&origin)).await?;
        self.inner.state.with(|st| {
            st.password = pass;
            st.password_origin = origin;
            st.settings = s;
        });
        self.restart();
        Ok(())
    }

    /// Changes the encryption passphrase of the saved sync database from `current` to `new`
    /// (`seal::change_passphrase`), then restarts sync, whose next connection seals every document
    /// again (its progress in the sync status).
    pub async fn change_passphrase(&self, current: String, new: String) -> Result<(), SyncError> {
        let s = self.settings();
        if !s.encrypt {
            return Err(super::seal::SealError::NotEncrypted.into());
        }
        let base = check_form(&s.url, &s.database)?;
        let auth = run_auth(&self.inner, &s)?;
        let store = &self.inner.store;
        let db = s.database.trim();
        change_split(store, &base, db, auth.as_deref(), &current, &new).await?;
        self.restart();
        Ok(())
    }

    fn restart(&self) {
        let i = &self.inner;
        let (gen, enabled) = i.state.with(|s| {
            s.generation += 1;
            if s.settings.enabled {
                s.restart = Restart::default();
            }
            (s.generation, s.settings.enabled)
        });
        i.glue.abort();
        i.glue.wake();
        if !enabled {
            set_view(i, SyncView::off());
            return;
        }
        let inner = i.clone();
        spawn_local(async move { run_again(&inner, gen).await });
    }

    /// This tab changed shared data (`Capture`): track the document it produces.
    pub(crate) fn observe(&self, e: &tabs::Change) {
        for t in observed(e) {
            self.track(t);
        }
    }

    /// The user deleted entity `entity` (of conversation `conversation`'s scope, or shared): its
    /// document and relationships become tombstones, so it is deleted on every device.
    pub(crate) fn entity_deleted(&self, conversation: &str, entity: &str) {
        self.track(Tracked::EntityDeleted {
            conversation: conversation.to_string(),
            entity: entity.to_string(),
        });
    }

    fn track(&self, t: Tracked) {
        let i = &self.inner;
        i.state.with(|s| {
            let set_up = !s.settings.url.trim().is_empty();
            s.outbox.handle_change(t, s.settings.enabled, set_up)
        });
        drain(i);
    }

    /// "Test connection": what is wrong with these settings, if anything.
    pub async fn test(&self, s: &SyncSettings, password: Option<&str>) -> Result<(), SyncError> {
        test_split(self, s, password).await
    }

    async fn test_now(&self, s: &SyncSettings, password: Option<&str>) -> Result<(), SyncError> {
        let url = check_form(&s.url, &s.database)?;
        let auth = basic_auth(&s.user, &self.password_for(s, password)?);
        let db_url = format!(
            "{url}/{}",
            crate::engine::sync::wire::encode(s.database.trim())
        );
        let got = browser::fetch(&db_url, "GET", None, auth.as_deref(), None, TEST_LIMITS);
        let probe = match got.await {
            Ok((status, body)) => DbProbe::Answer { status, body },
            Err(TransportError::Timeout { .. }) => DbProbe::TimedOut {
                secs: TEST_LIMITS.timeouts.first_byte_ms / 1000,
            },
            Err(TransportError::TooSlow { limit_ms }) => DbProbe::TimedOut {
                secs: limit_ms / 1000,
            },
            Err(TransportError::TooLarge { limit }) => DbProbe::TooLarge {
                mb: limit.div_ceil(1 << 20),
            },
            Err(TransportError::Network(reason)) => DbProbe::Failed { reason },
            Err(TransportError::Redirected) => DbProbe::Redirected,
            Err(e) => DbProbe::Failed {
                reason: e.to_string(),
            },
        };
        let reachable = match probe {
            DbProbe::Failed { .. } => Some(
                browser::reachable(&format!("{url}/"), TEST_LIMITS.timeouts.first_byte_ms).await,
            ),
            _ => None,
        };
        let origin = page_origin();
        diagnose(&url, s.database.trim(), &s.user, &origin, &probe, reachable)?;
        Ok(())
    }
}

/// Split point `sync`: encryption unlocked when the settings are saved (WebCrypto, the marker);
/// whether the database held a marker before (`false`: this device is the first to encrypt it).
#[cfg_attr(feature = "split", wasm_split_helpers::wasm_split(sync, fallible, return_wrapper(let future = _; { future.await } -> Result<bool, SyncError>)))]
fn unlock_split<'a>(
    store: &'a Store,
    base: &'a str,
    db: &'a str,
    auth: Option<&'a str>,
    passphrase: Option<&'a str>,
) -> Boxed<'a, bool, SyncError> {
    Box::pin(async move {
        let had = super::seal::has_marker(base, db, auth).await?;
        super::seal::unlock(store, base, db, auth, passphrase).await?;
        Ok(had)
    })
}

/// Split point `sync`: a change of the encryption passphrase begun (WebCrypto, the marker).
#[cfg_attr(feature = "split", wasm_split_helpers::wasm_split(sync, fallible, return_wrapper(let future = _; { future.await } -> Result<(), SyncError>)))]
fn change_split<'a>(
    store: &'a Store,
    base: &'a str,
    db: &'a str,
    auth: Option<&'a str>,
    current: &'a str,
    new: &'a str,
) -> Boxed<'a, (), SyncError> {
    Box::pin(async move {
        super::seal::change_passphrase(store, base, db, auth, current, new).await?;
        Ok(())
    })
}

/// Split point `sync`: "Test connection" and its verdicts.
#[cfg_attr(feature = "split", wasm_split_helpers::wasm_split(sync, fallible, return_wrapper(let future = _; { future.await } -> Result<(), SyncError>)))]
fn test_split<'a>(
    r: &'a Replication,
    s: &'a SyncSettings,
    password: Option<&'a str>,
) -> Boxed<'a, (), SyncError> {
    Box::pin(r.test_now(s, password))
}

impl Capture for Replication {
    fn changed(&self, e: &tabs::Change) {
        self.observe(e)
    }

    fn entity_deleted(&self, conversation: &str, entity: &str) {
        Replication::entity_deleted(self, conversation, entity)
    }
}
