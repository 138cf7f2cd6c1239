//! Small display formats: relative times, UTC dates and days, local day separators ("Today",
//! "Mon 23 Nov") and times of day, ("1 Mar 2026"; and the calendar
//! arithmetic behind them), byte sizes, token counts, one-line and clipped text for names shown in
//! messages, a reply's generation figures.
//! Pure: `now` is passed in. Must not import anything outside `crate::engine`.

use crate::engine::model::{GenerationStats, Millis};

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

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// "1 Mar 2026" (UTC) for a timestamp: a day as people read it.
pub fn day(ms: Millis) -> String {
    let (y, m, d) = civil_from_days(ms.div_euclid(86_400_000));
    format!("{d} {} {y}", MONTHS[m as usize - 1])
}

/// "1 Mar 2026" for a `YYYY-MM-DD` day as [`date`] writes it; the text itself when it is not one.
pub fn day_of(ymd: &str) -> String {
    let parts: Vec<&str> = ymd.split('-').collect();
    match parts[..] {
        [y, m, d] if y.len() == 4 && m.len() == 2 && d.len() == 2 => {
            match (y.parse::<i64>(), m.parse::<usize>(), d.parse::<u32>()) {
                (Ok(y), Ok(m @ 1..=12), Ok(d @ 1..=31)) => format!("{d} {} {y}", MONTHS[m - 1]),
                _ => ymd.to_string(),
            }
        }
        _ => ymd.to_string(),
    }
}

const WEEKDAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];

const DAY_MS: Millis = 86_400_000;

/// The local day of a timestamp (days since 1970-01-01 in the time zone `offset_minutes` east of
/// UTC): two messages with the same local day sit under the same day separator.
pub fn local_day(ms: Millis, offset_minutes: i32) -> i64 {
    (ms + Millis::from(offset_minutes) * 60_000).div_euclid(DAY_MS)
}

/// "14:05": a message's local time of day.
pub fn time_of_day(ms: Millis, offset_minutes: i32) -> String {
    let local = ms.saturating_add(Millis::from(offset_minutes) * 60_000);
    let mins = local.div_euclid(60_000).rem_euclid(24 * 60);
    format!("{:02}:{:02}", mins / 60, mins % 60)
}

/// The separator over a day's messages: "Today", "Yesterday", "Mon 23 Nov" this year, "Mon 23 Nov
/// 2025" before it (local days, `now` and the offset passed in).
pub fn day_separator(ms: Millis, now: Millis, offset_minutes: i32) -> String {
    let day = local_day(ms, offset_minutes);
    let today = local_day(now, offset_minutes);
    if day == today {
        return "Today".into();
    }
    if day + 1 == today {
        return "Yesterday".into();
    }
    let (y, m, d) = civil_from_days(day);
    let (this_year, _, _) = civil_from_days(today);
    let weekday = WEEKDAYS[(day + 4).rem_euclid(7) as usize];
    let month = MONTHS[m as usize - 1];
    if y == this_year {
        format!("{weekday} {d} {month}")
    } else {
        format!("{weekday} {d} {month} {y}")
    }
}

/// The full local date and time, for a tooltip: "Mon 23 Nov 2026, 14:05".
pub fn full_date_time(ms: Millis, offset_minutes: i32) -> String {
    let day = local_day(ms, offset_minutes);
    let (y, m, d) = civil_from_days(day);
    let weekday = WEEKDAYS[(day + 4).rem_euclid(7) as usize];
    format!(
        "{weekday} {d} {} {y}, {}",
        MONTHS[m as usize - 1],
        time_of_day(ms, offset_minutes)
    )
}

