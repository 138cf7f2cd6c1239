//! ChatGPT's citation markers, made what ChatGPT shows (issue 29 item 6). A reply that searched
//! the web holds private-use markers, `\u{e200}cite\u{e202}turn0search1\u{e201}` (kind, then ids,
//! each after `\u{e202}`), which ChatGPT draws as a source chip from the message's
//! `metadata.content_references` (each entry names the marker it explains in `matched_text`, and
//! gives `alt`, its readable Markdown such as `([Reuters](https://…))`, or the pages in `items`);
//! older replies hold `【11†source】`, explained by `metadata.citations` (`start_ix`..`end_ix` and the
//! page's `title` and `url`). Each marker an entry explains becomes that entry's readable text
//! (nothing for a `hidden` one); any other marker goes, the space before it too, except an `entity`
//! marker (`\u{e200}entity\u{e202}["city","Paris",…]\u{e201}`), which ChatGPT shows as the name;
//! one without its end (a reply cut short) goes to the end of its line.
//! Only text that holds a marker is replaced: an entry whose `matched_text` is plain text (a
//! footnote's single space) is never applied. Must not import anything outside `crate::engine`.

use serde_json::Value;

const START: char = '\u{e200}';
const END: char = '\u{e201}';
const SEP: char = '\u{e202}';
/// The longest `【…】` marker looked for.
const MAX_BRACKET: usize = 120;

/// What a marker becomes.
#[derive(Debug, Clone, PartialEq)]
enum Shown {
    /// A source: after a space, in place of the marker and the space before it.
    Source(String),
    /// Words of the sentence (an entity's name): in place of the marker alone.
    Words(String),
    /// Nothing: the marker and the space before it go.
    Nothing,
}

/// `text` as ChatGPT shows it, with `meta` the message's `metadata`.
pub(super) fn readable(text: &str, meta: Option<&Value>) -> String {
    if !text.contains([START, END, SEP, '【']) {
        return text.to_string();
    }
    let explained = explained(text, meta);
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(p) = rest.find([START, '【']) {
        out.push_str(&rest[..p]);
        let here = &rest[p..];
        let (len, shown) = marker_at(here, &explained);
        match shown {
            Shown::Words(w) => out.push_str(&w),
            Shown::Source(s) => {
                trim_space(&mut out);
                if !(out.is_empty() || out.ends_with('\n')) {
                    out.push(' ');
                }
                out.push_str(s.trim());
            }
            Shown::Nothing if len > 0 => trim_space(&mut out),
            Shown::Nothing => {}
        }
        // `len` 0: a '【' that is no marker, kept.
        let step = if len == 0 { '【'.len_utf8() } else { len };
        if len == 0 {
            out.push('【');
        }
        rest = &here[step..];
    }
    out.push_str(rest);
    out.retain(|c| c != END && c != SEP);
    out
}

/// The marker at the start of `here` (which starts with `\u{e200}` or `【`): its length in bytes and
/// what it becomes; length 0 for a `【` that opens no marker.
fn marker_at(here: &str, explained: &[(String, Shown)]) -> (usize, Shown) {
    if let Some((m, shown)) = explained
        .iter()
        .filter(|(m, _)| here.starts_with(m.as_str()))
        .max_by_key(|(m, _)| m.len())
    {
        return (m.len(), shown.clone());
    }
    if here.starts_with(START) {
        let line = here.find('\n').unwrap_or(here.len());
        return match here[..line].find(END) {
            Some(e) => (e + END.len_utf8(), unexplained(&here[..e])),
            // A marker without its end (a reply cut short): it goes, to the end of its line.
            None => (line, Shown::Nothing),
        };
    }
    let window = &here[..floor_boundary(here, MAX_BRACKET)];
    match window.find('】') {
        Some(e) if window[..e].contains('†') => (e + '】'.len_utf8(), Shown::Nothing),
        _ => (0, Shown::Nothing),
    }
}

