//! Auto-title: a conversation's title from its first user message, about 50 characters, whitespace
//! collapsed, cut at a word boundary with an ellipsis when cut. Counts characters, never bytes, so
//! any script is safe; text without spaces (Japanese, Chinese) is cut after its last sentence or
//! clause mark in reach (。！？、，；：), else at the limit.
//! Must not import anything outside `crate::engine`.

/// Default maximum title length in characters, ellipsis included.
pub const TITLE_MAX_CHARS: usize = 50;

/// The title used when the first message has no visible text.
pub const UNTITLED: &str = "New conversation";

/// The title for a conversation whose first user message is `first_message`.
pub fn auto_title(first_message: &str) -> String {
    auto_title_with(first_message, TITLE_MAX_CHARS)
}

/// [`auto_title`] with an explicit limit (in characters, ellipsis included; at least 2).
pub fn auto_title_with(first_message: &str, max_chars: usize) -> String {
    let max_chars = max_chars.max(2);
    let words: Vec<&str> = first_message
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| !w.is_empty())
        .collect();
    if words.is_empty() {
        return UNTITLED.to_string();
    }
    let collapsed = words.join(" ");
    if collapsed.chars().count() <= max_chars {
        return collapsed;
    }
    // Room for the text before the ellipsis.
    let room = max_chars - 1;
    let mut out = String::new();
    let mut used = 0;
    for word in &words {
        let len = word.chars().count();
        let extra = if out.is_empty() { len } else { len + 1 };
        if used + extra > room {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
        used += extra;
    }
    // No word boundary in reach, or the cut would lose more than half: cut inside the text, after
    // the last CJK sentence or clause mark if one keeps at least half.
    if used < room / 2 {
        let head: Vec<char> = collapsed.chars().take(room).collect();
        let end = head
            .iter()
            .rposition(|&c| is_cjk_mark(c))
            .filter(|&i| i + 1 >= room / 2)
            .map_or(head.len(), |i| i + 1);
        out = head[..end].iter().collect();
    }
    let trimmed = out.trim_end_matches(|c: char| {
        c.is_whitespace() || matches!(c, ',' | ';' | ':' | '-' | '—' | '–' | '(') || is_cjk_mark(c)
    });
    let mut title = if trimmed.is_empty() {
        out.clone()
    } else {
        trimmed.to_string()
    };
    title.push('…');
    title
}

/// Full-width sentence and clause marks: where text without spaces can be cut.
fn is_cjk_mark(c: char) -> bool {
    matches!(c, '。' | '！' | '？' | '、' | '，' | '；' | '：')
}
