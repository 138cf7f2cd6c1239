//! The allow-list writer for MathML: markup a TeX converter wrote (`engine::math`) read as tags and
//! text, and written again with only MathML Core's presentation elements and their inert
//! attributes, every text node and attribute value escaped by the markdown writer's own
//! [`escape_html`]. What it writes can hold nothing else: no `href`, no `style` or `class`, no
//! event handler, no element of another namespace (an `<a>`, a `<span>` inside `<mtext>`: the tag
//! is dropped and its text kept), one `<math>` root. Markup it cannot read (a tag that does not
//! close, a closing tag that does not match) is refused whole: the caller shows the TeX as code.
//! Must not import anything outside `super` (the markdown module).

use super::{decode_char_refs, escape_html};

/// The elements written (MathML Core's presentation elements, `semantics` and `annotation`).
const ELEMENTS: [&str; 29] = [
    "math",
    "mrow",
    "mi",
    "mn",
    "mo",
    "ms",
    "mtext",
    "mspace",
    "msub",
    "msup",
    "msubsup",
    "mfrac",
    "msqrt",
    "mroot",
    "mstyle",
    "merror",
    "mpadded",
    "mphantom",
    "munder",
    "mover",
    "munderover",
    "mtable",
    "mtr",
    "mtd",
    "semantics",
    "annotation",
    "mmultiscripts",
    "mprescripts",
    "none",
];

/// The attributes written: presentation only, none takes a URL, a script or CSS.
const ATTRIBUTES: [&str; 27] = [
    "display",
    "mathvariant",
    "stretchy",
    "fence",
    "separator",
    "lspace",
    "rspace",
    "accent",
    "accentunder",
    "columnalign",
    "rowalign",
    "columnspacing",
    "rowspacing",
    "displaystyle",
    "scriptlevel",
    "width",
    "height",
    "depth",
    "voffset",
    "linethickness",
    "form",
    "largeop",
    "movablelimits",
    "symmetric",
    "minsize",
    "maxsize",
    "encoding",
];

/// Elements whose content (text included) would be dropped too, were the converter ever to write
/// them: nothing of theirs is shown.
const DROPPED_WHOLE: [&str; 4] = ["script", "style", "annotation-xml", "template"];

/// Why markup was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Not one `<math>` element.
    NotMath,
    /// A tag that does not close, an attribute without its quotes, a closing tag that does not match.
    Unreadable,
}

/// Writes `markup` (one `<math>` element) through the allow-list into `out`; on refusal `out` is
/// left as it was.
pub fn write_mathml(markup: &str, out: &mut String) -> Result<(), Refused> {
    let start = out.len();
    let result = write_checked(markup.trim(), out);
    if result.is_err() {
        out.truncate(start);
    }
    result
}

/// One element open in the input: its name, whether it was written, whether its text is shown.
struct Open<'a> {
    name: &'a str,
    written: bool,
    shown: bool,
}

fn write_checked(markup: &str, out: &mut String) -> Result<(), Refused> {
    if !markup.starts_with("<math") {
        return Err(Refused::NotMath);
    }
    let mut stack: Vec<Open<'_>> = Vec::new();
    let mut rest = markup;
    let mut roots = 0;
    while !rest.is_empty() {
        let Some(lt) = rest.find('<') else {
            text(rest, &stack, out)?;
            break;
        };
        text(&rest[..lt], &stack, out)?;
        let tag = &rest[lt..];
        let end = tag_end(tag).ok_or(Refused::Unreadable)?;
        let inner = &tag[1..end];
        if let Some(name) = inner.strip_prefix('/') {
            close(name.trim(), &mut stack, out)?;
        } else {
            if stack.is_empty() {
                roots += 1;
                if roots > 1 {
                    return Err(Refused::NotMath);
                }
            }
            open(inner, &mut stack, out)?;
        }
        rest = &tag[end + 1..];
    }
    if stack.is_empty() && roots == 1 {
        Ok(())
    } else {
        Err(Refused::Unreadable)
    }
}

