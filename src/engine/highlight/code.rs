//! The C-family lexer and its tables: Rust, Python, JavaScript, TypeScript, JSON, C, C++, Go, Java
//! and SQL differ only in their words, comments, quotes and a few marks (attributes, decorators,
//! lifetimes, string prefixes), so one table-driven pass serves them all.
//! Must not import anything outside `crate::engine::highlight`.

use super::{
    at, is_ident, is_ident_start, is_in, line_end, next_nonspace, number_end, past, run_end,
    string_end, Kind, Lang, Out,
};

/// What a language's source looks like to the lexer.
pub(super) struct Syntax {
    keywords: &'static [&'static [&'static str]],
    types: &'static [&'static [&'static str]],
    literals: &'static [&'static str],
    /// Starts a comment to the end of the line (`//`, `#`, `--`); empty for none.
    line_comment: &'static str,
    /// `/* … */` comments (nested in Rust).
    block_comment: bool,
    quotes: &'static [u8],
    /// `"` strings may span lines (Rust, Go's are single-line; backticks always may).
    multiline: bool,
    /// Python's `"""` and `'''` strings and string prefixes (`r`, `b`, `f`, `rb`, …).
    python: bool,
    /// Rust's attributes (`#[…]`), lifetimes (`'a`), macros (`name!`), raw and byte strings.
    rust: bool,
    /// `#` at the start of a line is a preprocessor line (C, C++).
    preprocessor: bool,
    /// `@name` is a decorator or annotation (Python, Java, TypeScript, JavaScript).
    decorators: bool,
    /// Words match in any case (SQL).
    any_case: bool,
    /// A `CapitalWord` is a type and an `ALL_CAPS` word a constant.
    capitals: bool,
    /// A string followed by `:` is a key (JSON).
    keys: bool,
}

const NONE: Syntax = Syntax {
    keywords: &[],
    types: &[],
    literals: &[],
    line_comment: "//",
    block_comment: true,
    quotes: b"\"'",
    multiline: false,
    python: false,
    rust: false,
    preprocessor: false,
    decorators: false,
    any_case: false,
    capitals: true,
    keys: false,
};

#[rustfmt::skip]
const RUST_KW: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern",
    "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref",
    "return", "self", "Self", "static", "struct", "super", "trait", "type", "unsafe", "use",
    "where", "while", "yield",
];
#[rustfmt::skip]
const RUST_TY: &[&str] = &[
    "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize", "f32",
    "f64", "bool", "char", "str",
];
#[rustfmt::skip]
const PY_KW: &[&str] = &[
    "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del", "elif",
    "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda",
    "nonlocal", "not", "or", "pass", "raise", "return", "try", "while", "with", "yield", "match",
    "case", "self",
];
#[rustfmt::skip]
const PY_TY: &[&str] = &[
    "int", "float", "str", "bool", "list", "dict", "set", "tuple", "bytes", "object", "type",
];
#[rustfmt::skip]
const JS_KW: &[&str] = &[
    "async", "await", "break", "case", "catch", "class", "const", "continue", "debugger", "default",
    "delete", "do", "else", "export", "extends", "finally", "for", "from", "function", "if",
    "import", "in", "instanceof", "let", "new", "of", "return", "static", "super", "switch", "this",
    "throw", "try", "typeof", "var", "void", "while", "with", "yield",
];
#[rustfmt::skip]
const TS_KW: &[&str] = &[
    "abstract", "as", "declare", "enum", "implements", "infer", "interface", "is", "keyof",
    "namespace", "private", "protected", "public", "readonly", "satisfies", "type",
];
#[rustfmt::skip]
const TS_TY: &[&str] = &[
    "any", "bigint", "boolean", "never", "number", "object", "string", "symbol", "unknown",
];
const JS_LIT: &[&str] = &["true", "false", "null", "undefined", "NaN", "Infinity"];
#[rustfmt::skip]
const C_KW: &[&str] = &[
    "auto", "break", "case", "const", "continue", "default", "do", "else", "enum", "extern", "for",
    "goto", "if", "inline", "register", "restrict", "return", "sizeof", "static", "struct",
    "switch", "typedef", "union", "volatile", "while",
];
#[rustfmt::skip]
const C_TY: &[&str] = &[
    "char", "double", "float", "int", "long", "short", "signed", "unsigned", "void", "bool",
    "size_t", "ssize_t", "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t",
    "uint32_t", "uint64_t", "FILE",
];
#[rustfmt::skip]
const CPP_KW: &[&str] = &[
    "alignas", "alignof", "catch", "class", "concept", "constexpr", "consteval", "const_cast",
    "co_await", "co_return", "co_yield", "decltype", "delete", "dynamic_cast", "explicit", "export",
    "final", "friend", "mutable", "namespace", "new", "noexcept", "operator", "override", "private",
    "protected", "public", "reinterpret_cast", "requires", "static_assert", "static_cast",
    "template", "this", "thread_local", "throw", "try", "typename", "using", "virtual",
];
const CPP_TY: &[&str] = &["wchar_t", "char8_t", "char16_t", "char32_t", "string"];
#[rustfmt::skip]
const GO_KW: &[&str] = &[
    "break", "case", "chan", "const", "continue", "default", "defer", "else", "fallthrough", "for",
    "func", "go", "goto", "if", "import", "interface", "map", "package", "range", "return",
    "select", "struct", "switch", "type", "var",
];
#[rustfmt::skip]
const GO_TY: &[&str] = &[
    "bool", "byte", "complex64", "complex128", "error", "float32", "float64", "int", "int8",
    "int16", "int32", "int64", "rune", "string", "uint", "uint8", "uint16", "uint32", "uint64",
    "uintptr", "any",
];
#[rustfmt::skip]
const JAVA_KW: &[&str] = &[
    "abstract", "assert", "break", "case", "catch", "class", "continue", "default", "do", "else",
    "enum", "extends", "final", "finally", "for", "if", "implements", "import", "instanceof",
    "interface", "native", "new", "package", "permits", "private", "protected", "public", "record",
    "return", "sealed", "static", "super", "switch", "synchronized", "this", "throw", "throws",
    "transient", "try", "var", "volatile", "while", "yield",
];
#[rustfmt::skip]
const JAVA_TY: &[&str] = &[
    "boolean", "byte", "char", "double", "float", "int", "long", "short", "void",
];
#[rustfmt::skip]
const SQL_KW: &[&str] = &[
    "add", "all", "alter", "and", "as", "asc", "begin", "between", "by", "case", "cascade", "check",
    "column", "commit", "constraint", "create", "cross", "default", "delete", "desc", "distinct",
    "drop", "else", "end", "exists", "foreign", "from", "full", "group", "having", "if", "in",
    "index", "inner", "insert", "into", "is", "join", "key", "left", "like", "limit", "not",
    "offset", "on", "or", "order", "outer", "over", "partition", "primary", "references",
    "returning", "right", "rollback", "select", "set", "table", "then", "transaction", "union",
    "unique", "update", "using", "values", "view", "when", "where", "with",
];
#[rustfmt::skip]
const SQL_TY: &[&str] = &[
    "bigint", "blob", "boolean", "char", "date", "decimal", "double", "float", "int", "integer",
    "json", "jsonb", "numeric", "real", "serial", "smallint", "text", "time", "timestamp",
    "timestamptz", "uuid", "varchar",
];

