//! Math in replies: one formula's TeX in, MathML out (Chromium renders MathML Core natively: no
//! font, no script, no stylesheet ships). The markdown writer shows a formula as code
//! (`<code class="math-tex">`, `engine::markdown`); the chat pane swaps in what [`to_mathml`]
//! returns once the split point `math` has loaded (`ui/math.rs`). The converter's markup is model
//! output in another form, so it goes through the markdown module's MathML allow-list writer
//! (`markdown::mathml`) before it is returned: only MathML Core's elements and inert attributes,
//! every text escaped. TeX that does not convert is an error the caller shows as the code it
//! already is.
//! Must not import anything outside `crate::engine` (and the `math_core` crate).
//!
//! Why `math-core` (0.7): measured on `tests/fixtures/math/formulas.txt`, 179 formulas of the kinds
//! models write (fractions, sums, integrals, matrices, `aligned`/`cases`, chemistry-like
//! subscripts, Greek, accents, `\text`, `\mathbb`, `\operatorname`, `\left…\right`), each
//! converted in display mode, and on the wasm it adds (a cdylib exporting one conversion,
//! `opt-level = "z"`, LTO, then `wasm-opt` with the app's flags, brotli -q 11, minus the same
//! module without the crate):
//!
//! | crate | converted without error | wasm added, brotli (raw) | output |
//! | --- | --- | --- | --- |
//! | `math-core` 0.7.0 | 177 / 179 (not `split`, `\boxed`) | 47.1 KB (120.6 KB) | MathML Core, `<annotation>` of the TeX built in |
//! | `pulldown-latex` 0.8.0 | 178 / 179 (not `\boxed`) | 55.1 KB (153.9 KB) | MathML that wants the crate's stylesheet and fonts |
//! | `latex2mathml` 0.2.3 | 150 / 179 (no `cases`, `aligned`, `array`, `\mathcal`, `\dfrac`, …) | 20.3 KB (60.8 KB) | MathML with errors as text |
//!
//! `latex2mathml` is the smallest, but one formula in six fails (no `cases` or `aligned`, which
//! models write all the time) and it is unmaintained; `pulldown-latex` converts one formula more
//! but is larger and expects its own CSS and fonts. `math-core` writes MathML Core, the subset
//! Chromium implements, and is kept up; its newer releases (0.8, 0.9) need Rust 1.96, which this
//! project's toolchain (1.95) is not, so 0.7 is pinned. The two formulas it cannot convert are
//! handled here: `\boxed{x}` (a model's final answer) is a macro for its content (MathML Core has
//! no frame without CSS: the box is lost, the answer shown), and the `split` environment is read
//! as `aligned` (the same layout inside an equation). Everything else it cannot convert stays code.
//!
//! A formula longer than [`MAX_TEX_BYTES`], nested deeper than [`MAX_DEPTH`], with a run of more
//! than [`MAX_CHAIN`] commands, or both past [`MAX_COST`] is not converted:
//! the crate's parser recurses per group and per argument, and a stack overflow in the browser
//! would abort the app.

use crate::engine::markdown::escape_html;
use crate::engine::markdown::mathml::{write_mathml, Refused};
use math_core::{LatexToMathML, MathCoreConfig, MathDisplay};
use std::cell::OnceCell;

/// The longest formula converted (bytes of TeX); a longer one stays code.
pub const MAX_TEX_BYTES: usize = 4_000;
/// The deepest nesting converted: groups (`{`), `\left` and `\begin` not yet closed.
pub const MAX_DEPTH: usize = 40;
/// The longest run of commands (and `^`, `_`) with nothing but spaces between them converted: each
/// may take the next as its argument (`\sqrt\sqrt x`), which the parser reads by recursing.
pub const MAX_CHAIN: usize = 60;
/// Both at once: an open group costs two, a command of the run one, and a formula may cost this
/// much at its deepest point. Measured in Chromium's wasm (an unoptimised build, whose frames are
/// larger than the app's: `tests/browser_math.rs`): 40 `\frac{1}{` nested (cost 81), a run of 60
/// `\sqrt`, 20 groups around 40 of them and 10 around 60 (80) convert; 40 groups around 20 (101)
/// and 20 around 60 (100) overflowed the stack.
pub const MAX_COST: usize = 82;

