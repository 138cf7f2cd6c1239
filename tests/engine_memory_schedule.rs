#![cfg(not(target_arch = "wasm32"))]
//! Memory updates against chat turns (`engine::memory::schedule`): which server a URL is, what an
//! update's end means (deferred after the turn, or a failure), the scheduler's stops and starts, and
//! the recorded refusals and interruptions of each server kind replayed through that decision.

use memoire::engine::decode::{decoder_for, StreamEvent};
use memoire::engine::failure::{self, FailureKind};
use memoire::engine::memory::schedule::Action;
use memoire::engine::memory::*;
use memoire::engine::model::Protocol;
use memoire::engine::request::OutputForm;

// ---------- server_of ----------

fn check_server(url: &str, want: &str) {
    assert_eq!(server_of(url), want, "{url}");
}

#[test]
fn servers_are_origins() {
    check_server("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000");
    check_server("http://127.0.0.1:8000", "http://127.0.0.1:8000");
    check_server("HTTP://LocalHost:11434/api/", "http://localhost:11434");
    check_server("https://api.openai.com/v1", "https://api.openai.com:443");
    check_server("http://host/v1", "http://host:80");
    check_server("http://user:pw@host:81/x", "http://host:81");
    check_server("http://[::1]:8080/v1", "http://[::1]:8080");
    check_server("http://[::1]/v1", "http://[::1]:80");
    check_server("  http://h:1/a?b#c ", "http://h:1");
}

// ---------- judge ----------

fn check_judge(end: UpdateEnd, contended: bool, want: Verdict) {
    assert_eq!(
        judge(&end, contended),
        want,
        "{end:?} contended={contended}"
    );
}

#[test]
fn an_update_that_gave_way_to_a_chat_is_deferred_not_failed() {
    use FailureKind::*;
    use Verdict::*;
    check_judge(UpdateEnd::Landed, true, Landed);
    check_judge(UpdateEnd::Landed, false, Landed);
    check_judge(UpdateEnd::Stopped, true, Deferred);
    check_judge(UpdateEnd::Unusable, true, Deferred);
    check_judge(UpdateEnd::Failed(Malformed), true, Deferred);
    check_judge(UpdateEnd::Failed(Server), true, Deferred);
    check_judge(
        UpdateEnd::Failed(RateLimited {
            retry_after_secs: Some(2),
        }),
        true,
        Deferred,
    );
    check_judge(UpdateEnd::Failed(Timeout), true, Deferred);
    check_judge(UpdateEnd::Failed(Network), true, Deferred);
    check_judge(UpdateEnd::Failed(Stream), true, Deferred);
}

#[test]
fn only_an_update_on_an_idle_server_or_a_wrong_request_fails() {
    use FailureKind::*;
    use Verdict::*;
    check_judge(UpdateEnd::Stopped, false, Cancelled);
    check_judge(UpdateEnd::Unusable, false, Failed);
    check_judge(UpdateEnd::Failed(Malformed), false, Failed);
    check_judge(UpdateEnd::Failed(Server), false, Failed);
    check_judge(
        UpdateEnd::Failed(RateLimited {
            retry_after_secs: None,
        }),
        false,
        Failed,
    );
    check_judge(UpdateEnd::Failed(Auth), true, Failed);
    check_judge(UpdateEnd::Failed(NotFound), true, Failed);
    check_judge(UpdateEnd::Failed(BadRequest), true, Failed);
    check_judge(UpdateEnd::Broken, true, Failed);
    check_judge(UpdateEnd::Broken, false, Failed);
}

// ---------- the scheduler ----------

const S: &str = "http://127.0.0.1:8000";
const OTHER: &str = "http://127.0.0.1:9000";

fn actions(s: &mut Scheduler) -> Vec<Action> {
    std::iter::from_fn(|| s.poll_action()).collect()
}

fn stop(id: &str) -> Action {
    Action::Stop {
        conversation_id: id.into(),
    }
}

fn start(id: &str) -> Action {
    Action::Start {
        conversation_id: id.into(),
    }
}

#[test]
fn a_chat_stops_the_update_on_its_server_which_runs_again_after_the_turn() {
    let mut s = Scheduler::default();
    assert_eq!(s.handle_update_wanted("c1", S), Admit::Start);
    assert!(!s.is_contended("c1"));
    s.handle_chat_started(S);
    assert_eq!(actions(&mut s), vec![stop("c1")]);
    assert!(s.is_contended("c1"));
    // The update ends (stopped) while the chat still runs: it waits.
    assert_eq!(
        s.handle_update_ended("c1", &UpdateEnd::Stopped),
        Verdict::Deferred
    );
    assert_eq!(actions(&mut s), vec![]);
    s.handle_chat_ended(S);
    assert_eq!(actions(&mut s), vec![start("c1")]);
    // Once started it runs like any other.
    assert_eq!(s.handle_update_wanted("c1", S), Admit::Start);
    assert_eq!(
        s.handle_update_ended("c1", &UpdateEnd::Landed),
        Verdict::Landed
    );
    assert_eq!(actions(&mut s), vec![]);
}

