//! Markdown against the specification (native, deterministic):
//! - `markdown_commonmark_pass_rate`: the share of the CommonMark spec's examples and GFM's table and
//!   strikethrough examples that our renderer writes as the spec says, raw-HTML policy examples
//!   aside (`tests/engine_commonmark.rs` says how they are compared, and holds the floors).

#[path = "../tests/engine_commonmark.rs"]
#[allow(dead_code)]
mod spec;

/// The spec test (and so this bench) is native only.
#[cfg(target_arch = "wasm32")]
fn main() {}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    let tallies = spec::tally(&spec::examples());
    println!(
        "bench markdown_commonmark_pass_rate {:.3} ratio",
        spec::pass_rate(&tallies)
    );
}
