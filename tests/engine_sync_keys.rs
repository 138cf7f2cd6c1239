#![cfg(not(target_arch = "wasm32"))]
//! The passphrase's strength (`engine::sync::keys`, issue 43): the estimate, the hint under the
//! field and the floor a new key is held to; and when a database without a marker may get a key. The derivations are `tests/engine_sync_seal.rs`'s
//! (the marker that names them).

use memoire::engine::sync::keys::{
    hint, new_key_check, strength, without_marker, Level, NoMarker, MIN_BITS,
};

fn check(p: &str, want: Level) {
    let s = strength(p);
    assert_eq!(s.level, want, "{p:?}: {} bits", s.bits);
    assert_eq!(new_key_check(p).is_ok(), want != Level::Weak, "{p:?}");
}

#[test]
fn a_passphrase_is_weak_fair_or_strong_by_an_honest_estimate() {
    check("", Level::Weak);
    check("password", Level::Weak);
    check("Password123!", Level::Weak);
    check("passphrase", Level::Weak);
    check("aaaaaaaaaaaaaaaaaaaa", Level::Weak);
    check("1234567890123456", Level::Weak);
    check("abcdefghijklmnopqrstuvwxyz", Level::Weak);
    // One word counts as a dictionary word, whatever its length.
    check("extraordinarily", Level::Weak);
    // A word written with digits for letters is still a word.
    check("Tr0ub4dor&3", Level::Weak);
    check("7Hq%2mZ", Level::Fair);
    // Four words: about 54 bits (Diceware's four words are 51.7), six strong.
    check("correct horse battery staple", Level::Fair);
    check("violet tractor mumble pancake", Level::Fair);
    check("violet tractor mumble pancake harbour zinc", Level::Strong);
    check("a bench passphrase, long enough", Level::Strong);
    check("k8#Qz!v2Lp@9wR", Level::Strong);
    check("mañana café über naïve", Level::Fair);
}

#[test]
fn the_hint_says_how_strong_and_what_to_do() {
    let weak = hint(strength("password"));
    assert!(
        weak.starts_with("Too easy to guess")
            && weak.contains(&format!("needs {MIN_BITS} (one already made")),
        "{weak}"
    );
    assert!(weak.contains("several unrelated words"), "{weak}");
    assert!(hint(strength("violet tractor mumble pancake")).starts_with("Fair (about 5"));
    assert!(hint(strength("k8#Qz!v2Lp@9wR")).starts_with("Strong (about"));
    let refused = new_key_check("qwerty").unwrap_err();
    assert!(
        refused.contains("too easy to guess") && refused.contains("new encrypted database"),
        "{refused}"
    );
}

fn check_no_marker(sealed: bool, passphrase: Option<&str>, want: Result<(), NoMarker>) {
    let got = without_marker(sealed, passphrase).map_err(|e| match e {
        NoMarker::Weak(_) => NoMarker::Weak(String::new()),
        e => e,
    });
    assert_eq!(got, want, "{sealed} {passphrase:?}");
}

/// Issue 43, item 4: a database without a marker that holds sealed documents never gets a new
/// key, whatever is typed; an empty one gets one from a typed passphrase over the floor only.
#[test]
fn a_database_without_a_marker_gets_a_new_key_only_when_it_holds_nothing_sealed() {
    let good = Some("violet tractor mumble pancake");
    check_no_marker(true, good, Err(NoMarker::Missing));
    check_no_marker(true, None, Err(NoMarker::Missing));
    check_no_marker(true, Some("password"), Err(NoMarker::Missing));
    check_no_marker(false, good, Ok(()));
    check_no_marker(false, None, Err(NoMarker::NeedPassphrase));
    check_no_marker(false, Some(""), Err(NoMarker::NeedPassphrase));
    check_no_marker(false, Some("password"), Err(NoMarker::Weak(String::new())));
}
