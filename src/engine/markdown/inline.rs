//! Inline content: CommonMark's inline algorithm over one leaf block's text (code spans, backslash
//! escapes, entities, autolinks, raw HTML recognised as text, links and images with the bracket
//! stack, emphasis with the delimiter-run algorithm incl. the rule of 3), GFM strikethrough and
//! math (`$…$`, `$$…$$`, `\(…\)`, `\[…\]`: see [`Inline::dollar`] for when a `$` is money).
//! Produces a flat list of nodes for the writer. Every scan that can fail is remembered per
//! terminator, so adversarial input (runs of `<a x="`, backticks, brackets) stays linear.
//! Must not import anything outside `super` (the markdown module).

use super::block::Refs;
use std::borrow::Cow;

/// The tags a delimiter run opens or closes, innermost first, two bits each. A run matches at
/// most 32 times (only a pathological run of more than 32 `*` could want more; the rest stays text).
#[derive(Default, Debug, Clone, Copy)]
pub(super) struct Tags {
    bits: u64,
    len: u8,
}

impl Tags {
    fn push(&mut self, e: Emph) {
        self.bits |= (e as u64) << (2 * self.len);
        self.len += 1;
    }

    fn full(&self) -> bool {
        self.len >= 32
    }

    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    pub fn get(&self, i: usize) -> Emph {
        match (self.bits >> (2 * i)) & 3 {
            0 => Emph::Em,
            1 => Emph::Strong,
            _ => Emph::Del,
        }
    }
}

/// An emphasis-like tag a delimiter run opens or closes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Emph {
    Em = 0,
    Strong = 1,
    Del = 2,
}

#[derive(Debug)]
pub(super) enum Node<'a> {
    Text(Cow<'a, str>),
    Code(Cow<'a, str>),
    /// Raw HTML: written as text, but not parsed as markdown.
    Html(&'a str),
    SoftBreak,
    HardBreak,
    /// A delimiter run: the tags it closes, `left` literal chars, then the tags it opens.
    Delim {
        ch: u8,
        run: u32,
        left: u32,
        open: bool,
        close: bool,
        closes: Tags,
        opens: Tags,
    },
    /// An unmatched `[` or `![`.
    Bracket {
        image: bool,
    },
    LinkStart {
        image: bool,
        dest: String,
        title: String,
    },
    LinkEnd,
    /// A formula's TeX, as written between its delimiters; `display` for `$$…$$` and `\[…\]`.
    Math {
        tex: &'a str,
        display: bool,
    },
    /// `<https://...>` or `<me@example.com>` (then `dest` has `mailto:`): shown as written.
    Autolink {
        dest: String,
        label: &'a str,
    },
}

pub(super) struct Bracket {
    node: usize,
    image: bool,
    /// The delimiter stack's height when the bracket was seen.
    delims: usize,
    /// Where the bracket's text starts in the source.
    text_start: usize,
}

/// What the inline pass found at a special byte.
enum Step {
    /// No markup there: the text goes on, and the pass resumes at this position.
    Skip(usize),
    /// Markup up to this position (the text before it written, its nodes pushed).
    Took(usize),
}

struct Inline<'a, 'r> {
    src: &'a str,
    refs: &'r Refs,
    nodes: Vec<Node<'a>>,
    delims: Vec<usize>,
    brackets: Vec<Bracket>,
    /// Link brackets below this height are inactive (a link cannot contain a link).
    inactive_below: usize,
    /// Per terminator, the lowest position from which a search already failed.
    fail: [usize; 9],
    /// Every backtick run as (length, position), sorted; built on the first code span.
    code_runs: Vec<(usize, usize)>,
    code_runs_built: bool,
    /// Scratch for `process_emphasis`.
    pending: Vec<usize>,
    openers: Vec<usize>,
}

const FAIL_COMMENT: usize = 0;
const FAIL_PI: usize = 1;
const FAIL_CDATA: usize = 2;
const FAIL_GT: usize = 3;
const FAIL_DQUOTE: usize = 4;
const FAIL_SQUOTE: usize = 5;
const FAIL_DOLLARS: usize = 6;
const FAIL_PAREN: usize = 7;
const FAIL_BRACKET_MATH: usize = 8;

/// Buffers reused from one block to the next (allocation dominated the render time).
#[derive(Default)]
pub(super) struct Buffers<'a> {
    pub nodes: Vec<Node<'a>>,
    delims: Vec<usize>,
    brackets: Vec<Bracket>,
    code_runs: Vec<(usize, usize)>,
    pending: Vec<usize>,
    openers: Vec<usize>,
}

/// Parse one block's inline content into `buf.nodes`.
pub(super) fn parse<'a>(src: &'a str, refs: &Refs, buf: &mut Buffers<'a>) {
    buf.nodes.clear();
    buf.delims.clear();
    buf.brackets.clear();
    buf.code_runs.clear();
    let mut p = Inline {
        src,
        refs,
        nodes: std::mem::take(&mut buf.nodes),
        delims: std::mem::take(&mut buf.delims),
        brackets: std::mem::take(&mut buf.brackets),
        inactive_below: 0,
        fail: [usize::MAX; 9],
        code_runs: std::mem::take(&mut buf.code_runs),
        code_runs_built: false,
        pending: std::mem::take(&mut buf.pending),
        openers: std::mem::take(&mut buf.openers),
    };
    p.run();
    buf.nodes = p.nodes;
    buf.delims = p.delims;
    buf.brackets = p.brackets;
    buf.code_runs = p.code_runs;
    buf.pending = p.pending;
    buf.openers = p.openers;
}

