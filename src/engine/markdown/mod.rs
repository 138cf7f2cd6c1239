//! Markdown to safe HTML for untrusted model output (the chat pane sets it with `inner_html`).
//! Owns the markdown dialect, its parser (`block`: CommonMark's container/leaf line algorithm plus
//! GFM tables; `inline`: code spans, escapes, entities, autolinks, links/images with the bracket
//! stack, emphasis with the delimiter-run algorithm, GFM strikethrough), the HTML writer, the
//! link-URL policy and the streaming tolerance.
//! Must not import anything outside `crate::engine`.
//!
//! Why our own parser instead of `pulldown-cmark`: bundle bytes. The crate (with `unicase` and its
//! 2,000-entry HTML entity table) was about 27 KB of the shipped wasm after brotli, for a dialect we
//! restrict anyway: its raw-HTML, footnote, math and heading-attribute paths were dead weight, and the
//! HTML writer already was ours (below). This parser is checked against a snapshot corpus of that
//! crate's output (`tests/fixtures/markdown/`) and by property tests (no panic, allow-listed output,
//! linear time on adversarial input).
//!
//! Deliberately not supported (shown as text): raw HTML (always), footnotes, task lists (the
//! `[ ]` stays text, as before), heading attributes, and named character references outside a small
//! table of the ~40 that models write (`&amp; &copy; &mdash; &rarr;` …; numeric ones always work);
//! an unknown `&name;` stays literal text.
//!
//! Where pulldown-cmark departed from CommonMark we copied it when it mattered for real replies
//! (tables interrupting paragraphs and ended by list items, `~`/`~~` strikethrough rules, heading
//! trailing whitespace, blank lines in code inside list items). Known differences that remain, all
//! safe and all on pathological input (none in the corpus, none in 100,000 generated replies):
//! - `[a]\[b]`: pulldown-cmark read the escaped bracket as a reference label; here `[a]` is a
//!   shortcut reference, as CommonMark says;
//! - a quote's lazy line indented by a tab (`\t> x`) is text here (a tab is 4 columns), as in
//!   CommonMark; pulldown-cmark took it as a quote marker;
//! - whitespace only: a tab ending an ATX heading at the end of input, a whitespace-only last line
//!   of an unclosed fence, and a code span that spans a lazy line under a list item;
//! - a table whose header line was a lazy continuation line of a quote;
//! - reference labels are matched lowercased, with `ß` as `ss` and `ς` as `σ` (not full Unicode
//!   case folding: its tables are about 14 KB of wasm, 6 KB gzipped), emphasis flanking knows the
//!   Unicode punctuation and symbols of the blocks replies use (Latin-1, general punctuation,
//!   currency, arrows and symbols, CJK, emoji; not the whole table), and one delimiter run matches
//!   at most 32 times (the rest of a longer `*` run stays text).
//!
//! Measured against the CommonMark spec's examples (and GFM's table and strikethrough ones) by
//! `tests/engine_commonmark.rs`, under a normalisation of the policy below; what fails there fails
//! by policy (named character references outside our table).
//!
//! The HTML writer: the output can only ever contain the tags and attributes listed below, so no
//! sanitiser pass is needed after it:
//!
//! - blocks: `p h1..h6 blockquote ul ol[start] li hr table thead tbody tr th[style] td[style]`;
//! - inline: `em strong del code br`;
//! - bare `http(s)://` URLs in text are links too (GFM's extended autolinks), through the same policy;
//! - code blocks: `div.code-block > button.copy-code + pre > code[class=language-x]`, then
//!   `span.code-lang` with the language's name when it has one;
//! - links and images: `a[href rel target title class]`;
//! - math (`$…$`, `\(…\)` inline; `$$…$$`, `\[…\]` display; a `$$` or `\[` line opens a display
//!   block, `block::start_math`; a single `$` is money unless pandoc's rule says math,
//!   `inline::Inline::dollar`): `code[class=math-tex data-math=inline|block]` holding the TeX, a
//!   display block inside `div.math-block`. The chat pane swaps each for the MathML of
//!   `engine::math`, written by this module's other writer, [`mathml`] (MathML Core elements
//!   and inert attributes only).
//!
//! Policy:
//! - raw HTML (block and inline) is written as escaped text, so it is shown, never parsed;
//! - a link is live only when its URL's scheme, read the way a browser reads it, is `http`, `https` or
//!   `mailto` (see [`safe_href`]); otherwise the label is written as plain text. Relative URLs
//!   (`/x`, `#/c/id`, `//host`, `?q`) are NOT live: a model reply has no legitimate page of ours to
//!   point at, and an in-app link (e.g. to another conversation or a URL with parameters) would let it
//!   drive the app;
//! - live links get `rel="noopener noreferrer" target="_blank"`;
//! - images are never loaded (a remote image URL in model output can exfiltrate data through its query
//!   string): an image becomes a link `[image: alt]` to its URL (same URL policy), or plain text;
//! - every text node and attribute value is escaped (`& < > " '`).