/// The table of Rust.
const RUST: Syntax = Syntax {
    keywords: &[RUST_KW],
    types: &[RUST_TY],
    literals: &["true", "false"],
    multiline: true,
    rust: true,
    ..NONE
};

/// The table of Python.
const PYTHON: Syntax = Syntax {
    keywords: &[PY_KW],
    types: &[PY_TY],
    literals: &["True", "False", "None"],
    line_comment: "#",
    block_comment: false,
    python: true,
    decorators: true,
    ..NONE
};

/// The table of JavaScript.
const JS: Syntax = Syntax {
    keywords: &[JS_KW],
    literals: JS_LIT,
    quotes: b"\"'`",
    decorators: true,
    ..NONE
};

/// The table of TypeScript: JavaScript with its own keywords and types.
const TS: Syntax = Syntax {
    keywords: &[JS_KW, TS_KW],
    types: &[TS_TY],
    ..JS
};

/// The table of JSON: literals, strings and keys only.
const JSON: Syntax = Syntax {
    literals: &["true", "false", "null"],
    quotes: b"\"",
    capitals: false,
    keys: true,
    ..NONE
};

/// The table of C.
const C: Syntax = Syntax {
    keywords: &[C_KW],
    types: &[C_TY],
    literals: &["NULL", "true", "false"],
    preprocessor: true,
    ..NONE
};

/// The table of C++: C with its own keywords, types and literals.
const CPP: Syntax = Syntax {
    keywords: &[C_KW, CPP_KW],
    types: &[C_TY, CPP_TY],
    literals: &["NULL", "nullptr", "true", "false"],
    ..C
};

/// The table of Go.
const GO: Syntax = Syntax {
    keywords: &[GO_KW],
    types: &[GO_TY],
    literals: &["true", "false", "nil", "iota"],
    quotes: b"\"'`",
    ..NONE
};

