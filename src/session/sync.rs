//! Several tabs at once: a `BroadcastChannel` that carries this tab's [`SessionEvent`]s to every
//! other tab of the same database (and hands theirs to this tab's sink; saved settings travel too,
//! API key included, which never leaves this origin), and Web Locks
//! (`navigator.locks`) that serialise work only one tab may do at a time (a memory update of one
//! conversation, opening/migrating the database).
//!
//! Both degrade gracefully: without `BroadcastChannel` each tab only sees its own changes until it
//! reloads; without `navigator.locks` a lock is granted at once (IndexedDB transactions still keep
//! the data consistent, only duplicate work becomes possible).
//!
//! Web Locks are bound by hand (`js_sys::Reflect`) because web-sys only exposes `LockManager`
//! behind `--cfg=web_sys_unstable_apis`. Must not import `ui`.

use super::{EventSink, SessionEvent};
use crate::engine::model::{Message, MessageStatus};
use js_sys::{Function, Promise, Reflect};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

/// Streaming progress is sent at most this often per message (the final state is always sent).
const PROGRESS_EVERY_MS: i32 = 40;

/// Whether an event describes shared data (and so goes to the other tabs). Turn state, errors and
/// notices belong to the tab that has them: a "Stop" button in another tab could not stop the turn.
pub(crate) fn is_shared(e: &SessionEvent) -> bool {
    matches!(
        e,
        SessionEvent::ConversationChanged(_)
            | SessionEvent::ConversationRemoved(_)
            | SessionEvent::MessageAdded(_)
            | SessionEvent::MessageProgress(_)
            | SessionEvent::MessagesCleared(_)
            | SessionEvent::MemoryUpdating { .. }
            | SessionEvent::MemoryChanged(_)
            | SessionEvent::SettingsChanged(_)
    )
}

/// This tab's end of the channel the tabs of one database share.
pub(crate) struct Channel {
    inner: Rc<Inner>,
}

struct Inner {
    channel: web_sys::BroadcastChannel,
    /// The latest unsent streaming progress per message id (coalesced).
    pending: RefCell<BTreeMap<String, Message>>,
    timer: RefCell<Option<i32>>,
    _on_message: Closure<dyn FnMut(web_sys::MessageEvent)>,
    flush: RefCell<Option<Closure<dyn FnMut()>>>,
}

impl Channel {
    /// Opens the channel `memoire:<db_name>`; events from other tabs go to `sink`. `None` when the
    /// browser has no `BroadcastChannel`.
    pub(crate) fn open(db_name: &str, sink: EventSink) -> Option<Channel> {
        let channel = web_sys::BroadcastChannel::new(&format!("memoire:{db_name}")).ok()?;
        let on_message =
            Closure::<dyn FnMut(web_sys::MessageEvent)>::new(move |ev: web_sys::MessageEvent| {
                // Another tab of this origin is trusted as much as this one, but a message that does
                // not parse (another build's format) is dropped, never a panic.
                if let Some(e) = ev
                    .data()
                    .as_string()
                    .and_then(|s| serde_json::from_str::<SessionEvent>(&s).ok())
                {
                    sink(e);
                }
            });
        channel.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        let inner = Rc::new(Inner {
            channel,
            pending: RefCell::default(),
            timer: RefCell::default(),
            _on_message: on_message,
            flush: RefCell::default(),
        });
        let weak = Rc::downgrade(&inner);
        *inner.flush.borrow_mut() = Some(Closure::<dyn FnMut()>::new(move || {
            if let Some(i) = weak.upgrade() {
                i.timer.borrow_mut().take();
                i.flush();
            }
        }));
        Some(Channel { inner })
    }

    /// Sends a shared event to the other tabs. Streaming progress is coalesced (the latest state
    /// of each message, every few tens of ms); every other event first flushes what is pending, so
    /// the other tabs see events in this tab's order.
    pub(crate) fn post(&self, e: &SessionEvent) {
        if !is_shared(e) {
            return;
        }
        let i = &self.inner;
        if let SessionEvent::MessageProgress(m) = e {
            if m.status == MessageStatus::Streaming {
                i.pending.borrow_mut().insert(m.id.clone(), m.clone());
                i.schedule();
                return;
            }
            i.pending.borrow_mut().remove(&m.id);
        }
        i.flush();
        i.send(e);
    }
}

