#![cfg(not(target_arch = "wasm32"))]
//! Sync's loop after it stopped on an error of its own (`sync::restart`): its part of the app not
//! fetched, the server not asked about encryption, a store error. A failure that can pass starts
//! the loop again after a backoff, and at once when the browser comes back online; one only the
//! user can fix waits for new settings. And what the status says meanwhile (`sync::status`).

use memoire::engine::model::Millis;
use memoire::engine::sync::restart::{Restart, Stop};
use memoire::engine::sync::status::stopped;

/// Now, on the test's device: 2026-11-26 08:41 UTC.
const NOW: Millis = 1_795_682_460_000;

/// Something that happens to the loop, `ms` after NOW.
enum E {
    /// It stopped on a failure that can pass, or on one only the user can fix.
    Passing,
    UserMustAct,
    /// The browser's `online` event.
    Online,
    /// The loop got as far as the server.
    Connected,
    /// The shell woke up and asks whether the loop starts again.
    Start,
}

/// Runs `events` through one `Restart`; after each, what it says: "start" or "wait" for `Start`,
/// else the restart time in ms after NOW ("at 1000") or "none".
fn check(events: &[(Millis, E)], want: &[&str]) {
    let mut r = Restart::default();
    let got: Vec<String> = events
        .iter()
        .map(|(ms, e)| {
            let now = NOW + ms;
            match e {
                E::Passing => drop(r.handle_stopped(now, Stop::Passing)),
                E::UserMustAct => drop(r.handle_stopped(now, Stop::UserMustAct)),
                E::Online => r.handle_online(now),
                E::Connected => r.handle_connected(),
                E::Start => return (if r.poll_start(now) { "start" } else { "wait" }).into(),
            }
            r.poll_timeout()
                .map_or("none".into(), |at| format!("at {}", at - NOW))
        })
        .collect();
    assert_eq!(got, want);
}

#[test]
fn a_stop_that_can_pass_starts_again_after_a_backoff_and_at_once_when_online() {
    use E::*;
    // 1 s, 2 s, 4 s after each stop in a row; not before.
    check(
        &[
            (0, Passing),
            (999, Start),
            (1000, Start),
            (1000, Passing),
            (3000, Start),
            (3000, Passing),
        ],
        &["at 1000", "wait", "start", "at 3000", "start", "at 7000"],
    );
    // Up to a minute.
    let stops: Vec<(Millis, E)> = (0..10).map(|_| (0, Passing)).collect();
    check(
        &stops[..],
        &[
            "at 1000", "at 2000", "at 4000", "at 8000", "at 16000", "at 32000", "at 60000",
            "at 60000", "at 60000", "at 60000",
        ],
    );
    // Back online: at once, and the backoff from the start.
    check(
        &[
            (0, Passing),
            (1000, Start),
            (1000, Passing),
            (1500, Online),
            (1500, Start),
            (1600, Passing),
        ],
        &["at 1000", "start", "at 3000", "at 1500", "start", "at 2600"],
    );
    // Online while running, or twice: nothing more.
    check(&[(0, Online), (0, Start)], &["none", "wait"]);
    check(
        &[
            (0, Passing),
            (10, Online),
            (20, Start),
            (30, Online),
            (30, Start),
        ],
        &["at 1000", "at 10", "start", "none", "wait"],
    );
    // Connected since: the next stop backs off from the start.
    check(
        &[
            (0, Passing),
            (1000, Start),
            (1000, Passing),
            (3000, Start),
            (3000, Connected),
            (5000, Passing),
        ],
        &["at 1000", "start", "at 3000", "start", "none", "at 6000"],
    );
}

#[test]
fn a_stop_only_the_user_can_fix_waits_for_new_settings() {
    use E::*;
    check(
        &[(0, UserMustAct), (10, Online), (60_000, Start)],
        &["none", "none", "wait"],
    );
    // After failures that could pass, one that cannot: no restart time left behind.
    check(
        &[
            (0, Passing),
            (0, UserMustAct),
            (1000, Start),
            (1000, Online),
        ],
        &["at 1000", "none", "wait", "none"],
    );
}

fn check_words(retry_at: Option<Millis>, want: (&str, &str)) {
    let (label, detail) = stopped("Sync could not start.", retry_at, 60);
    assert_eq!((label.as_str(), detail.as_str()), want);
}

#[test]
fn a_stopped_loop_says_its_error_and_when_it_starts_again() {
    check_words(
        Some(NOW + 60_000),
        (
            "sync error · retry 09:42",
            "Sync could not start. Retrying at 09:42.",
        ),
    );
    check_words(None, ("sync error", "Sync could not start."));
}