mod block;
mod inline;
pub mod mathml;

use block::{Align, Doc, Kind};
use inline::{Buffers, Emph, Node};

/// Render untrusted markdown as safe HTML.
pub fn render(markdown: &str) -> String {
    let doc = block::parse(markdown);
    // Markup roughly doubles prose (code blocks carry a copy button): one allocation, no regrowth.
    let mut out = String::with_capacity(markdown.len() * 2 + 256);
    write_doc(&doc, &mut out);
    out
}

/// Render a reply that may still be streaming. Complete input renders exactly as [`render`]; an
/// unfinished stream renders sensibly:
/// - an open code fence stays a code block (as CommonMark says) and a half-written closing fence on the
///   last line (e.g. a lone `` ` `` or ``` `` ```) is not shown as code content;
/// - a half-written opening fence on the last line (`` ` `` or ``` `` ``` alone) is held back instead of
///   flashing as literal backticks.
pub fn render_streaming(markdown: &str) -> String {
    render(streaming_view(markdown))
}

/// The part of an unfinished stream worth rendering now (a prefix of the input).
fn streaming_view(markdown: &str) -> &str {
    // Only the last line can be unfinished; a complete line (ending in '\n') is final.
    let last_start = markdown.rfind('\n').map_or(0, |i| i + 1);
    let last = &markdown[last_start..];
    let marker = last.trim_start_matches([' ', '>']).trim_end();
    let Some(fence_char) = marker.bytes().next().filter(|c| *c == b'`' || *c == b'~') else {
        return markdown;
    };
    if !marker.bytes().all(|c| c == fence_char) {
        return markdown;
    }
    let run = marker.len();
    match block::parse(&markdown[..last_start]).open_fence_at_end() {
        // Inside an open fence: a run shorter than the opener cannot close it yet (it may be the start
        // of the closing fence); a run as long as the opener already closes it.
        Some((c, len)) if c == fence_char && run < len => &markdown[..last_start],
        Some(_) => markdown,
        // Outside a fence: one or two backticks/tildes alone may become a fence opener.
        None if run < 3 => &markdown[..last_start],
        None => markdown,
    }
}

/// The URL a live link may point at, or `None` when the link must be shown as text.
///
/// The scheme is read the way a browser's URL parser does: leading and trailing C0 controls and spaces
/// are trimmed and tabs/newlines anywhere are removed (so `jav\tascript:` is `javascript:`), the scheme
/// is case-insensitive, and anything without a scheme is relative (not allowed, see the module doc).
/// As a second line of defence the same check runs after decoding HTML character references
/// (`jav&#x09;ascript:`), and both readings must agree on an allowed scheme. The returned URL is the
/// cleaned string; the writer escapes it, so the browser sees exactly this string.
pub fn safe_href(dest: &str) -> Option<String> {
    let cleaned = clean_url(dest);
    let scheme = url_scheme(&cleaned)?;
    if !["http", "https", "mailto"]
        .iter()
        .any(|s| s.eq_ignore_ascii_case(scheme))
    {
        return None;
    }
    if cleaned.contains('&') {
        let decoded = decode_char_refs(&cleaned);
        let decoded = clean_url(&decoded);
        if !url_scheme(&decoded).is_some_and(|d| d.eq_ignore_ascii_case(scheme)) {
            return None;
        }
    }
    Some(cleaned.into_owned())
}

fn clean_url(s: &str) -> std::borrow::Cow<'_, str> {
    let trimmed = s.trim_matches(|c: char| c <= ' ');
    if trimmed.contains(['\t', '\n', '\r']) {
        std::borrow::Cow::Owned(
            trimmed
                .chars()
                .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
                .collect(),
        )
    } else {
        std::borrow::Cow::Borrowed(trimmed)
    }
}

