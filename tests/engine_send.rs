//! Whether the composer's message may go (`engine::send`), and the words of each refusal.

use memoire::engine::send::{may_send, SendRefusal, SendState, NO_ENDPOINT};

/// With the browser `online`, an endpoint set (`endpoint`) and an attachment being prepared
/// (`attaching`), Send gives `expected`.
fn check(online: bool, endpoint: bool, attaching: bool, expected: Result<(), SendRefusal>) {
    let state = SendState {
        online,
        has_endpoint: endpoint,
        attaching,
    };
    assert_eq!(may_send(state), expected, "{state:?}");
}

#[test]
fn a_message_goes_only_when_nothing_holds_it() {
    use SendRefusal::*;
    check(true, true, false, Ok(()));
    check(false, true, false, Err(Offline));
    check(false, false, true, Err(Offline));
    check(true, false, false, Err(NoEndpoint));
    check(true, false, true, Err(NoEndpoint));
    check(true, true, true, Err(StillAttaching));
}

#[test]
fn each_refusal_says_what_to_do_and_that_the_message_is_kept() {
    for refusal in [SendRefusal::Offline, SendRefusal::NoEndpoint] {
        assert!(refusal.to_string().contains("message is kept"), "{refusal}");
    }
    assert!(SendRefusal::StillAttaching
        .to_string()
        .contains("send again"));
    // The session's own endpoint check says the same words.
    assert!(SendRefusal::NoEndpoint.to_string().starts_with(NO_ENDPOINT));
    assert!(NO_ENDPOINT.contains("Open Settings"));
}
