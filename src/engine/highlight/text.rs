//! The lexers of languages that are not C-shaped: shell, HTML/XML (a `<script>` or `<style>`
//! inside is lexed as JavaScript or CSS), CSS, YAML, TOML and diff.
//! Must not import anything outside `crate::engine::highlight`.

use super::{
    at, is_ident, is_ident_start, is_in, line_end, number_end, past, run, run_end, string_end,
    Kind, Lang, Out,
};

/// Shell: comments, quoted strings, `$variables`, the command word of each command, options,
/// keywords, numbers.
pub(super) fn shell(s: &[u8], mut i: usize, end: usize, out: &mut Out) {
    const KW: &[&str] = &[
        "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac",
        "in", "function", "select", "return", "break", "continue", "local", "export", "readonly",
        "declare", "unset", "shift", "exit", "source", "alias", "set", "time",
    ];
    // A command follows these keywords (`then echo`, not `for f`).
    const COMMAND_NEXT: &[&str] = &["if", "then", "else", "elif", "do", "while", "until", "time"];
    let start = i;
    let mut command = true;
    while i < end {
        let b = s[i];
        let spaced = i == start || matches!(s[i - 1], b' ' | b'\t' | b'\n' | b';' | b'(');
        let (kind, j) = match b {
            b'\n' | b';' | b'|' | b'&' | b'(' | b'`' | b'{' | b'}' => {
                command = true;
                (Kind::Plain, i + 1)
            }
            b' ' | b'\t' | b'\r' => (Kind::Plain, i + 1),
            b'#' if spaced => (Kind::Comment, line_end(s, i, end)),
            b'\'' => (Kind::String, string_end(s, i + 1, end, b'\'', true, false)),
            b'"' => (Kind::String, string_end(s, i + 1, end, b'"', true, true)),
            b'$' => variable(s, i, end),
            b'-' if spaced && !command => (Kind::Attribute, run_end(s, i, end, shell_word)),
            _ if shell_word(b) => {
                let j = run_end(s, i, end, shell_word);
                let w = &s[i..j];
                let kind = if at(s, j, end) == Some(b'=') && w.iter().all(|&c| is_ident(c)) {
                    Kind::Variable
                } else if w.iter().all(u8::is_ascii_digit) {
                    Kind::Number
                } else if is_in(KW, w, false) {
                    command = is_in(COMMAND_NEXT, w, false);
                    Kind::Keyword
                } else if i > start && s[i - 1] == b'=' {
                    Kind::Plain
                } else if std::mem::take(&mut command) {
                    Kind::Function
                } else {
                    Kind::Plain
                };
                (kind, j)
            }
            _ => (Kind::Plain, i + 1),
        };
        out.push(kind, i, j);
        i = j;
    }
}

fn shell_word(b: u8) -> bool {
    (is_ident(b) && b != b'$') || b"-./:+,%@~^".contains(&b)
}

/// `$NAME`, `${…}`, `$1`, `$@`; `$(` is plain (a command follows).
fn variable(s: &[u8], i: usize, end: usize) -> (Kind, usize) {
    match at(s, i + 1, end) {
        Some(b'{') => (Kind::Variable, past(s, i + 2, end, b"}")),
        Some(c) if is_ident_start(c) && c != b'$' => (
            Kind::Variable,
            run_end(s, i + 1, end, |c| is_ident(c) && c != b'$'),
        ),
        Some(c) if c.is_ascii_digit() || b"@*#?$!-".contains(&c) => (Kind::Variable, i + 2),
        _ => (Kind::Plain, i + 1),
    }
}