/// A timestamp as `<time datetime>` takes it: `2026-11-23T14:05:09Z` (UTC).
pub fn iso_date_time(ms: Millis) -> String {
    let secs = ms.div_euclid(1000).rem_euclid(86_400);
    format!(
        "{}T{:02}:{:02}:{:02}Z",
        date(ms),
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
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

/// The memory status of a conversation: (css key, plain label, explanation). A turn that had to
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
            "memory restored",
            "The agent had lost this conversation, so Memoire sent the history, summary and memory \
             again; the next turn continues the new session.",
        ),
        (true, _) => (
            "resumable",
            "agent remembers",
            "The agent still holds this conversation; the next turn continues it.",
        ),
        (false, Some(TurnPath::Reinjected)) | (false, Some(TurnPath::Resumed)) => (
            "reinjected",
            "memory sent",
            "Memoire sends the history, summary and memory with each turn.",
        ),
        (false, Some(TurnPath::Fresh)) | (false, None) => (
            "fresh",
            "new",
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

/// A count with its noun in the right number: "1 summary", "2 summaries", "0 messages".
pub fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A count with its thousands grouped: "2,840".
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A reply's generation figures in one quiet line: "312 tokens · 2,840 cached · 0.42 s to first
/// token · 48.2 tokens/s", each part only when known (the cached prompt tokens when the server
/// reported them).
pub fn generation_stats(s: &GenerationStats) -> String {
    let mut parts = vec![plural(s.tokens as usize, "token", "tokens")];
    if let Some(n) = s.cached_tokens {
        parts.push(format!("{} cached", count(u64::from(n))));
    }
    if let Some(ms) = s.first_token_ms {
        let first = if ms < 10_000 {
            format!("{:.2} s", f64::from(ms) / 1000.0)
        } else {
            format!("{:.0} s", f64::from(ms) / 1000.0)
        };
        parts.push(format!("{first} to first token"));
    }
    if let Some(v) = s.tokens_per_s.filter(|v| v.is_finite() && *v > 0.0) {
        parts.push(format!("{v:.1} tokens/s"));
    }
    parts.join(" · ")
}

/// A model name as a person reads it: a file path (llama.cpp and llama-cpp-python list the GGUF
/// file they serve) becomes the file's name without the `.gguf`; other names stay as they are.
pub fn model_label(name: &str) -> String {
    let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
    let base = base
        .strip_suffix(".gguf")
        .or_else(|| base.strip_suffix(".GGUF"))
        .unwrap_or(base);
    if base.is_empty() {
        name.to_string()
    } else {
        base.to_string()
    }
}

/// The name the header gives the model in use: its readable name ([`model_label`]); with none set,
/// the one model the server lists (what it answers with), else "Server's default model". Never
/// empty.
pub fn model_in_use(name: &str, listed: &[String]) -> String {
    if !name.trim().is_empty() {
        return model_label(name.trim());
    }
    match listed {
        [only] if !only.trim().is_empty() => model_label(only.trim()),
        _ => "Server's default model".into(),
    }
}

/// What a message row says about its status: (css key, short label, the error text to show under
/// it). A reply the user stopped is not an error: it says "stopped" and nothing more. A failed
/// reply's reason is shown once, in the error banner, so the row only says "failed".
pub fn message_note(
    status: crate::engine::model::MessageStatus,
    error: Option<&str>,
) -> Option<(&'static str, &'static str)> {
    use crate::engine::model::MessageStatus as S;
    match status {
        S::Complete => None,
        S::Streaming => Some(("streaming", "writing…")),
        S::Interrupted if crate::engine::failure::was_stopped(error) => {
            Some(("stopped", "stopped"))
        }
        S::Interrupted => Some(("interrupted", "cut off — the partial reply is kept")),
        S::Error => Some(("error", "failed")),
    }
}

/// The `data-status` of a message row: its status, or `capped` for a complete reply the reply cap
/// cut (`MessageMeta::capped`; a continuation that is running is `streaming`).
pub fn shown_status(status: crate::engine::model::MessageStatus, capped: bool) -> &'static str {
    use crate::engine::model::MessageStatus as S;
    match status {
        S::Complete if capped => "capped",
        s => s.as_str(),
    }
}

/// [`message_note`] for a reply the reply cap cut: it ended where the cap is, and Continue asks for
/// the rest.
pub fn reply_note(
    status: crate::engine::model::MessageStatus,
    capped: bool,
    error: Option<&str>,
) -> Option<(&'static str, &'static str)> {
    match shown_status(status, capped) {
        "capped" => Some((
            "capped",
            "stopped at the reply cap — Continue asks for the rest",
        )),
        _ => message_note(status, error),
    }
}

/// A search snippet without the cut words at its ends: where the store cut it (a leading or
/// trailing `…`), the partial word next to the cut goes, unless the match itself is in it.
pub fn snippet_words(snippet: &str, query: &str) -> String {
    let q = query.trim().to_lowercase();
    let mut s = snippet;
    let mut lead = false;
    let mut trail = false;
    if let Some(rest) = s.strip_prefix('…') {
        lead = true;
        s = rest;
        if let Some(sp) = s.find(char::is_whitespace) {
            if !s[..sp].to_lowercase().contains(&q) || q.is_empty() {
                s = s[sp..].trim_start();
            }
        }
    }
    if let Some(rest) = s.strip_suffix('…') {
        trail = true;
        s = rest;
        if let Some(sp) = s.rfind(char::is_whitespace) {
            if !s[sp..].to_lowercase().contains(&q) || q.is_empty() {
                s = s[..sp].trim_end();
            }
        }
    }
    format!(
        "{}{}{}",
        if lead { "… " } else { "" },
        s,
        if trail { " …" } else { "" }
    )
}

/// `text` split into runs, `true` for each case-insensitive occurrence of a word of `query` (for
/// highlighting a search: the search finds messages holding every word, so each is marked; where
/// two words start at one place the longer is). Runs join back to `text`.
pub fn highlight(text: &str, query: &str) -> Vec<(String, bool)> {
    let terms: Vec<Vec<char>> = query
        .split_whitespace()
        .map(|w| w.chars().flat_map(char::to_lowercase).collect())
        .collect();
    if terms.is_empty() {
        return vec![(text.to_string(), false)];
    }
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut out = Vec::new();
    let (mut i, mut from) = (0, 0);
    while i < chars.len() {
        match terms.iter().filter_map(|t| match_at(&chars, i, t)).max() {
            Some(j) => {
                let start = chars[i].0;
                let end = chars.get(j).map_or(text.len(), |c| c.0);
                if start > from {
                    out.push((text[from..start].to_string(), false));
                }
                out.push((text[start..end].to_string(), true));
                from = end;
                i = j;
            }
            None => i += 1,
        }
    }
    if from < text.len() {
        out.push((text[from..].to_string(), false));
    }
    out
}

/// Where a case-insensitive match of `term` (lowercase) starting at char `i` ends (a char index
/// past `i`), if one does.
fn match_at(chars: &[(usize, char)], i: usize, term: &[char]) -> Option<usize> {
    let (mut j, mut k) = (i, 0);
    while j < chars.len() && k < term.len() {
        let l: Vec<char> = chars[j].1.to_lowercase().collect();
        if !term[k..].starts_with(&l) {
            return None;
        }
        k += l.len();
        j += 1;
    }
    (k == term.len() && j > i).then_some(j)
}

/// A snippet moved so its first match shows at its start: when more than twice `lead_chars`
/// characters come before the first word of `query` found in it, only the last `lead_chars` of them
/// stay (from a word's start when one is there), an ellipsis marking what went. A narrow list cuts a snippet at its end, so a match 40 characters in would be cut off.
pub fn centre_snippet(snippet: &str, query: &str, lead_chars: usize) -> String {
    let runs = highlight(snippet, query);
    let Some(at) = runs.iter().position(|r| r.1) else {
        return snippet.to_string();
    };
    let before: String = runs[..at].iter().map(|r| r.0.as_str()).collect();
    let lead = before.trim_start_matches(['…', ' ']);
    let count = lead.chars().count();
    // Twice the lead still shows the match: a short snippet stays whole.
    if count <= lead_chars * 2 {
        return snippet.to_string();
    }
    // The last `lead_chars` characters, from the first word that starts within them.
    let cut = lead
        .char_indices()
        .nth(count - lead_chars)
        .map_or(lead.len(), |(b, _)| b);
    let tail = &lead[cut..];
    let kept = match tail.find(char::is_whitespace) {
        Some(sp)
            if !lead[..cut].ends_with(char::is_whitespace) && !tail[sp..].trim().is_empty() =>
        {
            tail[sp..].trim_start()
        }
        _ => tail,
    };
    let rest: String = runs[at..].iter().map(|r| r.0.as_str()).collect();
    format!("… {kept}{rest}")
}

/// The name of an exported file: `memoire-<title>-<YYYY-MM-DD>.<ext>`, the title in lowercase
/// words joined by `-` (letters and digits only, at most 40 characters), or `memoire-backup-<date>`
/// for a whole backup (`title` = None).
pub fn export_file_name(title: Option<&str>, now: Millis, ext: &str) -> String {
    let slug = title.map(|t| {
        let mut s = String::new();
        for w in t
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
        {
            let w = w.to_lowercase();
            if s.chars().count() + w.chars().count() + 1 > 40 {
                break;
            }
            if !s.is_empty() {
                s.push('-');
            }
            s.push_str(&w);
        }
        if s.is_empty() {
            "conversation".to_string()
        } else {
            s
        }
    });
    format!(
        "memoire-{}-{}.{ext}",
        slug.as_deref().unwrap_or("backup"),
        date(now)
    )
}

/// The conversation the app opens at start: the one the address names, else the one open when
/// the app was last left (if it still exists), else none (a new chat).
pub fn conversation_to_reopen(
    route: Option<&str>,
    last_open: Option<&str>,
    exists: impl Fn(&str) -> bool,
) -> Option<String> {
    route
        .map(str::to_string)
        .or_else(|| last_open.filter(|id| exists(id)).map(str::to_string))
}

/// What the next request does, for the context inspector, in plain words (no protocol terms).
pub fn path_explanation(path: crate::engine::model::TurnPath) -> &'static str {
    use crate::engine::model::TurnPath as P;
    match path {
        P::Resumed => "The agent still has this conversation, so only the new message is sent. If it has forgotten, Memoire sends everything below again.",
        P::Reinjected => "The agent does not have this conversation, so Memoire sends the summary, the memory and the history below with the new message.",
        P::Fresh => "Nothing came before, so only the system prompt and the new message are sent.",
    }
}

/// The context inspector's line for the system prompt: whose it is (this conversation's or the one
/// in Settings, then the instructions of the conversation's project when it has some: both apply,
/// the project's come last; see `engine::project`) and how it begins.
pub fn system_prompt_detail(
    conversation: &crate::engine::model::Conversation,
    project: Option<&crate::engine::model::Project>,
    text: &str,
) -> String {
    let own = conversation
        .memory_overrides
        .system_prompt
        .as_deref()
        .is_some_and(|p| !p.trim().is_empty());
    let whose = if own {
        "This conversation's"
    } else {
        "From Settings"
    };
    let whose = match project.filter(|p| !p.instructions.trim().is_empty()) {
        Some(p) => format!("{whose}, then the instructions of project \"{}\"", p.name),
        None => whose.to_string(),
    };
    format!("{whose}: {}", clip(&one_line(text), 80))
}
