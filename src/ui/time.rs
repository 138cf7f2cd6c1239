//! The browser's clock for views (`now_ms`); formatting itself is `engine::format`. Must not import
//! `crate::store` or `crate::transport`.

/// Milliseconds since the epoch, from the browser.
pub fn now_ms() -> i64 {
    js_sys::Date::now() as i64
}

/// The local time zone's offset east of UTC, in minutes, at `ms` (daylight saving included).
pub fn offset_at(ms: i64) -> i32 {
    let date = js_sys::Date::new(&wasm_bindgen::JsValue::from_f64(ms as f64));
    -(date.get_timezone_offset() as i32)
}
