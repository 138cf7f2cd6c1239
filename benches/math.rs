//! Math benchmark (native, median of several runs, deterministic input):
//! - `render_math_200_formulas_ms`: a finished reply with 200 formulas (100 inline, 100 display,
//!   from `tests/fixtures/math/formulas.txt`, in prose) rendered as the chat pane renders it: the
//!   markdown (formulas as code), then every formula to MathML through the allow-list
//!   (`engine::math::to_mathml`, what the split point `math` runs). The DOM's part (setting each
//!   formula's markup, Chromium's layout of MathML) is not in it. The machine's load average is
//!   printed after the unit.
use std::time::Instant;

use memoire::engine::markdown::render;
use memoire::engine::math::{to_mathml, Display};

const RUNS: usize = 15;

fn reply() -> String {
    let formulas: Vec<&str> = include_str!("../tests/fixtures/math/formulas.txt")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .collect();
    let mut out = String::from("Here is the working, step by step.\n\n");
    for i in 0..100 {
        let inline = formulas[i % formulas.len()];
        let display = formulas[(i * 7 + 3) % formulas.len()];
        out.push_str(&format!(
            "Step {i}: with ${inline}$ in mind, the next line follows.\n\n$$\n{display}\n$$\n\n"
        ));
    }
    out
}

/// The formulas of rendered markdown: (TeX, display), unescaped as the DOM's text would be.
fn formulas(html: &str) -> Vec<(String, Display)> {
    let mut found = Vec::new();
    let mut rest = html;
    while let Some(at) = rest.find("<code class=\"math-tex\" data-math=\"") {
        let after = &rest[at + 34..];
        let display = if after.starts_with("block") {
            Display::Block
        } else {
            Display::Inline
        };
        let start = after.find('>').unwrap() + 1;
        let end = start + after[start..].find("</code>").unwrap();
        let tex = after[start..end]
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&#39;", "'")
            .replace("&amp;", "&");
        found.push((tex, display));
        rest = &after[end..];
    }
    found
}

fn main() {
    let text = reply();
    let mut times: Vec<f64> = (0..RUNS)
        .map(|_| {
            let t = Instant::now();
            let html = render(std::hint::black_box(&text));
            let found = formulas(&html);
            assert_eq!(found.len(), 200);
            let bytes: usize = found
                .iter()
                .map(|(tex, d)| to_mathml(tex, *d).expect("the corpus converts").len())
                .sum();
            std::hint::black_box(bytes);
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(|a, b| a.total_cmp(b));
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load = load.split_whitespace().next().unwrap_or("?");
    println!(
        "bench render_math_200_formulas_ms {:.1} ms (load {load})",
        times[RUNS / 2]
    );
}