/// The table of Java.
const JAVA: Syntax = Syntax {
    keywords: &[JAVA_KW],
    types: &[JAVA_TY],
    literals: &["true", "false", "null"],
    decorators: true,
    ..NONE
};

/// The table of SQL, its words in any case.
const SQL: Syntax = Syntax {
    keywords: &[SQL_KW],
    types: &[SQL_TY],
    literals: &["null", "true", "false"],
    line_comment: "--",
    quotes: b"'\"`",
    any_case: true,
    capitals: false,
    ..NONE
};

/// The table of a C-family language (the other languages have lexers of their own).
pub(super) fn syntax(lang: Lang) -> &'static Syntax {
    match lang {
        Lang::Rust => &RUST,
        Lang::Python => &PYTHON,
        Lang::JavaScript => &JS,
        Lang::TypeScript => &TS,
        Lang::Json => &JSON,
        Lang::C => &C,
        Lang::Cpp => &CPP,
        Lang::Go => &GO,
        Lang::Java => &JAVA,
        Lang::Sql => &SQL,
        _ => &NONE,
    }
}

/// After `fn`, `def`, `class` …: the next word names a function or a type.
const NAMES_FUNCTION: &[&str] = &["fn", "def", "function", "func"];
#[rustfmt::skip]
const NAMES_TYPE: &[&str] = &[
    "class", "struct", "enum", "trait", "interface", "type", "union",
];

/// Lexes `s[i..end]` with `syn`.
pub(super) fn lex(s: &[u8], mut i: usize, end: usize, syn: &Syntax, out: &mut Out) {
    let mut line_start = true;
    let mut naming = None::<Kind>;
    while i < end {
        let b = s[i];
        if matches!(b, b' ' | b'\t' | b'\r' | b'\n') {
            line_start |= b == b'\n';
            out.push(Kind::Plain, i, i + 1);
            i += 1;
            continue;
        }
        let first = std::mem::take(&mut line_start);
        let rest = &s[i..end];
        let (kind, j) =
            if !syn.line_comment.is_empty() && rest.starts_with(syn.line_comment.as_bytes()) {
                (Kind::Comment, line_end(s, i, end))
            } else if syn.block_comment && rest.starts_with(b"/*") {
                (Kind::Comment, block_comment_end(s, i + 2, end, syn.rust))
            } else if syn.preprocessor && b == b'#' && first {
                (Kind::Meta, line_end(s, i, end))
            } else if syn.rust && b == b'#' && matches!(at(s, i + 1, end), Some(b'[' | b'!')) {
                (Kind::Meta, bracket_end(s, i, end))
            } else if syn.decorators && b == b'@' && at(s, i + 1, end).is_some_and(is_ident_start) {
                (
                    Kind::Meta,
                    run_end(s, i + 1, end, |c| is_ident(c) || c == b'.'),
                )
            } else if syn.python && (rest.starts_with(b"\"\"\"") || rest.starts_with(b"'''")) {
                (Kind::String, past(s, i + 3, end, &rest[..3]))
            } else if syn.rust && b == b'\'' {
                rust_quote(s, i, end)
            } else if syn.quotes.contains(&b) {
                let j = string_end(s, i + 1, end, b, syn.multiline || b == b'`', true);
                let key = syn.keys && next_nonspace(s, j, end) == Some(b':');
                (if key { Kind::Key } else { Kind::String }, j)
            } else if b.is_ascii_digit()
                || (b == b'.'
                    && at(s, i + 1, end).is_some_and(|d| d.is_ascii_digit())
                    && (i == 0 || s[i - 1] != b'.'))
            {
                (Kind::Number, number_end(s, i, end))
            } else if is_ident_start(b) {
                let j = run_end(s, i, end, is_ident);
                let (kind, j) = prefixed_string(s, i, j, end, syn)
                    .unwrap_or_else(|| word(s, i, j, end, syn, naming));
                naming = if kind != Kind::Keyword {
                    None
                } else if is_in(NAMES_FUNCTION, &s[i..j], false) {
                    Some(Kind::Function)
                } else if is_in(NAMES_TYPE, &s[i..j], false) {
                    Some(Kind::Type)
                } else {
                    None
                };
                out.push(kind, i, j);
                i = j;
                continue;
            } else {
                (Kind::Plain, i + 1)
            };
        naming = None;
        out.push(kind, i, j);
        i = j;
    }
}

