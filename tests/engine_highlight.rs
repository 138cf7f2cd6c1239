#![cfg(not(target_arch = "wasm32"))]
//! Syntax highlighting of code blocks: one `check` per language family (the non-plain spans, as
//! `class(text)`), the fence names each language answers to, and properties over every language:
//! never a panic, the spans cover the input exactly (so their text is the input), every boundary on
//! a char boundary, no two adjacent spans of one kind.

use memoire::engine::highlight::{highlight, Kind, Lang, MAX_BYTES};
use proptest::prelude::*;

const ALL: [Lang; 16] = [
    Lang::Rust,
    Lang::Python,
    Lang::JavaScript,
    Lang::TypeScript,
    Lang::Json,
    Lang::Shell,
    Lang::C,
    Lang::Cpp,
    Lang::Go,
    Lang::Java,
    Lang::Markup,
    Lang::Css,
    Lang::Sql,
    Lang::Yaml,
    Lang::Toml,
    Lang::Diff,
];

/// The code's non-plain spans in `lang` (named by the fence word), as `kw(fn) fn(main) …`.
fn check(lang: &str, code: &str, want: &str) {
    let lang = Lang::from_name(lang).expect("a known language");
    let got = highlight(lang, code)
        .iter()
        .filter(|s| s.kind != Kind::Plain)
        .map(|s| {
            let text = code[s.start..s.end].replace('\n', "\\n");
            format!("{}({text})", &s.kind.class()[3..])
        })
        .collect::<Vec<_>>()
        .join(" ");
    assert_eq!(got, want, "{lang:?}: {code:?}");
}

#[test]
fn rust() {
    check(
        "rust",
        "fn main() { let x: u32 = 42; }",
        "kw(fn) fn(main) kw(let) ty(u32) num(42)",
    );
    check(
        "rs",
        "// hi\nlet s = \"a\\\"b\"; /* c /* d */ e */",
        r#"com(// hi) kw(let) str("a\"b") com(/* c /* d */ e */)"#,
    );
    check(
        "rust",
        "#[derive(Debug)]\nstruct Point<'a> { name: &'a str }",
        "meta(#[derive(Debug)]) kw(struct) ty(Point) meta('a) meta('a) ty(str)",
    );
    check(
        "rust",
        "println!(\"{}\", r#\"raw \"q\"\"#, b'x', 'c', '\\n', 'é', 1.5e-3, 0xFFu8)",
        r##"fn(println!) str("{}") str(r#"raw "q""#) str(b'x') str('c') str('\n') str('é') num(1.5e-3) num(0xFFu8)"##,
    );
    check(
        "rust",
        "if a != b { Some(MAX_LEN) } else { None }",
        "kw(if) fn(Some) lit(MAX_LEN) kw(else) ty(None)",
    );
    check("rust", "for i in 0..10 {}", "kw(for) kw(in) num(0) num(10)");
}

#[test]
fn python() {
    check(
        "python",
        "def greet(name):\n    return f\"hi {name}\"  # x",
        r#"kw(def) fn(greet) kw(return) str(f"hi {name}") com(# x)"#,
    );
    check(
        "py",
        "@dataclass\nclass Point:\n    x: int = 0",
        "meta(@dataclass) kw(class) ty(Point) ty(int) num(0)",
    );
    check(
        "py",
        "s = \"\"\"a\n\"b\"\n\"\"\"; t = rb'\\x00'; None",
        r#"str("""a\n"b"\n""") str(rb'\x00') lit(None)"#,
    );
}

#[test]
fn javascript_and_typescript() {
    check(
        "js",
        "const f = async (x) => { return x ?? null; };",
        "kw(const) kw(async) kw(return) lit(null)",
    );
    check(
        "javascript",
        "let s = `a ${b}\nc`; // d",
        "kw(let) str(`a ${b}\\nc`) com(// d)",
    );
    check(
        "js",
        "console.log(new Date(), 1_000);",
        "fn(log) kw(new) fn(Date) num(1_000)",
    );
    check(
        "ts",
        "interface User { id: number; name?: string }",
        "kw(interface) ty(User) ty(number) ty(string)",
    );
    check(
        "typescript",
        "export type Id = string | number;",
        "kw(export) kw(type) ty(Id) ty(string) ty(number)",
    );
}

