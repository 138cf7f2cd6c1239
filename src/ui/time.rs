//! The browser's clock for views (`now_ms`); formatting itself is `engine::format`. Must not import
//! `crate::store` or `crate::transport`.

/// Milliseconds since the epoch, from the browser.
pub fn now_ms() -> i64 {
    js_sys::Date::now() as i64
}