/// What the word `s[i..j]` is.
fn word(
    s: &[u8],
    i: usize,
    j: usize,
    end: usize,
    syn: &Syntax,
    naming: Option<Kind>,
) -> (Kind, usize) {
    let w = &s[i..j];
    let any = syn.any_case;
    let next = at(s, j, end);
    let kind = if syn.keywords.iter().any(|k| is_in(k, w, any)) {
        Kind::Keyword
    } else if is_in(syn.literals, w, any) {
        Kind::Literal
    } else if let Some(k) = naming {
        k
    } else if syn.types.iter().any(|t| is_in(t, w, any)) {
        Kind::Type
    } else if syn.rust && next == Some(b'!') && at(s, j + 1, end) != Some(b'=') {
        return (Kind::Function, j + 1);
    } else if next == Some(b'(') {
        Kind::Function
    } else if syn.capitals && w[0].is_ascii_uppercase() {
        let caps = w.iter().all(|c| !c.is_ascii_lowercase());
        if caps && w.len() > 1 {
            Kind::Literal
        } else {
            Kind::Type
        }
    } else {
        Kind::Plain
    };
    (kind, j)
}

/// A string that starts with a prefix word: Python's `r"…"`, `f'…'`, `rb"""…"""`; Rust's `b"…"`,
/// `b'x'`, `r"…"`, `r#"…"#`, `br#"…"#`.
fn prefixed_string(
    s: &[u8],
    i: usize,
    j: usize,
    end: usize,
    syn: &Syntax,
) -> Option<(Kind, usize)> {
    let w = &s[i..j];
    let q = at(s, j, end)?;
    if syn.python {
        let prefix = w.len() <= 2 && w.iter().all(|c| b"rRbBfFuU".contains(c));
        if !prefix || !matches!(q, b'"' | b'\'') {
            return None;
        }
        let triple = s[j..end].starts_with(&[q, q, q]);
        let k = if triple {
            past(s, j + 3, end, &[q, q, q])
        } else {
            string_end(s, j + 1, end, q, false, true)
        };
        return Some((Kind::String, k));
    }
    if !syn.rust {
        return None;
    }
    match (w, q) {
        (b"b", b'\'') => Some((Kind::String, string_end(s, j + 1, end, b'\'', false, true))),
        (b"b" | b"c", b'"') => Some((Kind::String, string_end(s, j + 1, end, b'"', true, true))),
        (b"r" | b"br" | b"cr", b'"' | b'#') => {
            let hashes = run_end(s, j, end, |c| c == b'#') - j;
            if at(s, j + hashes, end) != Some(b'"') {
                return None;
            }
            let mut close = vec![b'"'];
            close.resize(hashes + 1, b'#');
            Some((Kind::String, past(s, j + hashes + 1, end, &close)))
        }
        _ => None,
    }
}

/// Rust's `'`: a char literal (`'a'`, `'\n'`, `'é'`), a lifetime (`'a`), or a lone quote.
fn rust_quote(s: &[u8], i: usize, end: usize) -> (Kind, usize) {
    let Some(c) = at(s, i + 1, end) else {
        return (Kind::Plain, i + 1);
    };
    if c == b'\\' {
        return (Kind::String, string_end(s, i + 1, end, b'\'', false, true));
    }
    let len = match c {
        0xf0.. => 4,
        0xe0.. => 3,
        0xc0.. => 2,
        _ => 1,
    };
    if at(s, i + 1 + len, end) == Some(b'\'') {
        (Kind::String, i + 2 + len)
    } else if is_ident_start(c) {
        (Kind::Meta, run_end(s, i + 1, end, is_ident))
    } else {
        (Kind::Plain, i + 1)
    }
}

/// Just past the `*/` that closes a comment whose body starts at `k` (nested ones counted).
fn block_comment_end(s: &[u8], mut k: usize, end: usize, nested: bool) -> usize {
    let mut depth = 1;
    while k < end {
        if s[k..end].starts_with(b"*/") {
            depth -= 1;
            k += 2;
            if depth == 0 {
                return k;
            }
        } else if nested && s[k..end].starts_with(b"/*") {
            depth += 1;
            k += 2;
        } else {
            k += 1;
        }
    }
    end
}

/// Just past the `]` that closes a Rust attribute starting at `k` (`#[…]`, `#![…]`), or the end of
/// its line when none does.
fn bracket_end(s: &[u8], k: usize, end: usize) -> usize {
    let mut depth = 0usize;
    for (n, &c) in s[k..end].iter().enumerate() {
        match c {
            b'[' => depth += 1,
            b'\n' if depth == 0 => return k + n,
            b']' if depth <= 1 => return k + n + 1,
            b']' => depth -= 1,
            _ => {}
        }
    }
    line_end(s, k, end)
}
