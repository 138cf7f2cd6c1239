//! Block structure: CommonMark's container/leaf algorithm, line by line over a stack of open blocks
//! (document > quotes/lists/items > one open leaf), plus GFM tables. Produces a block tree and the
//! link reference definitions; inline content stays raw text for `inline`.
//! Must not import anything outside `super` (the markdown module).

use super::inline::{normalize_label, parse_link_dest, parse_link_title, unescape};
use std::borrow::Cow;
use std::collections::HashMap;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Align {
    None,
    Left,
    Center,
    Right,
}

#[derive(Debug)]
pub(super) enum Kind {
    Document,
    Quote,
    List {
        ordered: bool,
        /// The bullet char, or the ordered delimiter (`.` or `)`).
        marker: u8,
        start: u64,
        tight: bool,
    },
    /// A list item; `indent` is the column its content starts at, relative to its container.
    Item {
        indent: usize,
    },
    Para,
    Heading(u8),
    Rule,
    Fenced {
        ch: u8,
        len: usize,
        indent: usize,
        info: String,
        closed: bool,
    },
    Indented,
    /// Display math on lines of its own: opened by a line starting with `$$` (or a line `\[`)
    /// that does not close it, closed by a line ending with `$$` (`\]`); its text is the TeX.
    Math {
        dollars: bool,
        closed: bool,
    },
    Html(u8),
    /// A GFM table: the header line, then body lines (raw, split into cells when rendered).
    Table {
        aligns: Vec<Align>,
        rows: Vec<String>,
    },
    /// A paragraph that held only reference definitions: not rendered, but it still separates its
    /// neighbours (a list with one is loose, as in pulldown-cmark).
    Removed,
}

pub(super) struct Block {
    pub kind: Kind,
    pub children: Vec<usize>,
    parent: usize,
    pub text: String,
    open: bool,
    start_line: usize,
    end_line: usize,
}

/// A link reference definition: destination and title.
pub(super) type Refs = HashMap<String, (String, String)>;

pub(super) struct Doc {
    pub blocks: Vec<Block>,
    pub refs: Refs,
}

impl Doc {
    /// If the document ends inside an unclosed fenced code block: its fence char and length.
    pub fn open_fence_at_end(&self) -> Option<(u8, usize)> {
        let mut b = 0;
        while let Some(&last) = self.blocks[b].children.last() {
            b = last;
        }
        match self.blocks[b].kind {
            Kind::Fenced {
                ch,
                len,
                closed: false,
                ..
            } => Some((ch, len)),
            _ => None,
        }
    }
}

/// Parse the block structure of a whole document.
pub(super) fn parse(text: &str) -> Doc {
    let mut p = Parser {
        blocks: vec![Block {
            kind: Kind::Document,
            children: Vec::new(),
            parent: 0,
            text: String::new(),
            open: true,
            start_line: 0,
            end_line: 0,
        }],
        refs: HashMap::new(),
        tip: 0,
        old_tip: 0,
        last_matched: 0,
        all_closed: true,
        line: "",
        line_no: 0,
        offset: 0,
        column: 0,
        next_nonspace: 0,
        next_nonspace_column: 0,
        indent: 0,
        indented: false,
        blank: false,
        partial_tab: false,
        consumed: false,
        eol: false,
        line_start: 0,
        nn_from: usize::MAX,
    };
    let mut rest = text;
    while !rest.is_empty() {
        // Lines end at `\n`, `\r\n` or a lone `\r`.
        let bytes = rest.as_bytes();
        let end = bytes
            .iter()
            .position(|&b| b == b'\n' || b == b'\r')
            .unwrap_or(bytes.len());
        let line = &rest[..end];
        let next = match bytes.get(end) {
            None => end,
            Some(b'\r') if bytes.get(end + 1) == Some(&b'\n') => end + 2,
            Some(_) => end + 1,
        };
        p.eol = next > end;
        p.incorporate(line);
        rest = &rest[next..];
    }
    while p.tip != 0 {
        p.finalize(p.tip);
    }
    p.finalize(0);
    Doc {
        blocks: p.blocks,
        refs: p.refs,
    }
}

struct Parser<'a> {
    blocks: Vec<Block>,
    refs: Refs,
    tip: usize,
    old_tip: usize,
    last_matched: usize,
    all_closed: bool,
    line: &'a str,
    line_no: usize,
    offset: usize,
    column: usize,
    next_nonspace: usize,
    next_nonspace_column: usize,
    indent: usize,
    indented: bool,
    blank: bool,
    partial_tab: bool,
    /// The current line was all markup (a fence opener, a heading, a rule, a delimiter row).
    consumed: bool,
    /// Where the last next-non-space scan started (`usize::MAX`: none on this line).
    nn_from: usize,
    /// Where the current line's content starts after its container markers.
    line_start: usize,
    /// The current line ended with a line ending (the last one may not).
    eol: bool,
}

enum Cont {
    Matched,
    Unmatched,
    /// The line was consumed (a closing fence).
    Done,
}

enum Start {
    None,
    Container,
    Leaf,
}

/// What the block starts of one line look at: the deepest matched container, whether it is a
/// paragraph, and whether the tip is paragraph-like (see `Parser::tip_para`).
struct StartAt {
    container: usize,
    in_para: bool,
    tip_para: bool,
}

/// One of CommonMark's block starts: `Some` when it started a block on the line.
type StartFn<'a> = fn(&mut Parser<'a>, &StartAt) -> Option<Start>;