#[test]
fn an_update_that_ends_after_the_chat_starts_again_at_once() {
    let mut s = Scheduler::default();
    s.handle_update_wanted("c1", S);
    s.handle_chat_started(S);
    s.handle_chat_ended(S);
    assert_eq!(actions(&mut s), vec![stop("c1")]);
    // The server cut it short (an early [DONE]) and the chat is already over.
    assert_eq!(
        s.handle_update_ended("c1", &UpdateEnd::Unusable),
        Verdict::Deferred
    );
    assert_eq!(actions(&mut s), vec![start("c1")]);
}

#[test]
fn an_update_waits_while_a_chat_is_in_flight_on_its_server() {
    let mut s = Scheduler::default();
    s.handle_chat_started(S);
    assert_eq!(s.handle_update_wanted("c1", S), Admit::Wait);
    assert_eq!(s.handle_update_wanted("c2", OTHER), Admit::Start);
    s.handle_chat_started(S);
    s.handle_chat_ended(S);
    assert_eq!(actions(&mut s), vec![], "one chat still in flight");
    s.handle_chat_ended(S);
    assert_eq!(actions(&mut s), vec![start("c1")]);
    assert!(s.is_idle(S));
}

#[test]
fn a_chat_on_another_server_leaves_the_update_alone() {
    let mut s = Scheduler::default();
    s.handle_update_wanted("c1", S);
    s.handle_chat_started(OTHER);
    assert_eq!(actions(&mut s), vec![]);
    assert!(!s.is_contended("c1"));
    assert_eq!(
        s.handle_update_ended("c1", &UpdateEnd::Unusable),
        Verdict::Failed
    );
    s.handle_chat_ended(OTHER);
    assert_eq!(
        actions(&mut s),
        vec![],
        "a failure is not run again at once"
    );
}

#[test]
fn an_update_wanted_while_its_own_runs_follows_it() {
    let mut s = Scheduler::default();
    s.handle_update_wanted("c1", S);
    assert_eq!(s.handle_update_wanted("c1", S), Admit::Wait);
    assert_eq!(
        s.handle_update_ended("c1", &UpdateEnd::Landed),
        Verdict::Landed
    );
    assert_eq!(actions(&mut s), vec![start("c1")]);
}

#[test]
fn one_stop_per_update_however_many_chats_start() {
    let mut s = Scheduler::default();
    s.handle_update_wanted("c1", S);
    s.handle_update_wanted("c2", S);
    s.handle_chat_started(S);
    s.handle_chat_started(S);
    assert_eq!(actions(&mut s), vec![stop("c1"), stop("c2")]);
}

#[test]
fn a_user_cancel_is_neither_failed_nor_run_again() {
    let mut s = Scheduler::default();
    s.handle_update_wanted("c1", S);
    assert_eq!(
        s.handle_update_ended("c1", &UpdateEnd::Stopped),
        Verdict::Cancelled
    );
    assert_eq!(actions(&mut s), vec![]);
}

