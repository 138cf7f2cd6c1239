//! "Test connection": what is wrong with a sync setup, decided from what two requests showed, so the
//! user is told exactly what to fix: the server cannot be reached, it is reachable but CORS is not
//! enabled for this app's origin (with the CouchDB settings to set), the user name or password is
//! wrong, the user may not use the database, or the database does not exist.
//!
//! The shell sends `GET {url}/{db}` with the credentials in CORS mode; only when that fails at the
//! network level does it send a `no-cors` `GET {url}/` (whose opaque answer still proves the server
//! is reachable, which is how a CORS refusal is told apart from a server that is down). Both are
//! bounded in time and size: a server that takes the request and never answers is "stalled", one
//! whose answer has no end is not CouchDB, and a redirect is not followed (README
//! "Credentials").
//! Must not import anything outside `crate::engine`.

use serde_json::Value;

use crate::engine::failure::SYNC_REDIRECT_REFUSED;

/// What the CORS-mode `GET {url}/{db}` gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DbProbe {
    /// An answer: status and body.
    Answer { status: u16, body: String },
    /// No answer (a network error, a refused connection, or a CORS refusal: the browser cannot tell).
    Failed { reason: String },
    /// The server took the request and said nothing for `secs` (the request was aborted).
    TimedOut { secs: u32 },
    /// The answer passed `mb` megabytes (the request was aborted): no database answers so.
    TooLarge { mb: usize },
    /// The server answered with a redirect, which was not followed (nor its credentials sent on).
    Redirected,
}

/// The verdict, each with the words a user can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    #[error("the URL is not valid: {reason}. Enter the server's address, like https://couch.example.com:6984")]
    BadUrl { reason: String },
    #[error("no database name: enter the name of the database to sync with (e.g. memoire)")]
    NoDatabase,
    #[error("the sync server cannot be reached at {url} ({reason}): check the address and that the server is running")]
    Unreachable { url: String, reason: String },
    #[error("the sync server at {url} is reachable but does not allow this app (CORS is not enabled for {origin}). In CouchDB's configuration set [chttpd] enable_cors = true and [cors] origins = {origin}, credentials = true, methods = GET, PUT, POST, HEAD, DELETE, headers = accept, authorization, content-type, origin, referer")]
    Cors { url: String, origin: String },
    #[error("the sync server refused the user name or password (HTTP 401): check them")]
    WrongCredentials,
    #[error("user '{user}' may not use database '{db}' (HTTP 403): ask the server's admin to add the user to the database's members")]
    Forbidden { user: String, db: String },
    #[error("database '{db}' does not exist on the sync server: create it (in Fauxton or with PUT /{db}), or sign in as an admin so Memoire creates it")]
    DatabaseMissing { db: String },
    #[error("the server at {url} answered HTTP {status}, which is not what CouchDB answers: check that the URL points at CouchDB")]
    NotCouch { url: String, status: u16 },
    #[error("the server at {url} took the request but did not answer within {secs} s: check that the URL points at CouchDB and that the server is not overloaded")]
    Stalled { url: String, secs: u32 },
    #[error("the server at {url} answered with more than {mb} MB, which CouchDB does not for a database: check that the URL points at CouchDB")]
    Oversized { url: String, mb: usize },
    #[error("{}", SYNC_REDIRECT_REFUSED)]
    Redirected,
}

/// Checks the form before anything is sent: a http(s) URL without a trailing slash, a database name.
pub fn check_form(url: &str, db: &str) -> Result<String, Problem> {
    let url = url.trim().trim_end_matches('/');
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .ok_or_else(|| Problem::BadUrl {
            reason: "it must start with http:// or https://".into(),
        })?;
    if rest.is_empty() || rest.starts_with('/') {
        return Err(Problem::BadUrl {
            reason: "it has no host".into(),
        });
    }
    if db.trim().is_empty() {
        return Err(Problem::NoDatabase);
    }
    Ok(url.to_string())
}

/// The verdict: `Ok` when the database answered as CouchDB does. `reachable` is whether the
/// `no-cors` request got any answer (only asked when `db` failed).
pub fn diagnose(
    url: &str,
    db: &str,
    user: &str,
    origin: &str,
    probe: &DbProbe,
    reachable: Option<bool>,
) -> Result<(), Problem> {
    match probe {
        DbProbe::TimedOut { secs } => Err(Problem::Stalled {
            url: url.into(),
            secs: *secs,
        }),
        DbProbe::TooLarge { mb } => Err(Problem::Oversized {
            url: url.into(),
            mb: *mb,
        }),
        DbProbe::Redirected => Err(Problem::Redirected),
        DbProbe::Failed { reason } => {
            if reachable == Some(true) {
                Err(Problem::Cors {
                    url: url.into(),
                    origin: origin.into(),
                })
            } else {
                Err(Problem::Unreachable {
                    url: url.into(),
                    reason: reason.clone(),
                })
            }
        }
        DbProbe::Answer { status, body } => {
            let couch_error = serde_json::from_str::<Value>(body)
                .ok()
                .and_then(|v| v.get("error").and_then(Value::as_str).map(str::to_string));
            match (*status, couch_error.as_deref()) {
                (200, _) => {
                    let named = serde_json::from_str::<Value>(body)
                        .ok()
                        .is_some_and(|v| v.get("db_name").is_some());
                    if named {
                        Ok(())
                    } else {
                        Err(Problem::NotCouch {
                            url: url.into(),
                            status: 200,
                        })
                    }
                }
                (401, _) => Err(Problem::WrongCredentials),
                (403, _) => Err(Problem::Forbidden {
                    user: user.into(),
                    db: db.into(),
                }),
                (404, Some("not_found")) => Err(Problem::DatabaseMissing { db: db.into() }),
                (s, _) => Err(Problem::NotCouch {
                    url: url.into(),
                    status: s,
                }),
            }
        }
    }
}
