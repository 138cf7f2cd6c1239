//! The MCP driver's browser glue: the page's own origin, which the client needs for its CORS and
//! mixed-content explanations. It reads the browser and decides nothing. Must not import `ui`.

/// The page's origin (`https://app.example`; "" outside a window).
pub(super) fn page_origin() -> String {
    web_sys::window()
        .and_then(|w| w.location().origin().ok())
        .unwrap_or_default()
}
