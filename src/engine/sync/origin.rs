//! The sync password belongs to the origin it was given for (issue 28, item 4): an empty password
//! field means "keep the saved one" only while the sync URL's origin (scheme, host, port) is the
//! one the password was saved with; after an origin change, the saved password is not sent
//! (neither by "Test connection" nor by sync) and the form asks for it again.
//! Origins are read as the API key's are (`engine::settings::origin_of`).
//!
//! Like the API key, the password goes over plain `http://` only to this machine (`localhost`,
//! `127.0.0.0/8`, `::1`: `engine::settings::insecure_host`); to any other host over http it is
//! refused, with an error before any request ([`plain_http_check`]), never dropped in silence.
//! The credentials go as `Basic` ([`basic_auth`]): `user:password` in UTF-8, in base64.
//! Must not import anything outside `crate::engine`.

use crate::engine::settings::insecure_host;
pub use crate::engine::settings::origin_of;

/// A password that would cross the network unencrypted: not sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("The sync password would travel unencrypted (plain http://) to {host}, so it is not sent. Use an https:// address for the sync server, or leave the password empty: only a server on this machine (localhost, 127.0.0.1) may take a password over http://.")]
pub struct InsecurePassword {
    pub host: String,
}

/// Whether `password` may be sent to `url`: always when it is empty or `url` is https; over
/// plain http only to a loopback host.
pub fn plain_http_check(url: &str, password: &str) -> Result<(), InsecurePassword> {
    if password.is_empty() {
        return Ok(());
    }
    match insecure_host(url) {
        Some(host) => Err(InsecurePassword { host }),
        None => Ok(()),
    }
}

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

/// `Basic` credentials for `user:password` (its UTF-8 bytes in standard base64, as the browser's
/// `btoa` gives them for one char per byte), or none without a user.
pub fn basic_auth(user: &str, password: &str) -> Option<String> {
    use base64::Engine;
    if user.is_empty() {
        return None;
    }
    let encoded = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    Some(format!("Basic {encoded}"))
}