/// The bytes that can start inline markup (a table: this test runs on every byte).
const SPECIAL: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    let bytes = b"\\`*_~[]!<&\n$";
    while i < bytes.len() {
        t[bytes[i] as usize] = true;
        i += 1;
    }
    t
};

fn is_special(b: u8) -> bool {
    SPECIAL[b as usize]
}

pub(super) fn is_punct(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_punctuation();
    }
    // CommonMark's Unicode punctuation is the P and S categories. Exact (Unicode 14) for the blocks
    // replies use: Latin-1, general punctuation, currency, arrows to misc. symbols and arrows, CJK
    // and full-width punctuation, emoji; the rest of the table (about 240 scattered ranges) is not
    // worth its bytes.
    matches!(c as u32,
        0xA1..=0xA9 | 0xAB..=0xAC | 0xAE..=0xB1 | 0xB4 | 0xB6..=0xB8 | 0xBB | 0xBF | 0xD7 | 0xF7
        | 0x2010..=0x2027 | 0x2030..=0x205E | 0x20A0..=0x20C0 | 0x2190..=0x244A
        | 0x249C..=0x24E9 | 0x2500..=0x2775 | 0x2794..=0x2BFF | 0x2E00..=0x2E2E
        | 0x2E30..=0x2E5D | 0x3001..=0x3004 | 0x3008..=0x3020 | 0x3030 | 0x3036..=0x3037
        | 0x303D..=0x303F | 0xFE10..=0xFE19 | 0xFE30..=0xFE6B | 0xFF01..=0xFF0F
        | 0xFF1A..=0xFF20 | 0xFF3B..=0xFF40 | 0xFF5B..=0xFF65 | 0xFFE0..=0xFFEE
        | 0x1F000..=0x1F0F5 | 0x1F10D..=0x1FBCA)
}