/// Whether a line whose next non-space character is `c` may start a block other than a paragraph
/// or indented code (the other lines skip the block starts).
fn may_start_block(c: Option<u8>) -> bool {
    matches!(
        c,
        Some(
            b'>' | b'#'
                | b'`'
                | b'~'
                | b'<'
                | b'='
                | b'-'
                | b'*'
                | b'_'
                | b'+'
                | b'|'
                | b':'
                | b'$'
                | b'\\'
                | b'0'..=b'9'
        )
    )
}

fn is_space_or_tab(b: Option<u8>) -> bool {
    matches!(b, Some(b' ' | b'\t'))
}

impl<'a> Parser<'a> {
    fn peek(&self, at: usize) -> Option<u8> {
        self.line.as_bytes().get(at).copied()
    }

    fn find_next_nonspace(&mut self) {
        // Between container markers only whitespace is consumed, so the next non-space is often
        // the one found last time: reuse it (rescanning per nesting level is quadratic).
        if self.nn_from <= self.offset && self.offset <= self.next_nonspace {
            self.indent = self.next_nonspace_column - self.column;
            self.indented = self.indent >= 4;
            return;
        }
        self.nn_from = self.offset;
        let bytes = self.line.as_bytes();
        let mut i = self.offset;
        let mut cols = self.column;
        while let Some(&c) = bytes.get(i) {
            match c {
                b' ' => cols += 1,
                b'\t' => cols += 4 - cols % 4,
                _ => break,
            }
            i += 1;
        }
        self.blank = i >= bytes.len();
        self.next_nonspace = i;
        self.next_nonspace_column = cols;
        self.indent = cols - self.column;
        self.indented = self.indent >= 4;
    }

    fn advance_next_nonspace(&mut self) {
        self.offset = self.next_nonspace;
        self.column = self.next_nonspace_column;
        self.partial_tab = false;
    }

    /// Advance by `count` characters, or by `count` columns when `columns` (tabs count as their width
    /// and may be consumed partially).
    fn advance_offset(&mut self, mut count: usize, columns: bool) {
        let bytes = self.line.as_bytes();
        while count > 0 {
            let Some(&c) = bytes.get(self.offset) else {
                break;
            };
            if c == b'\t' {
                let to_tab = 4 - self.column % 4;
                if columns {
                    self.partial_tab = to_tab > count;
                    let step = to_tab.min(count);
                    self.column += step;
                    if !self.partial_tab {
                        self.offset += 1;
                    }
                    count -= step;
                } else {
                    self.partial_tab = false;
                    self.column += to_tab;
                    self.offset += 1;
                    count -= 1;
                }
            } else {
                self.partial_tab = false;
                self.offset += 1;
                self.column += 1;
                count -= 1;
            }
        }
    }

    /// CommonMark's line step: the open blocks the line continues, the blocks it starts, then
    /// where its text goes.
    fn incorporate(&mut self, line: &'a str) {
        self.begin_line(line);
        self.old_tip = self.tip;
        let Some(container) = self.continue_open_blocks() else {
            return;
        };
        self.all_closed = container == self.old_tip;
        self.last_matched = container;
        let container = self.open_new_blocks(container);
        self.finish_line(container);
    }

    /// Starts reading `line`: at its first character, nothing of it consumed yet.
    fn begin_line(&mut self, line: &'a str) {
        self.line = line;
        self.line_no += 1;
        self.offset = 0;
        self.column = 0;
        self.blank = false;
        self.partial_tab = false;
        self.consumed = false;
        self.nn_from = usize::MAX;
    }

    /// Walks down the open blocks while the line continues them (their markers consumed): the
    /// deepest one it continues, or `None` when a block took the whole line (a closing fence).
    fn continue_open_blocks(&mut self) -> Option<usize> {
        let mut container = 0;
        while let Some(&last) = self.blocks[container].children.last() {
            if !self.blocks[last].open {
                break;
            }
            container = last;
            self.find_next_nonspace();
            match self.continue_block(container) {
                Cont::Matched => {}
                Cont::Unmatched => {
                    container = self.blocks[container].parent;
                    break;
                }
                Cont::Done => return None,
            }
        }
        Some(container)
    }

    /// Opens the blocks the line starts inside `container` (containers, then at most one leaf);
    /// returns the block its text belongs to.
    fn open_new_blocks(&mut self, mut container: usize) -> usize {
        let mut matched_leaf = matches!(
            self.blocks[container].kind,
            Kind::Fenced { .. } | Kind::Indented | Kind::Html(_) | Kind::Math { .. }
        );
        while !matched_leaf {
            self.find_next_nonspace();
            let c = self.peek(self.next_nonspace);
            self.line_start = self.offset;
            if !self.indented && !may_start_block(c) {
                self.advance_next_nonspace();
                break;
            }
            match self.try_starts(container) {
                Start::None => {
                    self.advance_next_nonspace();
                    break;
                }
                Start::Container => container = self.tip,
                Start::Leaf => {
                    container = self.tip;
                    matched_leaf = true;
                }
            }
        }
        container
    }