/// The scheme (as written; compare it case-insensitively), per the WHATWG URL parser's scheme
/// state.
fn url_scheme(url: &str) -> Option<&str> {
    let mut chars = url.char_indices();
    let (_, first) = chars.next()?;
    if !first.is_ascii_alphabetic() {
        return None;
    }
    for (i, c) in chars {
        if c == ':' {
            return Some(&url[..i]);
        }
        if !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')) {
            return None;
        }
    }
    None
}

/// Decode numeric character references (with or without `;`) and the named ones that matter for
/// hiding a scheme. Unknown references are left as they are. Also what `mathml` reads a
/// converter's escaped text and attribute values with.
fn decode_char_refs(s: &str) -> String {
    const NAMED: [(&str, char); 11] = [
        ("colon", ':'),
        ("tab", '\t'),
        ("newline", '\n'),
        ("amp", '&'),
        ("lt", '<'),
        ("gt", '>'),
        ("quot", '"'),
        ("apos", '\''),
        ("sol", '/'),
        ("lpar", '('),
        ("rpar", ')'),
    ];
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let after = &rest[amp + 1..];
        let mut consumed = None;
        if let Some(num) = after.strip_prefix('#') {
            let (digits, radix, skip) = match num.strip_prefix(['x', 'X']) {
                Some(hex) => (hex, 16, 2),
                None => (num, 10, 1),
            };
            let n = digits.chars().take_while(|c| c.is_digit(radix)).count();
            if n > 0 {
                let value = u32::from_str_radix(&digits[..n.min(8)], radix).unwrap_or(0xFFFD);
                let c = char::from_u32(value).unwrap_or('\u{FFFD}');
                let semi = usize::from(digits[n..].starts_with(';'));
                consumed = Some((c, skip + n + semi));
            }
        } else {
            for (name, c) in NAMED {
                let matches = after.len() >= name.len()
                    && after.is_char_boundary(name.len())
                    && after[..name.len()].eq_ignore_ascii_case(name);
                if matches {
                    let semi = usize::from(after[name.len()..].starts_with(';'));
                    consumed = Some((c, name.len() + semi));
                    break;
                }
            }
        }
        match consumed {
            Some((c, len)) => {
                out.push(c);
                rest = &after[len..];
            }
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Escape text for an HTML text node or a double-quoted attribute value.
pub fn escape_html(out: &mut String, s: &str) {
    let mut last = 0;
    for (i, b) in s.bytes().enumerate() {
        let rep = match b {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'"' => "&quot;",
            b'\'' => "&#39;",
            _ => continue,
        };
        out.push_str(&s[last..i]);
        out.push_str(rep);
        last = i + 1;
    }
    out.push_str(&s[last..]);
}

/// Keep only `[A-Za-z0-9_+-]` of a code block's language word.
fn sanitize_language(info: &str) -> String {
    let word = info.split_whitespace().next().unwrap_or("");
    word.chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '+' | '-'))
        .take(32)
        .collect()
}

/// A step of the walk over the block tree: a block entered (with whether its parent list is tight),
/// or left.
enum Visit {
    Enter(usize, bool),
    Exit(usize),
}

/// Write the block tree, depth first without recursion (nesting depth is attacker-controlled).
fn write_doc<'a>(doc: &'a Doc, out: &mut String) {
    let mut buf: Buffers<'a> = Buffers::default();
    let mut stack = vec![Visit::Enter(0, false)];
    while let Some(step) = stack.pop() {
        match step {
            Visit::Enter(b, tight) => {
                let Some(children_tight) = open_block(doc, b, tight, &mut buf, out) else {
                    continue;
                };
                stack.push(Visit::Exit(b));
                for &child in doc.blocks[b].children.iter().rev() {
                    stack.push(Visit::Enter(child, children_tight));
                }
            }
            Visit::Exit(b) => match doc.blocks[b].kind {
                Kind::Quote => out.push_str("</blockquote>\n"),
                Kind::List { ordered: true, .. } => out.push_str("</ol>\n"),
                Kind::List { ordered: false, .. } => out.push_str("</ul>\n"),
                Kind::Item { .. } => out.push_str("</li>\n"),
                _ => {}
            },
        }
    }
}