impl<'a> Inline<'a, '_> {
    fn text(&mut self, from: usize, to: usize) {
        if from < to {
            self.nodes
                .push(Node::Text(Cow::Borrowed(&self.src[from..to])));
        }
    }

    /// CommonMark's inline pass: text up to each byte that can start markup, that markup
    /// ([`Inline::special`]), then the emphasis of the whole block.
    fn run(&mut self) {
        let src = self.src;
        let b = src.as_bytes();
        let mut i = 0;
        let mut start = 0;
        while i < b.len() {
            let c = b[i];
            if !is_special(c) {
                i += 1;
                continue;
            }
            match self.special(c, i, start) {
                Step::Skip(j) => i = j,
                Step::Took(j) => {
                    i = j;
                    start = j;
                }
            }
        }
        self.text(start, b.len());
        self.process_emphasis(0);
    }

    /// What the special byte `c` at `i` starts, one arm per construct (the text since `start` is
    /// written before any markup taken).
    fn special(&mut self, c: u8, i: usize, start: usize) -> Step {
        let src = self.src;
        match c {
            b'\\' => self.backslash(i, start),
            b'`' => {
                let n = run_len(src.as_bytes(), i, b'`');
                match self.code_span(i, n) {
                    Some((content, end)) => {
                        self.text(start, i);
                        self.nodes.push(Node::Code(content));
                        Step::Took(end)
                    }
                    None => Step::Skip(i + n),
                }
            }
            b'*' | b'_' | b'~' => self.delimiter_run(c, i, start),
            b'[' | b'!' => self.open_bracket(c == b'!', i, start),
            b']' => {
                self.text(start, i);
                Step::Took(self.close_bracket(i))
            }
            b'<' => match self.angle(i) {
                Some((node, len)) => {
                    self.text(start, i);
                    self.nodes.push(node);
                    Step::Took(i + len)
                }
                None => Step::Skip(i + 1),
            },
            b'&' => match entity(&src[i..]) {
                Some((decoded, len)) => {
                    self.text(start, i);
                    self.nodes.push(Node::Text(decoded));
                    Step::Took(i + len)
                }
                None => Step::Skip(i + 1),
            },
            b'\n' => self.line_break(i, start),
            b'$' => self.dollar(i, start),
            _ => Step::Skip(i + 1),
        }
    }

    /// A backslash at `i`: an escaped punctuation character, or before a line end a hard break.
    fn backslash(&mut self, i: usize, start: usize) -> Step {
        let src = self.src;
        let b = src.as_bytes();
        match b.get(i + 1) {
            Some(&open @ (b'(' | b'[')) => {
                let (close, kind) = if open == b'(' {
                    ("\\)", FAIL_PAREN)
                } else {
                    ("\\]", FAIL_BRACKET_MATH)
                };
                match self.find(kind, i + 2, close) {
                    Some(end) if is_formula(&src[i + 2..end]) => {
                        self.text(start, i);
                        self.nodes.push(Node::Math {
                            tex: &src[i + 2..end],
                            display: open == b'[',
                        });
                        Step::Took(end + 2)
                    }
                    _ => {
                        self.text(start, i);
                        self.text(i + 1, i + 2);
                        Step::Took(i + 2)
                    }
                }
            }
            Some(n) if n.is_ascii_punctuation() => {
                self.text(start, i);
                self.text(i + 1, i + 2);
                Step::Took(i + 2)
            }
            Some(b'\n') => {
                self.text(start, i);
                self.nodes.push(Node::HardBreak);
                Step::Took(skip_spaces(b, i + 2))
            }
            _ => Step::Skip(i + 1),
        }
    }

    /// A `$` at `i`: math, or text (money). `$$…$$` is display math whatever is around it. A single
    /// `$` follows pandoc's `tex_math_dollars` rule (markdown-it-texmath's too): the opening `$` has
    /// no space after it, the closing `$` no space before it and no digit after it; as
    /// markdown-it-texmath adds, the opening `$` has no digit before it; and, stricter than both,
    /// the closing `$` is the next `$` (a `$` in a formula is written `\$`). So "$5 and $10",
    /// "costs $3.50" and "$5 and $10, then $\frac{a}{b}$" keep their money as text. An escaped `\$`
    /// never gets here (it is a backslash escape).
    fn dollar(&mut self, i: usize, start: usize) -> Step {
        let src = self.src;
        let b = src.as_bytes();
        if b.get(i + 1) == Some(&b'$') {
            return match self.find(FAIL_DOLLARS, i + 2, "$$") {
                Some(end) if is_formula(&src[i + 2..end]) => {
                    self.text(start, i);
                    self.nodes.push(Node::Math {
                        tex: &src[i + 2..end],
                        display: true,
                    });
                    Step::Took(end + 2)
                }
                _ => Step::Skip(i + 2),
            };
        }
        let opens = b.get(i + 1).is_some_and(|c| !c.is_ascii_whitespace())
            && !src[..i].ends_with(|c: char| c.is_ascii_digit());
        if !opens {
            return Step::Skip(i + 1);
        }
        match self.dollar_closer(i + 1) {
            Some(end) => {
                self.text(start, i);
                self.nodes.push(Node::Math {
                    tex: &src[i + 1..end],
                    display: false,
                });
                Step::Took(end + 1)
            }
            None => Step::Skip(i + 1),
        }
    }

    /// The `$` closing inline math opened before `from`: the first unescaped `$` after it, when it
    /// can close (not part of `$$`, no space before it, no digit after it); any other `$` first
    /// means no math ("$5 and $10, then $x$": the `$` of "$10" stops the search from "$5"). A search
    /// reads up to the next `$` only, so the pass stays linear.
    fn dollar_closer(&mut self, from: usize) -> Option<usize> {
        let b = self.src.as_bytes();
        let mut j = from;
        while j < b.len() {
            match b[j] {
                b'\\' => j += 2,
                b'$' => {
                    let closes = j > from
                        && b.get(j + 1) != Some(&b'$')
                        && !b[j - 1].is_ascii_whitespace()
                        && !b.get(j + 1).is_some_and(u8::is_ascii_digit);
                    return closes.then_some(j);
                }
                _ => j += 1,
            }
        }
        None
    }

    /// A run of `c` (`*`, `_`, `~`) at `i`: a delimiter for [`Inline::process_emphasis`] when it
    /// can open or close (a tilde run of at most two), else text.
    fn delimiter_run(&mut self, c: u8, i: usize, start: usize) -> Step {
        let src = self.src;
        let n = run_len(src.as_bytes(), i, c);
        let prev = src[..i].chars().next_back();
        let next = src[i + n..].chars().next();
        let open = can_open(c, n, prev, next);
        let close = can_close(c, n, prev, next);
        if !((open || close) && (c != b'~' || n <= 2)) {
            return Step::Skip(i + n);
        }
        self.text(start, i);
        self.delims.push(self.nodes.len());
        let n32 = u32::try_from(n).unwrap_or(u32::MAX);
        self.nodes.push(Node::Delim {
            ch: c,
            run: n32,
            left: n32,
            open,
            close,
            closes: Tags::default(),
            opens: Tags::default(),
        });
        Step::Took(i + n)
    }

    /// `[` (or `![`, an image) at `i`: pushed on the bracket stack; a `!` alone is text.
    fn open_bracket(&mut self, image: bool, i: usize, start: usize) -> Step {
        if image && self.src.as_bytes().get(i + 1) != Some(&b'[') {
            return Step::Skip(i + 1);
        }
        self.text(start, i);
        let len = if image { 2 } else { 1 };
        self.inactive_below = self.inactive_below.min(self.brackets.len());
        self.brackets.push(Bracket {
            node: self.nodes.len(),
            image,
            delims: self.delims.len(),
            text_start: i + len,
        });
        self.nodes.push(Node::Bracket { image });
        Step::Took(i + len)
    }

    /// A line end at `i`: the line's trailing spaces dropped, and a hard break after two or more
    /// of them, else a soft one.
    fn line_break(&mut self, i: usize, start: usize) -> Step {
        let src = self.src;
        let line = &src[start..i];
        let trimmed = line.trim_end_matches([' ', '\t']);
        self.text(start, start + trimmed.len());
        self.nodes.push(if line.len() - trimmed.len() >= 2 {
            Node::HardBreak
        } else {
            Node::SoftBreak
        });
        Step::Took(skip_spaces(src.as_bytes(), i + 1))
    }

    /// A code span opening with `n` backticks at `i`: its content and where it ends. The closing
    /// run is looked up in an index of every backtick run (built on the first one), so runs of
    /// many different lengths stay linear.
    fn code_span(&mut self, i: usize, n: usize) -> Option<(Cow<'a, str>, usize)> {
        if !self.code_runs_built {
            self.code_runs_built = true;
            let b = self.src.as_bytes();
            let mut j = 0;
            while j < b.len() {
                if b[j] == b'`' {
                    let m = run_len(b, j, b'`');
                    self.code_runs.push((m, j));
                    j += m;
                } else {
                    j += 1;
                }
            }
            self.code_runs.sort_unstable();
        }
        let from = i + n;
        let k = self.code_runs.partition_point(|&run| run < (n, from));
        match self.code_runs.get(k) {
            Some(&(len, at)) if len == n => Some((code_content(&self.src[from..at]), at + n)),
            _ => None,
        }
    }

    /// Find `pat` at or after `from`, remembering failures per terminator kind.
    fn find(&mut self, kind: usize, from: usize, pat: &str) -> Option<usize> {
        if from >= self.fail[kind] {
            return None;
        }
        match self.src[from..].find(pat) {
            Some(k) => Some(from + k),
            None => {
                self.fail[kind] = from;
                None
            }
        }
    }

    /// An autolink or a piece of raw HTML at `i` (a `<`).
    fn angle(&mut self, i: usize) -> Option<(Node<'a>, usize)> {
        let s = &self.src[i..];
        if let Some((node, len)) = autolink(s) {
            return Some((node, len));
        }
        let end = if s.starts_with("<!--") {
            if s.starts_with("<!-->") {
                Some(i + 5)
            } else if s.starts_with("<!--->") {
                Some(i + 6)
            } else {
                self.find(FAIL_COMMENT, i + 4, "-->").map(|e| e + 3)
            }
        } else if s.starts_with("<?") {
            self.find(FAIL_PI, i + 2, "?>").map(|e| e + 2)
        } else if s.starts_with("<![CDATA[") {
            self.find(FAIL_CDATA, i + 9, "]]>").map(|e| e + 3)
        } else if s.starts_with("<!") && s.as_bytes().get(2).is_some_and(u8::is_ascii_alphabetic) {
            self.find(FAIL_GT, i + 2, ">").map(|e| e + 1)
        } else {
            self.tag(i).map(|len| i + len)
        }?;
        Some((Node::Html(&self.src[i..end]), end - i))
    }

    /// An open or closing tag at `i`: its length.
    fn tag(&mut self, i: usize) -> Option<usize> {
        let b = self.src.as_bytes();
        let mut j = i + 1;
        let closing = b.get(j) == Some(&b'/');
        if closing {
            j += 1;
        }
        if !b.get(j)?.is_ascii_alphabetic() {
            return None;
        }
        while b
            .get(j)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'-')
        {
            j += 1;
        }
        if closing {
            j = skip_ws(b, j);
            return (b.get(j) == Some(&b'>')).then_some(j + 1 - i);
        }
        loop {
            let ws = skip_ws(b, j);
            match b.get(ws) {
                Some(b'>') => return Some(ws + 1 - i),
                Some(b'/') if b.get(ws + 1) == Some(&b'>') => return Some(ws + 2 - i),
                _ => {}
            }
            if ws == j {
                return None;
            }
            j = ws;
            // Attribute name.
            if !b
                .get(j)
                .is_some_and(|c| c.is_ascii_alphabetic() || matches!(c, b'_' | b':'))
            {
                return None;
            }
            while b.get(j).is_some_and(|c| {
                c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b':' | b'-')
            }) {
                j += 1;
            }
            // Optional value.
            let k = skip_ws(b, j);
            if b.get(k) == Some(&b'=') {
                let v = skip_ws(b, k + 1);
                match b.get(v) {
                    Some(b'"') => j = self.find(FAIL_DQUOTE, v + 1, "\"")? + 1,
                    Some(b'\'') => j = self.find(FAIL_SQUOTE, v + 1, "'")? + 1,
                    Some(_) => {
                        let n = b[v..]
                            .iter()
                            .take_while(|c| {
                                !c.is_ascii_whitespace()
                                    && !matches!(c, b'"' | b'\'' | b'=' | b'<' | b'>' | b'`')
                            })
                            .count();
                        if n == 0 {
                            return None;
                        }
                        j = v + n;
                    }
                    None => return None,
                }
            }
        }
    }

    /// A `]` at `i`: a link or image if the bracket stack and what follows say so. Returns where
    /// parsing resumes.
    fn close_bracket(&mut self, i: usize) -> usize {
        let after = i + 1;
        let Some(top) = self.brackets.len().checked_sub(1) else {
            self.text(i, after);
            return after;
        };
        let bracket = &self.brackets[top];
        if !bracket.image && top < self.inactive_below {
            self.brackets.pop();
            self.text(i, after);
            return after;
        }
        let image = bracket.image;
        let text_start = bracket.text_start;
        let mut found = None;
        if self.src[after..].starts_with('(') {
            found = inline_link(&self.src[after..]).map(|(d, t, len)| (d, t, after + len));
        }
        if found.is_none() && !self.refs.is_empty() {
            let rest = &self.src[after..];
            let (label, end) = match rest
                .starts_with('[')
                .then(|| link_label_end(rest))
                .flatten()
            {
                Some(2) => (Some(&self.src[text_start..i]), after + 2),
                Some(n) => (Some(&rest[1..n - 1]), after + n),
                None => (Some(&self.src[text_start..i]), after),
            };
            if let Some(label) = label.filter(|l| valid_label(l)) {
                if let Some((d, t)) = self.refs.get(&normalize_label(label)) {
                    found = Some((d.clone(), t.clone(), end));
                }
            }
        }
        let bracket = self.brackets.pop().expect("checked above");
        match found {
            Some((dest, title, end)) => {
                self.nodes[bracket.node] = Node::LinkStart { image, dest, title };
                self.nodes.push(Node::LinkEnd);
                self.process_emphasis(bracket.delims);
                if !image {
                    self.inactive_below = self.brackets.len();
                }
                end
            }
            None => {
                self.text(i, after);
                after
            }
        }
    }

    /// Match the emphasis delimiters above `bottom` in the delimiter stack (CommonMark's
    /// process-emphasis), then drop them from the stack. Closers are taken in order against a stack
    /// of the openers seen so far, so every removal is a truncation (linear time overall).
    fn process_emphasis(&mut self, bottom: usize) {
        self.pending.clear();
        let from = bottom.min(self.delims.len());
        self.pending.extend(self.delims.drain(from..));
        let mut openers = std::mem::take(&mut self.openers);
        openers.clear();
        let mut bounds: Bounds = [[[0usize; 2]; 3]; 3];
        for p in 0..self.pending.len() {
            let node = self.pending[p];
            let Node::Delim {
                ch,
                run,
                open,
                close,
                ..
            } = self.nodes[node]
            else {
                continue;
            };
            let left = if close {
                self.close_run(node, (ch, run, open), &mut openers, &mut bounds)
            } else {
                run
            };
            if open && left > 0 {
                openers.push(node);
            }
        }
        self.openers = openers;
    }

    /// Closer `node` (its char, run length, and whether it can open too) matched against the
    /// openers, nearest first, until its run is used up or none is left (CommonMark's "look for an
    /// opener" loop). Returns what is left of its run.
    fn close_run(
        &mut self,
        node: usize,
        (ch, run, open): (u8, u32, bool),
        openers: &mut Vec<usize>,
        bounds: &mut Bounds,
    ) -> u32 {
        let (a, b, c) = match ch {
            b'*' => (0, (run % 3) as usize, usize::from(open)),
            b'_' => (1, (run % 3) as usize, usize::from(open)),
            _ => (2, 0, 0),
        };
        let mut left = run;
        while left > 0 && !self.tags(node, false).full() {
            let lowest = bounds[a][b][c].min(openers.len());
            let Some(k) = self.find_opener(openers, lowest, (ch, run, open)) else {
                bounds[a][b][c] = openers.len();
                break;
            };
            let (used, o_left) = self.pair(openers[k], node, ch, left);
            left -= used;
            // Openers between the pair can no longer match anything.
            openers.truncate(k + 1);
            if o_left == used {
                openers.pop();
            }
            for bound in bounds.iter_mut().flatten().flatten() {
                *bound = (*bound).min(openers.len());
            }
        }
        if let Node::Delim { left: l, .. } = &mut self.nodes[node] {
            *l = left;
        }
        left
    }

    /// The nearest opener at or above `lowest` that a closer (char, run, can open) matches: the
    /// same char, then for tildes the same run, else the rule of 3.
    fn find_opener(
        &self,
        openers: &[usize],
        lowest: usize,
        (ch, run, open): (u8, u32, bool),
    ) -> Option<usize> {
        (lowest..openers.len()).rev().find(|&k| {
            let Node::Delim {
                ch: o_ch,
                run: o_run,
                close: o_close,
                opens,
                ..
            } = self.nodes[openers[k]]
            else {
                return false;
            };
            if opens.full() {
                return false;
            }
            let both = open || o_close;
            let rule_of_3 = !both || (run + o_run) % 3 != 0 || run % 3 == 0;
            o_ch == ch && if ch == b'~' { o_run == run } else { rule_of_3 }
        })
    }

    /// Pairs `opener` with closer `node` (`left` chars of its run unused): a tilde pair is a
    /// strikethrough of the closer's whole rest, else strong when both have two chars left, else
    /// emphasis. Returns the chars used, and what the opener had left before.
    fn pair(&mut self, opener: usize, node: usize, ch: u8, left: u32) -> (u32, u32) {
        let o_left = match self.nodes[opener] {
            Node::Delim { left, .. } => left,
            _ => 0,
        };
        let (used, tag) = if ch == b'~' {
            (left, Emph::Del)
        } else if o_left >= 2 && left >= 2 {
            (2, Emph::Strong)
        } else {
            (1, Emph::Em)
        };
        if let Node::Delim { left, opens, .. } = &mut self.nodes[opener] {
            *left -= used;
            opens.push(tag);
        }
        if let Node::Delim { closes, .. } = &mut self.nodes[node] {
            closes.push(tag);
        }
        (used, o_left)
    }
}