    /// Where the rest of the line goes: nowhere (it was all markup), a paragraph it lazily
    /// continues, or `container` (a new paragraph when that cannot hold text).
    fn finish_line(&mut self, container: usize) {
        // The line was all markup (a fence opener, a heading, a rule, a delimiter row).
        if self.consumed {
            self.close_unmatched();
            return;
        }
        // Lazy paragraph continuation.
        if !self.all_closed && !self.blank && matches!(self.blocks[self.tip].kind, Kind::Para) {
            self.offset = self.line_start;
            self.add_line();
            return;
        }
        self.close_unmatched();
        match self.blocks[container].kind {
            Kind::Fenced { .. } | Kind::Indented | Kind::Math { .. } => self.add_line(),
            Kind::Html(t) => {
                self.add_line();
                if (1..=5).contains(&t) && html_block_ends(t, &self.line[self.offset..]) {
                    self.finalize(container);
                }
            }
            Kind::Para if !self.blank => {
                // A continuation line keeps its indentation: inline parsing skips it, except inside
                // a code span that spans lines (pulldown-cmark's reading, kept for compatibility).
                self.offset = self.line_start;
                self.add_line();
            }
            Kind::Table { .. } if !self.blank => self.add_line(),
            Kind::Heading(_) | Kind::Rule => {}
            _ if !self.blank => {
                self.add_child(Kind::Para);
                self.add_line();
            }
            _ => {}
        }
    }

    /// Whether the line continues open block `b`, consuming its marker (CommonMark's per-kind
    /// continuation rules, one arm per kind).
    fn continue_block(&mut self, b: usize) -> Cont {
        match &self.blocks[b].kind {
            Kind::Quote => self.continue_quote(b),
            &Kind::Item { indent } => self.continue_item(b, indent),
            Kind::List { .. } | Kind::Document => Cont::Matched,
            Kind::Heading(_) | Kind::Rule | Kind::Removed => Cont::Unmatched,
            &Kind::Fenced {
                ch, len, indent, ..
            } => self.continue_fenced(b, (ch, len), indent),
            &Kind::Math { dollars, .. } => self.continue_math(b, dollars),
            Kind::Indented => {
                if self.indent >= 4 {
                    self.advance_offset(4, true);
                } else if self.blank {
                    self.advance_next_nonspace();
                } else {
                    return Cont::Unmatched;
                }
                Cont::Matched
            }
            &Kind::Html(t) => {
                if self.blank && (t == 6 || t == 7) {
                    Cont::Unmatched
                } else {
                    Cont::Matched
                }
            }
            Kind::Para | Kind::Table { .. } => {
                if self.blank {
                    Cont::Unmatched
                } else {
                    Cont::Matched
                }
            }
        }
    }

    /// A block quote goes on with its `>` (and one space after it).
    fn continue_quote(&mut self, b: usize) -> Cont {
        if self.indented || self.peek(self.next_nonspace) != Some(b'>') {
            return Cont::Unmatched;
        }
        self.advance_next_nonspace();
        self.advance_offset(1, false);
        if is_space_or_tab(self.peek(self.offset)) {
            self.advance_offset(1, true);
        }
        // The line is the quote's, even when blank inside it (`>` alone): it does not separate the
        // quote from what follows (a list stays tight).
        self.blocks[b].end_line = self.line_no;
        Cont::Matched
    }

    /// A list item goes on with a line indented to its content (or a blank line, once it has any).
    fn continue_item(&mut self, b: usize, indent: usize) -> Cont {
        if self.blank {
            if self.blocks[b].children.is_empty() {
                return Cont::Unmatched;
            }
            // Whitespace beyond the item's indentation stays (a blank line in its code).
            self.advance_offset(indent.min(self.indent), true);
            Cont::Matched
        } else if self.indent >= indent {
            self.advance_offset(indent, true);
            Cont::Matched
        } else {
            Cont::Unmatched
        }
    }

    /// Fenced code goes on until a closing fence (the same char, at least as long, nothing after
    /// it), which takes the line; its lines lose up to the opening fence's indentation.
    fn continue_fenced(&mut self, b: usize, (ch, len): (u8, usize), indent: usize) -> Cont {
        let rest = &self.line.as_bytes()[self.next_nonspace..];
        let run = rest.iter().take_while(|&&c| c == ch).count();
        if !self.indented && run >= len && rest[run..].iter().all(|&c| c == b' ' || c == b'\t') {
            if let Kind::Fenced { closed, .. } = &mut self.blocks[b].kind {
                *closed = true;
            }
            self.blocks[b].end_line = self.line_no;
            self.finalize(b);
            return Cont::Done;
        }
        let mut i = indent;
        while i > 0 && is_space_or_tab(self.peek(self.offset)) {
            self.advance_offset(1, true);
            i -= 1;
        }
        Cont::Matched
    }

    /// Display math goes on until a line ending with its closer (`$$` or `\]`), whose text before
    /// the closer is the formula's last line. A blank line ends it unclosed (TeX allows none in a
    /// formula), so a stray `$$` takes at most the rest of its paragraph.
    fn continue_math(&mut self, b: usize, dollars: bool) -> Cont {
        if self.blank {
            return Cont::Unmatched;
        }
        let closer = if dollars { "$$" } else { "\\]" };
        let line = self.line[self.next_nonspace..].trim_end_matches([' ', '\t']);
        let Some(last) = line.strip_suffix(closer) else {
            return Cont::Matched;
        };
        let block = &mut self.blocks[b];
        block.text.push_str(last);
        if let Kind::Math { closed, .. } = &mut block.kind {
            *closed = true;
        }
        block.end_line = self.line_no;
        self.finalize(b);
        Cont::Done
    }

