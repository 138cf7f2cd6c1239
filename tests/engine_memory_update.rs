#![cfg(not(target_arch = "wasm32"))]
//! The memory update's state machine (`engine::memory::update::Update`), played against a scripted
//! world (what runs in the tab, what the store returns, what the scheduler answers, what the server
//! replies): one line per decision the session used to make — due or not, backing off, a forced
//! update skipped when another summary landed while it waited, busy, no endpoint, deferred for a
//! chat turn, a contended cut reply judged unusable, the next form after a refusal, a failure
//! recorded (and a repeat kept quiet), a result that lost to another update, a stop, the row of
//! updates while memory is behind — each checked by the actions the machine asked for.

use memoire::engine::decode::{StreamError, StreamEvent, CODE_CUT_OFF};
use memoire::engine::failure::{classify_http, Failure, FailureKind};
use memoire::engine::memory::update::*;
use memoire::engine::memory::{Admit, MemoryFailure, MemoryForm};
use memoire::engine::model::*;
use memoire::engine::prefix::{LastPrompt, MIN_CONTINUED_TOKENS};
use memoire::engine::request::OutputForm;

#[allow(dead_code)] // `msgs` is the other files'
mod memory_spec;
use memory_spec::msgs_from;

const NOW: Millis = 1_000_000_000;

const REPLY: &str = "=== CONVERSATION MEMORY ===\nuser says 1.\n=== ENTITY MEMORY ===\n[]";