/// Per (char, closer run % 3, closer can open): openers below this height never match. Tildes share
/// one bound whatever the run (pulldown-cmark's reading: a tilde run that found no opener hides every
/// earlier one).
type Bounds = [[[usize; 2]; 3]; 3];

impl Inline<'_, '_> {
    /// A delimiter node's open (or close) tags.
    fn tags(&self, node: usize, opens: bool) -> Tags {
        match self.nodes[node] {
            Node::Delim { opens: o, .. } if opens => o,
            Node::Delim { closes, .. } => closes,
            _ => Tags::default(),
        }
    }
}

/// Whether the text between math delimiters can be a formula: something besides spaces and
/// backslashes (`\[\\\]` is CommonMark's escaped `[\]`, not math).
fn is_formula(tex: &str) -> bool {
    tex.bytes().any(|c| !c.is_ascii_whitespace() && c != b'\\')
}

fn run_len(b: &[u8], i: usize, c: u8) -> usize {
    b[i..].iter().take_while(|&&x| x == c).count()
}

fn skip_spaces(b: &[u8], mut i: usize) -> usize {
    while matches!(b.get(i), Some(b' ' | b'\t')) {
        i += 1;
    }
    i
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    i
}

/// Whether a delimiter run can open emphasis (CommonMark's left-flanking rule, `_` not intraword;
/// for `~` pulldown-cmark's GFM reading: `~~` may be intraword, `~` may not).
fn can_open(c: u8, run: usize, prev: Option<char>, next: Option<char>) -> bool {
    let Some(next) = next.filter(|n| !n.is_whitespace()) else {
        return false;
    };
    let Some(prev) = prev else {
        return true;
    };
    if c == b'*' && !is_punct(next) || c == b'~' && run > 1 {
        return true;
    }
    if c == b'~' && prev == '~' && !is_punct(next) {
        return true;
    }
    prev.is_whitespace() || is_punct(prev)
}