    /// CommonMark's block starts, tried in the spec's order on a line that is not a lazy
    /// continuation: block quote, ATX heading, fenced code, HTML block, setext underline, a GFM
    /// table's delimiter row, thematic break, list item; an indented line can only start indented
    /// code. The first that starts a block wins.
    fn try_starts(&mut self, container: usize) -> Start {
        let at = StartAt {
            container,
            in_para: matches!(self.blocks[container].kind, Kind::Para),
            tip_para: self.tip_para(),
        };
        if self.indented {
            return self.start_indented_code(&at);
        }
        let starts: [StartFn<'a>; 9] = [
            Parser::start_quote,
            Parser::start_atx_heading,
            Parser::start_fenced_code,
            Parser::start_math,
            Parser::start_html_block,
            Parser::start_setext_heading,
            Parser::start_delimiter_row,
            Parser::start_thematic_break,
            |p, at| p.try_list_item(at.container),
        ];
        starts
            .into_iter()
            .find_map(|start| start(self, &at))
            .unwrap_or(Start::None)
    }

    /// The line from its next non-space character.
    fn rest(&self) -> &'a str {
        let line = self.line;
        &line[self.next_nonspace..]
    }

    /// Whether the tip is paragraph-like: a paragraph, or a table (whose rows are interrupted like
    /// one). pulldown-cmark's reading: an indented line that would start another block ends a
    /// table first (and is then indented code).
    fn tip_para(&mut self) -> bool {
        let table = matches!(self.blocks[self.tip].kind, Kind::Table { .. });
        if self.indented && table && ends_table(self.rest().trim_start_matches([' ', '\t'])) {
            self.finalize(self.tip);
            return false;
        }
        table || matches!(self.blocks[self.tip].kind, Kind::Para)
    }

    /// `>`: a block quote.
    fn start_quote(&mut self, _: &StartAt) -> Option<Start> {
        if self.peek(self.next_nonspace) != Some(b'>') {
            return None;
        }
        self.advance_next_nonspace();
        self.advance_offset(1, false);
        if is_space_or_tab(self.peek(self.offset)) {
            self.advance_offset(1, true);
        }
        self.close_unmatched();
        self.add_child(Kind::Quote);
        Some(Start::Container)
    }

    /// One to six `#` and a space or the line's end: an ATX heading.
    fn start_atx_heading(&mut self, _: &StartAt) -> Option<Start> {
        let rest = self.rest();
        let bytes = rest.as_bytes();
        if bytes.first() != Some(&b'#') {
            return None;
        }
        let level = bytes.iter().take_while(|&&c| c == b'#').count();
        if level > 6 || !(level == bytes.len() || matches!(bytes[level], b' ' | b'\t')) {
            return None;
        }
        self.close_unmatched();
        self.add_child(Kind::Heading(level as u8));
        let content = atx_content(&rest[level..], self.eol);
        let b = self.tip;
        self.blocks[b].text.push_str(content);
        self.consume_line();
        Some(Start::Leaf)
    }

    /// Three or more backticks (an info string without one) or tildes: fenced code.
    fn start_fenced_code(&mut self, _: &StartAt) -> Option<Start> {
        let rest = self.rest();
        let bytes = rest.as_bytes();
        let Some(ch @ (b'`' | b'~')) = bytes.first().copied() else {
            return None;
        };
        let len = bytes.iter().take_while(|&&c| c == ch).count();
        let info = rest[len..].trim_matches([' ', '\t']);
        if len < 3 || (ch == b'`' && info.contains('`')) {
            return None;
        }
        let info = unescape(info).into_owned();
        let indent = self.indent;
        self.close_unmatched();
        self.add_child(Kind::Fenced {
            ch,
            len,
            indent,
            info,
            closed: false,
        });
        self.consume_line();
        Some(Start::Leaf)
    }

    /// Display math: a line that is `$$` alone, or `$$` and the formula's first line
    /// (`$$\begin{aligned}`: no space or digit after the `$$`, which "$$ x" or "$$5" would be)
    /// not closed on the same line, or a line that is `\[` alone. It interrupts a
    /// paragraph (models write "the formula is:" on the line before).
    fn start_math(&mut self, _: &StartAt) -> Option<Start> {
        let rest = self.rest().trim_end_matches([' ', '\t']);
        let (dollars, first) = if let Some(first) = rest.strip_prefix("$$") {
            let opens = first
                .chars()
                .next()
                .is_none_or(|c| !c.is_whitespace() && !c.is_ascii_digit());
            if !opens || first.contains("$$") {
                return None;
            }
            (true, first)
        } else if rest == "\\[" {
            (false, "")
        } else {
            return None;
        };
        self.close_unmatched();
        self.add_child(Kind::Math {
            dollars,
            closed: false,
        });
        if !first.trim().is_empty() {
            let b = self.tip;
            self.blocks[b].text.push_str(first);
            self.blocks[b].text.push('\n');
        }
        self.consume_line();
        Some(Start::Leaf)
    }

    /// An HTML block (shown as text, but its extent is CommonMark's); type 7 cannot interrupt a
    /// paragraph or a table.
    fn start_html_block(&mut self, at: &StartAt) -> Option<Start> {
        let rest = self.rest();
        if !rest.starts_with('<') {
            return None;
        }
        let t = html_block_start(rest)?;
        let in_table = matches!(self.blocks[at.container].kind, Kind::Table { .. });
        if t >= 7 && (at.in_para || in_table || at.tip_para && !self.all_closed) {
            return None;
        }
        self.close_unmatched();
        self.add_child(Kind::Html(t));
        Some(Start::Leaf)
    }

    /// A run of `=` or `-` under a paragraph: a setext heading (unless the paragraph held only
    /// reference definitions).
    fn start_setext_heading(&mut self, at: &StartAt) -> Option<Start> {
        let bytes = self.rest().as_bytes();
        if !at.in_para || !matches!(bytes.first(), Some(b'=' | b'-')) {
            return None;
        }
        let ch = bytes[0];
        let run = bytes.iter().take_while(|&&c| c == ch).count();
        if !bytes[run..].iter().all(|&c| c == b' ' || c == b'\t') {
            return None;
        }
        let container = at.container;
        self.close_unmatched();
        self.extract_refs(container);
        let text = &mut self.blocks[container].text;
        text.truncate(text.trim_end_matches([' ', '\t', '\n']).len());
        if text.is_empty() {
            // Only definitions so far: the line is something else (CommonMark).
            return None;
        }
        self.blocks[container].kind = Kind::Heading(if ch == b'=' { 1 } else { 2 });
        self.blocks[container].end_line = self.line_no;
        self.consume_line();
        Some(Start::Leaf)
    }

    /// A GFM table's delimiter row under a header line (the paragraph's last line).
    fn start_delimiter_row(&mut self, at: &StartAt) -> Option<Start> {
        let rest = self.rest();
        if !at.in_para || !matches!(rest.as_bytes().first(), Some(b'|' | b'-' | b':')) {
            return None;
        }
        let aligns = table_delimiter(rest)?;
        if !self.start_table(at.container, aligns) {
            return None;
        }
        self.consume_line();
        Some(Start::Leaf)
    }

    /// Three or more `*`, `_` or `-` (spaces between): a thematic break.
    fn start_thematic_break(&mut self, _: &StartAt) -> Option<Start> {
        let bytes = self.rest().as_bytes();
        if !(matches!(bytes.first(), Some(b'*' | b'_' | b'-')) && is_rule(bytes)) {
            return None;
        }
        self.close_unmatched();
        self.add_child(Kind::Rule);
        let b = self.tip;
        self.blocks[b].end_line = self.line_no;
        self.consume_line();
        Some(Start::Leaf)
    }

    /// An indented line: indented code (it cannot interrupt a paragraph or a table's rows).
    fn start_indented_code(&mut self, at: &StartAt) -> Start {
        if at.tip_para || self.blank {
            return Start::None;
        }
        self.advance_offset(4, true);
        self.close_unmatched();
        self.add_child(Kind::Indented);
        Start::Leaf
    }

    fn try_list_item(&mut self, container: usize) -> Option<Start> {
        let rest = &self.line.as_bytes()[self.next_nonspace..];
        let (ordered, marker, start, width) = match rest.first()? {
            &c @ (b'*' | b'+' | b'-') => (false, c, 0, 1),
            b'0'..=b'9' => {
                let digits = rest.iter().take_while(|c| c.is_ascii_digit()).count();
                let delim = *rest.get(digits)?;
                if digits > 9 || !matches!(delim, b'.' | b')') {
                    return None;
                }
                let n: u64 = std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()?;
                (true, delim, n, digits + 1)
            }
            _ => return None,
        };
        if !matches!(rest.get(width), None | Some(b' ' | b'\t')) {
            return None;
        }
        let empty = rest[width..].iter().all(|&c| c == b' ' || c == b'\t');
        // Interrupting a paragraph (or a table's rows): not empty, and an ordered list only from 1.
        // (A table's rows are interrupted by any list item, as pulldown-cmark did.)
        let interrupting = matches!(self.blocks[container].kind, Kind::Para);
        if interrupting && (empty || (ordered && start != 1)) {
            return None;
        }
        let marker_offset = self.indent;
        self.advance_next_nonspace();
        self.advance_offset(width, true);
        let spaces_start_col = self.column;
        let spaces_start_offset = self.offset;
        loop {
            self.advance_offset(1, true);
            let n = self.column - spaces_start_col;
            if n >= 5 || !is_space_or_tab(self.peek(self.offset)) {
                break;
            }
        }
        let blank_item = self.peek(self.offset).is_none();
        let spaces_after = self.column - spaces_start_col;
        let padding = if !(1..5).contains(&spaces_after) || blank_item {
            // Content starts one space after the marker (the rest is indented code, or empty).
            self.column = spaces_start_col;
            self.offset = spaces_start_offset;
            self.partial_tab = false;
            if is_space_or_tab(self.peek(self.offset)) {
                self.advance_offset(1, true);
            }
            width + 1
        } else {
            width + spaces_after
        };
        self.close_unmatched();
        let same_list = match self.blocks[self.tip].kind {
            Kind::List {
                ordered: o,
                marker: m,
                ..
            } => o == ordered && m == marker,
            _ => false,
        };
        if !same_list {
            self.add_child(Kind::List {
                ordered,
                marker,
                start,
                tight: true,
            });
        }
        self.add_child(Kind::Item {
            indent: marker_offset + padding,
        });
        Some(Start::Container)
    }

    /// Turn the paragraph's last line into a table header when this line is a matching delimiter row.
    fn start_table(&mut self, para: usize, aligns: Vec<Align>) -> bool {
        self.extract_refs(para);
        let text = &self.blocks[para].text;
        let body = text.strip_suffix('\n').unwrap_or(text);
        let (before, header) = match body.rfind('\n') {
            Some(i) => (&body[..i + 1], &body[i + 1..]),
            None => ("", body),
        };
        // A header line inside a paragraph only interrupts it when it starts with a pipe.
        if !before.is_empty() && !header.trim_start().starts_with('|') {
            return false;
        }
        if header_cells(header) != Some(aligns.len()) {
            return false;
        }
        let header = header.to_string();
        let before = before.to_string();
        self.close_unmatched();
        if before.is_empty() {
            self.blocks[para].text.clear();
            self.blocks[para].kind = Kind::Table {
                aligns,
                rows: vec![header],
            };
        } else {
            self.blocks[para].text = before;
            self.finalize(para);
            self.add_child(Kind::Table {
                aligns,
                rows: vec![header],
            });
        }
        let t = self.tip;
        self.blocks[t].end_line = self.line_no;
        true
    }

    fn consume_line(&mut self) {
        self.offset = self.line.len();
        self.consumed = true;
    }

    fn add_line(&mut self) {
        let b = self.tip;
        // A blank unfinished last line adds nothing to a fenced block (it is still being streamed).
        if !self.eol
            && self.blank
            && self.next_nonspace_column < 4
            && matches!(self.blocks[b].kind, Kind::Fenced { .. })
        {
            return;
        }
        if self.partial_tab {
            self.offset += 1;
            let to_tab = 4 - self.column % 4;
            for _ in 0..to_tab {
                self.blocks[b].text.push(' ');
            }
        }
        let rest = &self.line[self.offset.min(self.line.len())..];
        let block = &mut self.blocks[b];
        match &mut block.kind {
            Kind::Table { rows, .. } => rows.push(rest.to_string()),
            _ => {
                block.text.push_str(rest);
                if self.eol {
                    block.text.push('\n');
                }
            }
        }
        if !self.blank || matches!(block.kind, Kind::Fenced { .. }) {
            block.end_line = self.line_no;
        }
    }

    fn add_child(&mut self, kind: Kind) {
        while !can_contain(&self.blocks[self.tip].kind, &kind) {
            self.finalize(self.tip);
        }
        let id = self.blocks.len();
        self.blocks.push(Block {
            kind,
            children: Vec::new(),
            parent: self.tip,
            text: String::new(),
            open: true,
            start_line: self.line_no,
            end_line: self.line_no,
        });
        self.blocks[self.tip].children.push(id);
        self.tip = id;
    }

    fn close_unmatched(&mut self) {
        if !self.all_closed {
            while self.old_tip != self.last_matched {
                let parent = self.blocks[self.old_tip].parent;
                self.finalize(self.old_tip);
                self.old_tip = parent;
            }
            self.all_closed = true;
        }
    }

    fn finalize(&mut self, b: usize) {
        if !self.blocks[b].open {
            return;
        }
        self.blocks[b].open = false;
        let parent = self.blocks[b].parent;
        match self.blocks[b].kind {
            Kind::Para => {
                self.extract_refs(b);
                if self.blocks[b].text.is_empty() {
                    self.blocks[b].kind = Kind::Removed;
                }
            }
            Kind::Indented => {
                let text = &mut self.blocks[b].text;
                let keep = text.trim_end_matches(['\n', ' ', '\t']).len();
                // Keep whole lines: cut after the last line with content.
                let cut = text[keep..].find('\n').map_or(text.len(), |i| keep + i + 1);
                text.truncate(cut);
            }
            Kind::Item { .. } | Kind::Quote | Kind::List { .. } | Kind::Document => {
                if let Some(&last) = self.blocks[b].children.last() {
                    let end = self.blocks[last].end_line;
                    let block = &mut self.blocks[b];
                    block.end_line = if matches!(block.kind, Kind::Quote) {
                        block.end_line.max(end)
                    } else {
                        end
                    };
                }
            }
            _ => {}
        }
        if let Kind::List { .. } = self.blocks[b].kind {
            let loose = self.list_is_loose(b);
            if let Kind::List { tight, .. } = &mut self.blocks[b].kind {
                *tight = !loose;
            }
        }
        if b != 0 {
            self.tip = parent;
        }
    }

    fn list_is_loose(&self, list: usize) -> bool {
        let gap = |a: usize, b: usize| self.blocks[a].end_line + 1 < self.blocks[b].start_line;
        let items = &self.blocks[list].children;
        for (i, &item) in items.iter().enumerate() {
            if let Some(&next) = items.get(i + 1) {
                if gap(item, next) {
                    return true;
                }
            }
            let subs = &self.blocks[item].children;
            if subs.windows(2).any(|w| gap(w[0], w[1])) {
                return true;
            }
        }
        false
    }

    /// Take link reference definitions off the start of a paragraph.
    fn extract_refs(&mut self, b: usize) {
        if !self.blocks[b].text.trim_start_matches(' ').starts_with('[') {
            return;
        }
        let text = std::mem::take(&mut self.blocks[b].text);
        let mut rest = text.as_str();
        loop {
            let indented = rest.trim_start_matches(' ');
            if rest.len() - indented.len() > 3 || !indented.starts_with('[') {
                break;
            }
            match parse_ref_def(indented) {
                Some((label, dest, title, used)) => {
                    self.refs.entry(label).or_insert((dest, title));
                    rest = &indented[used..];
                }
                None => break,
            }
        }
        let rest = rest.trim_start_matches([' ', '\t']);
        self.blocks[b].text = if rest.len() == text.len() {
            text
        } else {
            rest.to_string()
        };
    }
}

