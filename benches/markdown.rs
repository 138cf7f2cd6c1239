//! Markdown benchmark (native, median of several runs, deterministic input):
//! - `markdown_render_20kb_us`: `render_streaming` of a 20 KB chat reply with every feature the chat
//!   pane shows (headings, lists, nested lists, code blocks, tables, quotes, links, emphasis). The chat
//!   pane re-renders the whole streaming reply on every animation frame, so this is per-frame work.
use std::time::Instant;

use memoire::engine::markdown::render_streaming;

const RUNS: usize = 101;

const SECTION: &str = "## Step {n}: configure the *service*\n\n\
Here is what **this step** does, with `inline code`, a [link](https://example.com/docs?id={n} \"Docs\") \
and an autolink <https://example.org/{n}>. Some_snake_case words, 2 * 3 * 4 maths, and ~~old~~ text.\n\n\
1. First, install the **dependencies**:\n   ```sh\n   cargo add serde --features derive\n   ```\n\
2. Then edit `Cargo.toml`:\n   - set `edition = \"2021\"`\n   - add *optional* features\n\
3. Finally run the tests.\n\n\
> **Note:** entities like &amp; &copy; &mdash; and escapes \\* stay text; <b>raw html</b> too.\n\
> A second quoted line.\n\n\
| Option | Default | Meaning |\n|:--|:-:|--:|\n| `timeout` | 30 | seconds before giving up |\n| `retries` | 3 | attempts |\n\n\
```rust\nfn main() {\n    let x = vec![1, 2, 3];\n    println!(\"{:?}\", x.iter().map(|v| v * 2).collect::<Vec<_>>());\n}\n```\n\n\
- a tight item\n- another item with ![an image](https://example.com/i.png)\n  - nested *item*\n\n---\n\n";

fn reply(bytes: usize) -> String {
    let mut s = String::new();
    let mut n = 0;
    while s.len() < bytes {
        s.push_str(&SECTION.replace("{n}", &n.to_string()));
        n += 1;
    }
    s
}

fn median_us(mut f: impl FnMut()) -> f64 {
    let mut times: Vec<f64> = (0..RUNS)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    times.sort_by(|a, b| a.total_cmp(b));
    times[RUNS / 2]
}

fn main() {
    let doc = reply(20_000);
    let mut total = 0;
    let us = median_us(|| total += render_streaming(std::hint::black_box(&doc)).len());
    assert!(total > 0);
    println!("bench markdown_render_20kb_us {us:.0} us");
}