fn can_close(c: u8, run: usize, prev: Option<char>, next: Option<char>) -> bool {
    let Some(prev) = prev.filter(|p| !p.is_whitespace()) else {
        return false;
    };
    let Some(next) = next else {
        return true;
    };
    if (c == b'*' || c == b'~' && run > 1) && !is_punct(prev) {
        return true;
    }
    if c == b'~' && prev == '~' {
        return true;
    }
    next.is_whitespace() || is_punct(next)
}

/// A code span's content: line endings become spaces; one space is stripped from both ends when
/// both have one and the content is not only spaces.
fn code_content(raw: &str) -> Cow<'_, str> {
    let s: Cow<'_, str> = if raw.contains('\n') {
        Cow::Owned(raw.replace('\n', " "))
    } else {
        Cow::Borrowed(raw)
    };
    let strip =
        s.len() >= 2 && s.starts_with(' ') && s.ends_with(' ') && !s.bytes().all(|b| b == b' ');
    if !strip {
        return s;
    }
    match s {
        Cow::Borrowed(b) => Cow::Borrowed(&b[1..b.len() - 1]),
        Cow::Owned(o) => Cow::Owned(o[1..o.len() - 1].to_string()),
    }
}

/// `<scheme:...>` or `<user@host>` at the start of `s`.
fn autolink(s: &str) -> Option<(Node<'_>, usize)> {
    let b = s.as_bytes();
    let end = b[1..]
        .iter()
        .position(|&c| c == b'>' || c == b'<' || c <= b' ' || c == 0x7f)
        .map(|e| e + 1);
    let end = end.filter(|&e| b[e] == b'>' && e > 1)?;
    let inner = &s[1..end];
    let scheme_len = inner.find(':');
    let is_uri = scheme_len.is_some_and(|n| {
        (2..=32).contains(&n)
            && inner.as_bytes()[0].is_ascii_alphabetic()
            && inner.as_bytes()[..n]
                .iter()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'.' | b'-'))
    });
    let dest = if is_uri {
        inner.to_string()
    } else if is_email(inner) {
        format!("mailto:{inner}")
    } else {
        return None;
    };
    Some((Node::Autolink { dest, label: inner }, end + 1))
}