/// Enters block `b`: a container's opening tag, and `Some(whether its children are tight)`; a leaf
/// is written whole ([`write_leaf`]), and `None`.
fn open_block<'a>(
    doc: &'a Doc,
    b: usize,
    tight: bool,
    buf: &mut Buffers<'a>,
    out: &mut String,
) -> Option<bool> {
    match &doc.blocks[b].kind {
        Kind::Document => Some(false),
        Kind::Quote => {
            out.push_str("<blockquote>\n");
            Some(false)
        }
        &Kind::List {
            ordered,
            start,
            tight,
            ..
        } => {
            match (ordered, start) {
                (false, _) => out.push_str("<ul>\n"),
                (true, 1) => out.push_str("<ol>\n"),
                (true, n) => {
                    out.push_str("<ol start=\"");
                    out.push_str(&n.to_string());
                    out.push_str("\">\n");
                }
            }
            Some(tight)
        }
        Kind::Item { .. } => {
            out.push_str("<li>");
            Some(tight)
        }
        _ => {
            write_leaf(doc, b, tight, buf, out);
            None
        }
    }
}

/// Writes leaf block `b` (a paragraph in a tight list without `<p>`).
fn write_leaf<'a>(doc: &'a Doc, b: usize, tight: bool, buf: &mut Buffers<'a>, out: &mut String) {
    let block = &doc.blocks[b];
    match &block.kind {
        Kind::Para => {
            if !tight {
                out.push_str("<p>");
            }
            write_inline(
                block.text.trim_end_matches([' ', '\t', '\n']),
                doc,
                buf,
                out,
            );
            if !tight {
                out.push_str("</p>\n");
            }
        }
        Kind::Heading(level) => {
            let n = char::from(b'0' + level);
            out.push_str("<h");
            out.push(n);
            out.push('>');
            write_inline(&block.text, doc, buf, out);
            out.push_str("</h");
            out.push(n);
            out.push_str(">\n");
        }
        Kind::Rule => out.push_str("<hr>\n"),
        Kind::Fenced { info, .. } => write_code(Some(info), &block.text, out),
        Kind::Indented => write_code(None, &block.text, out),
        Kind::Math { .. } => {
            out.push_str("<div class=\"math-block\">");
            write_math(&block.text, true, out);
            out.push_str("</div>\n");
        }
        Kind::Html(_) => {
            out.push_str("<p>");
            escape_html(out, &block.text);
            out.push_str("</p>\n");
        }
        Kind::Table { aligns, rows } => write_table(aligns, rows, doc, out),
        Kind::Removed | Kind::Document | Kind::Quote | Kind::List { .. } | Kind::Item { .. } => {}
    }
}

/// A formula as the code it is written in, for the chat pane to swap for MathML (`ui/math.rs`):
/// `<code class="math-tex" data-math="inline|block">` holding its TeX, escaped.
fn write_math(tex: &str, display: bool, out: &mut String) {
    out.push_str("<code class=\"math-tex\" data-math=\"");
    out.push_str(if display { "block" } else { "inline" });
    out.push_str("\">");
    escape_html(out, tex.trim());
    out.push_str("</code>");
}

fn write_code(info: Option<&str>, text: &str, out: &mut String) {
    out.push_str(
        "<div class=\"code-block\"><button type=\"button\" class=\"copy-code\" \
         data-testid=\"copy-code\" aria-label=\"Copy code\">Copy</button><pre><code",
    );
    let lang = info.map(sanitize_language).unwrap_or_default();
    if !lang.is_empty() {
        out.push_str(" class=\"language-");
        out.push_str(&lang);
        out.push('"');
    }
    out.push('>');
    escape_html(out, text);
    out.push_str("</code></pre>");
    // The language's name, shown in the strip above the code (next to Copy, never over the code).
    if !lang.is_empty() {
        out.push_str("<span class=\"code-lang\">");
        out.push_str(&lang);
        out.push_str("</span>");
    }
    out.push_str("</div>\n");
}