/// A private-use marker no entry explains (`body` from its start up to its end): an entity's
/// name, or nothing.
fn unexplained(body: &str) -> Shown {
    let inner = body.trim_start_matches(START);
    let (kind, payload) = inner.split_once(SEP).unwrap_or((inner, ""));
    if kind != "entity" {
        return Shown::Nothing;
    }
    let name = serde_json::from_str::<Value>(payload).ok().and_then(|v| {
        let list = v.as_array()?.clone();
        [1, 0]
            .iter()
            .filter_map(|&i| list.get(i)?.as_str().map(str::trim).map(str::to_string))
            .find(|s| !s.is_empty())
    });
    name.map_or(Shown::Nothing, Shown::Words)
}

/// The markers the message's metadata explains, each with what it becomes.
fn explained(text: &str, meta: Option<&Value>) -> Vec<(String, Shown)> {
    let mut out = Vec::new();
    let list = |key: &str| {
        meta.and_then(|m| m.get(key))
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    };
    for r in list("content_references") {
        let Some(m) = r.get("matched_text").and_then(Value::as_str) else {
            continue;
        };
        if !(m.contains(START) || (m.starts_with('【') && m.contains('†'))) {
            continue;
        }
        out.push((m.to_string(), reference(r)));
    }
    // Older replies: `【…】` markers placed by character offsets.
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    for c in list("citations") {
        let at = |k: &str| c.get(k).and_then(Value::as_u64).map(|n| n as usize);
        let (Some(s), Some(e)) = (at("start_ix"), at("end_ix")) else {
            continue;
        };
        if s >= e || e > chars.len() {
            continue;
        }
        let end = chars.get(e).map_or(text.len(), |(b, _)| *b);
        let m = &text[chars[s].0..end];
        if m.starts_with('【') && m.contains('†') {
            out.push((m.to_string(), page(c.get("metadata"))));
        }
    }
    out
}

/// What one `content_references` entry shows.
fn reference(r: &Value) -> Shown {
    let field = |k: &str| r.get(k).and_then(Value::as_str).map(str::trim);
    match field("type") {
        Some("hidden") => return Shown::Nothing,
        Some("entity") => {
            return field("alt")
                .or(field("name"))
                .filter(|n| !n.is_empty())
                .map_or(Shown::Nothing, |n| Shown::Words(n.to_string()))
        }
        _ => {}
    }
    if let Some(alt) = field("alt").filter(|a| !a.is_empty()) {
        return Shown::Source(alt.to_string());
    }
    let first = r
        .get("items")
        .and_then(Value::as_array)
        .and_then(|items| items.first());
    page(first)
}

/// A page (`title`, `url`) as a Markdown link in brackets, or nothing without a web address.
fn page(p: Option<&Value>) -> Shown {
    let field = |k: &str| {
        p.and_then(|p| p.get(k))
            .and_then(Value::as_str)
            .map(str::trim)
    };
    let Some(url) = field("url").filter(|u| u.starts_with("http://") || u.starts_with("https://"))
    else {
        return Shown::Nothing;
    };
    let title = field("title")
        .or(field("attribution"))
        .filter(|t| !t.is_empty())
        .unwrap_or(url);
    let title: String = title
        .chars()
        .filter(|c| !matches!(c, '[' | ']' | '\n'))
        .collect();
    let url = url.replace(['(', ')', ' '], "");
    Shown::Source(format!("([{title}]({url}))"))
}

/// Drops the spaces and tabs at the end of `out`.
fn trim_space(out: &mut String) {
    let kept = out.trim_end_matches([' ', '\t']).len();
    out.truncate(kept);
}

/// The largest char boundary of `s` at or below `max` bytes.
fn floor_boundary(s: &str, max: usize) -> usize {
    if max >= s.len() {
        return s.len();
    }
    (0..=max)
        .rev()
        .find(|&i| s.is_char_boundary(i))
        .unwrap_or(0)
}
