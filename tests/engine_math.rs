#![cfg(not(target_arch = "wasm32"))]
//! Math in replies: the formulas models write convert to MathML (`engine::math`), the four
//! delimiters are read as math in prose but not in code, a `$` of money stays text, and formulas
//! the converter's parser could overflow the stack on are refused before it runs. (The XSS corpus
//! inside each delimiter is `tests/engine_markdown.rs`'s `xss_inside_math_renders_nothing_active`.)

use memoire::engine::markdown::render;
use memoire::engine::math::{to_mathml, Display, MathError, MAX_TEX_BYTES};

fn corpus() -> Vec<&'static str> {
    include_str!("fixtures/math/formulas.txt")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .collect()
}

#[test]
fn every_formula_of_the_corpus_converts_in_both_modes() {
    let formulas = corpus();
    assert!(formulas.len() >= 100, "{} formulas", formulas.len());
    for tex in formulas {
        for display in [Display::Inline, Display::Block] {
            let mathml =
                to_mathml(tex, display).unwrap_or_else(|e| panic!("{tex:?} ({display:?}): {e}"));
            assert!(mathml.starts_with("<math"), "{mathml}");
            assert_eq!(
                display == Display::Block,
                mathml.starts_with("<math display=\"block\">"),
                "{mathml}"
            );
            // The TeX rides along, for copying: the annotation holds it, escaped.
            let annotation = format!(
                "<annotation encoding=\"application/x-tex\">{}</annotation>",
                escape(tex.trim())
            );
            assert!(mathml.contains(&annotation), "{tex:?}: {mathml}");
        }
    }
}

fn escape(s: &str) -> String {
    let mut out = String::new();
    memoire::engine::markdown::escape_html(&mut out, s);
    out
}

/// `input` renders with exactly these formulas, as (TeX, display).
fn check_math(input: &str, expected: &[(&str, bool)]) {
    let html = render(input);
    let mut found = Vec::new();
    let mut rest = html.as_str();
    while let Some(at) = rest.find("<code class=\"math-tex\" data-math=\"") {
        let after = &rest[at + 34..];
        let display = after.starts_with("block");
        let start = after.find('>').unwrap() + 1;
        let end = start + after[start..].find("</code>").unwrap();
        found.push((after[start..end].to_string(), display));
        rest = &after[end..];
    }
    let expected: Vec<(String, bool)> = expected.iter().map(|(t, d)| (escape(t), *d)).collect();
    assert_eq!(found, expected, "for {input:?}: {html}");
}

#[test]
fn the_four_delimiters_are_math_in_prose() {
    check_math("Euler: $e^{i\\pi}+1=0$.", &[("e^{i\\pi}+1=0", false)]);
    check_math("so \\(a^2+b^2=c^2\\) holds", &[("a^2+b^2=c^2", false)]);
    check_math("then $$\\sum_i x_i$$ ends", &[("\\sum_i x_i", true)]);
    check_math(
        "then \\[\\int_0^1 x\\,dx\\] ends",
        &[("\\int_0^1 x\\,dx", true)],
    );
    check_math("$$\n\\frac{a}{b}\n$$", &[("\\frac{a}{b}", true)]);
    check_math(
        "The formula:\n$$\n\\begin{aligned}\na &= b \\\\\n- c &= d\n\\end{aligned}\n$$\nDone.",
        &[(
            "\\begin{aligned}\na &= b \\\\\n- c &= d\n\\end{aligned}",
            true,
        )],
    );
    check_math("\\[\nx = 1\n\\]", &[("x = 1", true)]);
    check_math("$$x = 1\n+ 2$$", &[("x = 1\n+ 2", true)]);
    check_math(
        "- item with $x_1$\n- and $$y$$",
        &[("x_1", false), ("y", true)],
    );
    check_math(
        "**bold $a*b$** and *$c_d$*",
        &[("a*b", false), ("c_d", false)],
    );
    check_math("| a | b |\n|---|---|\n| $x^2$ | 1 |", &[("x^2", false)]);
    check_math("Two: $a$ and $b$.", &[("a", false), ("b", false)]);
    check_math("escaped \\$ inside $\\$5$", &[("\\$5", false)]);
    check_math("$5 and $10, then $x^2$ here", &[("x^2", false)]);
    check_math(
        "It costs $5. Broken: $\\frac{a}{$ here",
        &[("\\frac{a}{", false)],
    );
}

