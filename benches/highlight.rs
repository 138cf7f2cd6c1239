//! Syntax highlighting benchmark (native, median of several runs, deterministic input):
//! - `highlight_20kb_us`: the spans of a 20 KB code block, in the slowest of the languages (each
//!   language's own sample repeated to 20 KB; the slowest one is named on stderr);
//! - `highlight_max_block_us`: the same for a block of `MAX_BYTES` (32 KB), the largest the chat
//!   pane highlights.
use std::time::Instant;

use memoire::engine::highlight::{highlight, Lang, MAX_BYTES};

const RUNS: usize = 31;

const SAMPLES: &[(Lang, &str)] = &[
    (Lang::Rust, "#[derive(Debug)]\npub fn parse<'a>(s: &'a str) -> Result<u32, String> {\n    // a comment\n    let n = s.trim().parse::<u32>().map_err(|e| format!(\"{e}: {}\", s))?;\n    Ok(n * 2 + 0x1F)\n}\n"),
    (Lang::Python, "@cache\ndef fib(n: int) -> int:\n    \"\"\"Fibonacci.\"\"\"\n    return n if n < 2 else fib(n - 1) + fib(n - 2)  # slow\nprint(f\"{fib(20)}\", None)\n"),
    (Lang::JavaScript, "export async function load(url) {\n  const res = await fetch(`${url}/items?limit=${10}`);\n  if (!res.ok) throw new Error('failed: ' + res.status); // why\n  return (await res.json()).map((x) => x.id ?? null);\n}\n"),
    (Lang::TypeScript, "interface Item { id: number; name?: string }\nexport const byId = (items: Item[]): Map<number, Item> =>\n  new Map(items.map((i) => [i.id, i] as const));\n"),
    (Lang::Json, "{\"name\": \"memoire\", \"version\": 1.5, \"tags\": [\"a\", \"b\"], \"ok\": true, \"none\": null},\n"),
    (Lang::Shell, "#!/bin/sh\nfor f in \"$DIR\"/*.txt; do\n  grep -c -v '^#' \"$f\" | tee -a ${OUT:-out.log} # count\ndone\n"),
    (Lang::C, "#include <stdio.h>\nstatic int count(const char *s) {\n  int n = 0; /* letters */\n  while (*s) { if (*s++ != ' ') n++; }\n  return n;\n}\n"),
    (Lang::Cpp, "template <typename T>\nclass Stack {\n  std::vector<T> items;\npublic:\n  void push(const T& x) { items.push_back(x); } // copy\n};\n"),
    (Lang::Go, "func (s *Server) Handle(w http.ResponseWriter, r *http.Request) {\n\tif r.Method != \"GET\" { http.Error(w, `bad`, 405); return }\n\tfmt.Fprintf(w, \"%d\\n\", 42) // ok\n}\n"),
    (Lang::Java, "@Override\npublic List<String> names(int limit) {\n    return items.stream().limit(limit).map(Item::name).toList(); // names\n}\n"),
    (Lang::Markup, "<div class=\"card\" data-id='7'>\n  <!-- note -->\n  <p>Tom &amp; Jerry</p><script>let x = 1;</script>\n</div>\n"),
    (Lang::Css, ".card:hover > p, #main {\n  color: #333; margin: 0 4px 1.5em; /* spacing */\n  font-family: var(--mono) !important;\n}\n"),
    (Lang::Sql, "SELECT u.name, COUNT(*) AS n FROM users u\nJOIN orders o ON o.user_id = u.id -- orders\nWHERE u.created_at > '2024-01-01' GROUP BY u.name;\n"),
    (Lang::Yaml, "services:\n  web:\n    image: \"nginx:1.25\" # pinned\n    ports: [80, 443]\n    restart: true\n"),
    (Lang::Toml, "[dependencies]\nserde = { version = \"1\", features = [\"derive\"] } # derive\nlimit = 1_000\n"),
    (Lang::Diff, "@@ -1,4 +1,4 @@\n fn main() {\n-    println!(\"old\");\n+    println!(\"new\");\n }\n"),
];

fn block(sample: &str, bytes: usize) -> String {
    sample.repeat(bytes / sample.len() + 1)[..]
        .chars()
        .take(bytes)
        .collect()
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

/// The slowest language's median time for a block of `bytes`.
fn slowest(bytes: usize) -> (f64, Lang) {
    let mut worst = (0.0, Lang::Rust);
    for &(lang, sample) in SAMPLES {
        let code = block(sample, bytes);
        let mut spans = 0;
        let us = median_us(|| spans += highlight(lang, std::hint::black_box(&code)).len());
        assert!(spans > 0);
        if us > worst.0 {
            worst = (us, lang);
        }
    }
    worst
}

fn main() {
    let (us, lang) = slowest(20_000);
    eprintln!("highlight 20 KB: slowest {lang:?}");
    println!("bench highlight_20kb_us {us:.0} us");
    let (us, lang) = slowest(MAX_BYTES);
    eprintln!("highlight {MAX_BYTES} B: slowest {lang:?}");
    println!("bench highlight_max_block_us {us:.0} us");
}