/// What the server does with one request.
#[derive(Clone, Debug)]
enum Server {
    /// Answers `text`; `finished`: with a finish reason (false: cut short, `[DONE]` alone).
    Says(&'static str, bool),
    /// Refuses the request's output form (an HTTP 400 naming it).
    RefusesForm,
    /// Fails on the wire (after answering 2xx).
    Fails(FailureKind),
    /// This tab stops it after the server answered.
    Stopped,
    /// This tab stops it before any answer (a chat turn came while the server read the prompt).
    StoppedUnanswered,
    /// Answers 200, says `said` and the stream is cut (with nothing said: llama-cpp-python with a
    /// prompt longer than its context); the same request not streamed gets this status and body.
    Cut(&'static str, u16, &'static str),
}

/// llama-cpp-python's refusal of a prompt longer than its context (recorded), not streamed.
const TOO_LONG: &str = r#"{"error":{"message":"This model's maximum context length is 2048 tokens. However, you requested 2919 tokens (2519 in the messages, 400 in the completion). Please reduce the length of the messages or completion.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;

/// The world the machine runs against.
#[derive(Clone)]
struct World {
    forced: bool,
    overflow: bool,
    here: Here,
    /// The summary version seen before the lock (a forced update).
    seen: Option<u32>,
    /// The latest summary's version (covering `covers`), if any.
    version: Option<u32>,
    /// The messages after the summary, as a `memory_spec` spec.
    span: &'static str,
    failure: Option<MemoryFailure>,
    has_endpoint: bool,
    admit: Admit,
    /// The form remembered for the endpoint.
    remembered: Option<MemoryForm>,
    server: Vec<Server>,
    /// A chat turn to the same server came while it ran.
    contended: bool,
    /// Whether the new memory is stored (false: another update landed first).
    stored: bool,
    /// No chat turn in flight on the server after it ended.
    idle: bool,
    /// How many updates memory is behind (after that, nothing is due).
    behind: usize,
    /// The chat prompt the server last read: (its endpoint's key, its tokens, the reply's id).
    chat: Option<(String, u32, &'static str)>,
}

fn world() -> World {
    World {
        forced: false,
        overflow: false,
        here: Here::Free,
        seen: None,
        version: Some(1),
        span: "uauauauauaua",
        failure: None,
        has_endpoint: true,
        admit: Admit::Start,
        remembered: Some(MemoryForm::Sections),
        server: vec![Server::Says(REPLY, true)],
        contended: false,
        stored: true,
        idle: false,
        behind: 1,
        chat: None,
    }
}

fn endpoint() -> EndpointProfile {
    EndpointProfile {
        id: "e".into(),
        base_url: "http://127.0.0.1:9/v1".into(),
        protocol: Protocol::OpenAiChat,
        model: "m".into(),
        api_key: None,
        key_origin: String::new(),
        system_prompt: String::new(),
        no_user_memory: false,
    }
}

fn failure(attempts: u32, at: Millis) -> MemoryFailure {
    MemoryFailure {
        at,
        reason: "The server said no.".into(),
        raw_reply: String::new(),
        form: MemoryForm::Sections,
        attempts,
        // The last message it looked at: no user turn since.
        seq: 112,
        endpoint_key: endpoint().key(),
    }
}

fn loaded(w: &World, landed: usize) -> Loaded {
    let covers = 100;
    let span = if landed < w.behind { w.span } else { "" };
    Loaded {
        conversation: Conversation {
            id: "c1".into(),
            title: "t".into(),
            title_is_custom: false,
            created_at: 0,
            updated_at: 0,
            message_count: covers + span.len() as u64,
            endpoint_profile_id: None,
            remote_handle: None,
            last_path: None,
            memory_overrides: MemoryOverrides::default(),
        },
        config: MemoryConfig::default(),
        endpoint: endpoint(),
        has_endpoint: w.has_endpoint,
        previous: w.version.map(|v| ConversationSummary {
            conversation_id: "c1".into(),
            version: v + landed as u32,
            text: "Earlier.".into(),
            covers_up_to_seq: covers,
            message_count: covers,
            updated_at: 0,
        }),
        messages: msgs_from(span, covers + 1),
        failure: w.failure.clone(),
        last_prompt: w
            .chat
            .clone()
            .map(|(endpoint_key, tokens, reply_id)| LastPrompt {
                endpoint_key,
                prompt: Prompt {
                    system: "THE CHAT PROMPT".into(),
                    messages: Vec::new(),
                },
                tokens,
                reply_id: reply_id.into(),
            }),
        slot: None,
    }
}

fn fail(kind: FailureKind, message: &str) -> Failure {
    Failure {
        kind,
        message: message.into(),
        fix: None,
        status: None,
    }
}

/// Feeds one request's outcome.
fn serve(u: &mut Update, server: Server, form: MemoryForm) {
    match server {
        Server::RefusesForm => {
            let body = match form {
                MemoryForm::Sections => "bad request".to_string(),
                _ => "response_format: json_schema is not supported".to_string(),
            };
            let f = fail(FailureKind::BadRequest, "HTTP 400");
            u.handle_open_failed(f, Some((400, body)));
        }
        Server::Says(text, finished) => {
            u.handle_opened();
            u.handle_event(StreamEvent::TextDelta(text.into()));
            let finish_reason = finished.then(|| "stop".to_string());
            u.handle_event(StreamEvent::Done { finish_reason });
        }
        Server::Fails(kind) => {
            u.handle_opened();
            u.handle_failure(fail(kind, "it broke"));
        }
        Server::Stopped => {
            u.handle_opened();
            u.handle_stopped();
        }
        Server::StoppedUnanswered => u.handle_stopped(),
        Server::Cut(said, ..) => {
            u.handle_opened();
            if !said.is_empty() {
                u.handle_event(StreamEvent::TextDelta(said.into()));
            }
            u.handle_event(StreamEvent::Error(StreamError {
                message: "The reply stopped before it ended.".into(),
                code: Some(CODE_CUT_OFF.into()),
            }));
        }
    }
}

/// The actions the machine asks for in `w`, by name, until it is done.
fn play(w: &World) -> Vec<String> {
    run(w).0
}

/// [`play`], with the reason of each failure stored.
fn run(w: &World) -> (Vec<String>, Vec<String>) {
    let mut failures = Vec::new();
    let mut n = 0;
    let ids = Box::new(move || {
        n += 1;
        format!("e{n}")
    });
    let mut u = Update::new("c1", w.overflow, w.forced, ids);
    let (mut trace, mut sends, mut landed) = (Vec::new(), w.server.iter().cycle(), 0);
    let mut last = None;
    while let Some(a) = u.poll_action() {
        trace.push(name(&a));
        assert!(trace.len() < 200, "it does not end: {trace:?}");
        match a {
            Action::Check => u.handle_here(w.here),
            Action::ReadVersion => u.handle_version(w.seen),
            Action::Lock => u.handle_locked(),
            Action::Load { .. } => u.handle_loaded(loaded(w, landed), NOW),
            Action::Admit => u.handle_admit(w.admit),
            Action::LoadGraph { .. } => u.handle_graph(LoadedGraph {
                existing: Vec::new(),
                remembered: w.remembered,
                failure: w.failure.clone(),
            }),
            Action::Send { form, .. } => {
                if w.contended {
                    u.handle_contended();
                }
                last = sends.next().cloned();
                serve(&mut u, last.clone().unwrap(), form);
            }
            Action::Probe { .. } => {
                let Some(Server::Cut(_, status, body)) = last.clone() else {
                    panic!("a probe after {last:?}")
                };
                let refusal = (status >= 400).then(|| {
                    (
                        classify_http(status, None, body, false, 0),
                        status,
                        body.into(),
                    )
                });
                u.handle_probe(refusal);
            }
            Action::Store(write) => {
                failures.extend(write.failure.map(|f| f.reason));
                let stored = w.stored && write.memory.is_some();
                landed += stored as usize;
                u.handle_stored(stored);
            }
            Action::Ended(_) => u.handle_ended(w.idle),
            Action::Done(_) => break,
            Action::WaitForRunning | Action::Started | Action::Changed | Action::Facts { .. } => {}
        }
    }
    (trace, failures)
}

fn name(a: &Action) -> String {
    match a {
        Action::Send { form, request, .. } if request.body.contains("THE CHAT PROMPT") => {
            format!("Send({}, after the chat)", form.as_str())
        }
        Action::Send { form, .. } => format!("Send({})", form.as_str()),
        Action::Probe { request } => {
            let body: serde_json::Value = serde_json::from_str(&request.body).unwrap();
            format!(
                "Probe(stream={}, max_tokens={})",
                body["stream"], body["max_tokens"]
            )
        }
        Action::Store(w) => {
            let parts = [
                w.memory.as_ref().map(|_| "memory"),
                w.failure.as_ref().map(|f| {
                    if f.attempts > 1 {
                        "failure again"
                    } else {
                        "failure"
                    }
                }),
                w.form.as_ref().map(|_| "form"),
            ];
            format!(
                "Store({})",
                parts
                    .iter()
                    .flatten()
                    .copied()
                    .collect::<Vec<_>>()
                    .join("+")
            )
        }
        Action::Ended(end) => format!("Ended({end:?})"),
        Action::Done(Finish::Failed { repeated, .. }) => {
            format!("Done(Failed, repeated={repeated})")
        }
        Action::Done(f) => format!("Done({f:?})"),
        Action::Load { .. } => "Load".into(),
        Action::LoadGraph { .. } => "LoadGraph".into(),
        Action::Facts { span, .. } => format!("Facts(span={})", span.is_some()),
        other => format!("{other:?}"),
    }
}

fn check(w: World, want: &str) {
    let got = play(&w).join(" ");
    assert_eq!(got, want);
}

/// The common run of a due update that lands, up to its store.
const RUNS: &str = "Check Lock Load Admit Started LoadGraph Send(sections)";

// ---------- due, deferred, given up ----------

#[test]
fn an_update_runs_when_due_and_not_otherwise() {
    check(
        world(),
        &format!("{RUNS} Store(memory) Changed Facts(span=true) Ended(Landed) Done(Landed)"),
    );
    check(
        World {
            span: "uaua",
            ..world()
        },
        "Check Lock Load Done(Nothing)",
    );
    check(
        World {
            span: "uaua",
            overflow: true,
            ..world()
        },
        &format!("{RUNS} Store(memory) Changed Facts(span=true) Ended(Landed) Done(Landed)"),
    );
    check(
        World {
            span: "",
            overflow: true,
            ..world()
        },
        "Check Lock Load Done(Nothing)",
    );
    check(
        World {
            version: None,
            span: "uauauauauaua",
            ..world()
        },
        &format!("{RUNS} Store(memory) Changed Facts(span=true) Ended(Landed) Done(Landed)"),
    );
}

#[test]
fn after_a_failure_automatic_updates_back_off_and_a_forced_one_does_not() {
    check(
        World {
            failure: Some(failure(1, NOW - 1000)),
            ..world()
        },
        "Check Lock Load Done(Nothing)",
    );
    check(
        World {
            failure: Some(failure(1, NOW - 10 * 60_000)),
            ..world()
        },
        &format!("{RUNS} Store(memory) Changed Facts(span=true) Ended(Landed) Done(Landed)"),
    );
    check(
        World {
            failure: Some(MemoryFailure {
                seq: 104,
                ..failure(1, NOW - 1000)
            }),
            ..world()
        },
        &format!("{RUNS} Store(memory) Changed Facts(span=true) Ended(Landed) Done(Landed)"),
    );
    check(
        World {
            failure: Some(MemoryFailure {
                endpoint_key: "another".into(),
                ..failure(1, NOW - 1000)
            }),
            ..world()
        },
        &format!("{RUNS} Store(memory) Changed Facts(span=true) Ended(Landed) Done(Landed)"),
    );
    check(World { failure: Some(failure(1, NOW - 1000)), forced: true, seen: Some(1), ..world() }, "Check ReadVersion Lock Load Admit Started LoadGraph Send(sections) Store(memory) Changed Facts(span=true) Ended(Landed) Done(Landed)");
}

#[test]
fn a_forced_update_is_skipped_when_another_summary_landed_while_it_waited() {
    check(
        World {
            forced: true,
            seen: Some(0),
            span: "ua",
            ..world()
        },
        "Check ReadVersion Lock Load Done(Nothing)",
    );
    check(World { forced: true, seen: Some(1), span: "ua", ..world() }, "Check ReadVersion Lock Load Admit Started LoadGraph Send(sections) Store(memory) Changed Facts(span=true) Ended(Landed) Done(Landed)");
    check(World { forced: true, seen: None, version: None, span: "ua", ..world() }, "Check ReadVersion Lock Load Admit Started LoadGraph Send(sections) Store(memory) Changed Facts(span=true) Ended(Landed) Done(Landed)");
}

#[test]
fn one_update_at_a_time_here_and_none_without_an_endpoint() {
    check(
        World {
            here: Here::Live,
            ..world()
        },
        "Check WaitForRunning Done(Busy)",
    );
    check(
        World {
            here: Here::Building,
            ..world()
        },
        "Check Done(Busy)",
    );
    check(
        World {
            has_endpoint: false,
            ..world()
        },
        "Check Lock Load Done(NoEndpoint)",
    );
    check(
        World {
            has_endpoint: false,
            span: "ua",
            ..world()
        },
        "Check Lock Load Done(Nothing)",
    );
}

#[test]
fn a_chat_turn_on_the_server_goes_first() {
    check(
        World {
            admit: Admit::Wait,
            ..world()
        },
        "Check Lock Load Admit Done(Deferred)",
    );
}

// ---------- the reply ----------

#[test]
fn a_cut_reply_is_unusable_only_while_a_chat_turn_came() {
    check(
        World {
            server: vec![Server::Says(REPLY, false)],
            contended: true,
            ..world()
        },
        &format!("{RUNS} Ended(Unusable) Done(Deferred)"),
    );
    check(
        World {
            server: vec![Server::Says(REPLY, false)],
            ..world()
        },
        &format!("{RUNS} Store(memory) Changed Facts(span=true) Ended(Landed) Done(Landed)"),
    );
    check(
        World {
            server: vec![Server::Says("I cannot.", true)],
            contended: true,
            ..world()
        },
        &format!("{RUNS} Ended(Unusable) Done(Deferred)"),
    );
    check(
        World {
            server: vec![Server::Fails(FailureKind::Malformed)],
            contended: true,
            ..world()
        },
        &format!("{RUNS} Ended(Unusable) Done(Deferred)"),
    );
    check(
        World {
            server: vec![Server::Fails(FailureKind::Auth)],
            contended: true,
            ..world()
        },
        &format!("{RUNS} Store(failure) Changed Ended(Broken) Done(Failed, repeated=false)"),
    );
}

#[test]
fn a_failure_on_an_idle_server_is_recorded_and_a_repeat_is_quiet() {
    check(
        World {
            server: vec![Server::Says("I cannot.", true)],
            ..world()
        },
        &format!("{RUNS} Store(failure) Changed Ended(Broken) Done(Failed, repeated=false)"),
    );
    check(
        World {
            server: vec![Server::Fails(FailureKind::Malformed)],
            ..world()
        },
        &format!("{RUNS} Store(failure) Changed Ended(Broken) Done(Failed, repeated=false)"),
    );
    let before = MemoryFailure {
        reason: "it broke".into(),
        ..failure(1, NOW - 10 * 60_000)
    };
    check(
        World {
            server: vec![Server::Fails(FailureKind::Malformed)],
            failure: Some(before),
            ..world()
        },
        &format!("{RUNS} Store(failure again) Changed Ended(Broken) Done(Failed, repeated=true)"),
    );
}

#[test]
fn a_refused_form_is_tried_once_more_in_the_next_and_the_taken_form_remembered() {
    let schema = MemoryForm::Constrained(OutputForm::JsonSchema);
    let first = format!(
        "Check Lock Load Admit Started LoadGraph Send({})",
        schema.as_str()
    );
    let next = memoire::engine::memory::next_form(Protocol::OpenAiChat, schema).unwrap();
    check(World { remembered: None, server: vec![Server::RefusesForm, Server::Says(REPLY, true)], ..world() }, &format!("{first} Send({}) Store(memory+form) Changed Facts(span=true) Ended(Landed) Done(Landed)", next.as_str()));
    check(
        World {
            remembered: None,
            server: vec![Server::RefusesForm],
            ..world()
        },
        &format!(
            "{first} Send({}) Store(failure) Changed Ended(Broken) Done(Failed, repeated=false)",
            next.as_str()
        ),
    );
    check(
        World {
            remembered: None,
            server: vec![Server::Stopped],
            ..world()
        },
        &format!("{first} Store(form) Ended(Stopped) Done(Nothing)"),
    );
    // Stopped before the server answered: the form the server refused is not sent first again.
    let refused_then_stopped = World {
        remembered: None,
        server: vec![Server::RefusesForm, Server::StoppedUnanswered],
        ..world()
    };
    let want = format!(
        "{first} Send({}) Store(form) Ended(Stopped) Done(Nothing)",
        next.as_str()
    );
    check(refused_then_stopped, &want);
    // Nothing was refused and nothing answered: nothing is learned.
    check(
        World {
            remembered: None,
            server: vec![Server::StoppedUnanswered],
            ..world()
        },
        &format!("{first} Ended(Stopped) Done(Nothing)"),
    );
}

#[test]
fn an_update_continues_the_chat_prompt_the_server_last_read_when_it_ends_with_the_span() {
    let key = endpoint().key();
    let after = "Check Lock Load Admit Started LoadGraph Send(sections, after the chat) Store(memory) Changed Facts(span=true) Ended(Landed) Done(Landed)";
    check(
        World {
            chat: Some((key.clone(), MIN_CONTINUED_TOKENS, "m112")),
            ..world()
        },
        after,
    );
    check(
        World {
            chat: Some((key.clone(), MIN_CONTINUED_TOKENS - 1, "m112")),
            ..world()
        },
        &format!("{RUNS} Store(memory) Changed Facts(span=true) Ended(Landed) Done(Landed)"),
    );
    check(
        World {
            chat: Some((key.clone(), MIN_CONTINUED_TOKENS, "m110")),
            ..world()
        },
        &format!("{RUNS} Store(memory) Changed Facts(span=true) Ended(Landed) Done(Landed)"),
    );
    check(
        World {
            chat: Some(("another".into(), MIN_CONTINUED_TOKENS, "m112")),
            ..world()
        },
        &format!("{RUNS} Store(memory) Changed Facts(span=true) Ended(Landed) Done(Landed)"),
    );
}

// ---------- what is written ----------

#[test]
fn a_result_built_on_an_older_summary_is_not_stored() {
    check(
        World {
            stored: false,
            ..world()
        },
        &format!("{RUNS} Store(memory) Ended(Stopped) Done(Nothing)"),
    );
}

#[test]
fn a_stream_that_ended_before_anything_arrived_is_asked_why_once() {
    let runs = format!("{RUNS} Probe(stream=false, max_tokens=1)");
    let w = |server| World {
        server: vec![server],
        ..world()
    };
    let want = format!("{runs} Store(failure) Changed Ended(Broken) Done(Failed, repeated=false)");
    // The refusal says how long the context is: that is the failure (the session learns the window).
    let (trace, failures) = run(&w(Server::Cut("", 400, TOO_LONG)));
    assert_eq!(trace.join(" "), want);
    assert!(
        failures[0].contains("maximum context length is 2048"),
        "{failures:?}"
    );
    // The server answers the probe: the first failure (the stream cut off) stands.
    let (trace, failures) = run(&w(Server::Cut("", 200, "{}")));
    assert_eq!(trace.join(" "), want);
    assert!(
        failures[0].contains("stopped before it ended"),
        "{failures:?}"
    );
    // Something arrived before the stream was cut: no probe.
    let said = w(Server::Cut("{\"summary\": \"Ma", 400, TOO_LONG));
    let want = format!("{RUNS} Store(failure) Changed Ended(Broken) Done(Failed, repeated=false)");
    check(said, &want);
}

#[test]
fn a_stopped_update_writes_nothing() {
    check(
        World {
            server: vec![Server::Stopped],
            ..world()
        },
        &format!("{RUNS} Ended(Stopped) Done(Nothing)"),
    );
}

// ---------- in a row ----------

#[test]
fn while_memory_is_behind_the_next_update_runs_at_once_on_an_idle_server_up_to_the_limit() {
    let landed = format!("{RUNS} Store(memory) Changed Facts(span=true) Ended(Landed)");
    check(
        World {
            idle: true,
            behind: 2,
            ..world()
        },
        &format!("{landed} {landed} Check Lock Load Done(Nothing)"),
    );
    check(
        World {
            idle: false,
            behind: 2,
            ..world()
        },
        &format!("{landed} Done(Landed)"),
    );
    let row = vec![landed; MAX_UPDATES_IN_A_ROW].join(" ");
    check(
        World {
            idle: true,
            behind: 100,
            ..world()
        },
        &format!("{row} Done(Landed)"),
    );
}

// ---------- a build's chunk ----------

#[test]
fn a_chunk_sends_at_once_and_takes_in_no_span() {
    let l = loaded(&world(), 0);
    let limits = memoire::engine::memory::UpdateLimits::from_config(&l.config);
    let req = memoire::engine::memory::build_update_request(
        l.previous.as_ref(),
        &l.messages,
        &[],
        &limits,
    )
    .unwrap();
    let chunk = Chunk {
        conversation_id: "c1".into(),
        endpoint: endpoint(),
        req,
        previous: l.previous.clone(),
        message_count: 112,
        seen_seq: 112,
        config: l.config.clone(),
        slot: None,
        graph: LoadedGraph {
            remembered: Some(MemoryForm::Sections),
            ..LoadedGraph::default()
        },
    };
    let mut u = Update::chunk(chunk, NOW, Box::new(|| "e".into()));
    let mut trace = Vec::new();
    while let Some(a) = u.poll_action() {
        trace.push(name(&a));
        match a {
            Action::Send { form, .. } => serve(&mut u, Server::Says(REPLY, true), form),
            Action::Store(_) => u.handle_stored(true),
            _ => {}
        }
    }
    assert_eq!(
        trace.join(" "),
        "Send(sections) Store(memory) Changed Facts(span=false) Done(Landed)"
    );
}