#[test]
fn code_keeps_its_dollars() {
    check_math("`$x$` and `\\(y\\)`", &[]);
    check_math("```\n$$\nx\n$$\n```", &[]);
    check_math("    $x$ indented code", &[]);
    check_math("`a $b` c$", &[]);
    check_math("$a `b$ c`", &[("a `b", false)]);
}

#[test]
fn money_stays_text() {
    for text in [
        "$5 and $10",
        "It costs $3.50.",
        "between $5 and $10, or $20",
        "$ 5 and $ 10",
        "I paid 5$ and 10$",
        "Prices: $1,000 to $2,000",
        "US$5 vs $10",
        "from $30,000 to $45,000 a year",
        "escaped \\$5 and \\$10",
        "a lone $",
        "$$ alone",
        "$$5 bill",
        "$5 – $10 per hour",
        "It costs $5 and $10, or \\$20.",
        "$HOME and $PATH",
    ] {
        check_math(text, &[]);
    }
    assert!(render("$5 and $10").contains("$5 and $10"));
    assert!(render("escaped \\$5").contains("escaped $5"));
}

#[test]
fn a_stray_display_opener_takes_at_most_its_paragraph() {
    check_math("$$\nx + 1\n\nText after.", &[("x + 1", true)]);
    assert!(render("$$\nx + 1\n\nText after.").contains("<p>Text after.</p>"));
}

#[test]
fn invalid_tex_is_an_error_the_pane_shows_as_code() {
    for (tex, expected) in [
        ("\\frac{a}{", "Invalid"),
        ("\\notacommand{x}", "Invalid"),
        ("\\begin{pmatrix} a", "Invalid"),
        ("   ", "Invalid"),
        ("x^", "Invalid"),
    ] {
        let err = to_mathml(tex, Display::Inline).expect_err(tex);
        assert!(format!("{err:?}").starts_with(expected), "{tex:?}: {err:?}");
        assert!(err.to_string().starts_with("This formula"), "{err}");
    }
}

#[test]
fn formulas_that_could_overflow_the_stack_are_refused_first() {
    // Each either converts or is refused before the parser runs, none overflows (natively in
    // release the crate's parser took about 3 KB of stack per open group and 1.3 KB per command of
    // a run; the limits are measured in the browser's wasm by tests/browser_math.rs). An
    // unoptimised native build's frames are larger still, hence this thread's 16 MB.
    let nested =
        |open: &str, close: &str, n: usize| format!("{}x{}", open.repeat(n), close.repeat(n));
    let cases = [
        nested("{", "}", 2_000),
        nested("\\sqrt{", "}", 500),
        nested("\\frac{1}{", "}", 500),
        nested("\\left(", "\\right)", 500),
        nested("x^{", "}", 500),
        "\\sqrt".repeat(800) + " x",
        "x".to_string() + &"^".repeat(600) + "2",
        nested("\\begin{pmatrix}", "\\end{pmatrix}", 300),
        "\\alpha ".repeat(61),
        "\\alpha + ".repeat(400),
        nested("\\mathbf{", "}", 26),
        "\\sqrt".repeat(60) + " x",
    ];
    let handle = std::thread::Builder::new()
        .stack_size(16 * 1024 * 1024)
        .spawn(move || {
            cases
                .iter()
                .map(|tex| to_mathml(tex, Display::Block).is_ok())
                .collect::<Vec<_>>()
        })
        .unwrap();
    let converted = handle.join().expect("no stack overflow");
    // The deeply nested ones were refused; a long formula and nestings within the limits convert.
    assert_eq!(
        converted,
        [false, false, false, false, false, false, false, false, false, true, true, true]
    );
    assert_eq!(
        to_mathml(&"x+".repeat(MAX_TEX_BYTES), Display::Inline),
        Err(MathError::TooLarge)
    );
}
