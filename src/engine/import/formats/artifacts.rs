//! Claude.ai's artifacts, as the user saw them (issue 29 item 6): the code, document or diagram
//! Claude wrote beside its reply. Newer exports hold each as a `tool_use` block named `artifacts`
//! whose `input` has `command` `create` or `rewrite`, the whole `content`, a `title`, a `type` and
//! a `language`; older exports hold `<antArtifact identifier=… type=… language=… title=…>…
//! </antArtifact>` inside the reply's text. Either becomes its title in bold, then its content as
//! a fenced block in the artifact's language (a fence longer than any run of backticks inside).
//! An `update` (a replacement of one passage) holds no whole content and is not shown.
//! Must not import anything outside `crate::engine`.

use serde_json::Value;

const OPEN: &str = "<antArtifact";
const CLOSE: &str = "</antArtifact>";

/// The artifact a `tool_use` block creates or rewrites, as shown; `None` for any other block.
pub(super) fn from_tool_use(block: &Value) -> Option<String> {
    let input = block.get("input")?;
    let field = |k: &str| input.get(k).and_then(Value::as_str);
    if block.get("name").and_then(Value::as_str) != Some("artifacts")
        || !matches!(field("command"), Some("create" | "rewrite"))
    {
        return None;
    }
    let content = field("content")?;
    Some(shown(
        field("title").unwrap_or(""),
        field("type").unwrap_or(""),
        field("language").unwrap_or(""),
        content,
    ))
}

/// `text` with every `<antArtifact …>…</antArtifact>` as shown (one that is never closed, a reply
/// cut short, runs to the end).
pub(super) fn in_text(text: &str) -> String {
    if !text.contains(OPEN) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(p) = rest.find(OPEN) {
        let Some(tag_end) = tag_end(&rest[p..]).map(|e| p + e) else {
            break;
        };
        out.push_str(&rest[..p]);
        let tag = &rest[p + OPEN.len()..tag_end];
        let body_start = tag_end + 1;
        let (body, next) = match rest[body_start..].find(CLOSE) {
            Some(c) => (
                &rest[body_start..body_start + c],
                body_start + c + CLOSE.len(),
            ),
            None => (&rest[body_start..], rest.len()),
        };
        let attr = |name: &str| attribute(tag, name).unwrap_or_default();
        let body = body.strip_prefix('\n').unwrap_or(body);
        let block = shown(&attr("title"), &attr("type"), &attr("language"), body);
        // A block stands on lines of its own, without the spaces around its tags.
        out.truncate(out.trim_end_matches([' ', '\t']).len());
        if !(out.is_empty() || out.ends_with("\n\n")) {
            out.push_str(if out.ends_with('\n') { "\n" } else { "\n\n" });
        }
        out.push_str(&block);
        rest = rest[next..].trim_start_matches([' ', '\t']);
        if !rest.is_empty() && !rest.starts_with("\n\n") {
            out.push_str(if rest.starts_with('\n') { "\n" } else { "\n\n" });
        }
    }
    out.push_str(rest);
    out
}

/// Where the tag that `s` starts with ends: its `>` outside quoted values.
fn tag_end(s: &str) -> Option<usize> {
    let mut quote = None;
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '>') => return Some(i),
            _ => {}
        }
    }
    None
}

/// The value of attribute `name` in a tag's attributes (`name="…"` or `name='…'`).
fn attribute(tag: &str, name: &str) -> Option<String> {
    let mut rest = tag;
    loop {
        let at = rest.find(name)?;
        let before = rest[..at].chars().next_back();
        let after = rest[at + name.len()..].trim_start();
        rest = &rest[at + name.len()..];
        if before.is_some_and(|c| !c.is_whitespace()) {
            continue;
        }
        let Some(value) = after.strip_prefix('=') else {
            continue;
        };
        let value = value.trim_start();
        let quote = value.chars().next().filter(|q| *q == '"' || *q == '\'')?;
        let inner = &value[1..];
        return inner.find(quote).map(|e| inner[..e].to_string());
    }
}

/// An artifact as shown: its title in bold (when it has one), then its content fenced.
fn shown(title: &str, kind: &str, language: &str, content: &str) -> String {
    let lang = language_of(kind, language);
    let longest = content.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let content = content.trim_end_matches('\n');
    let title: String = title
        .chars()
        .filter(|c| !matches!(c, '*' | '\n' | '\r'))
        .collect();
    let title = title.trim();
    let head = if title.is_empty() {
        String::new()
    } else {
        format!("**{title}**\n\n")
    };
    format!("{head}{fence}{lang}\n{content}\n{fence}")
}

/// The fence's language: the artifact's own for code, else the one its type is written in.
fn language_of(kind: &str, language: &str) -> String {
    let named = match kind {
        "text/markdown" => "markdown",
        "text/html" => "html",
        "image/svg+xml" => "svg",
        "application/vnd.ant.mermaid" => "mermaid",
        "application/vnd.ant.react" => "jsx",
        _ => "",
    };
    let lang = if language.trim().is_empty() {
        named
    } else {
        language.trim()
    };
    // A fence's info string is one word.
    lang.chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '#' | '.' | '_'))
        .collect()
}
