//! The sync password belongs to the origin it was given for (issue 28, item 4): an empty password
//! field means "keep the saved one" only while the sync URL's origin (scheme, host, port) is the
//! one the password was saved with; after an origin change, the saved password is not sent
//! (neither by "Test connection" nor by sync) and the form asks for it again.
//! Must not import anything outside `crate::engine`.

/// The origin of an `http(s)` URL, normalised: lowercase scheme and host, the default port
/// dropped (`None`: not an http(s) URL with a host).
pub fn origin_of(url: &str) -> Option<String> {
    let url = url.trim();
    let (scheme, rest) = url.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    let default = match scheme.as_str() {
        "http" => "80",
        "https" => "443",
        _ => return None,
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    // Credentials in the URL are not part of the origin.
    let hostport = authority.rsplit('@').next().unwrap_or_default();
    let (host, port) = match hostport.rsplit_once(':') {
        Some((h, p)) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => (h, p),
        Some((h, "")) => (h, default),
        _ => (hostport, default),
    };
    if host.is_empty() {
        return None;
    }
    let host = host.to_ascii_lowercase();
    Some(if port == default {
        format!("{scheme}://{host}")
    } else {
        format!("{scheme}://{host}:{port}")
    })
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