/// Text between tags: shown (decoded, then escaped) inside a shown element, whitespace only outside.
fn text(raw: &str, stack: &[Open<'_>], out: &mut String) -> Result<(), Refused> {
    if raw.is_empty() {
        return Ok(());
    }
    match stack.last() {
        None if raw.trim().is_empty() => Ok(()),
        None => Err(Refused::NotMath),
        Some(top) if top.shown => {
            escape_html(out, &decode_char_refs(raw));
            Ok(())
        }
        Some(_) => Ok(()),
    }
}

/// Where the tag starting at `tag[0]` (a `<`) ends: its `>`, outside quoted attribute values.
fn tag_end(tag: &str) -> Option<usize> {
    let mut quote = None;
    for (i, b) in tag.bytes().enumerate().skip(1) {
        match (quote, b) {
            (None, b'"' | b'\'') => quote = Some(b),
            (Some(q), _) if b == q => quote = None,
            (None, b'<') => return None,
            (None, b'>') => return Some(i),
            _ => {}
        }
    }
    None
}

/// A start tag's inside (`name attr="v" …`, maybe ending in `/`).
fn open<'a>(inner: &'a str, stack: &mut Vec<Open<'a>>, out: &mut String) -> Result<(), Refused> {
    let (inner, empty) = match inner.strip_suffix('/') {
        Some(i) => (i, true),
        None => (inner, false),
    };
    let name_len = inner
        .find(|c: char| c.is_ascii_whitespace())
        .unwrap_or(inner.len());
    let name = &inner[..name_len];
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
        return Err(Refused::Unreadable);
    }
    if stack.is_empty() && name != "math" {
        return Err(Refused::NotMath);
    }
    let parent_shown = stack.last().is_none_or(|o| o.shown);
    let written = parent_shown && ELEMENTS.contains(&name);
    let shown = parent_shown && !DROPPED_WHOLE.contains(&name.to_ascii_lowercase().as_str());
    let attrs = attributes(&inner[name_len..])?;
    if written {
        out.push('<');
        out.push_str(name);
        for (attr, value) in attrs {
            if ATTRIBUTES.contains(&attr) && (attr != "display" || value == "block") {
                out.push(' ');
                out.push_str(attr);
                out.push_str("=\"");
                escape_html(out, &decode_char_refs(value));
                out.push('"');
            }
        }
        out.push('>');
    }
    if empty {
        if written {
            out.push_str("</");
            out.push_str(name);
            out.push('>');
        }
    } else {
        stack.push(Open {
            name,
            written,
            shown,
        });
    }
    Ok(())
}

fn close(name: &str, stack: &mut Vec<Open<'_>>, out: &mut String) -> Result<(), Refused> {
    let top = stack.pop().ok_or(Refused::Unreadable)?;
    if top.name != name {
        return Err(Refused::Unreadable);
    }
    if top.written {
        out.push_str("</");
        out.push_str(name);
        out.push('>');
    }
    Ok(())
}

/// A start tag's attributes, each `name="value"` or `name='value'` (a bare name has an empty value).
fn attributes(mut s: &str) -> Result<Vec<(&str, &str)>, Refused> {
    let mut found = Vec::new();
    loop {
        s = s.trim_start();
        if s.is_empty() {
            return Ok(found);
        }
        let name_len = s
            .find(|c: char| c.is_ascii_whitespace() || c == '=')
            .unwrap_or(s.len());
        let name = &s[..name_len];
        if !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b':'))
        {
            return Err(Refused::Unreadable);
        }
        s = s[name_len..].trim_start();
        let Some(after_eq) = s.strip_prefix('=') else {
            found.push((name, ""));
            continue;
        };
        let after_eq = after_eq.trim_start();
        let quote = after_eq.chars().next().ok_or(Refused::Unreadable)?;
        if quote != '"' && quote != '\'' {
            return Err(Refused::Unreadable);
        }
        let body = &after_eq[1..];
        let close = body.find(quote).ok_or(Refused::Unreadable)?;
        found.push((name, &body[..close]));
        s = &body[close + 1..];
    }
}