/// Whether a line (without its indentation) starts a block that interrupts a table's rows.
fn ends_table(s: &str) -> bool {
    let b = s.as_bytes();
    let run = |c: u8| b.iter().take_while(|&&x| x == c).count();
    let space_or_end = |i: usize| matches!(b.get(i), None | Some(b' ' | b'\t'));
    match b.first() {
        Some(b'>') => true,
        Some(b'#') => run(b'#') <= 6 && space_or_end(run(b'#')),
        Some(&c @ (b'`' | b'~')) => run(c) >= 3,
        Some(b'-' | b'*' | b'_') if is_rule(b) => true,
        Some(b'-' | b'*' | b'+') => space_or_end(1),
        Some(b'0'..=b'9') => {
            let digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
            digits <= 9 && matches!(b.get(digits), Some(b'.' | b')')) && space_or_end(digits + 1)
        }
        Some(b'<') => html_block_start(s).is_some_and(|t| t < 7),
        _ => false,
    }
}

fn can_contain(parent: &Kind, child: &Kind) -> bool {
    match parent {
        Kind::Document | Kind::Quote | Kind::Item { .. } => !matches!(child, Kind::Item { .. }),
        Kind::List { .. } => matches!(child, Kind::Item { .. }),
        _ => false,
    }
}