fn is_email(s: &str) -> bool {
    let Some((user, host)) = s.split_once('@') else {
        return false;
    };
    !user.is_empty()
        && user
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || b".!#$%&'*+/=?^_`{|}~-".contains(&c))
        && !host.is_empty()
        && host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|c| c.is_ascii_alphanumeric() || c == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

/// `(dest "title")` after a `]`: destination, title and the length consumed.
fn inline_link(s: &str) -> Option<(String, String, usize)> {
    let b = s.as_bytes();
    let mut i = skip_ws(b, 1);
    if b.get(i) == Some(&b')') {
        return Some((String::new(), String::new(), i + 1));
    }
    let (dest, len) = parse_link_dest(&s[i..])?;
    i += len;
    let ws = skip_ws(b, i);
    let mut title = String::new();
    let mut j = ws;
    if ws > i {
        if let Some((t, tlen)) = parse_link_title(&s[ws..]) {
            title = t;
            j = skip_ws(b, ws + tlen);
        }
    }
    (b.get(j) == Some(&b')')).then(|| (dest, title, j + 1))
}

/// A link destination at the start of `s` (`<...>` or a raw one with balanced parentheses):
/// the unescaped, entity-decoded destination and the length consumed.
pub(super) fn parse_link_dest(s: &str) -> Option<(String, usize)> {
    let b = s.as_bytes();
    if b.first() == Some(&b'<') {
        let mut i = 1;
        while let Some(&c) = b.get(i) {
            match c {
                b'>' => return Some((unescape(&s[1..i]).into_owned(), i + 1)),
                b'\\' if b.get(i + 1).is_some_and(u8::is_ascii_punctuation) => i += 2,
                b'\n' | b'<' => return None,
                _ => i += 1,
            }
        }
        return None;
    }
    let mut depth = 0usize;
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        match c {
            b'\\' if b.get(i + 1).is_some_and(u8::is_ascii_punctuation) => {
                i += 2;
                continue;
            }
            b'(' => {
                depth += 1;
                if depth > 32 {
                    return None;
                }
            }
            b')' if depth == 0 => break,
            b')' => depth -= 1,
            c if c <= b' ' || c == 0x7f => break,
            _ => {}
        }
        i += 1;
    }
    if depth != 0 || i == 0 {
        return (i == 0 && depth == 0).then(|| (String::new(), 0));
    }
    Some((unescape(&s[..i]).into_owned(), i))
}