fn write_table(aligns: &[Align], rows: &[String], doc: &Doc, out: &mut String) {
    out.push_str("<table>");
    for (r, row) in rows.iter().enumerate() {
        let head = r == 0;
        if head {
            out.push_str("<thead>");
        } else if r == 1 {
            out.push_str("<tbody>");
        }
        out.push_str("<tr>");
        let mut cells = Vec::new();
        block::split_row(row, &mut cells);
        let mut buf = Buffers::default();
        for (c, align) in aligns.iter().enumerate() {
            out.push_str(if head { "<th" } else { "<td" });
            out.push_str(match align {
                Align::Left => " style=\"text-align: left\"",
                Align::Center => " style=\"text-align: center\"",
                Align::Right => " style=\"text-align: right\"",
                Align::None => "",
            });
            out.push('>');
            if let Some(cell) = cells.get(c) {
                write_inline(cell, doc, &mut buf, out);
            }
            out.push_str(if head { "</th>" } else { "</td>" });
        }
        out.push_str("</tr>");
        if head {
            out.push_str("</thead>");
        }
    }
    if rows.len() > 1 {
        out.push_str("</tbody>");
    }
    out.push_str("</table>\n");
}

fn emph_tag(e: Emph, close: bool) -> &'static str {
    match (e, close) {
        (Emph::Em, false) => "<em>",
        (Emph::Em, true) => "</em>",
        (Emph::Strong, false) => "<strong>",
        (Emph::Strong, true) => "</strong>",
        (Emph::Del, false) => "<del>",
        (Emph::Del, true) => "</del>",
    }
}

/// Write one block's inline content. Links: an `<a>` is written only for a live URL and never
/// inside another `<a>` (the browser would split them); images become `[image: alt]` links.
fn write_inline<'a>(text: &'a str, doc: &Doc, buf: &mut Buffers<'a>, out: &mut String) {
    inline::parse(text, &doc.refs, buf);
    let nodes = &buf.nodes;
    // For every open link or image: whether an `<a>` was written for it.
    let mut links: Vec<bool> = Vec::new();
    let mut i = 0;
    while i < nodes.len() {
        match &nodes[i] {
            Node::Text(t) if links.iter().any(|l| *l) => escape_html(out, t),
            Node::Text(t) => escape_autolinked(out, t),
            Node::Code(t) => {
                out.push_str("<code>");
                escape_html(out, t);
                out.push_str("</code>");
            }
            Node::Html(t) => escape_html(out, t),
            Node::Math { tex, display } => write_math(tex, *display, out),
            Node::SoftBreak => out.push('\n'),
            Node::HardBreak => out.push_str("<br>\n"),
            Node::Delim {
                ch,
                left,
                closes,
                opens,
                ..
            } => write_delim(out, *ch, *left, *closes, *opens),
            Node::Bracket { image } => out.push_str(if *image { "![" } else { "[" }),
            Node::Autolink { dest, label } => {
                write_autolink(out, dest, label, links.iter().any(|l| *l));
            }
            Node::LinkStart {
                image: false,
                dest,
                title,
            } => {
                let live = if links.iter().any(|l| *l) {
                    None
                } else {
                    safe_href(dest)
                };
                if let Some(href) = &live {
                    open_link(out, None, href, title);
                }
                links.push(live.is_some());
            }
            Node::LinkEnd => {
                if links.pop() == Some(true) {
                    out.push_str("</a>");
                }
            }
            Node::LinkStart {
                image: true,
                dest,
                title,
            } => {
                let in_link = links.iter().any(|l| *l);
                i = write_image(out, nodes, i, (dest.as_str(), title.as_str()), in_link);
            }
        }
        i += 1;
    }
}

/// A delimiter run: the tags it closes, its literal chars, then the tags it opens.
fn write_delim(out: &mut String, ch: u8, left: u32, closes: inline::Tags, opens: inline::Tags) {
    for k in 0..closes.len() {
        out.push_str(emph_tag(closes.get(k), true));
    }
    for _ in 0..left {
        out.push(char::from(ch));
    }
    for k in (0..opens.len()).rev() {
        out.push_str(emph_tag(opens.get(k), false));
    }
}

/// `<…>` autolink: a link to a live URL outside any other link, else its text.
fn write_autolink(out: &mut String, dest: &str, label: &str, in_link: bool) {
    let live = if in_link { None } else { safe_href(dest) };
    match live {
        Some(href) => {
            open_link(out, None, &href, "");
            escape_html(out, label);
            out.push_str("</a>");
        }
        None => escape_html(out, label),
    }
}

