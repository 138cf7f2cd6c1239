//! Opening the core: the database (opened while the tab locks are taken), the deployment's
//! `config.json`, the saved settings and token calibration, the channel to the other tabs.
//! Must not import `ui`.

use super::cache::Cache;
use super::core::{Core, CALIBRATION_KEY, SETTINGS_KEY};
use super::error::ErrorKind;
use super::events::EventSink;
use super::tabs::{self, LockGuard};
use crate::engine::request;
use crate::engine::settings::{self, Settings};
use crate::engine::tabs::Change;
use crate::engine::tabs::Heard;
use crate::engine::tokens::Calibration;
use crate::session::shared::events::Local;
use crate::store::{Store, StoreError};
use crate::transport::{self, Stopper, Timeouts, TransportError};
use futures_util::future::join;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// The first half of opening: the store open, `config.json` read, persistence asked for (not
/// waited for), the tab locks taken.
pub(crate) struct Opening {
    pub store: Store,
    /// Held until replies left streaming are marked: one tab at a time.
    opening: LockGuard,
    /// Another tab is alive (it may be writing those replies right now): nothing is marked.
    others_alive: bool,
    presence: LockGuard,
    deployment: Result<Settings, String>,
    persisted: Rc<Cell<bool>>,
}

impl Core {
    /// Opens the store while `config.json` is read (on a slow link that round trip would otherwise
    /// come after it, before the first screen) and persistent storage is asked for.
    pub(crate) async fn begin(db_name: &str) -> Result<Opening, StoreError> {
        let persisted = Rc::new(Cell::new(false));
        let answer = persisted.clone();
        // Asked now, answered whenever the browser decides (it may weigh the site for a while):
        // only the storage figure in Settings shows the answer, so the opening does not wait.
        wasm_bindgen_futures::spawn_local(async move {
            answer.set(Store::request_persistence().await.unwrap_or(false));
        });
        let (opened, deployment) = join(open_store(db_name), load_deployment_config()).await;
        let (store, opening, others_alive, presence) = opened?;
        Ok(Opening {
            store,
            opening,
            others_alive,
            presence,
            deployment,
            persisted,
        })
    }

    /// The second half: the data migrations run, replies left streaming are marked, and the
    /// settings and calibration are read, all at once (one round of reads, not three in a row;
    /// IndexedDB orders the readwrite transactions among them); the notices of the opening given,
    /// the channel to the other tabs opened. Nothing reads conversations or messages before this
    /// returns (`Store::open_unmigrated`).
    pub(crate) async fn finish(
        o: Opening,
        db_name: &str,
        sink: EventSink,
    ) -> Result<Rc<Core>, StoreError> {
        let mark = async {
            if o.others_alive {
                Ok(0)
            } else {
                o.store.mark_interrupted_streams().await
            }
        };
        let ((migrated, interrupted), loaded) = join(
            join(migrate(&o.store), mark),
            load_settings(&o.store, &sink, o.deployment),
        )
        .await;
        drop(o.opening);
        migrated?;
        let (interrupted, (defaults, settings, calibration)) = (interrupted?, loaded?);
        if interrupted > 0 {
            sink(Local::Notice(format!(
                "{} reply was cut off when the page closed; the partial text is kept and marked interrupted.",
                interrupted
            ))
            .into());
        }
        let closed_sink = sink.clone();
        o.store.on_closed_by_other_tab(move || {
            closed_sink(
                Local::Error {
                    conversation_id: None,
                    message: StoreError::ClosedByOtherTab.to_string(),
                    kind: ErrorKind::Other,
                }
                .into(),
            )
        });
        let cache = Rc::new(RefCell::new(Cache::default()));
        let settings = Rc::new(RefCell::new(settings));
        let heard = remote_sink(&o.store, &cache, &settings, &sink);
        let channel = tabs::Channel::open(db_name, heard);
        Ok(Rc::new(Core {
            store: o.store,
            sink,
            settings,
            defaults,
            calibration: RefCell::new(calibration),
            persisted: o.persisted,
            channel,
            capture: RefCell::default(),
            _presence: o.presence,
            cache,
            prompts: RefCell::default(),
            servers: Rc::default(),
            windows: RefCell::default(),
            mcp: Default::default(),
        }))
    }
}

/// What other tabs say. Their change: the cache forgets what it touched, their saved settings are
/// in force here too, and the UI hears it. A change this build cannot read (a newer build's,
/// `engine::tabs`): the conversation it names is read again from the store, as after a change of
/// its branch, and its record is read again for the list; one that names none changes nothing
/// here until the page reloads.
fn remote_sink(
    store: &Store,
    cache: &Rc<RefCell<Cache>>,
    settings: &Rc<RefCell<Settings>>,
    sink: &EventSink,
) -> Rc<dyn Fn(Heard)> {
    let (store, cache, settings, sink) =
        (store.clone(), cache.clone(), settings.clone(), sink.clone());
    let ui = sink.clone();
    let hear = move |e: Change| {
        cache.borrow_mut().observe_remote(&e);
        if let Change::Settings(s) = &e {
            // Checked again: another tab may run another build.
            if s.validate().is_err() {
                return;
            }
            *settings.borrow_mut() = (**s).clone();
        }
        ui(e.into())
    };
    Rc::new(move |heard| match heard {
        Heard::Change(c) => hear(c),
        Heard::Unreadable {
            conversation: Some(id),
        } => {
            hear(Change::BranchChanged(id.clone()));
            let (store, sink) = (store.clone(), sink.clone());
            wasm_bindgen_futures::spawn_local(async move {
                match store.get_conversation(&id).await {
                    Ok(Some(c)) => sink(Change::Conversation(c).into()),
                    Ok(None) => sink(Change::ConversationRemoved(id).into()),
                    Err(_) => {}
                }
            });
        }
        Heard::Unreadable { conversation: None } | Heard::Garbage => {}
    })
}

