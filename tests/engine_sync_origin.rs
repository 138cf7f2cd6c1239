#![cfg(not(target_arch = "wasm32"))]
//! `engine::sync::origin`: the `Basic` credentials sync sends (the password's origin rules are
//! checked in `engine_sync_seal.rs` with the rest of what the server may see).

use memoire::engine::sync::origin::basic_auth;

fn check(user: &str, password: &str, want: Option<&str>) {
    assert_eq!(
        basic_auth(user, password).as_deref(),
        want,
        "{user}:{password}"
    );
}

#[test]
#[rustfmt::skip]
fn basic_credentials_are_the_utf8_bytes_in_base64_and_none_without_a_user() {
    check("", "secret", None);
    check("", "", None);
    check("admin", "", Some("Basic YWRtaW46"));
    check("admin", "secret", Some("Basic YWRtaW46c2VjcmV0"));
    check("Aladdin", "open sesame", Some("Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="));
    check("zoë", "pässwörd", Some("Basic em/Dqzpww6Rzc3fDtnJk"));
    check("a:b", "c", Some("Basic YTpiOmM="));
}