/// HTML and XML: tags, attributes and their values, comments, `<!…>` and `<?…?>`, CDATA,
/// entities; the body of a `<script>` as JavaScript and of a `<style>` as CSS.
pub(super) fn markup(s: &[u8], mut i: usize, end: usize, out: &mut Out) {
    while i < end {
        let rest = &s[i..end];
        let b = s[i];
        let alpha = |k: usize| at(s, k, end).is_some_and(|c| c.is_ascii_alphabetic());
        if rest.starts_with(b"<!--") {
            let j = past(s, i + 4, end, b"-->");
            out.push(Kind::Comment, i, j);
            i = j;
        } else if rest.starts_with(b"<![CDATA[") {
            let j = past(s, i + 9, end, b"]]>");
            out.push(Kind::String, i, j);
            i = j;
        } else if rest.starts_with(b"<!") || rest.starts_with(b"<?") {
            let j = past(s, i + 2, end, b">");
            out.push(Kind::Meta, i, j);
            i = j;
        } else if b == b'<' && (alpha(i + 1) || (at(s, i + 1, end) == Some(b'/') && alpha(i + 2))) {
            let (j, name, open) = tag(s, i, end, out);
            i = j;
            let inner = match name.to_ascii_lowercase().as_slice() {
                b"script" if open => Some((Lang::JavaScript, b"</script".as_slice())),
                b"style" if open => Some((Lang::Css, b"</style".as_slice())),
                _ => None,
            };
            if let Some((lang, close)) = inner {
                let stop = find_any_case(s, i, end, close);
                run(lang, s, i, stop, out);
                i = stop;
            }
        } else if b == b'&' {
            let j = run_end(s, i + 1, end, |c| c.is_ascii_alphanumeric() || c == b'#');
            let entity = at(s, j, end) == Some(b';') && j > i + 1 && j - i <= 12;
            let j = if entity { j + 1 } else { i + 1 };
            out.push(if entity { Kind::Literal } else { Kind::Plain }, i, j);
            i = j;
        } else {
            let j = run_end(s, i + 1, end, |c| c != b'<' && c != b'&');
            out.push(Kind::Plain, i, j);
            i = j;
        }
    }
}

/// A tag from its `<`: the tag's end, its name, and whether it opens (not `</x>` nor `<x/>`).
fn tag<'a>(s: &'a [u8], i: usize, end: usize, out: &mut Out) -> (usize, &'a [u8], bool) {
    let closing = s[i + 1] == b'/';
    let from = i + 1 + usize::from(closing);
    let mut k = run_end(s, from, end, |c| {
        c.is_ascii_alphanumeric() || b"-:_.".contains(&c)
    });
    let name = &s[from..k];
    out.push(Kind::Tag, i, k);
    let space = |c: u8| c.is_ascii_whitespace();
    while k < end {
        let c = s[k];
        let j = if space(c) || c == b'=' {
            out.push(Kind::Plain, k, k + 1);
            k + 1
        } else if s[k..end].starts_with(b"/>") || c == b'>' {
            let j = k + 1 + usize::from(c == b'/');
            out.push(Kind::Tag, k, j);
            return (j, name, !closing && c == b'>');
        } else if c == b'<' {
            break;
        } else if c == b'"' || c == b'\'' {
            let j = string_end(s, k + 1, end, c, true, false);
            out.push(Kind::String, k, j);
            j
        } else {
            let value = k > 0 && s[k - 1] == b'=';
            let j = run_end(s, k, end, |c| !space(c) && !b"=>/<\"'".contains(&c)).max(k + 1);
            out.push(if value { Kind::String } else { Kind::Attribute }, k, j);
            j
        };
        k = j;
    }
    (k, name, false)
}

/// Where `pat` (ASCII, any case) first starts at or after `from`, or the end.
fn find_any_case(s: &[u8], from: usize, end: usize, pat: &[u8]) -> usize {
    if from >= end {
        return end;
    }
    s[from..end]
        .windows(pat.len())
        .position(|w| w.eq_ignore_ascii_case(pat))
        .map_or(end, |p| from + p)
}

#[derive(Clone, Copy, PartialEq)]
enum Css {
    Start,
    Selector,
    Property,
    Value,
    /// After `@media`, `@import` …, up to its `{` or `;`.
    AtRule,
}

