//! Markdown to safe HTML for untrusted model output (the chat pane sets it with `inner_html`).
//! Owns the markdown dialect, the HTML writer, the link-URL policy and the streaming tolerance.
//! Must not import anything outside `crate::engine` except `pulldown_cmark` (the parser).
//!
//! Why our own HTML writer instead of `pulldown_cmark::html::push_html`: the stock writer passes raw
//! HTML and every link scheme through, and loads images. Writing the events ourselves means the output
//! can only ever contain the tags and attributes listed below, so no sanitiser pass is needed after it:
//!
//! - blocks: `p h1..h6 blockquote ul ol[start] li hr table thead tbody tr th[style] td[style]`;
//! - inline: `em strong del code br`;
//! - code blocks: `div.code-block > button.copy-code + pre > code[class=language-x]`;
//! - links and images: `a[href rel target title class]`.
//!
//! Policy:
//! - every raw HTML event (block and inline) is written as escaped text, so it is shown, never parsed;
//! - a link is live only when its URL's scheme, read the way a browser reads it, is `http`, `https` or
//!   `mailto` (see [`safe_href`]); otherwise the label is written as plain text. Relative URLs
//!   (`/x`, `#/c/id`, `//host`, `?q`) are NOT live: a model reply has no legitimate page of ours to
//!   point at, and an in-app link (e.g. to another conversation or a URL with parameters) would let it
//!   drive the app;
//! - live links get `rel="noopener noreferrer" target="_blank"`;
//! - images are never loaded (a remote image URL in model output can exfiltrate data through its query
//!   string): an image becomes a link `[image: alt]` to its URL (same URL policy), or plain text;
//! - every text node and attribute value is escaped (`& < > " '`).

use pulldown_cmark::{Alignment, CodeBlockKind, Event, LinkType, Options, Parser, Tag, TagEnd};

/// Render untrusted markdown as safe HTML.
pub fn render(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len() + markdown.len() / 2 + 16);
    Writer::default().run(Parser::new_ext(markdown, options()), &mut out);
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
    let Some(fence_char) = marker.chars().next().filter(|c| *c == '`' || *c == '~') else {
        return markdown;
    };
    if !marker.chars().all(|c| c == fence_char) {
        return markdown;
    }
    let run = marker.len();
    match open_fence_at(&markdown[..last_start]) {
        // Inside an open fence: a run shorter than the opener cannot close it yet (it may be the start
        // of the closing fence); a run as long as the opener already closes it.
        Some((c, len)) if c == fence_char && run < len => &markdown[..last_start],
        Some(_) => markdown,
        // Outside a fence: one or two backticks/tildes alone may become a fence opener.
        None if run < 3 => &markdown[..last_start],
        None => markdown,
    }
}

/// If `text` ends inside an unclosed fenced code block, the fence character and run length.
/// Uses the parser itself, so containers (lists, quotes) and indented code are handled as rendered.
fn open_fence_at(text: &str) -> Option<(char, usize)> {
    let mut open: Option<(char, usize)> = None;
    for (event, range) in Parser::new_ext(text, options()).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(_))) => {
                let src = &text[range.clone()];
                let opener = src.trim_start_matches([' ', '>', '\t']);
                let c = opener.chars().next().unwrap_or('`');
                let len = opener.chars().take_while(|x| *x == c).count();
                // Closed if the block's source ends with a closing fence line.
                let body = src.trim_end_matches(['\n', '\r', ' ']);
                let last_line = body.rsplit('\n').next().unwrap_or("");
                let closing = last_line.trim_start_matches([' ', '>', '\t']);
                let closed = body.contains('\n')
                    && closing.chars().take_while(|x| *x == c).count() >= len
                    && closing.chars().all(|x| x == c);
                open = if closed || range.end < text.trim_end().len() {
                    None
                } else {
                    Some((c, len))
                };
            }
            Event::Start(_) => {}
            _ => {}
        }
    }
    open
}

fn options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH
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
    if !matches!(scheme.as_str(), "http" | "https" | "mailto") {
        return None;
    }
    let decoded = clean_url(&decode_char_refs(&cleaned));
    if url_scheme(&decoded).as_deref() != Some(scheme.as_str()) {
        return None;
    }
    Some(cleaned)
}

fn clean_url(s: &str) -> String {
    s.trim_matches(|c: char| c <= ' ')
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .collect()
}

