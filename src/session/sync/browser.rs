//! Sync's browser glue, the one adapter between the driver and the page: the `online` listener,
//! the `AbortController` of the request in flight, the wake-up that ends a sleep early, `btoa`
//! for Basic credentials, the time zone and origin of the page, the console, and `fetch`: every
//! request of sync goes through [`fetch`] here. It holds
//! what the browser hands back (a listener, a controller, a promise's resolver) and decides
//! nothing. Must not import `ui`.

use std::cell::RefCell;

use js_sys::{Function, Promise};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::AbortController;

use crate::transport::{self, TextLimits, TransportError};

/// The browser's handles the driver keeps: the `online` listener, the controller of the request
/// in flight, and the resolver that wakes a sleep.
#[derive(Default)]
pub(super) struct Glue {
    abort: RefCell<Option<AbortController>>,
    wake: RefCell<Option<Function>>,
    online: RefCell<Option<Closure<dyn FnMut()>>>,
}

impl Glue {
    /// Calls `f` each time the browser comes back online (for as long as this lives).
    pub(super) fn listen_online(&self, f: impl FnMut() + 'static) {
        let online = Closure::<dyn FnMut()>::new(f);
        if let Some(w) = web_sys::window() {
            let _ = w.add_event_listener_with_callback("online", online.as_ref().unchecked_ref());
        }
        *self.online.borrow_mut() = Some(online);
    }

    /// Ends the current [`Glue::sleep`] now.
    pub(super) fn wake(&self) {
        let f = self.wake.borrow_mut().take();
        if let Some(f) = f {
            let _ = f.call0(&JsValue::NULL);
        }
    }

    /// Sleeps `ms` or until [`Glue::wake`].
    pub(super) async fn sleep(&self, ms: i32) {
        let mut wake_fn = None;
        let woken = Promise::new(&mut |resolve, _| wake_fn = Some(resolve));
        *self.wake.borrow_mut() = wake_fn;
        // Whichever ends first; the timer is cleared when it is dropped (woken first).
        let woken = std::pin::pin!(JsFuture::from(woken));
        let timer = std::pin::pin!(gloo_timers::future::TimeoutFuture::new(ms.max(0) as u32));
        futures_util::future::select(woken, timer).await;
    }

    /// A controller for the request about to go, kept so [`Glue::abort`] can cancel it.
    pub(super) fn begin_request(&self) -> Option<AbortController> {
        let abort = AbortController::new().ok();
        *self.abort.borrow_mut() = abort.clone();
        abort
    }

    /// The request of `abort` ended: whether it was cancelled.
    pub(super) fn end_request(&self, abort: Option<AbortController>) -> bool {
        self.abort.borrow_mut().take();
        abort.is_some_and(|a| a.signal().aborted())
    }

    /// Cancels the request in flight, if any.
    pub(super) fn abort(&self) {
        let a = self.abort.borrow_mut().take();
        if let Some(a) = a {
            a.abort();
        }
    }
}

/// The page's time zone, in minutes east of UTC (what the status's times are shown in).
pub(super) fn tz_offset() -> i32 {
    -(js_sys::Date::new_0().get_timezone_offset() as i32)
}

/// The page's own origin ("Test connection" names it when CORS refuses it).
pub(super) fn page_origin() -> String {
    web_sys::window()
        .and_then(|w| w.location().origin().ok())
        .unwrap_or_default()
}

/// Says `what` in the console, as sync.
pub(super) fn warn(what: &str) {
    web_sys::console::warn_1(&JsValue::from_str(&format!("memoire sync: {what}")));
}

/// Every request of sync, through the transport's one whole-body request (its limits and
/// timeouts apply; `abort` cancels it).
pub(super) async fn fetch(
    url: &str,
    method: &str,
    body: Option<&str>,
    auth: Option<&str>,
    abort: Option<&AbortController>,
    limits: TextLimits,
) -> Result<(u16, String), TransportError> {
    transport::fetch_text(url, method, body, auth, abort, limits).await
}

/// Whether anything answers at `url` within `ms` ("Test connection", after a failure).
pub(super) async fn reachable(url: &str, ms: u32) -> bool {
    transport::reachable(url, ms).await
}
