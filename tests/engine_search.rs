#![cfg(not(target_arch = "wasm32"))]
//! The search index's rules (issue 16): the terms a text is indexed under, query words, the word whose
//! range is read, the prefix range, and the match.

use memoire::engine::search::{
    index_terms, key_word, matches, prefix_range, query_words, MAX_TERMS, MAX_TERM_CHARS,
};

fn check_terms(text: &str, want: &[&str]) {
    assert_eq!(index_terms(text), want, "terms of {text:?}");
}

fn check_match(text: &str, query: &str, want: bool) {
    let got = matches(&index_terms(text), &query_words(query));
    assert_eq!(got, want, "{query:?} in {text:?}");
}

#[test]
fn terms() {
    check_terms("", &[]);
    check_terms("Hello, hello WORLD!", &["hello", "world"]);
    check_terms(
        "We met in PARIS last spring",
        &["in", "last", "met", "paris", "spring", "we"],
    );
    check_terms("C++ and C# differ", &["and", "c#", "c++", "differ"]);
    check_terms("Crème brûlée", &["brûlée", "crème"]);
    check_terms(
        "東京に行きました",
        &["き", "し", "た", "に", "ま", "京", "東", "行"],
    );
    check_terms("ÉCOLE", &["école"]);
}

#[test]
fn long_words_and_huge_texts_are_bounded() {
    let long = "x".repeat(100);
    assert_eq!(index_terms(&long), ["x".repeat(MAX_TERM_CHARS)]);
    check_match(&long, &long, true);
    let many: String = (0..5000).map(|i| format!("w{i} ")).collect();
    let t = index_terms(&many);
    assert_eq!(t.len(), MAX_TERMS);
    assert!(t.contains(&"w0".to_string()) && !t.contains(&"w4999".to_string()));
}

#[test]
fn queries() {
    assert_eq!(
        query_words("  Grow on TREES  trees "),
        ["grow", "on", "trees"]
    );
    assert!(query_words(" ,.; ").is_empty());
    assert_eq!(key_word(&query_words("grow on trees")), Some("trees"));
    assert_eq!(
        key_word(&query_words("ab cd")),
        Some("ab"),
        "ties: the first typed"
    );
    assert_eq!(key_word(&[]), None);
    let (lo, hi) = prefix_range("par");
    assert!(lo.as_str() <= "par" && "paris" < hi.as_str() && "pas" > hi.as_str());
}

#[test]
fn matching() {
    check_match("We met in PARIS last spring", "paris", true);
    check_match("We met in PARIS last spring", "par", true);
    check_match("We met in PARIS last spring", "spring paris", true);
    check_match("We met in PARIS last spring", "aris", false);
    check_match("We met in PARIS last spring", "paris autumn", false);
    check_match("Apples grow on trees.", "grow on trees", true);
    check_match("Apples grow on trees.", "", false);
    check_match("東京に行きました", "東京", true);
    check_match("Crème brûlée", "CRÈME", true);
}
