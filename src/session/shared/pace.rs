//! What the session's long loops share (an import, sync's recording of local changes): the
//! browser's monotonic clock, a yield to the browser, and a loop run in slices sized by the engine's
//! [`Pace`] from the time the slices before took. The sizes are the engine's decision; this file only
//! times and yields. Must not import `ui`.

use crate::engine::import::slice::Pace;
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::JsFuture;

/// The browser's monotonic clock, in ms (slices are timed with it).
pub(crate) fn perf_now() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map_or_else(js_sys::Date::now, |p| p.now())
}

/// Lets the browser run its other tasks (input, rendering) before the loop goes on: a message
/// posted to ourselves, which (unlike a 0 ms timer, clamped to 4 ms when nested) comes back at once.
pub(crate) async fn yield_now() {
    let Ok(channel) = web_sys::MessageChannel::new() else {
        return;
    };
    let back = js_sys::Promise::new(&mut |resolve, _| {
        channel.port1().set_onmessage(Some(&resolve));
    });
    if channel.port2().post_message(&JsValue::NULL).is_ok() {
        let _ = JsFuture::from(back).await;
    }
    channel.port1().set_onmessage(None);
}

/// Hands `items` to `slice` a slice at a time, each as many as `pace` says, timed, with a yield to
/// the browser between slices. `slice` returns false to stop (the items left are dropped); the
/// result is false when it stopped.
pub(crate) async fn in_slices<I: Iterator>(
    pace: &mut Pace,
    items: I,
    mut slice: impl FnMut(&mut dyn Iterator<Item = I::Item>) -> bool,
) -> bool {
    let mut items = items.peekable();
    while items.peek().is_some() {
        let (t0, n) = (perf_now(), pace.size());
        let mut taken = 0;
        let go_on = slice(&mut items.by_ref().take(n).inspect(|_| taken += 1));
        pace.observe(taken, perf_now() - t0);
        if !go_on {
            return false;
        }
        if items.peek().is_some() {
            yield_now().await;
        }
    }
    true
}