/// How a formula is laid out: in the line (`$…$`, `\(…\)`) or on a line of its own (`$$…$$`, `\[…\]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Display {
    Inline,
    Block,
}

/// Why a formula stays code; the message is its tooltip.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MathError {
    #[error("This formula could not be shown as math: {0}")]
    Invalid(String),
    #[error("This formula is too long or too deeply nested to be shown as math")]
    TooLarge,
    #[error("This formula could not be shown as math safely")]
    Refused,
}

thread_local! {
    static CONVERTER: OnceCell<Option<LatexToMathML>> = const { OnceCell::new() };
}

fn converter() -> Option<LatexToMathML> {
    let config = MathCoreConfig {
        annotation: true,
        macros: vec![("boxed".into(), "{#1}".into())],
        ..Default::default()
    };
    LatexToMathML::new(config).ok()
}

/// The MathML of one formula (one `<math>` element holding `<semantics>`, the formula, and an
/// `<annotation encoding="application/x-tex">` with its TeX), through the allow-list writer.
pub fn to_mathml(tex: &str, display: Display) -> Result<String, MathError> {
    let tex = tex.trim();
    if tex.is_empty() {
        return Err(MathError::Invalid("it is empty".into()));
    }
    if tex.len() > MAX_TEX_BYTES || too_deep(tex) {
        return Err(MathError::TooLarge);
    }
    let read: std::borrow::Cow<'_, str> = if tex.contains("{split}") {
        tex.replace("\\begin{split}", "\\begin{aligned}")
            .replace("\\end{split}", "\\end{aligned}")
            .into()
    } else {
        tex.into()
    };
    let mode = match display {
        Display::Inline => MathDisplay::Inline,
        Display::Block => MathDisplay::Block,
    };
    let markup = CONVERTER.with(|c| {
        let Some(converter) = c.get_or_init(converter) else {
            return Err(MathError::Invalid("the converter could not start".into()));
        };
        converter
            .convert_with_local_state(&read, mode)
            .map(|r| r.mathml)
            .map_err(|e| MathError::Invalid(e.error_message()))
    })?;
    let mut out = String::with_capacity(markup.len());
    write_mathml(&markup, &mut out).map_err(|_: Refused| MathError::Refused)?;
    if read != tex {
        // The annotation holds the TeX as written, not as read (`split`).
        let (mut was, mut is) = (String::new(), String::new());
        escape_html(&mut was, &read);
        escape_html(&mut is, tex);
        out = out.replace(
            &format!(">{was}</annotation>"),
            &format!(">{is}</annotation>"),
        );
    }
    Ok(out)
}

/// Whether the parser would recurse too deeply: more than [`MAX_DEPTH`] groups, `\left` and
/// `\begin` open at once, a run of more than [`MAX_CHAIN`] commands, or both past [`MAX_COST`].
fn too_deep(tex: &str) -> bool {
    let b = tex.as_bytes();
    let (mut open, mut chain) = (0usize, 0usize);
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => {
                let name_len = b[i + 1..]
                    .iter()
                    .take_while(|c| c.is_ascii_alphabetic())
                    .count();
                match &tex[i + 1..i + 1 + name_len] {
                    "left" | "begin" => open += 1,
                    "right" | "end" => open = open.saturating_sub(1),
                    _ => {}
                }
                chain += 1;
                i += 1 + name_len.max(1);
            }
            c => {
                match c {
                    b'{' => open += 1,
                    b'}' => open = open.saturating_sub(1),
                    b'^' | b'_' => chain += 1,
                    c if c.is_ascii_whitespace() => {}
                    _ => chain = 0,
                }
                i += 1;
            }
        }
        if open > MAX_DEPTH || chain > MAX_CHAIN || 2 * open + chain > MAX_COST {
            return true;
        }
    }
    false
}
