//! Small display formats: relative times, UTC dates (and the calendar arithmetic behind them), byte
//! sizes, token counts, one-line and clipped text for names shown in messages.
//! Pure: `now` is passed in. Must not import anything outside `crate::engine`.

use crate::engine::model::Millis;

/// "just now", "5 min ago", "3 h ago", "yesterday", "4 days ago", or a date for older times.
pub fn relative_time(then: Millis, now: Millis) -> String {
    let secs = (now - then).max(0) / 1000;
    match secs {
        0..=44 => "just now".into(),
        45..=3599 => format!("{} min ago", (secs + 30) / 60),
        3600..=86_399 => format!("{} h ago", secs / 3600),
        86_400..=172_799 => "yesterday".into(),
        172_800..=2_591_999 => format!("{} days ago", secs / 86_400),
        _ => date(then),
    }
}

/// `YYYY-MM-DD` (UTC) for a timestamp.
pub fn date(ms: Millis) -> String {
    let days = ms.div_euclid(86_400_000);
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}")
}

/// `YYYY-MM-DD HH:MM` (UTC) for a timestamp.
pub fn date_time(ms: Millis) -> String {
    let mins = ms.div_euclid(60_000).rem_euclid(24 * 60);
    format!("{} {:02}:{:02}", date(ms), mins / 60, mins % 60)
}

/// Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// "812 B", "4.2 KB", "1.5 MB", "2.0 GB".
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if n < 1000 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1000.0;
    let mut unit = 0;
    while v >= 1000.0 && unit < UNITS.len() - 1 {
        v /= 1000.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

/// The continuity badge of a conversation: (css key, label, explanation). A turn that had to
/// re-inject the history shows as such even when it opened a new live session, so the user sees
/// that Memoire gave the agent its memory back; the next resumed turn shows "resumable" again.
pub fn continuity(
    conv: &crate::engine::model::Conversation,
) -> (&'static str, &'static str, &'static str) {
    use crate::engine::model::TurnPath;
    let live = conv.remote_handle.as_ref().is_some_and(|h| !h.dead);
    match (live, conv.last_path) {
        (true, Some(TurnPath::Reinjected)) => (
            "reinjected",
            "re-injected",
            "The agent had lost this conversation, so Memoire sent the history, summary and memory \
             again; the next turn continues the new session.",
        ),
        (true, _) => (
            "resumable",
            "resumable",
            "The agent still holds this conversation; the next turn continues it.",
        ),
        (false, Some(TurnPath::Reinjected)) | (false, Some(TurnPath::Resumed)) => (
            "reinjected",
            "re-injected",
            "Memoire sends the history, summary and memory with each turn.",
        ),
        (false, Some(TurnPath::Fresh)) | (false, None) => (
            "fresh",
            "fresh",
            "Nothing to carry over yet: the next turn starts the conversation.",
        ),
    }
}

/// Whitespace runs (newlines included) collapsed to one space, trimmed: a value shown on one line.
pub fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// At most `max` characters of `s`, with `…` when something was cut (for names in messages).
pub fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(max).collect::<String>())
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`), the
/// inverse of the calendar [`date`] uses.
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}