/// A link title at the start of `s` (`"..."`, `'...'` or `(...)`): decoded title and length.
pub(super) fn parse_link_title(s: &str) -> Option<(String, usize)> {
    let b = s.as_bytes();
    let close = match b.first()? {
        b'"' => b'"',
        b'\'' => b'\'',
        b'(' => b')',
        _ => return None,
    };
    let mut i = 1;
    while let Some(&c) = b.get(i) {
        if c == b'\\' && b.get(i + 1).is_some_and(u8::is_ascii_punctuation) {
            i += 2;
            continue;
        }
        if c == close {
            return Some((unescape(&s[1..i]).into_owned(), i + 1));
        }
        if close == b')' && c == b'(' {
            return None;
        }
        if c == b'\n' && b.get(i + 1) == Some(&b'\n') {
            return None;
        }
        i += 1;
    }
    None
}

/// The length of a link label `[...]` at the start of `s` (at most 999 chars inside, no unescaped
/// brackets), including both brackets.
pub(super) fn link_label_end(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    if b.first() != Some(&b'[') {
        return None;
    }
    let mut i = 1;
    while let Some(&c) = b.get(i) {
        match c {
            b'\\' if b.get(i + 1).is_some_and(u8::is_ascii_punctuation) => i += 2,
            b'[' => return None,
            b']' => return Some(i + 1),
            _ => i += 1,
        }
        if i > 1000 {
            return None;
        }
    }
    None
}

