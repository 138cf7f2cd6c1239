//! Auto-title: a conversation's title from its first user message, about 50 characters, whitespace
//! collapsed, cut at a word boundary with an ellipsis when cut. Counts characters, never bytes, so
//! any script is safe; text without spaces (Japanese, Chinese) is cut after its last sentence or
//! clause mark in reach (。！？、，；：), else at the limit.
//!
//! A model-written title ([`title_request`], [`clean_title`], [`wants_model_title`]): after the
//! first reply, a small request (a tight instruction, a few tokens) asks the model for a short
//! title; the reply is model output, so it is cleaned and capped, and anything that is not a short
//! title (empty, a paragraph, code, a refusal) leaves the first-message title in place. A title the
//! user set is never replaced; a temporary chat gets no request at all.
//! Must not import anything outside `crate::engine`.

use crate::engine::model::{Conversation, Prompt, Role, WireMessage};
use crate::engine::request::RequestOptions;

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

/// The opening of every title request's system text (how a server or a test tells it from a chat
/// turn and from a memory update).
pub const TITLE_REQUEST_OPENING: &str = "You write the title of a conversation.";

/// Most words a model-written title keeps.
pub const TITLE_MAX_WORDS: usize = 8;

/// Most characters of the first message and of the reply the title request quotes.
const QUOTED_CHARS: usize = 600;

/// The system text of a title request.
fn title_instruction() -> String {
    format!(
        "{TITLE_REQUEST_OPENING} Read the exchange and answer with a title of 2 to 6 words that \
         says what it is about. Answer with the title only: no quotes, no full stop, no \
         explanation."
    )
}

/// The title request for a conversation whose first message is `first_message` and whose first
/// reply is `reply`: the prompt, and options that keep it small (low temperature, a few tokens).
pub fn title_request(first_message: &str, reply: &str) -> (Prompt, RequestOptions) {
    let quote = |s: &str| -> String { s.trim().chars().take(QUOTED_CHARS).collect() };
    let exchange = format!(
        "User: {}\n\nAssistant: {}\n\nTitle:",
        quote(first_message),
        quote(reply)
    );
    let prompt = Prompt {
        system: title_instruction(),
        messages: vec![WireMessage::text(Role::User, exchange)],
    };
    let options = RequestOptions {
        temperature: Some(0.2),
        max_tokens: Some(24),
        previous_response_id: None,
        stream: true,
        output: None,
        slot: None,
    };
    (prompt, options)
}

/// Whether a conversation gets a model-written title now: not a temporary chat, no title the user
/// set, its title still the one taken from its first message (`first_message`), and the reply that
/// just ended its first complete one (`complete_replies` counts the complete replies on its branch).
pub fn wants_model_title(
    conversation: &Conversation,
    first_message: &str,
    complete_replies: usize,
    temporary: bool,
) -> bool {
    !temporary
        && !conversation.title_is_custom
        && complete_replies == 1
        && conversation.title == auto_title(first_message)
}

/// The title in a model's reply, cleaned: reasoning (`<think>…</think>`) dropped, the first line
/// with text, a leading "Title:" and markdown marks removed, quotes and a final full stop taken off,
/// whitespace collapsed, cut to [`TITLE_MAX_CHARS`]. `None` (keep the first-message title) when
/// nothing usable is left: no letter or digit, more than [`TITLE_MAX_WORDS`] words, code, a reply
/// that talks instead of naming ("Sure, …", "I …"), or a title none of whose words the exchange
/// (`first_message` and `reply_to_it`, what the request quoted) says: a small model's made-up
/// words are no title (measured: SmolLM2-135M titled "Hi, I am Marta. I live in Lisbon…" "Las tres
/// de nuevae").
pub fn clean_title(reply: &str, first_message: &str, reply_to_it: &str) -> Option<String> {
    let title = clean_line(reply)?;
    grounded(&title, &format!("{first_message}\n{reply_to_it}")).then_some(title)
}

