//! The sync password belongs to the origin it was given for (issue 28, item 4): an empty password
//! field means "keep the saved one" only while the sync URL's origin (scheme, host, port) is the
//! one the password was saved with; after an origin change, the saved password is not sent
//! (neither by "Test connection" nor by sync) and the form asks for it again.
//! Origins are read as the API key's are (`engine::settings::origin_of`).
//! Must not import anything outside `crate::engine`.

pub use crate::engine::settings::origin_of;

/// Whether a password saved for `saved_for` (a URL or an origin) may be sent to `url`.
pub fn same_origin(saved_for: &str, url: &str) -> bool {
    match (origin_of(saved_for), origin_of(url)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

/// The password to send to `url`: the one typed, or else the saved one when it was saved for
/// `url`'s origin; `None`: none may be sent (the user must type it again).
pub fn password_for<'a>(
    typed: Option<&'a str>,
    saved: &'a str,
    saved_for: &str,
    url: &str,
) -> Option<&'a str> {
    match typed {
        Some(t) => Some(t),
        None if !saved.is_empty() && same_origin(saved_for, url) => Some(saved),
        None => None,
    }
}