fn valid_label(l: &str) -> bool {
    l.len() <= 999 && !l.trim().is_empty() && link_label_end(&format!("[{l}]")) == Some(l.len() + 2)
}

/// A label as references are matched: case-folded, inner whitespace collapsed. The fold is
/// lowercasing plus the two folds it misses that text uses (`ß`/`ẞ` as `ss`, final `ς` as `σ`);
/// full Unicode case folding (or commonmark.js's lower-then-upper) would link the uppercase
/// table, about 14 KB of wasm (6 KB gzipped), for labels no reply writes.
pub(super) fn normalize_label(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for word in s.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        for c in word.chars().flat_map(char::to_lowercase) {
            match c {
                'ß' => out.push_str("ss"),
                'ς' => out.push('σ'),
                c => out.push(c),
            }
        }
    }
    out
}

/// Resolve backslash escapes and entities (in info strings, link destinations and titles).
pub(super) fn unescape(s: &str) -> Cow<'_, str> {
    if !s.contains(['\\', '&']) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let b = s.as_bytes();
    let mut i = 0;
    let mut start = 0;
    while i < b.len() {
        match b[i] {
            b'\\' if b.get(i + 1).is_some_and(u8::is_ascii_punctuation) => {
                out.push_str(&s[start..i]);
                out.push_str(&s[i + 1..i + 2]);
                i += 2;
                start = i;
            }
            b'&' => {
                if let Some((decoded, len)) = entity(&s[i..]) {
                    out.push_str(&s[start..i]);
                    out.push_str(&decoded);
                    i += len;
                    start = i;
                } else {
                    i += 1;
                }
            }
            _ => i += 1,
        }
    }
    out.push_str(&s[start..]);
    Cow::Owned(out)
}

/// The named character references we decode: the ones models actually write. Any other name
/// stays literal text (escaped), which is how a browser shows an unknown reference anyway.
const ENTITIES: &[(&str, &str)] = &[
    ("amp", "&"),
    ("lt", "<"),
    ("gt", ">"),
    ("quot", "\""),
    ("apos", "'"),
    ("nbsp", "\u{a0}"),
    ("copy", "©"),
    ("reg", "®"),
    ("trade", "™"),
    ("hellip", "…"),
    ("mdash", "—"),
    ("ndash", "–"),
    ("laquo", "«"),
    ("raquo", "»"),
    ("lsquo", "‘"),
    ("rsquo", "’"),
    ("ldquo", "“"),
    ("rdquo", "”"),
    ("bull", "•"),
    ("middot", "·"),
    ("times", "×"),
    ("divide", "÷"),
    ("deg", "°"),
    ("plusmn", "±"),
    ("para", "¶"),
    ("sect", "§"),
    ("euro", "€"),
    ("pound", "£"),
    ("yen", "¥"),
    ("cent", "¢"),
    ("larr", "←"),
    ("rarr", "→"),
    ("uarr", "↑"),
    ("darr", "↓"),
    ("harr", "↔"),
    ("rArr", "⇒"),
    ("le", "≤"),
    ("ge", "≥"),
    ("ne", "≠"),
    ("infin", "∞"),
    ("check", "✓"),
];

/// A character reference at the start of `s` (`&name;`, `&#123;`, `&#x7B;`): decoded, and length.
pub(super) fn entity(s: &str) -> Option<(Cow<'static, str>, usize)> {
    let b = s.as_bytes();
    if b.get(1) == Some(&b'#') {
        let (radix, start) = match b.get(2) {
            Some(b'x' | b'X') => (16, 3),
            _ => (10, 2),
        };
        let max = if radix == 16 { 6 } else { 7 };
        let n = b[start..]
            .iter()
            .take_while(|c| (**c as char).is_digit(radix))
            .count();
        if n == 0 || n > max || b.get(start + n) != Some(&b';') {
            return None;
        }
        let v = u32::from_str_radix(&s[start..start + n], radix).ok()?;
        let c = char::from_u32(v)
            .filter(|&c| c != '\0')
            .unwrap_or('\u{FFFD}');
        return Some((Cow::Owned(c.to_string()), start + n + 1));
    }
    let n = b[1..]
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric())
        .count();
    if n == 0 || b.get(1 + n) != Some(&b';') {
        return None;
    }
    let name = &s[1..1 + n];
    let (_, value) = ENTITIES.iter().find(|(k, _)| *k == name)?;
    Some((Cow::Borrowed(value), n + 2))
}

/// The length of a complete open or closing HTML tag at the start of `s` (for HTML block kind 7).
pub(super) fn html_tag_len(s: &str) -> Option<usize> {
    let mut p = Inline {
        src: s,
        refs: &Refs::new(),
        nodes: Vec::new(),
        delims: Vec::new(),
        brackets: Vec::new(),
        inactive_below: 0,
        fail: [usize::MAX; 9],
        code_runs: Vec::new(),
        code_runs_built: false,
        pending: Vec::new(),
        openers: Vec::new(),
    };
    p.tag(0)
}
