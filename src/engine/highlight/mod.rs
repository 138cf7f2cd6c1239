//! Syntax highlighting of code blocks: a language name and the code in, spans of kinds out
//! (keyword, type, function, string, number, comment, literal, tag, attribute, key, variable, meta,
//! inserted, deleted, plain). The spans cover the code exactly, in order, adjacent spans of one kind
//! merged, every boundary on a char boundary: concatenated they are the input, byte for byte, so
//! the view can build them as text nodes (never markup) and Copy still copies the raw code.
//! Must not import anything outside `crate::engine`.
//!
//! Why our own tokenizer instead of a crate: bundle bytes and the languages asked for. `syntect`
//! (regexes plus Sublime grammars) and tree-sitter grammars are megabytes of wasm; the small
//! dependency-free crates found cover only part of the list (hl-lite: no C/C++, Go, Java, SQL or
//! diff, about 19 KB brotli by its own account) or emit HTML strings (which the chat pane would
//! have to set as markup). These lexers are lexical, not scope-aware (the fidelity of highlight.js,
//! not of a parser): one table-driven C-family lexer serves Rust, Python, JavaScript, TypeScript,
//! JSON, C, C++, Go, Java and SQL (`code.rs`), and small ones serve shell, HTML/XML (with the
//! scripts and styles inside), CSS, YAML, TOML and diff (`text.rs`). What it costs, measured on the
//! built app (brotli -q 11, with the view's part, `ui/highlight.rs`): the wasm 593,265 -> 600,970 B
//! (+7.7 KB), the js glue +0.3 KB, the css +0.3 KB. Speed: `benches/highlight.rs` (native, the
//! slowest language): a 20 KB block in 0.33 ms, on the loaded 2-core box.
//!
//! Every lexer is one forward pass (linear in the input; lookaheads stop at a line or a delimiter
//! and are not repeated over the same bytes more than twice). Unterminated strings and comments end
//! at the end of their line (single-line kinds) or of the input, never panic. Code above
//! [`MAX_BYTES`] is one plain span: the view does not highlight it.

mod code;
mod text;

/// What a span of code is. Plain spans are shown as plain text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Plain,
    Keyword,
    Type,
    Function,
    String,
    Number,
    Comment,
    /// `true`, `null`, `None`, constants in capitals, HTML entities, YAML and TOML booleans.
    Literal,
    Tag,
    Attribute,
    /// JSON and YAML keys, TOML keys, CSS properties.
    Key,
    /// Shell and YAML variables (`$HOME`, `&anchor`).
    Variable,
    /// Attributes and decorators, preprocessor lines, lifetimes, diff headers, TOML tables.
    Meta,
    Inserted,
    Deleted,
}

impl Kind {
    /// The CSS class of a span of this kind (`style.css` colours them per theme); empty for plain.
    pub fn class(self) -> &'static str {
        match self {
            Kind::Plain => "",
            Kind::Keyword => "hl-kw",
            Kind::Type => "hl-ty",
            Kind::Function => "hl-fn",
            Kind::String => "hl-str",
            Kind::Number => "hl-num",
            Kind::Comment => "hl-com",
            Kind::Literal => "hl-lit",
            Kind::Tag => "hl-tag",
            Kind::Attribute => "hl-attr",
            Kind::Key => "hl-key",
            Kind::Variable => "hl-var",
            Kind::Meta => "hl-meta",
            Kind::Inserted => "hl-add",
            Kind::Deleted => "hl-del",
        }
    }
}

/// `code[start..end]` is of this kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub kind: Kind,
    pub start: usize,
    pub end: usize,
}

/// A language the highlighter knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    Rust,
    Python,
    JavaScript,
    TypeScript,
    Json,
    Shell,
    C,
    Cpp,
    Go,
    Java,
    /// HTML and XML (scripts and styles inside are JavaScript and CSS).
    Markup,
    Css,
    Sql,
    Yaml,
    Toml,
    Diff,
}

impl Lang {
    /// The language a code fence names (`rust`, `rs`, `py`, `ts`, `sh`, `c++`, `yml`, …), any case.
    pub fn from_name(name: &str) -> Option<Lang> {
        let n = name.to_ascii_lowercase();
        Some(match n.as_str() {
            "rust" | "rs" => Lang::Rust,
            "python" | "py" | "python3" | "py3" => Lang::Python,
            "javascript" | "js" | "jsx" | "mjs" | "cjs" | "node" => Lang::JavaScript,
            "typescript" | "ts" | "tsx" | "mts" | "cts" => Lang::TypeScript,
            "json" | "jsonc" | "json5" | "jsonl" => Lang::Json,
            "bash" | "sh" | "shell" | "zsh" | "ksh" | "console" | "shell-session"
            | "shellsession" => Lang::Shell,
            "c" | "h" => Lang::C,
            "cpp" | "c++" | "cc" | "cxx" | "hpp" | "hxx" | "hh" => Lang::Cpp,
            "go" | "golang" => Lang::Go,
            "java" => Lang::Java,
            "html" | "htm" | "xhtml" | "xml" | "svg" | "xsl" | "plist" => Lang::Markup,
            "css" | "scss" | "less" => Lang::Css,
            "sql" | "mysql" | "postgresql" | "postgres" | "psql" | "sqlite" | "plsql" => Lang::Sql,
            "yaml" | "yml" => Lang::Yaml,
            "toml" => Lang::Toml,
            "diff" | "patch" | "udiff" => Lang::Diff,
            _ => return None,
        })
    }
}