impl Inner {
    fn send(&self, e: &SessionEvent) {
        if let Ok(text) = serde_json::to_string(e) {
            // Fails only when the channel is closed (the page is going away).
            let _ = self.channel.post_message(&JsValue::from_str(&text));
        }
    }

    fn flush(&self) {
        let pending = std::mem::take(&mut *self.pending.borrow_mut());
        for (_, m) in pending {
            self.send(&SessionEvent::MessageProgress(m));
        }
    }

    fn schedule(&self) {
        if self.timer.borrow().is_some() {
            return;
        }
        let (Some(w), Some(f)) = (
            web_sys::window(),
            self.flush.borrow().as_ref().map(|f| f.as_ref().clone()),
        ) else {
            self.flush();
            return;
        };
        match w.set_timeout_with_callback_and_timeout_and_arguments_0(
            f.unchecked_ref(),
            PROGRESS_EVERY_MS,
        ) {
            Ok(t) => *self.timer.borrow_mut() = Some(t),
            Err(_) => self.flush(),
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let (Some(t), Some(w)) = (self.timer.borrow_mut().take(), web_sys::window()) {
            w.clear_timeout_with_handle(t);
        }
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

/// `navigator.locks`, when the browser has it.
fn lock_manager() -> Option<JsValue> {
    let nav = web_sys::window()?.navigator();
    let locks = Reflect::get(&nav, &JsValue::from_str("locks")).ok()?;
    (!locks.is_undefined() && !locks.is_null()).then_some(locks)
}

/// Waits for the exclusive Web Lock `name` (shared by every tab of this origin) and holds it until
/// the guard is dropped. Without Web Locks (or when the request fails) it returns at once.
pub(crate) async fn lock(name: &str) -> LockGuard {
    request_lock(name, false).await
}

async fn request_lock(name: &str, shared: bool) -> LockGuard {
    let Some(locks) = lock_manager() else {
        return LockGuard { release: None };
    };
    let Ok(request) =
        Reflect::get(&locks, &JsValue::from_str("request")).and_then(|f| f.dyn_into::<Function>())
    else {
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
    let on_grant = grant.clone();
    let callback = Closure::once_into_js(move |_lock: JsValue| -> JsValue {
        let _ = on_grant.call0(&JsValue::NULL);
        held.into()
    });
    let options = js_sys::Object::new();
    let mode = if shared { "shared" } else { "exclusive" };
    let _ = Reflect::set(
        &options,
        &JsValue::from_str("mode"),
        &JsValue::from_str(mode),
    );
    match request.call3(&locks, &JsValue::from_str(name), &options, &callback) {
        Ok(p) => {
            // A refused request (e.g. an opaque origin) resolves `granted` too: degrade, never hang.
            let on_fail = Closure::once_into_js(move |_e: JsValue| {
                let _ = grant.call0(&JsValue::NULL);
            });
            if let Ok(catch) =
                Reflect::get(&p, &JsValue::from_str("catch")).and_then(|f| f.dyn_into::<Function>())
            {
                let _ = catch.call1(&p, &on_fail);
            }
            let _ = JsFuture::from(granted).await;
        }
        Err(_) => return LockGuard { release: None },
    }
    guard
}

/// Like [`lock`], in `"shared"` mode: any number of tabs hold it together, and it keeps an
/// exclusive request for the same name waiting.
pub(crate) async fn lock_shared(name: &str) -> LockGuard {
    request_lock(name, true).await
}

/// Whether another tab holds the lock `name` right now (`None` when the browser cannot tell).
pub(crate) async fn held_elsewhere(name: &str) -> Option<bool> {
    let locks = lock_manager()?;
    let query = Reflect::get(&locks, &JsValue::from_str("query"))
        .ok()?
        .dyn_into::<Function>()
        .ok()?;
    let p = query.call0(&locks).ok()?.dyn_into::<Promise>().ok()?;
    let snapshot = JsFuture::from(p).await.ok()?;
    let held = Reflect::get(&snapshot, &JsValue::from_str("held")).ok()?;
    let held: js_sys::Array = held.dyn_into().ok()?;
    Some(held.iter().any(|l| {
        Reflect::get(&l, &JsValue::from_str("name"))
            .ok()
            .and_then(|n| n.as_string())
            .is_some_and(|n| n == name)
    }))
}