/// The lowercased scheme, per the WHATWG URL parser's scheme state.
fn url_scheme(url: &str) -> Option<String> {
    let mut chars = url.char_indices();
    let (_, first) = chars.next()?;
    if !first.is_ascii_alphabetic() {
        return None;
    }
    for (i, c) in chars {
        if c == ':' {
            return Some(url[..i].to_ascii_lowercase());
        }
        if !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')) {
            return None;
        }
    }
    None
}

/// Decode numeric character references (with or without `;`) and the named ones that matter for
/// hiding a scheme. Unknown references are left as they are.
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

/// An image being collected: its alt text and where it points.
struct PendingImage {
    href: Option<String>,
    title: String,
    alt: String,
    /// Nested images inside the alt text.
    depth: usize,
    /// Inside a live link: an `<a>` may not contain another `<a>`.
    in_live_link: bool,
}

#[derive(Default)]
struct Writer {
    /// For every open link: whether an `<a>` was written for it.
    links: Vec<bool>,
    image: Option<PendingImage>,
    alignments: Vec<Alignment>,
    cell: usize,
    in_table_head: bool,
    in_table_body: bool,
}

impl Writer {
    fn run<'a>(&mut self, events: impl Iterator<Item = Event<'a>>, out: &mut String) {
        for event in events {
            if self.image.is_some() {
                self.image_event(event, out);
                continue;
            }
            match event {
                Event::Start(tag) => self.start(tag, out),
                Event::End(tag) => self.end(tag, out),
                Event::Text(t) => escape_html(out, &t),
                Event::Code(t) => {
                    out.push_str("<code>");
                    escape_html(out, &t);
                    out.push_str("</code>");
                }
                // Raw HTML is shown, never interpreted.
                Event::Html(t) | Event::InlineHtml(t) => escape_html(out, &t),
                Event::InlineMath(t) | Event::DisplayMath(t) | Event::FootnoteReference(t) => {
                    escape_html(out, &t)
                }
                Event::SoftBreak => out.push('\n'),
                Event::HardBreak => out.push_str("<br>\n"),
                Event::Rule => out.push_str("<hr>\n"),
                Event::TaskListMarker(done) => out.push_str(if done { "[x] " } else { "[ ] " }),
            }
        }
    }

    fn image_event(&mut self, event: Event<'_>, out: &mut String) {
        let Some(img) = self.image.as_mut() else {
            return;
        };
        match event {
            Event::Start(Tag::Image { .. }) => img.depth += 1,
            Event::End(TagEnd::Image) if img.depth > 0 => img.depth -= 1,
            Event::End(TagEnd::Image) => {
                if let Some(img) = self.image.take() {
                    let alt = img.alt.trim();
                    let label = format!("[image: {}]", if alt.is_empty() { "image" } else { alt });
                    match img.href.filter(|_| !img.in_live_link) {
                        Some(href) => {
                            out.push_str("<a class=\"md-image\" href=\"");
                            escape_html(out, &href);
                            out.push('"');
                            push_title(out, &img.title);
                            out.push_str(" rel=\"noopener noreferrer\" target=\"_blank\">");
                            escape_html(out, &label);
                            out.push_str("</a>");
                        }
                        None => escape_html(out, &label),
                    }
                }
            }
            Event::Text(t) | Event::Code(t) | Event::Html(t) | Event::InlineHtml(t) => {
                img.alt.push_str(&t)
            }
            Event::SoftBreak | Event::HardBreak => img.alt.push(' '),
            _ => {}
        }
    }

    fn start(&mut self, tag: Tag<'_>, out: &mut String) {
        match tag {
            Tag::Paragraph | Tag::HtmlBlock => out.push_str("<p>"),
            Tag::Heading { level, .. } => {
                out.push_str(&format!("<h{}>", level as usize));
            }
            Tag::BlockQuote(_) => out.push_str("<blockquote>\n"),
            Tag::CodeBlock(kind) => {
                out.push_str(
                    "<div class=\"code-block\"><button type=\"button\" class=\"copy-code\" \
                     data-testid=\"copy-code\" aria-label=\"Copy code\">Copy</button><pre><code",
                );
                if let CodeBlockKind::Fenced(info) = kind {
                    let lang = sanitize_language(&info);
                    if !lang.is_empty() {
                        out.push_str(" class=\"language-");
                        out.push_str(&lang);
                        out.push('"');
                    }
                }
                out.push('>');
            }
            Tag::List(Some(1)) => out.push_str("<ol>\n"),
            Tag::List(Some(start)) => out.push_str(&format!("<ol start=\"{start}\">\n")),
            Tag::List(None) => out.push_str("<ul>\n"),
            Tag::Item => out.push_str("<li>"),
            Tag::Table(alignments) => {
                self.alignments = alignments;
                self.in_table_body = false;
                out.push_str("<table>");
            }
            Tag::TableHead => {
                self.in_table_head = true;
                self.cell = 0;
                out.push_str("<thead><tr>");
            }
            Tag::TableRow => {
                self.cell = 0;
                if !self.in_table_body {
                    self.in_table_body = true;
                    out.push_str("<tbody>");
                }
                out.push_str("<tr>");
            }
            Tag::TableCell => {
                out.push_str(if self.in_table_head { "<th" } else { "<td" });
                let style = match self.alignments.get(self.cell) {
                    Some(Alignment::Left) => " style=\"text-align: left\"",
                    Some(Alignment::Center) => " style=\"text-align: center\"",
                    Some(Alignment::Right) => " style=\"text-align: right\"",
                    _ => "",
                };
                out.push_str(style);
                out.push('>');
            }
            Tag::Emphasis => out.push_str("<em>"),
            Tag::Strong => out.push_str("<strong>"),
            Tag::Strikethrough => out.push_str("<del>"),
            Tag::Link {
                link_type,
                dest_url,
                title,
                ..
            } => {
                let dest = if link_type == LinkType::Email {
                    format!("mailto:{dest_url}")
                } else {
                    dest_url.to_string()
                };
                // An `<a>` inside an `<a>` would be split by the browser; never nest them.
                let live = if self.links.iter().any(|l| *l) {
                    None
                } else {
                    safe_href(&dest)
                };
                if let Some(href) = &live {
                    out.push_str("<a href=\"");
                    escape_html(out, href);
                    out.push('"');
                    push_title(out, &title);
                    out.push_str(" rel=\"noopener noreferrer\" target=\"_blank\">");
                }
                self.links.push(live.is_some());
            }
            Tag::Image {
                dest_url, title, ..
            } => {
                self.image = Some(PendingImage {
                    href: safe_href(&dest_url),
                    title: title.to_string(),
                    alt: String::new(),
                    depth: 0,
                    in_live_link: self.links.iter().any(|l| *l),
                });
            }
            // Not enabled in `options()`; rendered as their plain content if they ever appear.
            Tag::FootnoteDefinition(_)
            | Tag::DefinitionList
            | Tag::DefinitionListTitle
            | Tag::DefinitionListDefinition
            | Tag::Superscript
            | Tag::Subscript
            | Tag::MetadataBlock(_) => {}
        }
    }

    fn end(&mut self, tag: TagEnd, out: &mut String) {
        match tag {
            TagEnd::Paragraph | TagEnd::HtmlBlock => out.push_str("</p>\n"),
            TagEnd::Heading(level) => out.push_str(&format!("</h{}>\n", level as usize)),
            TagEnd::BlockQuote(_) => out.push_str("</blockquote>\n"),
            TagEnd::CodeBlock => out.push_str("</code></pre></div>\n"),
            TagEnd::List(true) => out.push_str("</ol>\n"),
            TagEnd::List(false) => out.push_str("</ul>\n"),
            TagEnd::Item => out.push_str("</li>\n"),
            TagEnd::Table => {
                if self.in_table_body {
                    out.push_str("</tbody>");
                }
                self.in_table_body = false;
                out.push_str("</table>\n");
            }
            TagEnd::TableHead => {
                self.in_table_head = false;
                out.push_str("</tr></thead>");
            }
            TagEnd::TableRow => out.push_str("</tr>"),
            TagEnd::TableCell => {
                out.push_str(if self.in_table_head { "</th>" } else { "</td>" });
                self.cell += 1;
            }
            TagEnd::Emphasis => out.push_str("</em>"),
            TagEnd::Strong => out.push_str("</strong>"),
            TagEnd::Strikethrough => out.push_str("</del>"),
            TagEnd::Link => {
                if self.links.pop() == Some(true) {
                    out.push_str("</a>");
                }
            }
            // Handled in `image_event`.
            TagEnd::Image => {}
            TagEnd::FootnoteDefinition
            | TagEnd::DefinitionList
            | TagEnd::DefinitionListTitle
            | TagEnd::DefinitionListDefinition
            | TagEnd::Superscript
            | TagEnd::Subscript
            | TagEnd::MetadataBlock(_) => {}
        }
    }
}

fn push_title(out: &mut String, title: &str) {
    if !title.is_empty() {
        out.push_str(" title=\"");
        escape_html(out, title);
        out.push('"');
    }
}
