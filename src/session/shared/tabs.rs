//! Several tabs at once: a `BroadcastChannel` that carries this tab's changes of shared data to
//! every other tab of the same database, on the versioned wire of `engine::tabs` (and hands theirs
//! to the core; saved settings travel too, API key included, which never leaves this origin), and
//! Web Locks
//! (`navigator.locks`) that serialise work only one tab may do at a time (a memory update of one
//! conversation, opening/migrating the database).
//!
//! Both degrade gracefully: without `BroadcastChannel` each tab only sees its own changes until it
//! reloads; without `navigator.locks` a lock is granted at once (IndexedDB transactions still keep
//! the data consistent, only duplicate work becomes possible).
//!
//! Web Locks go through web-sys's typed bindings (`Navigator::locks`, `LockManager`, `LockOptions`),
//! which web-sys keeps behind `--cfg=web_sys_unstable_apis` (set in `.cargo/config.toml`). The
//! channel's coalescing timer is a `gloo-timers` one, cleared when the channel goes. Must not import `ui`.

use crate::engine::model::{Message, MessageStatus};
use crate::engine::tabs::{decode, encode, Change, Heard};
use gloo_timers::callback::Timeout;
use js_sys::{Array, Function, Promise};
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{LockManager, LockManagerSnapshot, LockMode, LockOptions};

/// Streaming progress is sent at most this often per message (the final state is always sent).
const PROGRESS_EVERY_MS: u32 = 40;

/// This tab's end of the channel the tabs of one database share.
pub(crate) struct Channel {
    inner: Rc<Inner>,
}

struct Inner {
    channel: web_sys::BroadcastChannel,
    /// The latest unsent streaming progress per message id (coalesced).
    pending: RefCell<BTreeMap<String, Message>>,
    /// The flush timer (the latest one; dropping it clears it) and whether it is still to fire.
    timer: RefCell<Option<Timeout>>,
    scheduled: Cell<bool>,
    _on_message: Closure<dyn FnMut(web_sys::MessageEvent)>,
}

impl Channel {
    /// Opens the channel `memoire:<db_name>`; what other tabs say goes to `heard`. `None` when the
    /// browser has no `BroadcastChannel`.
    pub(crate) fn open(db_name: &str, heard: Rc<dyn Fn(Heard)>) -> Option<Channel> {
        let channel = web_sys::BroadcastChannel::new(&format!("memoire:{db_name}")).ok()?;
        let on_message =
            Closure::<dyn FnMut(web_sys::MessageEvent)>::new(move |ev: web_sys::MessageEvent| {
                // Another tab of this origin is trusted as much as this one; what another build
                // wrote is read as far as it can be (`engine::tabs`), never a panic.
                if let Some(text) = ev.data().as_string() {
                    heard(decode(&text));
                }
            });
        channel.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        let inner = Rc::new(Inner {
            channel,
            pending: RefCell::default(),
            timer: RefCell::default(),
            scheduled: Cell::new(false),
            _on_message: on_message,
        });
        Some(Channel { inner })
    }

    /// Sends a change to the other tabs. Streaming progress is coalesced (the latest state of each
    /// message, every few tens of ms); every other change first flushes what is pending, so the
    /// other tabs see changes in this tab's order.
    pub(crate) fn post(&self, e: Change) {
        let i = &self.inner;
        let e = match e {
            Change::MessageProgress(m) if m.status == MessageStatus::Streaming => {
                i.pending.borrow_mut().insert(m.id.clone(), m);
                schedule(i);
                return;
            }
            Change::MessageProgress(m) => {
                i.pending.borrow_mut().remove(&m.id);
                Change::MessageProgress(m)
            }
            other => other,
        };
        i.flush();
        i.send(&e);
    }
}

impl Inner {
    fn send(&self, e: &Change) {
        // Fails only when the channel is closed (the page is going away).
        let _ = self.channel.post_message(&JsValue::from_str(&encode(e)));
    }

