//! What sync's status says (the sidebar's `sync-status`: its `data-state` and its detail): the
//! state, the error in words, the next retry as a time of day ("retrying at 08:41"), and how many
//! pulled documents and images were refused on this connection (their reasons go to the console).
//! Pure: `now` and the local time's offset are arguments. Must not import anything outside
//! `crate::engine`.

use super::replicate::Status;
use crate::engine::format::{plural, time_of_day};
use crate::engine::model::Millis;

/// `data-state` and the detail for `status`, `refused` documents skipped so far and `unopened`
/// ones that did not open with the encryption key (or were not what was asked for); times of day
/// in the zone `utc_offset_min` minutes ahead of UTC (the browser's `-getTimezoneOffset()`).
pub fn describe(
    status: &Status,
    refused: usize,
    unopened: usize,
    utc_offset_min: i32,
) -> (&'static str, String) {
    let (state, mut detail) = match status {
        Status::Synced => ("synced", "Synced".to_string()),
        Status::Syncing { pending } => ("syncing", format!("Syncing ({pending} to send)")),
        // The UI contract has four states; a server out of reach is an error with its retry time
        // (the words say which).
        Status::Offline { retry_at } => (
            "error",
            format!(
                "The sync server cannot be reached; retrying at {}",
                time_of_day(*retry_at, utc_offset_min)
            ),
        ),
        Status::Error { error, retry_at } => (
            "error",
            match retry_at {
                Some(at) => format!(
                    "Sync error: {error}; retrying at {}",
                    time_of_day(*at, utc_offset_min)
                ),
                None => format!("Sync error: {error}"),
            },
        ),
    };
    if refused > 0 {
        detail.push_str(&format!(
            ". {} refused (see the browser console)",
            plural(refused, "pulled document", "pulled documents")
        ));
    }
    if unopened > 0 {
        detail.push_str(&format!(
            ". {} from the server could not be opened (see the browser console)",
            plural(unopened, "document", "documents")
        ));
    }
    (state, detail)
}

/// What the sidebar's indicator says in a few words: "synced", "syncing…", and for a server out
/// of reach or failing, "sync offline" or "sync error" with the next retry ("· retry 08:41").
pub fn label(status: &Status, utc_offset_min: i32) -> String {
    let retry = |at: Option<Millis>| {
        at.map(|at| format!(" · retry {}", time_of_day(at, utc_offset_min)))
            .unwrap_or_default()
    };
    match status {
        Status::Synced => "synced".into(),
        Status::Syncing { .. } => "syncing…".into(),
        Status::Offline { retry_at } => format!("sync offline{}", retry(Some(*retry_at))),
        Status::Error { retry_at, .. } => format!("sync error{}", retry(*retry_at)),
    }
}

/// The label and the detail for a sync loop that stopped on `error` (`sync::restart`): with the
/// time it starts again, or none when the user must act.
pub fn stopped(error: &str, retry_at: Option<Millis>, utc_offset_min: i32) -> (String, String) {
    match retry_at {
        Some(at) => {
            let at = time_of_day(at, utc_offset_min);
            (
                format!("sync error · retry {at}"),
                format!("{error} Retrying at {at}."),
            )
        }
        None => ("sync error".into(), error.to_string()),
    }
}

/// `detail` with how many images from the server were refused on this connection (`sync::blob`:
/// their messages are kept without them; the reasons go to the console).
pub fn with_images(mut detail: String, refused_images: usize) -> String {
    if refused_images > 0 {
        detail.push_str(&format!(
            ". {} refused (see the browser console)",
            plural(refused_images, "pulled image", "pulled images")
        ));
    }
    detail
}