/// The text of an ATX heading after its `#`s, without a closing `#` sequence. As pulldown-cmark
/// did: trailing spaces (and tabs, before a line ending) are trimmed, and a closing sequence needs a space before it.
fn atx_content(s: &str, eol: bool) -> &str {
    let s = s.trim_start_matches([' ', '\t']);
    let limit = if eol {
        s.trim_end_matches([' ', '\t'])
    } else {
        s.trim_end_matches(' ')
    };
    let closer = limit.trim_end_matches('#');
    if closer.is_empty() {
        ""
    } else if closer.len() < limit.len() && closer.ends_with(' ') {
        closer.trim_end_matches(' ')
    } else {
        limit
    }
}

fn is_rule(bytes: &[u8]) -> bool {
    let ch = bytes[0];
    let mut n = 0;
    for &c in bytes {
        if c == ch {
            n += 1;
        } else if c != b' ' && c != b'\t' {
            return false;
        }
    }
    n >= 3
}

/// A GFM delimiter row (`| :-- | --: |`): its column alignments. Read as pulldown-cmark did: only
/// spaces, `:`, `-` and `|`, at least one pipe and one hyphen, no empty cell between pipes.
fn table_delimiter(s: &str) -> Option<Vec<Align>> {
    let b = s.as_bytes();
    let mut cols = Vec::new();
    let mut active = Align::None;
    let mut start_col = true;
    let mut found_pipe = false;
    let mut found_hyphen = false;
    let mut hyphen_in_col = false;
    let mut i = 0;
    if b.first() == Some(&b'|') {
        i = 1;
        found_pipe = true;
    }
    for &c in &b[i..] {
        match c {
            b' ' => {}
            b':' => {
                active = match (start_col, active) {
                    (true, Align::None) => Align::Left,
                    (false, Align::Left) => Align::Center,
                    (false, Align::None) => Align::Right,
                    _ => active,
                };
                start_col = false;
            }
            b'-' => {
                start_col = false;
                found_hyphen = true;
                hyphen_in_col = true;
            }
            b'|' => {
                start_col = true;
                found_pipe = true;
                cols.push(active);
                active = Align::None;
                if !hyphen_in_col {
                    return None;
                }
                hyphen_in_col = false;
            }
            _ => return None,
        }
    }
    if !start_col {
        cols.push(active);
    }
    (found_pipe && found_hyphen).then_some(cols)
}