    fn flush(&self) {
        let pending = std::mem::take(&mut *self.pending.borrow_mut());
        for (_, m) in pending {
            self.send(&Change::MessageProgress(m));
        }
    }
}

/// Flushes the pending progress in a few tens of ms, unless a flush is already on its way.
fn schedule(inner: &Rc<Inner>) {
    if inner.scheduled.replace(true) {
        return;
    }
    let weak = Rc::downgrade(inner);
    // Replacing the previous (fired) timer drops it here, never inside its own callback.
    *inner.timer.borrow_mut() = Some(Timeout::new(PROGRESS_EVERY_MS, move || {
        if let Some(i) = weak.upgrade() {
            i.scheduled.set(false);
            i.flush();
        }
    }));
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.channel.set_onmessage(None);
        self.channel.close();
    }
}

/// A held Web Lock; dropping it releases the lock.
pub(crate) struct LockGuard {
    release: Option<Function>,
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if let Some(f) = self.release.take() {
            let _ = f.call0(&JsValue::NULL);
        }
    }
}

/// `navigator.locks`, when the browser has it (not on insecure origins).
fn lock_manager() -> Option<LockManager> {
    let locks = web_sys::window()?.navigator().locks();
    (!locks.is_undefined() && !locks.is_null()).then_some(locks)
}

/// Waits for the exclusive Web Lock `name` (shared by every tab of this origin) and holds it until
/// the guard is dropped. Without Web Locks (or when the request fails) it returns at once.
pub(crate) async fn lock(name: &str) -> LockGuard {
    request_lock(name, LockMode::Exclusive).await
}

/// The lock every change of the facts about the user of database `db` runs under, in every tab:
/// a message's facts, the Memory page's edits, an import's, the facts sync pulls. Each reads the
/// facts from the store inside it, so none writes over another's.
pub(crate) async fn lock_user_facts(db: &str) -> LockGuard {
    lock(&format!("memoire-user-facts:{db}")).await
}

/// Like [`lock`], in `"shared"` mode: any number of tabs hold it together, and it keeps an
/// exclusive request for the same name waiting.
pub(crate) async fn lock_shared(name: &str) -> LockGuard {
    request_lock(name, LockMode::Shared).await
}

async fn request_lock(name: &str, mode: LockMode) -> LockGuard {
    let Some(locks) = lock_manager() else {
        return LockGuard { release: None };
    };
    // `held` stays pending while we hold the lock; resolving it releases the lock.
    let mut release = None;
    let held = Promise::new(&mut |resolve, _| release = Some(resolve));
    let mut grant = None;
    let granted = Promise::new(&mut |resolve, _| grant = Some(resolve));
    let (Some(release), Some(grant)) = (release, grant) else {
        return LockGuard { release: None };
    };
    // The guard exists before we wait, so a dropped future releases a lock granted later.
    let guard = LockGuard {
        release: Some(release),
    };
    let callback = Closure::once_into_js(move |_lock: JsValue| -> JsValue {
        let _ = grant.call0(&JsValue::NULL);
        held.into()
    });
    let options = LockOptions::new();
    options.set_mode(mode);
    let request = locks.request_with_options(name, &options, callback.unchecked_ref());
    // A refused request (e.g. an opaque origin) rejects before any grant: degrade, never hang.
    let _ = JsFuture::from(Promise::race(&Array::of2(&granted, &request))).await;
    guard
}

/// Whether another tab holds the lock `name` right now (`None` when the browser cannot tell).
pub(crate) async fn held_elsewhere(name: &str) -> Option<bool> {
    let snapshot: LockManagerSnapshot = JsFuture::from(lock_manager()?.query())
        .await
        .ok()?
        .unchecked_into();
    let held = snapshot.get_held()?;
    Some(held.iter().any(|l| l.get_name().is_some_and(|n| n == name)))
}