/// Code longer than this (bytes) is left plain: building its spans in the page could hold the main
/// thread too long (a 63 KB block, about 6,800 spans, took up to 209 ms on the loaded test machine;
/// 32 KB blocks stayed under 50 ms).
pub const MAX_BYTES: usize = 32 * 1024;

/// The spans of `code` in `lang`, covering it exactly (empty for empty code).
pub fn highlight(lang: Lang, code: &str) -> Vec<Span> {
    let mut out = Out::default();
    let s = code.as_bytes();
    if s.len() > MAX_BYTES {
        out.push(Kind::Plain, 0, s.len());
        return out.spans;
    }
    run(lang, s, 0, s.len(), &mut out);
    out.spans
}

/// Lexes `s[start..end]` as `lang` into `out` (also for a script or style inside HTML).
fn run(lang: Lang, s: &[u8], start: usize, end: usize, out: &mut Out) {
    match lang {
        Lang::Shell => text::shell(s, start, end, out),
        Lang::Markup => text::markup(s, start, end, out),
        Lang::Css => text::css(s, start, end, out),
        Lang::Yaml => text::yaml(s, start, end, out),
        Lang::Toml => text::toml(s, start, end, out),
        Lang::Diff => text::diff(s, start, end, out),
        _ => code::lex(s, start, end, code::syntax(lang), out),
    }
}

/// The spans so far; a span that continues the last one's kind extends it.
#[derive(Default)]
struct Out {
    spans: Vec<Span>,
}

impl Out {
    fn push(&mut self, kind: Kind, start: usize, end: usize) {
        if start >= end {
            return;
        }
        if let Some(last) = self.spans.last_mut() {
            if last.kind == kind && last.end == start {
                last.end = end;
                return;
            }
        }
        self.spans.push(Span { kind, start, end });
    }
}

// Byte-level helpers shared by the lexers. Every token starts and ends at an ASCII byte or at the
// end of the input (identifier runs take bytes >= 0x80 whole), so every boundary is a char boundary.

fn at(s: &[u8], k: usize, end: usize) -> Option<u8> {
    (k < end).then(|| s[k])
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b == b'$' || b >= 0x80
}

fn is_ident(b: u8) -> bool {
    is_ident_start(b) || b.is_ascii_digit()
}

/// The end of the run of bytes from `k` that `keep` accepts.
fn run_end(s: &[u8], mut k: usize, end: usize, keep: impl Fn(u8) -> bool) -> usize {
    while k < end && keep(s[k]) {
        k += 1;
    }
    k
}

/// The end of the line at `k` (the newline itself is not part of it).
fn line_end(s: &[u8], k: usize, end: usize) -> usize {
    run_end(s, k, end, |b| b != b'\n')
}

/// Just past the first `pat` at or after `from`, or the end.
fn past(s: &[u8], from: usize, end: usize, pat: &[u8]) -> usize {
    if from >= end {
        return end;
    }
    s[from..end]
        .windows(pat.len())
        .position(|w| w == pat)
        .map_or(end, |p| from + p + pat.len())
}

/// Just past the closing `quote` of a string whose body starts at `k` (a backslash escapes the next
/// byte when `escapes`); a single-line string ends at its line's end when unclosed.
fn string_end(
    s: &[u8],
    mut k: usize,
    end: usize,
    quote: u8,
    multiline: bool,
    escapes: bool,
) -> usize {
    while k < end {
        match s[k] {
            b'\\' if escapes => k += 2,
            b if b == quote => return k + 1,
            b'\n' if !multiline => return k,
            _ => k += 1,
        }
    }
    end
}

/// The first byte after spaces and tabs from `k`.
fn next_nonspace(s: &[u8], k: usize, end: usize) -> Option<u8> {
    at(s, run_end(s, k, end, |b| b == b' ' || b == b'\t'), end)
}

/// A number from `k`: digits, letters (hex digits, suffixes, units), `_`, a `.` before a digit,
/// and an exponent's sign.
fn number_end(s: &[u8], k: usize, end: usize) -> usize {
    let hex = at(s, k, end) == Some(b'0') && matches!(at(s, k + 1, end), Some(b'x' | b'X'));
    let mut j = k;
    while j < end {
        let c = s[j];
        let more = c.is_ascii_alphanumeric()
            || c == b'_'
            || (c == b'.' && at(s, j + 1, end).is_some_and(|d| d.is_ascii_digit()))
            || (matches!(c, b'+' | b'-') && !hex && j > k && matches!(s[j - 1], b'e' | b'E'));
        if !more {
            break;
        }
        j += 1;
    }
    j
}

fn is_in(words: &[&str], word: &[u8], any_case: bool) -> bool {
    words.iter().any(|w| {
        if any_case {
            w.as_bytes().eq_ignore_ascii_case(word)
        } else {
            w.as_bytes() == word
        }
    })
}