/// The number of cells a header line has, as GFM counts them (unescaped pipes, minus outer ones);
/// `None` when it has no pipe at all.
fn header_cells(line: &str) -> Option<usize> {
    let bytes = line.as_bytes();
    let mut pipes = 0;
    let mut last_pipe = 0;
    let mut escaped = false;
    for (i, &c) in bytes.iter().enumerate() {
        if c == b'|' && !escaped {
            pipes += 1;
            last_pipe = i;
        }
        escaped = c == b'\\' && !escaped;
    }
    if pipes == 0 {
        return None;
    }
    let trimmed = line.trim_start_matches([' ', '\t']);
    if trimmed.starts_with('|') {
        pipes -= 1;
    }
    if line[last_pipe + 1..].trim_matches([' ', '\t']).is_empty() {
        Some(pipes)
    } else {
        Some(pipes + 1)
    }
}

/// Split a table row into its cells' raw text (`\|` becomes `|`, even in code spans, as in GFM).
pub(super) fn split_row<'a>(line: &'a str, cells: &mut Vec<Cow<'a, str>>) {
    cells.clear();
    let line = line.trim_matches([' ', '\t']);
    let line = line.strip_prefix('|').unwrap_or(line);
    let b = line.as_bytes();
    let mut start = 0;
    let mut i = 0;
    let mut escaped_pipe = false;
    let push = |cells: &mut Vec<Cow<'a, str>>, raw: &'a str, escaped: bool| {
        let raw = raw.trim_matches([' ', '\t']);
        cells.push(if escaped {
            Cow::Owned(raw.replace("\\|", "|"))
        } else {
            Cow::Borrowed(raw)
        });
    };
    while i < b.len() {
        match b[i] {
            b'\\' if b.get(i + 1) == Some(&b'|') => {
                escaped_pipe = true;
                i += 2;
            }
            b'\\' => i += 2,
            b'|' => {
                push(cells, &line[start..i], escaped_pipe);
                escaped_pipe = false;
                i += 1;
                start = i;
            }
            _ => i += 1,
        }
    }
    let last = &line[start.min(line.len())..];
    if !last.trim_matches([' ', '\t']).is_empty() {
        push(cells, last, escaped_pipe);
    }
}