/// CSS: selectors (elements, `.class`, `#id`, `:pseudo`, `[attr]`), at-rules, properties,
/// values (numbers with units, colours, functions, `!important`), strings and comments.
pub(super) fn css(s: &[u8], mut i: usize, end: usize, out: &mut Out) {
    let mut depth = 0usize;
    let mut state = Css::Start;
    let word = |k: usize| css_word_end(s, k, end);
    while i < end {
        let b = s[i];
        let next = at(s, i + 1, end);
        if matches!(b, b'{' | b'}' | b';') {
            depth = match b {
                b'{' => depth + 1,
                b'}' => depth.saturating_sub(1),
                _ => depth,
            };
            state = Css::Start;
            out.push(Kind::Plain, i, i + 1);
            i += 1;
            continue;
        }
        if state == Css::Start && !b.is_ascii_whitespace() && !s[i..end].starts_with(b"/*") {
            state = if depth > 0 && declaration_ahead(s, i, end) {
                Css::Property
            } else {
                Css::Selector
            };
        }
        let (kind, j) = if b.is_ascii_whitespace() {
            (Kind::Plain, i + 1)
        } else if s[i..end].starts_with(b"/*") {
            (Kind::Comment, past(s, i + 2, end, b"*/"))
        } else if b == b'"' || b == b'\'' {
            (Kind::String, string_end(s, i + 1, end, b, false, true))
        } else if b == b'@' && css_word_start(next) {
            state = Css::AtRule;
            (Kind::Keyword, word(i + 1))
        } else if b.is_ascii_digit()
            || (matches!(b, b'.' | b'-' | b'+')
                && next.is_some_and(|c| c.is_ascii_digit())
                && state != Css::Selector)
        {
            let j = number_end(s, i + usize::from(!b.is_ascii_digit()), end);
            (Kind::Number, run_end(s, j, end, |c| c == b'%'))
        } else {
            css_in_state(s, i, end, &mut state)
        };
        out.push(kind, i, j.max(i + 1));
        i = j.max(i + 1);
    }
}

/// Where a CSS word (an identifier, hyphens included) that starts at `k` ends.
fn css_word_end(s: &[u8], k: usize, end: usize) -> usize {
    run_end(s, k, end, |c| is_ident(c) || c == b'-')
}

/// Whether `c` can start a CSS word.
fn css_word_start(c: Option<u8>) -> bool {
    c.is_some_and(|c| is_ident_start(c) || c == b'-')
}

/// The CSS token at `s[i]` that only the part of a rule it is in tells (a property's `:` moves
/// `state` on to its value): property names, `#colours`, `!important`, functions, selectors.
fn css_in_state(s: &[u8], i: usize, end: usize, state: &mut Css) -> (Kind, usize) {
    let b = s[i];
    let next = at(s, i + 1, end);
    let word = |k: usize| css_word_end(s, k, end);
    let starts_word = css_word_start;
    match *state {
        Css::Property if b == b':' => {
            *state = Css::Value;
            (Kind::Plain, i + 1)
        }
        Css::Property if starts_word(Some(b)) => (Kind::Key, word(i)),
        Css::Value if b == b'#' => (Kind::Number, word(i + 1)),
        Css::Value if b == b'!' && starts_word(next) => (Kind::Keyword, word(i + 1)),
        Css::Value if starts_word(Some(b)) => {
            let j = word(i);
            (
                if at(s, j, end) == Some(b'(') {
                    Kind::Function
                } else {
                    Kind::Plain
                },
                j,
            )
        }
        Css::Selector if matches!(b, b'.' | b'#') && starts_word(next) => {
            (Kind::Attribute, word(i + 1))
        }
        Css::Selector if b == b':' => (Kind::Keyword, word(run_end(s, i, end, |c| c == b':'))),
        Css::Selector if b == b'[' => (
            Kind::Attribute,
            past(s, i + 1, end, b"]").min(line_end(s, i, end)),
        ),
        Css::Selector if starts_word(Some(b)) => (Kind::Tag, word(i)),
        Css::AtRule if starts_word(Some(b)) => (Kind::Plain, word(i)),
        _ => (Kind::Plain, i + 1),
    }
}