/// Opens the store (its migrations run in [`Core::finish`]) while the tab locks are taken: each
/// migration checks its record inside its own transaction, so two tabs opening at once still apply
/// it once, and the locks' round trips do not come before the open. Returns the store, the opening
/// lock (held until replies left streaming are marked, one tab at a time), whether another tab is
/// alive (then nothing is marked: it may be writing those replies right now), and this tab's
/// presence lock.
async fn open_store(db_name: &str) -> Result<(Store, LockGuard, bool, LockGuard), StoreError> {
    let locks = async {
        let opening = tabs::lock(&format!("memoire-open:{db_name}")).await;
        let tabs_lock = format!("memoire-tabs:{db_name}");
        let others_alive = tabs::held_elsewhere(&tabs_lock).await == Some(true);
        let presence = tabs::lock_shared(&tabs_lock).await;
        (opening, others_alive, presence)
    };
    let (store, (opening, others_alive, presence)) =
        join(Store::open_unmigrated(db_name), locks).await;
    Ok((store?, opening, others_alive, presence))
}

/// Fetches the deployment's optional `config.json` (next to index.html). Missing is fine; garbage
/// is reported.
async fn load_deployment_config() -> Result<Settings, String> {
    let req = request::HttpRequest {
        method: "GET".into(),
        url: "config.json".into(),
        headers: vec![],
        body: String::new(),
    };
    let timeouts = Timeouts {
        first_byte_ms: 5_000,
        idle_ms: 5_000,
    };
    let text = match transport::open(&req, &Stopper::new(), timeouts).await {
        Ok(mut body) => body
            .read_text(256 * 1024)
            .await
            .map_err(|e| e.to_string())?,
        Err(TransportError::Http { status: 404, .. }) => return Ok(Settings::builtin()),
        Err(_) => return Ok(Settings::builtin()),
    };
    let config = settings::parse_deployment_config(&text)?;
    Ok(settings::deployment_defaults(&config))
}

/// A stored setting as `T`, read through its JSON text (see [`load_settings`]).
fn from_json_value<T: serde::de::DeserializeOwned>(v: &serde_json::Value) -> Option<T> {
    serde_json::from_str(&serde_json::to_string(v).ok()?).ok()
}

/// The deployment's defaults (a notice when `config.json` is unusable), the settings in force, and
/// the saved token calibration.
async fn load_settings(
    store: &Store,
    sink: &EventSink,
    deployment: Result<Settings, String>,
) -> Result<(Settings, Settings, Calibration), StoreError> {
    let defaults = match deployment {
        Ok(d) => d,
        Err(e) => {
            sink(Local::Notice(e).into());
            Settings::builtin()
        }
    };
    // Read back through JSON text, not `from_value`: settings also arrive as text from other
    // tabs (tabs.rs), so their deserializer is compiled once for both.
    let (saved, calibration) = join(
        store.get_setting(SETTINGS_KEY),
        store.get_setting(CALIBRATION_KEY),
    )
    .await;
    let saved: Option<Settings> = saved?.and_then(|v| from_json_value(&v));
    let settings = settings::effective(&defaults, saved.as_ref());
    let calibration: Calibration = calibration?
        .and_then(|v| from_json_value(&v))
        .unwrap_or_default();
    Ok((defaults, settings, calibration))
}

/// The data migrations not yet applied, run. Their code (`store::migrate`) is split point
/// `migrate`, fetched only when a database made by an older version has one pending; when it
/// cannot be fetched (offline), they wait for the next start (each is applied whole or not at all)
/// and this start goes on: what they do (legacy messages imported, search terms of old messages)
/// is not needed to open.
async fn migrate(store: &Store) -> Result<(), StoreError> {
    let pending = store.pending_migrations().await?;
    if pending.is_empty() {
        return Ok(());
    }
    match migrate_split(store, &pending).await {
        Ok(run) => run,
        Err(_) => {
            web_sys::console::warn_1(
                &"the data migrations' code could not be fetched; they run at the next start"
                    .into(),
            );
            Ok(())
        }
    }
}

/// Split point `migrate`: the data migrations (`store::migrate::apply`). The outer `Result` is
/// the chunk's fetch.
#[cfg_attr(feature = "split", wasm_split_helpers::wasm_split(migrate, fallible, return_wrapper(let future = _; { future.await } -> Result<Result<(), StoreError>, wasm_split_helpers::SplitLoaderError>)))]
fn migrate_split<'a>(
    store: &'a Store,
    pending: &'a [u32],
) -> std::pin::Pin<
    Box<
        dyn std::future::Future<
                Output = Result<Result<(), StoreError>, wasm_split_helpers::SplitLoaderError>,
            > + 'a,
    >,
> {
    Box::pin(async move { Ok(store.apply_migrations(pending).await) })
}
