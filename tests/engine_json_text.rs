//! The shared JSON text scanner: depth, array splitting, string spans (closed, cut off, escaped),
//! and, for any JSON value, string spans that parse back to exactly the value's strings.

#![cfg(not(target_arch = "wasm32"))]

use memoire::engine::json_text::{max_depth, split_array, tokens, Token};
use proptest::prelude::*;
use serde_json::Value;

fn check_depth(text: &str, expected: usize) {
    assert_eq!(max_depth(text.as_bytes()), expected, "{text}");
}

#[test]
fn depth_counts_containers_outside_strings() {
    check_depth("", 0);
    check_depth("42", 0);
    check_depth("[]", 1);
    check_depth(r#"{"a":[{"b":[]}]}"#, 4);
    check_depth(r#"["[[[[", "\"[[["]"#, 1);
    check_depth(r#"[[["\\"]]]"#, 3);
    check_depth("[[[", 3);
}

fn check_split(text: &str, expected: &[&str], closed: bool) {
    let (elems, was_closed) = split_array(text);
    let trimmed: Vec<&str> = elems.iter().map(|e| e.trim()).collect();
    assert_eq!(
        (trimmed.as_slice(), was_closed),
        (expected, closed),
        "{text}"
    );
}

#[test]
fn arrays_split_at_top_level_commas_only() {
    check_split("[1, 2]", &["1", "2"], true);
    check_split(
        r#"[{"a":1,"b":[2,3]}, "x,y"]"#,
        &[r#"{"a":1,"b":[2,3]}"#, r#""x,y""#],
        true,
    );
    check_split(r#"[{"a":1}, {"b":"#, &[r#"{"a":1}"#, r#"{"b":"#], false);
    check_split("[]", &[""], true);
    check_split("[", &[""], false);
    check_split("é[1]", &[], false);
    check_split("", &[], false);
}

fn check_strings(text: &str, expected: &[(&str, bool)]) {
    let found: Vec<(&str, bool)> = tokens(text.as_bytes())
        .filter_map(|t| match t {
            Token::Str { start, end, closed } => Some((&text[start..end], closed)),
            Token::Byte(..) => None,
        })
        .collect();
    assert_eq!(found, expected, "{text}");
}

#[test]
fn strings_are_closed_only_by_an_unescaped_quote() {
    check_strings(r#"{"a": "b"}"#, &[(r#""a""#, true), (r#""b""#, true)]);
    check_strings(r#"["say \"hi\""]"#, &[(r#""say \"hi\"""#, true)]);
    check_strings(r#"["back\\"]"#, &[(r#""back\\""#, true)]);
    check_strings(r#"["cut"#, &[(r#""cut"#, false)]);
    check_strings(r#"["cut\"#, &[(r#""cut\"#, false)]);
    check_strings(r#"["cut\""#, &[(r#""cut\""#, false)]);
    check_strings(r#"""#, &[(r#"""#, false)]);
    check_strings(r#""""#, &[(r#""""#, true)]);
}

fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(Value::from),
        any::<String>().prop_map(Value::String),
        "[\"\\\\\\[\\]{},: \n\t]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("[a-z\"\\\\]{0,4}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn strings_of(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| strings_of(x, out)),
        Value::Object(o) => o.iter().for_each(|(k, x)| {
            out.push(k.clone());
            strings_of(x, out);
        }),
        _ => {}
    }
}

fn depth_of(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(depth_of).max().unwrap_or(0),
        Value::Object(o) => 1 + o.values().map(depth_of).max().unwrap_or(0),
        _ => 0,
    }
}

proptest! {
    #[test]
    fn string_spans_and_depth_agree_with_serde(v in json(), pretty in any::<bool>()) {
        let text = if pretty { serde_json::to_string_pretty(&v) } else { serde_json::to_string(&v) }.unwrap();
        let mut expected = Vec::new();
        strings_of(&v, &mut expected);
        let found: Vec<String> = tokens(text.as_bytes())
            .filter_map(|t| match t {
                Token::Str { start, end, closed } => {
                    assert!(closed);
                    Some(serde_json::from_str::<String>(&text[start..end]).unwrap())
                }
                Token::Byte(..) => None,
            })
            .collect();
        prop_assert_eq!(found, expected);
        prop_assert_eq!(max_depth(text.as_bytes()), depth_of(&v));
    }

    #[test]
    fn any_bytes_are_walked_to_the_end(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let mut last = 0;
        for t in tokens(&bytes) {
            let (at, end) = match t {
                Token::Byte(i, _) => (i, i + 1),
                Token::Str { start, end, .. } => (start, end),
            };
            prop_assert!(at >= last && end <= bytes.len() && end > at);
            last = end;
        }
        if let Ok(text) = std::str::from_utf8(&bytes) {
            let _ = split_array(text);
        }
    }
}
