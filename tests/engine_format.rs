#![cfg(not(target_arch = "wasm32"))]
//! Display formats: relative times, dates, byte sizes, one-line and clipped text.

use memoire::engine::format::{bytes, clip, date, date_time, day, day_of, one_line, relative_time};

const NOW: i64 = 1_795_300_167_000; // 2026-11-22T...

fn check_rel(ago_secs: i64, want: &str) {
    assert_eq!(
        relative_time(NOW - ago_secs * 1000, NOW),
        want,
        "{ago_secs}s ago"
    );
}

#[test]
fn relative_times() {
    check_rel(0, "just now");
    check_rel(-30, "just now"); // clock skew: a time in the future
    check_rel(44, "just now");
    check_rel(45, "1 min ago");
    check_rel(5 * 60, "5 min ago");
    check_rel(3 * 3600, "3 h ago");
    check_rel(86_400 + 5, "yesterday");
    check_rel(4 * 86_400, "4 days ago");
    check_rel(400 * 86_400, &date(NOW - 400 * 86_400_000));
}

#[test]
fn dates() {
    assert_eq!(date(0), "1970-01-01");
    assert_eq!(date(951_782_400_000), "2000-02-29");
    assert_eq!(date(-86_400_000), "1969-12-31");
    assert_eq!(date_time(1_700_000_000_000), "2023-11-14 22:13");
}

fn check_day(ymd: &str, want: &str) {
    assert_eq!(day_of(ymd), want, "{ymd}");
}

#[test]
fn days_as_people_read_them() {
    assert_eq!(day(0), "1 Jan 1970");
    assert_eq!(day(951_782_400_000), "29 Feb 2000");
    assert_eq!(day(1_795_132_800_000), "20 Nov 2026");
    check_day("2026-03-01", "1 Mar 2026");
    check_day("2026-12-31", "31 Dec 2026");
    check_day("2026-13-01", "2026-13-01");
    check_day("later", "later");
    check_day("", "");
}

#[test]
fn byte_sizes() {
    for (n, want) in [
        (0, "0 B"),
        (999, "999 B"),
        (1000, "1.0 KB"),
        (4_200, "4.2 KB"),
        (1_500_000, "1.5 MB"),
        (2_000_000_000, "2.0 GB"),
    ] {
        assert_eq!(bytes(n), want);
    }
}

#[test]
fn continuity_badges() {
    use memoire::engine::format::continuity;
    use memoire::engine::model::{Conversation, MemoryOverrides, RemoteHandle, TurnPath};
    let conv = |path: Option<TurnPath>, handle: Option<bool>| Conversation {
        id: "c".into(),
        title: "t".into(),
        title_is_custom: false,
        created_at: 0,
        updated_at: 0,
        message_count: 0,
        endpoint_profile_id: None,
        remote_handle: handle.map(|dead| RemoteHandle {
            id: "resp_1".into(),
            endpoint_key: "k".into(),
            covers_up_to_seq: 1,
            confirmed_at: 0,
            dead,
        }),
        last_path: path,
        memory_overrides: MemoryOverrides::default(),
    };
    let key = |p, h| continuity(&conv(p, h)).0;
    assert_eq!(key(None, None), "fresh");
    assert_eq!(key(Some(TurnPath::Fresh), None), "fresh");
    assert_eq!(key(Some(TurnPath::Resumed), Some(false)), "resumable");
    assert_eq!(key(Some(TurnPath::Fresh), Some(false)), "resumable");
    assert_eq!(
        key(Some(TurnPath::Resumed), Some(true)),
        "reinjected",
        "a dead handle is not resumable"
    );
    assert_eq!(key(Some(TurnPath::Reinjected), None), "reinjected");
    assert_eq!(
        key(Some(TurnPath::Reinjected), Some(false)),
        "reinjected",
        "a turn that re-sent the history shows it, even with the new live session"
    );
}

#[test]
fn one_line_and_clipped_text() {
    assert_eq!(
        one_line("  two\n lines\tand  spaces "),
        "two lines and spaces"
    );
    assert_eq!(one_line(" \n "), "");
    assert_eq!(clip("short", 5), "short");
    assert_eq!(clip("élan vital", 4), "élan…");
}

fn check_stats(tokens: u32, first: Option<u32>, speed: Option<f32>, want: &str) {
    check_cached(tokens, None, first, speed, want);
}

fn check_cached(
    tokens: u32,
    cached: Option<u32>,
    first: Option<u32>,
    speed: Option<f32>,
    want: &str,
) {
    let s = memoire::engine::model::GenerationStats {
        tokens,
        first_token_ms: first,
        tokens_per_s: speed,
        cached_tokens: cached,
    };
    assert_eq!(memoire::engine::format::generation_stats(&s), want);
}

#[test]
fn the_cached_prompt_tokens_show_only_when_the_server_reported_them() {
    check_cached(
        312,
        Some(2840),
        Some(420),
        None,
        "312 tokens · 2,840 cached · 0.42 s to first token",
    );
    check_cached(312, Some(0), None, None, "312 tokens · 0 cached");
    check_cached(
        5,
        Some(1_234_567),
        None,
        Some(20.0),
        "5 tokens · 1,234,567 cached · 20.0 tokens/s",
    );
    check_cached(
        312,
        None,
        Some(420),
        None,
        "312 tokens · 0.42 s to first token",
    );
    for (n, want) in [
        (0, "0"),
        (999, "999"),
        (1000, "1,000"),
        (12345, "12,345"),
        (100000, "100,000"),
    ] {
        assert_eq!(memoire::engine::format::count(n), want);
    }
}

#[test]
fn generation_stats_line() {
    check_stats(
        312,
        Some(420),
        Some(48.25),
        "312 tokens · 0.42 s to first token · 48.2 tokens/s",
    );
    check_stats(1, None, None, "1 token");
    check_stats(40, Some(12_400), None, "40 tokens · 12 s to first token");
    check_stats(40, None, Some(f32::NAN), "40 tokens");
}
