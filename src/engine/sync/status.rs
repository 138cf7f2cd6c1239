//! What sync's status says (the sidebar's `sync-status`: its `data-state` and its detail): the
//! state, the error in words, the next retry as a time of day ("retrying at 08:41"), and how many
//! pulled documents were refused on this connection (their reasons go to the console).
//! Pure: `now` and the local time's offset are arguments. Must not import anything outside
//! `crate::engine`.

use super::replicate::Status;
use crate::engine::format::plural;
use crate::engine::model::Millis;

/// `data-state` and the detail for `status`, `refused` documents skipped so far; times of day in
/// the zone `utc_offset_min` minutes ahead of UTC (the browser's `-getTimezoneOffset()`).
pub fn describe(status: &Status, refused: usize, utc_offset_min: i32) -> (&'static str, String) {
    let (state, mut detail) = match status {
        Status::Synced => ("synced", "Synced".to_string()),
        Status::Syncing { pending } => ("syncing", format!("Syncing ({pending} to send)")),
        Status::Offline { retry_at } => (
            "offline",
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
    (state, detail)
}

/// "08:41": the hour and minute of `ms` in the zone `utc_offset_min` minutes ahead of UTC.
pub fn time_of_day(ms: Millis, utc_offset_min: i32) -> String {
    let local = ms.saturating_add(i64::from(utc_offset_min) * 60_000);
    let mins = local.div_euclid(60_000).rem_euclid(24 * 60);
    format!("{:02}:{:02}", mins / 60, mins % 60)
}