/// The title a title request's reply gives: [`clean_title`] of a whole reply; `None` for one cut
/// short (`cut`: the stream ended without a finish reason, as llama-cpp-python ends a running
/// stream when the user's next message arrives), whose first line may be half a title.
pub fn title_of_reply(
    reply: &str,
    cut: bool,
    first_message: &str,
    reply_to_it: &str,
) -> Option<String> {
    if cut {
        return None;
    }
    clean_title(reply, first_message, reply_to_it)
}

/// The title line of a reply, cleaned (see [`clean_title`]), before it is checked against the
/// exchange.
fn clean_line(reply: &str) -> Option<String> {
    let reply = match reply.rfind("</think>") {
        Some(at) => &reply[at + "</think>".len()..],
        None => reply,
    };
    if reply.contains("```") || reply.contains("<think>") {
        return None;
    }
    let line = reply.lines().map(str::trim).find(|l| !l.is_empty())?;
    let line = line.trim_start_matches(['#', '*', '-', '>', ' ']);
    let line = strip_label(line);
    let line = line
        .trim_matches(is_wrapping)
        .trim_end_matches(['.', '。', ':', ';', ','])
        .trim_matches(is_wrapping);
    let words: Vec<&str> = line.split_whitespace().collect();
    if words.is_empty() || words.len() > TITLE_MAX_WORDS {
        return None;
    }
    if !line.chars().any(char::is_alphanumeric) || talks(&words) {
        return None;
    }
    Some(auto_title(&words.join(" ")))
}

/// Whether a title word is said in the exchange: a word of three characters the exchange has, or
/// one of four or more whose first four begin a word of the exchange; words any text has ("the",
/// "with") do not count (so "allergy" finds "allergic",
/// "practise" finds "practice"), any case. Text without spaces (Japanese, Chinese) is one long
/// "word": a title word of it counts when any two of its characters in a row appear in the exchange.
fn grounded(title: &str, exchange: &str) -> bool {
    let exchange = exchange.to_lowercase();
    let words: Vec<&str> = exchange
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    title
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .any(|w| {
            let chars: Vec<char> = w.chars().collect();
            if chars.iter().any(|&c| is_spaceless_script(c)) {
                return chars
                    .windows(2)
                    .any(|pair| exchange.contains(&pair.iter().collect::<String>()));
            }
            if chars.len() < 3 || FUNCTION_WORDS.contains(&w) {
                return false;
            }
            if chars.len() == 3 {
                return words.contains(&w);
            }
            let head: String = chars.iter().take(4).collect();
            words.iter().any(|e| e.starts_with(&head))
        })
}

/// Words any text says: they show nothing about what a title is about.
const FUNCTION_WORDS: &[&str] = &[
    "the", "and", "for", "you", "are", "but", "not", "with", "this", "that", "what", "from",
    "your", "have", "about", "how", "why", "who", "can",
];

/// Scripts written without spaces between words (CJK, kana, Thai).
fn is_spaceless_script(c: char) -> bool {
    matches!(c, '\u{0E00}'..='\u{0E7F}' | '\u{2E80}'..='\u{9FFF}' | '\u{AC00}'..='\u{D7AF}' | '\u{F900}'..='\u{FAFF}')
}

/// Quotes, emphasis marks and spaces around a title.
fn is_wrapping(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            c,
            '"' | '\'' | '*' | '_' | '`' | '“' | '”' | '‘' | '’' | '«' | '»'
        )
}

/// "Title: X" → "X" (any case).
fn strip_label(line: &str) -> &str {
    match line.get(..6) {
        Some(head) if head.eq_ignore_ascii_case("title:") => line[6..].trim_start(),
        _ => line,
    }
}

/// Whether the words open like a sentence to the user rather than a title.
fn talks(words: &[&str]) -> bool {
    let first = words[0].trim_end_matches([',', '!', '.']).to_lowercase();
    matches!(
        first.as_str(),
        "sure" | "okay" | "ok" | "certainly" | "i" | "i'm" | "here" | "as" | "sorry"
    )
}