// ---------- replays: what each server kind sends, through the decision ----------

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A streamed memory reply, as the session reads it: decoded, collected in `form`, and (when whole
/// and not cut while a chat came) parsed. Returns how the update ended.
fn replay_stream(protocol: Protocol, form: MemoryForm, body: &[u8], contended: bool) -> UpdateEnd {
    let mut decoder = decoder_for(protocol);
    let mut collector = ReplyCollector::new(form);
    decoder.handle_bytes(body);
    decoder.handle_eof();
    while let Some(ev) = decoder.poll_event() {
        match collector.handle_event(ev) {
            None => continue,
            Some(Ok(_)) if collector.was_cut() && contended => return UpdateEnd::Unusable,
            Some(Ok(text)) => {
                return match parse_reply(&text) {
                    Ok(_) => UpdateEnd::Landed,
                    Err(_) => UpdateEnd::Unusable,
                }
            }
            Some(Err(e)) => return UpdateEnd::Failed(failure::from_stream_error(&e, false).kind),
        }
    }
    panic!("every body ends in Done or Error");
}

/// An HTTP error answer to a memory request.
fn replay_http(status: u16, retry_after: Option<&str>, body: &str) -> UpdateEnd {
    UpdateEnd::Failed(failure::classify_http(status, retry_after, body, false, 0).kind)
}

fn check_replay(what: &str, end: UpdateEnd, contended: Verdict, idle: Verdict) {
    assert_eq!(judge(&end, true), contended, "{what}: {end:?} with a chat");
    assert_eq!(
        judge(&end, false),
        idle,
        "{what}: {end:?} on an idle server"
    );
}

const JSON_OBJECT: MemoryForm = MemoryForm::Constrained(OutputForm::JsonObject);

#[test]
fn recorded_interruptions_and_refusals_replay_through_the_decision() {
    use Verdict::*;
    // llama-cpp-python 0.3.36 (recorded): a memory update cut 1.2 s in by a chat request, a partial
    // JSON reply and `[DONE]` without a finish reason.
    let cut = fixture("openai-chat-llamacpp-python-interrupted.sse");
    check_replay(
        "llama-cpp-python, interrupted",
        replay_stream(Protocol::OpenAiChat, JSON_OBJECT, &cut, true),
        Deferred,
        Failed,
    );
    // ... its `[DONE]` before any text: the empty reply the issue saw.
    let empty = b"data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"},\"finish_reason\":null}]}\n\ndata: [DONE]\n\n";
    check_replay(
        "llama-cpp-python, interrupted before the first token",
        replay_stream(Protocol::OpenAiChat, JSON_OBJECT, empty, true),
        Deferred,
        Failed,
    );
    // A whole reply (recorded) is no deferral even when a chat came: it lands or fails on its own.
    let whole = fixture("openai-chat-llamacpp-python.sse");
    let end = replay_stream(Protocol::OpenAiChat, MemoryForm::Sections, &whole, true);
    assert!(
        matches!(end, UpdateEnd::Landed | UpdateEnd::Unusable),
        "{end:?}"
    );
    assert_eq!(
        end,
        replay_stream(Protocol::OpenAiChat, MemoryForm::Sections, &whole, false),
        "a whole reply reads the same with or without a chat"
    );
    // A stream that drops mid-reply (any server; the body ends without its terminator).
    let dropped = &whole[..whole.len() / 2];
    check_replay(
        "openai-chat, dropped",
        replay_stream(Protocol::OpenAiChat, JSON_OBJECT, dropped, true),
        Deferred,
        Failed,
    );
    // Ollama: a model error mid-stream (recorded shape), and `server busy` when its queue is full.
    check_replay(
        "ollama, error line",
        replay_stream(
            Protocol::Ollama,
            MemoryForm::Constrained(OutputForm::OllamaFormat),
            &fixture("ollama-error.ndjson"),
            true,
        ),
        Deferred,
        Failed,
    );
    check_replay(
        "ollama, queue full",
        replay_http(
            503,
            None,
            r#"{"error":"server busy, please try again.  maximum pending requests exceeded"}"#,
        ),
        Deferred,
        Failed,
    );
    // llama-server while it loads; vLLM and OpenAI when rate limited.
    check_replay(
        "llama-server, loading",
        replay_http(
            503,
            None,
            r#"{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}"#,
        ),
        Deferred,
        Failed,
    );
    check_replay(
        "openai, rate limited",
        replay_http(
            429,
            Some("2"),
            r#"{"error":{"message":"Rate limit reached for requests","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#,
        ),
        Deferred,
        Failed,
    );
    // Anthropic: 529 overloaded, and the same as an `error` event mid-stream (recorded shape).
    check_replay(
        "anthropic, overloaded",
        replay_http(
            529,
            None,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        ),
        Deferred,
        Failed,
    );
    check_replay(
        "anthropic, overloaded mid-stream",
        replay_stream(
            Protocol::Anthropic,
            MemoryForm::Constrained(OutputForm::ForcedTool),
            &fixture("anthropic-error.sse"),
            true,
        ),
        Deferred,
        Failed,
    );
    // A refusal that is about the request is a failure even when a chat came.
    check_replay(
        "any, wrong key",
        replay_http(
            401,
            None,
            r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}"#,
        ),
        Failed,
        Failed,
    );
    check_replay(
        "any, unknown model",
        replay_http(404, None, r#"{"error":"model 'smollm3' not found"}"#),
        Failed,
        Failed,
    );
}

#[test]
fn the_collector_says_when_a_stream_ended_without_a_reason() {
    let mut c = ReplyCollector::new(JSON_OBJECT);
    c.handle_event(StreamEvent::TextDelta("{\"summary\":\"a".into()));
    assert!(c
        .handle_event(StreamEvent::Done {
            finish_reason: Some("stop".into())
        })
        .is_some());
    assert!(!c.was_cut());
    let mut c = ReplyCollector::new(JSON_OBJECT);
    c.handle_event(StreamEvent::Done {
        finish_reason: None,
    });
    assert!(c.was_cut());
}

// ---------- how an update's run ends ----------

#[test]
fn an_update_that_gave_way_runs_again_and_a_broken_one_backs_off() {
    assert_eq!(UpdateEnd::of_run(Ok(true)), UpdateEnd::Landed);
    assert_eq!(UpdateEnd::of_run(Ok(false)), UpdateEnd::Stopped);
    assert_eq!(UpdateEnd::of_run(Err(true)), UpdateEnd::Unusable);
    assert_eq!(UpdateEnd::of_run(Err(false)), UpdateEnd::Broken);
}