/// Inside a block, a statement is a declaration unless a `{` comes before its `;` or `}`.
fn declaration_ahead(s: &[u8], i: usize, end: usize) -> bool {
    let j = run_end(s, i, end, |c| !matches!(c, b'{' | b';' | b'}'));
    at(s, j, end) != Some(b'{')
}

/// YAML, line by line: comments, `key:`, quoted and plain scalars (numbers and booleans told
/// apart), anchors and aliases, tags, document markers.
pub(super) fn yaml(s: &[u8], mut i: usize, end: usize, out: &mut Out) {
    while i < end {
        let le = line_end(s, i, end);
        yaml_line(s, i, le, out);
        out.push(Kind::Plain, le, (le + 1).min(end));
        i = le + 1;
    }
}

fn yaml_line(s: &[u8], line: usize, le: usize, out: &mut Out) {
    let line_text = &s[line..le];
    if line_text.starts_with(b"---") || line_text.starts_with(b"...") {
        return out.push(Kind::Meta, line, le);
    }
    let mut i = run_end(s, line, le, |c| matches!(c, b' ' | b'\t' | b'-'));
    out.push(Kind::Plain, line, i);
    if let Some(k) = yaml_key_end(s, i, le) {
        out.push(Kind::Key, i, k);
        i = k;
    }
    while i < le {
        let b = s[i];
        let spaced = i == line || matches!(s[i - 1], b' ' | b'\t');
        let (kind, j) = match b {
            b'#' if spaced => (Kind::Comment, le),
            b'"' | b'\'' => (Kind::String, string_end(s, i + 1, le, b, false, b == b'"')),
            b'&' | b'*' if at(s, i + 1, le).is_some_and(is_ident) => (
                Kind::Variable,
                run_end(s, i + 1, le, |c| !c.is_ascii_whitespace()),
            ),
            b'!' => (Kind::Meta, run_end(s, i, le, |c| !c.is_ascii_whitespace())),
            b' ' | b'\t' | b'\r' | b':' | b',' | b'[' | b']' | b'{' | b'}' | b'-' | b'?' | b'|'
            | b'>' => (Kind::Plain, i + 1),
            _ => {
                let mut j = i;
                while j < le
                    && !b",]}".contains(&s[j])
                    && !(s[j] == b'#' && matches!(s[j - 1], b' ' | b'\t'))
                {
                    j += 1;
                }
                while j > i + 1 && s[j - 1].is_ascii_whitespace() {
                    j -= 1;
                }
                (scalar(&s[i..j]), j)
            }
        };
        out.push(kind, i, j);
        i = j;
    }
}

/// Where a line's `key:` ends (at its `:`), if the line has one.
fn yaml_key_end(s: &[u8], i: usize, le: usize) -> Option<usize> {
    let b = at(s, i, le)?;
    let k = if b == b'"' || b == b'\'' {
        string_end(s, i + 1, le, b, false, b == b'"')
    } else if b"#{[&*!|>%@`".contains(&b) {
        return None;
    } else {
        run_end(s, i, le, |c| c != b':' && c != b'#')
    };
    let colon = at(s, k, le) == Some(b':');
    let spaced = matches!(at(s, k + 1, le), None | Some(b' ' | b'\t'));
    (colon && spaced && k > i).then_some(k)
}

/// A plain scalar: a boolean or null, a number, or a string.
fn scalar(w: &[u8]) -> Kind {
    const LIT: &[&str] = &["true", "false", "null", "yes", "no", "on", "off", "~"];
    let numeric = w.iter().any(u8::is_ascii_digit)
        && w.iter()
            .all(|c| c.is_ascii_hexdigit() || b"+-._xXoO:".contains(c))
        && (w[0].is_ascii_digit() || b"+-.".contains(&w[0]));
    if is_in(LIT, w, true) {
        Kind::Literal
    } else if numeric {
        Kind::Number
    } else {
        Kind::String
    }
}