/// The image whose `LinkStart` is `nodes[i]` (its destination and title) as an `[image: alt]`
/// link, or that text when the URL is not live or it is inside a link. Returns the index of its
/// `LinkEnd`.
fn write_image(
    out: &mut String,
    nodes: &[Node<'_>],
    i: usize,
    (dest, title): (&str, &str),
    in_link: bool,
) -> usize {
    let (alt, end) = image_alt(nodes, i + 1);
    let alt = alt.trim();
    let label = format!("[image: {}]", if alt.is_empty() { "image" } else { alt });
    match safe_href(dest).filter(|_| !in_link) {
        Some(href) => {
            open_link(out, Some("md-image"), &href, title);
            escape_html(out, &label);
            out.push_str("</a>");
        }
        None => escape_html(out, &label),
    }
    end
}

/// An image's alt text: the plain text of its content. Returns it and the index of its `LinkEnd`.
fn image_alt(nodes: &[Node<'_>], mut i: usize) -> (String, usize) {
    let mut alt = String::new();
    let mut depth = 0;
    while i < nodes.len() {
        match &nodes[i] {
            Node::Text(t) | Node::Code(t) => alt.push_str(t),
            Node::Html(t) | Node::Math { tex: t, .. } => alt.push_str(t),
            Node::Autolink { label, .. } => alt.push_str(label),
            Node::SoftBreak | Node::HardBreak => alt.push(' '),
            Node::Delim { ch, left, .. } => {
                for _ in 0..*left {
                    alt.push(char::from(*ch));
                }
            }
            Node::Bracket { image } => alt.push_str(if *image { "![" } else { "[" }),
            Node::LinkStart { .. } => depth += 1,
            Node::LinkEnd if depth == 0 => return (alt, i),
            Node::LinkEnd => depth -= 1,
        }
        i += 1;
    }
    (alt, i)
}

/// Text with its bare `http://` and `https://` URLs as links (GFM's extended autolinks, for the
/// URLs replies write without `<…>`). A URL starts after a non-alphanumeric character, runs to
/// whitespace or `<`, and ends without trailing punctuation or an unbalanced `)`; its link goes
/// through [`safe_href`] like every other.
fn escape_autolinked(out: &mut String, text: &str) {
    let mut rest = text;
    while let Some(at) = bare_url_start(rest) {
        escape_html(out, &rest[..at]);
        let url = &rest[at..];
        let mut end = url
            .find(|c: char| c.is_whitespace() || c == '<')
            .unwrap_or(url.len());
        while let Some(c) = url[..end].chars().next_back() {
            let unbalanced =
                c == ')' && url[..end].matches(')').count() > url[..end].matches('(').count();
            if !(unbalanced
                || matches!(
                    c,
                    '.' | ',' | ':' | ';' | '!' | '?' | '*' | '_' | '~' | '\'' | '"'
                ))
            {
                break;
            }
            end -= c.len_utf8();
        }
        let (link, after) = url.split_at(end);
        let host = link.split_once("://").map_or("", |(_, h)| h);
        match safe_href(link).filter(|_| host.starts_with(|c: char| c.is_alphanumeric())) {
            Some(href) => {
                open_link(out, None, &href, "");
                escape_html(out, link);
                out.push_str("</a>");
            }
            None => escape_html(out, link),
        }
        rest = after;
    }
    escape_html(out, rest);
}

/// Where the first bare `http://` or `https://` URL of `s` starts (any case; not inside a word).
fn bare_url_start(s: &str) -> Option<usize> {
    let lower = s.to_ascii_lowercase();
    let mut from = 0;
    while let Some(k) = lower[from..].find("http") {
        let at = from + k;
        let tail = &lower[at..];
        let scheme = tail.starts_with("https://") || tail.starts_with("http://");
        let word_start = s[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !c.is_alphanumeric());
        if scheme && word_start {
            return Some(at);
        }
        from = at + 4;
    }
    None
}

fn open_link(out: &mut String, class: Option<&str>, href: &str, title: &str) {
    out.push_str("<a ");
    if let Some(class) = class {
        out.push_str("class=\"");
        out.push_str(class);
        out.push_str("\" ");
    }
    out.push_str("href=\"");
    escape_html(out, href);
    out.push('"');
    if !title.is_empty() {
        out.push_str(" title=\"");
        escape_html(out, title);
        out.push('"');
    }
    out.push_str(" rel=\"noopener noreferrer\" target=\"_blank\">");
}