#[test]
fn json() {
    check(
        "json",
        r#"{"name": "x", "n": 1.5, "ok": true, "v": null}"#,
        r#"key("name") str("x") key("n") num(1.5) key("ok") lit(true) key("v") lit(null)"#,
    );
    check("json", "[\"a\" , \"b\\\"\"]", r#"str("a") str("b\"")"#);
}

#[test]
fn shell() {
    check(
        "bash",
        "#!/bin/bash\nfor f in *.txt; do echo \"$f\" | grep -v x > out; done",
        r#"com(#!/bin/bash) kw(for) kw(in) kw(do) fn(echo) str("$f") fn(grep) attr(-v) kw(done)"#,
    );
    check(
        "sh",
        "export PATH=$HOME/bin:$PATH # note",
        "kw(export) var(PATH) var($HOME) var($PATH) com(# note)",
    );
    check(
        "shell",
        "x=1; echo ${x} 42 | wc -l",
        "var(x) num(1) fn(echo) var(${x}) num(42) fn(wc) attr(-l)",
    );
    check("zsh", "echo 'it''s' a#b", "fn(echo) str('it''s')");
}

#[test]
fn c_family() {
    check(
        "c",
        "#include <stdio.h>\nint main(void) { printf(\"%d\\n\", 42); return 0; }",
        r#"meta(#include <stdio.h>) ty(int) fn(main) ty(void) fn(printf) str("%d\n") num(42) kw(return) num(0)"#,
    );
    check(
        "cpp",
        "template <typename T> class Box { std::string s = nullptr; };",
        "kw(template) kw(typename) ty(T) kw(class) ty(Box) ty(string) lit(nullptr)",
    );
    check(
        "go",
        "func (s *Server) Start(ctx context.Context) error { return nil }",
        "kw(func) ty(Server) fn(Start) ty(Context) ty(error) kw(return) lit(nil)",
    );
    check("go", "x := `raw\nline` // c", "str(`raw\\nline`) com(// c)");
    check(
        "java",
        "@Override public static void main(String[] args) { System.out.println(\"hi\"); }",
        r#"meta(@Override) kw(public) kw(static) ty(void) fn(main) ty(String) ty(System) fn(println) str("hi")"#,
    );
}

#[test]
fn sql() {
    check(
        "sql",
        "SELECT name, COUNT(*) FROM users WHERE id = 'x' -- c",
        "kw(SELECT) fn(COUNT) kw(FROM) kw(WHERE) str('x') com(-- c)",
    );
    check(
        "postgres",
        "create table t (id integer primary key, v text default null);",
        "kw(create) kw(table) ty(integer) kw(primary) kw(key) ty(text) kw(default) lit(null)",
    );
}

#[test]
fn markup() {
    check(
        "html",
        "<a href=\"x\" hidden>T &amp; U</a><!-- c -->",
        r#"tag(<a) attr(href) str("x") attr(hidden) tag(>) lit(&amp;) tag(</a>) com(<!-- c -->)"#,
    );
    check(
        "html",
        "<script>if (a < b) alert(\"<x>\")</script>",
        r#"tag(<script>) kw(if) fn(alert) str("<x>") tag(</script>)"#,
    );
    check(
        "xml",
        "<?xml version=\"1.0\"?><note id='1'/>",
        r#"meta(<?xml version="1.0"?>) tag(<note) attr(id) str('1') tag(/>)"#,
    );
    check(
        "html",
        "<style>p { color: red }</style>",
        "tag(<style>p) key(color) tag(</style>)",
    );
}

#[test]
fn css() {
    check("css", ".btn:hover > a { color: #fff; margin: 0 4px !important; }", "attr(.btn) kw(:hover) tag(a) key(color) num(#fff) key(margin) num(0) num(4px) kw(!important)");
    check(
        "css",
        "@media (max-width: 600px) { body { font-family: var(--mono); } } /* c */",
        "kw(@media) num(600px) tag(body) key(font-family) fn(var) com(/* c */)",
    );
}

#[test]
fn yaml_toml_diff() {
    check(
        "yaml",
        "name: app # c\nversion: 1.2\nlist:\n  - \"a\"\n  - &x true\n---",
        r#"key(name) str(app) com(# c) key(version) num(1.2) key(list) str("a") var(&x) lit(true) meta(---)"#,
    );
    check(
        "yml",
        "url: http://x.org/a:b",
        "key(url) str(http://x.org/a:b)",
    );
    check("toml", "[package]\nname = \"memoire\" # c\nversion = 1\nopt = { a = true }\ndate = 1979-05-27T07:32:00Z", r#"meta([package]) key(name) str("memoire") com(# c) key(version) num(1) key(opt) lit(true) key(date) num(1979-05-27T07:32:00Z)"#);
    check(
        "diff",
        "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n same",
        "meta(--- a/x) meta(+++ b/x) meta(@@ -1 +1 @@) del(-old) add(+new)",
    );
}

#[test]
fn fence_names() {
    let cases = [
        ("RS", Some(Lang::Rust)),
        ("c++", Some(Lang::Cpp)),
        ("yml", Some(Lang::Yaml)),
        ("Shell", Some(Lang::Shell)),
        ("tsx", Some(Lang::TypeScript)),
        ("svg", Some(Lang::Markup)),
        ("patch", Some(Lang::Diff)),
        ("brainfuck", None),
        ("", None),
    ];
    for (name, want) in cases {
        assert_eq!(Lang::from_name(name), want, "{name}");
    }
}

#[test]
fn code_over_the_limit_stays_plain() {
    let code = "fn x() {}\n".repeat(MAX_BYTES / 10 + 1);
    let spans = highlight(Lang::Rust, &code);
    assert_eq!(spans.len(), 1);
    assert_eq!(
        (spans[0].kind, spans[0].start, spans[0].end),
        (Kind::Plain, 0, code.len())
    );
    assert!(highlight(Lang::Rust, "").is_empty());
}

/// The spans cover `code` exactly, in order, on char boundaries, adjacent kinds differ.
fn covers(lang: Lang, code: &str) {
    let spans = highlight(lang, code);
    let mut at = 0;
    let mut text = String::new();
    for (n, s) in spans.iter().enumerate() {
        assert_eq!(
            s.start, at,
            "{lang:?} gap or overlap at span {n} of {code:?}"
        );
        assert!(s.end > s.start, "{lang:?} empty span in {code:?}");
        assert!(
            code.is_char_boundary(s.end),
            "{lang:?} splits a char in {code:?}"
        );
        if n > 0 {
            assert_ne!(
                spans[n - 1].kind,
                s.kind,
                "{lang:?} unmerged spans in {code:?}"
            );
        }
        text.push_str(&code[s.start..s.end]);
        at = s.end;
    }
    assert_eq!(text, code);
}

fn arb_code() -> impl Strategy<Value = String> {
    prop_oneof![
        "\\PC{0,200}",
        "[a-zA-Z0-9 \n\t\"'`#/*\\\\<>=:{}\\[\\]$@!&;.,()|+%_?~-]{0,300}",
        "[a-z\"'#/*<>!\\[\\]{}:$=é中😀 \n-]{0,200}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]
    #[test]
    fn spans_cover_the_input_in_every_language(code in arb_code()) {
        for lang in ALL {
            covers(lang, &code);
        }
    }
}

#[test]
fn unterminated_openers_cover_the_input() {
    let openers = [
        "\"",
        "'",
        "`",
        "/*",
        "r#\"",
        "\"\"\"",
        "<!--",
        "<![CDATA[",
        "<?",
        "<a b=\"",
        "#[",
        "${",
        "<script>",
        "<style>",
        "[x",
        "'é",
        "'\\",
    ];
    for lang in ALL {
        for o in openers {
            covers(lang, o);
            covers(lang, &format!("x {o} y\nz"));
        }
    }
}