/// TOML: `[tables]`, `key =`, strings (basic, literal, multi-line), numbers and dates, booleans,
/// comments.
pub(super) fn toml(s: &[u8], mut i: usize, end: usize, out: &mut Out) {
    let mut line_start = true;
    while i < end {
        let b = s[i];
        if b.is_ascii_whitespace() {
            line_start |= b == b'\n';
            out.push(Kind::Plain, i, i + 1);
            i += 1;
            continue;
        }
        let first = std::mem::take(&mut line_start);
        let rest = &s[i..end];
        let (kind, j) = if first && b == b'[' {
            let le = line_end(s, i, end);
            let close = s[i..le]
                .iter()
                .rposition(|&c| c == b']')
                .map_or(le, |p| i + p + 1);
            (Kind::Meta, close)
        } else if let Some(k) = toml_key_end(s, i, end).filter(|_| first) {
            (Kind::Key, k)
        } else if b == b'#' {
            (Kind::Comment, line_end(s, i, end))
        } else if rest.starts_with(b"\"\"\"") || rest.starts_with(b"'''") {
            (Kind::String, past(s, i + 3, end, &rest[..3]))
        } else if b == b'"' || b == b'\'' {
            (Kind::String, string_end(s, i + 1, end, b, false, b == b'"'))
        } else if b.is_ascii_digit()
            || (matches!(b, b'+' | b'-') && at(s, i + 1, end).is_some_and(|c| c.is_ascii_digit()))
        {
            let j = number_end(s, i + 1, end);
            (
                Kind::Number,
                run_end(s, j, end, |c| {
                    c.is_ascii_alphanumeric() || b"_.:+-".contains(&c)
                }),
            )
        } else if is_ident_start(b) {
            let j = run_end(s, i, end, |c| is_ident(c) || c == b'-');
            let lit = is_in(&["true", "false", "inf", "nan"], &s[i..j], false);
            (if lit { Kind::Literal } else { Kind::Plain }, j)
        } else {
            (Kind::Plain, i + 1)
        };
        out.push(kind, i, j.max(i + 1));
        i = j.max(i + 1);
    }
}

/// A line's key (bare, quoted or dotted) up to its last character before `=`.
fn toml_key_end(s: &[u8], i: usize, end: usize) -> Option<usize> {
    let le = line_end(s, i, end);
    let mut k = i;
    let mut last = i;
    while k < le {
        match s[k] {
            b'=' => return (last > i).then_some(last),
            b'"' | b'\'' => k = string_end(s, k + 1, le, s[k], false, s[k] == b'"'),
            b' ' | b'\t' => k += 1,
            c if is_ident(c) || c == b'-' || c == b'.' => k += 1,
            _ => return None,
        }
        if !matches!(s[k - 1], b' ' | b'\t') {
            last = k;
        }
    }
    None
}

/// Diff, line by line: file headers and hunk headers, inserted and deleted lines, `diff`/`index`.
pub(super) fn diff(s: &[u8], mut i: usize, end: usize, out: &mut Out) {
    while i < end {
        let le = line_end(s, i, end);
        let line = &s[i..le];
        let kind =
            if line.starts_with(b"+++ ") || line.starts_with(b"--- ") || line.starts_with(b"@@") {
                Kind::Meta
            } else if line.starts_with(b"+") {
                Kind::Inserted
            } else if line.starts_with(b"-") {
                Kind::Deleted
            } else if line.starts_with(b"diff ") || line.starts_with(b"index ") {
                Kind::Comment
            } else {
                Kind::Plain
            };
        out.push(kind, i, le);
        out.push(Kind::Plain, le, (le + 1).min(end));
        i = le + 1;
    }
}
