//! Where the app is, outside the app: the address (`#/c/<id>`, written so Back and Forward move
//! between conversations), the conversation this browser had open when the app was left (local
//! storage), and the window event that says the first screen is there. Browser plumbing only: it
//! holds no state and decides nothing (which conversation to reopen is `engine::format`'s). Must
//! not import `crate::store`, `crate::transport` or the session, nor any store.

/// The key under which this browser remembers the conversation open when the app was left.
const LAST_OPEN_KEY: &str = "memoire.last-open";

/// The conversation open when the app was last left (this browser's local storage).
pub fn last_open() -> Option<String> {
    let ls = web_sys::window()?.local_storage().ok()??;
    ls.get_item(LAST_OPEN_KEY).ok()?
}

/// Remembers the conversation open now (`None`: none).
pub fn remember_open(id: Option<&str>) {
    let Some(ls) = web_sys::window().and_then(|w| w.local_storage().ok().flatten()) else {
        return;
    };
    let _ = match id {
        Some(id) => ls.set_item(LAST_OPEN_KEY, id),
        None => ls.remove_item(LAST_OPEN_KEY),
    };
}

/// Writes `#/c/<id>` (a history entry, so the back button works), or clears it.
pub fn set_route(id: Option<&str>) {
    let Some(w) = web_sys::window() else { return };
    let want = id.map(|i| format!("#/c/{i}")).unwrap_or_default();
    let have = w.location().hash().unwrap_or_default();
    if have != want {
        if want.is_empty() {
            let _ = w.history().and_then(|h| {
                let path = w.location().pathname().unwrap_or_default();
                h.push_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&path))
            });
        } else {
            let _ = w.location().set_hash(&want);
        }
    }
}

/// Writes `#/c/<id>` in place of the current history entry.
pub fn replace_route(id: &str) {
    let Some(w) = web_sys::window() else { return };
    let _ = w.history().and_then(|h| {
        h.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&format!("#/c/{id}")))
    });
}

/// The conversation id in the URL (`#/c/<id>`), if any.
pub fn route() -> Option<String> {
    let hash = web_sys::window()?.location().hash().ok()?;
    let id = hash.strip_prefix("#/c/")?;
    let id = js_sys::decode_uri_component(id).ok()?.as_string()?;
    (!id.is_empty()).then_some(id)
}

/// Tells the page that the first screen (composer and conversation list) is there: index.html
/// registers the service worker then, so its precaching download does not compete with the start.
pub fn announce_first_screen() {
    if let (Some(w), Ok(e)) = (
        web_sys::window(),
        web_sys::Event::new("memoire-first-screen"),
    ) {
        let _ = w.dispatch_event(&e);
    }
}
