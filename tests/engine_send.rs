//! Whether the composer's message may go (`engine::send`), and the words of each refusal; what
//! Send does with a draft, and where Retry and Continue are offered.

use memoire::engine::model::{MessageStatus, Role};
use memoire::engine::send::{
    actions_offered, continue_offered, ends_when_online, may_resend, may_send, on_submit,
    retry_offered, SendRefusal, SendState, Submit, NO_ENDPOINT,
};

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

/// Send with `draft` (`attachments` attached, a reply `streaming` or not) does `expected`.
fn submit(draft: &str, attachments: bool, streaming: bool, expected: Submit) {
    let got = on_submit(draft, attachments, streaming);
    assert_eq!(got, expected, "{draft:?} {attachments} {streaming}");
}

#[test]
fn send_sends_what_is_there_asks_before_clear_and_waits_for_the_reply() {
    use Submit::*;
    submit("hi", false, false, Send);
    submit("  hi  ", false, false, Send);
    submit("", true, false, Send);
    submit("   \n", true, false, Send);
    submit("", false, false, Nothing);
    submit(" \n\t", false, false, Nothing);
    submit("hi", false, true, Nothing);
    submit("", true, true, Nothing);
    submit("/clear", false, false, AskToClear);
    submit(" /clear\n", true, false, AskToClear);
    submit("/clear", false, true, Nothing);
    submit("/clear now", false, false, Send);
}

#[test]
fn an_edit_goes_again_when_it_says_something_and_no_reply_runs() {
    assert!(may_resend("new words", false));
    assert!(!may_resend("new words", true));
    assert!(!may_resend("  \n", false));
    assert!(!may_resend("", false));
}

/// Retry sits on a last message of `role` and `status` (`None`: none) while `streaming` or not.
fn retry(last: Option<(Role, MessageStatus)>, streaming: bool, expected: bool) {
    assert_eq!(
        retry_offered(last, streaming),
        expected,
        "{last:?} {streaming}"
    );
}

#[test]
fn retry_sits_on_a_user_turn_or_a_reply_that_did_not_finish() {
    use MessageStatus::*;
    retry(Some((Role::User, Complete)), false, true);
    retry(Some((Role::Assistant, Error)), false, true);
    retry(Some((Role::Assistant, Interrupted)), false, true);
    retry(Some((Role::Assistant, Complete)), false, false);
    retry(Some((Role::Assistant, Streaming)), false, false);
    retry(Some((Role::User, Complete)), true, false);
    retry(Some((Role::Assistant, Error)), true, false);
    retry(None, false, false);
}

#[test]
fn continue_is_offered_on_a_capped_stored_reply_while_nothing_runs() {
    assert!(continue_offered(true, false, false));
    assert!(!continue_offered(false, false, false));
    assert!(!continue_offered(true, true, false));
    assert!(!continue_offered(true, false, true));
}

#[test]
fn edit_regenerate_and_delete_wait_for_the_reply_and_skip_temporary_chats() {
    use MessageStatus::*;
    assert!(actions_offered(false, Complete, false));
    assert!(actions_offered(false, Error, false));
    assert!(!actions_offered(true, Complete, false));
    assert!(!actions_offered(false, Streaming, false));
    assert!(!actions_offered(false, Complete, true));
}

#[test]
fn only_the_offline_refusal_ends_when_the_network_is_back() {
    assert!(ends_when_online(&SendRefusal::Offline.to_string()));
    assert!(!ends_when_online(&SendRefusal::NoEndpoint.to_string()));
    assert!(!ends_when_online("The agent did not answer."));
    assert!(!ends_when_online(""));
}
