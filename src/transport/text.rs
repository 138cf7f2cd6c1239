//! A whole-body request for small JSON exchanges (the sync driver's CouchDB calls): method, URL,
//! optional JSON body and `Authorization`, an optional `AbortController`, and `no-cors` mode for a
//! reachability probe. Returns the status and the body text. Streaming replies use `super::open`.
//! Must not import `store`, `session` or `ui`.

use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

/// One request; `Err` is a network-level failure (or an abort), with the browser's words.
pub async fn fetch_text(
    url: &str,
    method: &str,
    body: Option<&str>,
    auth: Option<&str>,
    abort: Option<&web_sys::AbortController>,
    cors: bool,
) -> Result<(u16, String), String> {
    let text = |e: JsValue| super::js_text(e);
    let init = web_sys::RequestInit::new();
    init.set_method(method);
    if cors {
        let headers = web_sys::Headers::new().map_err(text)?;
        headers.set("Accept", "application/json").map_err(text)?;
        if body.is_some() {
            headers
                .set("Content-Type", "application/json")
                .map_err(text)?;
        }
        if let Some(a) = auth {
            headers.set("Authorization", a).map_err(text)?;
        }
        init.set_headers(&headers);
    } else {
        init.set_mode(web_sys::RequestMode::NoCors);
    }
    if let Some(b) = body {
        init.set_body(&JsValue::from_str(b));
    }
    if let Some(a) = abort {
        init.set_signal(Some(&a.signal()));
    }
    let window = web_sys::window().ok_or("no window")?;
    let resp: web_sys::Response = JsFuture::from(window.fetch_with_str_and_init(url, &init))
        .await
        .map_err(text)?
        .dyn_into()
        .map_err(|_| "fetch gave no response".to_string())?;
    let status = resp.status();
    let body = JsFuture::from(resp.text().map_err(text)?)
        .await
        .map_err(text)?
        .as_string()
        .unwrap_or_default();
    Ok((status, body))
}