const BLOCK_TAGS: &[&str] = &[
    "address",
    "article",
    "aside",
    "base",
    "basefont",
    "blockquote",
    "body",
    "caption",
    "center",
    "col",
    "colgroup",
    "dd",
    "details",
    "dialog",
    "dir",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "frame",
    "frameset",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "head",
    "header",
    "hr",
    "html",
    "iframe",
    "legend",
    "li",
    "link",
    "main",
    "menu",
    "menuitem",
    "nav",
    "noframes",
    "ol",
    "optgroup",
    "option",
    "p",
    "param",
    "search",
    "section",
    "summary",
    "table",
    "tbody",
    "td",
    "tfoot",
    "th",
    "thead",
    "title",
    "tr",
    "track",
    "ul",
];

/// Which of CommonMark's seven HTML block kinds starts this line, if any.
fn html_block_start(s: &str) -> Option<u8> {
    let lower_prefix =
        |p: &str| s.len() >= p.len() && s.as_bytes()[..p.len()].eq_ignore_ascii_case(p.as_bytes());
    for tag in ["<script", "<pre", "<style", "<textarea"] {
        if lower_prefix(tag)
            && matches!(
                s.as_bytes().get(tag.len()),
                None | Some(b' ' | b'\t' | b'>')
            )
        {
            return Some(1);
        }
    }
    if s.starts_with("<!--") {
        return Some(2);
    }
    if s.starts_with("<?") {
        return Some(3);
    }
    if s.starts_with("<![CDATA[") {
        return Some(5);
    }
    if s.starts_with("<!") && s.as_bytes().get(2).is_some_and(|c| c.is_ascii_alphabetic()) {
        return Some(4);
    }
    let name_start = if s.starts_with("</") { 2 } else { 1 };
    let name_len = s.as_bytes()[name_start..]
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric() || **c == b'-')
        .count();
    let name = &s[name_start..name_start + name_len];
    let after = &s[name_start + name_len..];
    if name_len > 0
        && BLOCK_TAGS.iter().any(|t| t.eq_ignore_ascii_case(name))
        && (after.is_empty() || after.starts_with([' ', '\t', '>']) || after.starts_with("/>"))
    {
        return Some(6);
    }
    if let Some(n) = super::inline::html_tag_len(s) {
        let is_type1 = ["script", "pre", "style", "textarea"]
            .iter()
            .any(|t| t.eq_ignore_ascii_case(name));
        if !is_type1 && s[n..].trim_matches([' ', '\t']).is_empty() {
            return Some(7);
        }
    }
    None
}

fn html_block_ends(t: u8, line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    match t {
        1 => ["</script>", "</pre>", "</style>", "</textarea>"]
            .iter()
            .any(|e| lower.contains(e)),
        2 => line.contains("-->"),
        3 => line.contains("?>"),
        4 => line.contains('>'),
        5 => line.contains("]]>"),
        _ => false,
    }
}

/// One reference definition at the start of `s`: (normalized label, destination, title, bytes used).
fn parse_ref_def(s: &str) -> Option<(String, String, String, usize)> {
    let label_end = super::inline::link_label_end(s)?;
    let label = normalize_label(&s[1..label_end - 1]);
    if label.is_empty() {
        return None;
    }
    let mut i = label_end;
    if s.as_bytes().get(i) != Some(&b':') {
        return None;
    }
    i += 1;
    i = skip_ws_one_newline(s, i);
    let (dest, dest_len) = parse_link_dest(&s[i..])?;
    if dest_len == 0 && !s[i..].starts_with("<>") {
        return None;
    }
    i += dest_len;
    let after_dest = i;
    // Optional title, separated by whitespace; then only whitespace to the end of the line.
    let j = skip_ws_one_newline(s, i);
    if j > i {
        if let Some((title, tlen)) = parse_link_title(&s[j..]) {
            let k = j + tlen;
            if let Some(end) = line_end_if_blank(s, k) {
                return Some((label, dest, title, end));
            }
        }
    }
    let end = line_end_if_blank(s, after_dest)?;
    Some((label, dest, String::new(), end))
}

/// Skip spaces/tabs with at most one line ending.
fn skip_ws_one_newline(s: &str, mut i: usize) -> usize {
    let b = s.as_bytes();
    while matches!(b.get(i), Some(b' ' | b'\t')) {
        i += 1;
    }
    if b.get(i) == Some(&b'\n') {
        i += 1;
        while matches!(b.get(i), Some(b' ' | b'\t')) {
            i += 1;
        }
    }
    i
}

/// If only spaces/tabs follow `i` up to the end of its line: the index after that line.
fn line_end_if_blank(s: &str, mut i: usize) -> Option<usize> {
    let b = s.as_bytes();
    while matches!(b.get(i), Some(b' ' | b'\t')) {
        i += 1;
    }
    match b.get(i) {
        None => Some(i),
        Some(b'\n') => Some(i + 1),
        _ => None,
    }
}
