#![cfg(not(target_arch = "wasm32"))]
//! `engine::turn`: the turn state machine (resume, re-inject or fresh; the remote handle; how a
//! turn ends; stop; saves while streaming), the seed-004 context-loss scenario, reasoning kept
//! apart, the generation figures, replies the cap cut (Continue), and a failed, stopped or cut-off
//! turn: what Retry and a new message replace, and what goes back to the model (never two of the
//! user's messages in a row).

use memoire::engine::assemble::{assemble, AssemblyInput, DropReason};
use memoire::engine::decode::{StreamError, StreamEvent, Timings, CODE_CUT_OFF, CODE_MALFORMED};
use memoire::engine::failure::{aborted, Failure, FailureKind};
use memoire::engine::history::{render_message, CUT_OFF_MARKER, STOPPED_MARKER};
use memoire::engine::model::*;
use memoire::engine::tokens::HeuristicEstimator;
use memoire::engine::turn::*;

mod chat_builders;
use chat_builders::*;

// ---------- turn state machine ----------

/// The history a driver holds for one conversation, updated from a turn's actions the way the
/// session updates its window (the reply through `ReplySave::apply_to`, the engine's one mapping).
#[derive(Debug, Clone)]
struct History {
    conversation: Conversation,
    /// Ascending seq.
    messages: Vec<Message>,
}

impl History {
    fn new(conversation: Conversation) -> Self {
        History {
            conversation,
            messages: vec![],
        }
    }

    fn next_seq(&self) -> u64 {
        self.messages.last().map_or(1, |m| m.seq + 1)
    }

    fn add_message(&mut self, m: Message) {
        assert_eq!(
            m.conversation_id, self.conversation.id,
            "another conversation's message"
        );
        self.messages.push(m);
        self.conversation.message_count = self.messages.len() as u64;
    }

    fn apply(&mut self, action: &Action, now: i64) {
        match action {
            Action::SaveReply(save) => {
                let at = self.messages.iter().position(|m| m.id == save.message_id);
                let at = at.unwrap_or_else(|| {
                    let mut placeholder = msg(save.seq, Role::Assistant, "");
                    placeholder.id = save.message_id.clone();
                    placeholder.conversation_id = self.conversation.id.clone();
                    placeholder.created_at = now;
                    self.add_message(placeholder);
                    self.messages.len() - 1
                });
                save.apply_to(&mut self.messages[at]);
            }
            Action::StoreHandle { handle, .. } => self.conversation.remote_handle = handle.clone(),
            Action::Finished(outcome) => self.conversation.last_path = Some(outcome.path),
            Action::SendRequest { .. } | Action::Probe { .. } | Action::CancelRequest => {}
        }
    }
}

struct Harness {
    state: History,
    endpoint: EndpointProfile,
    cfg: MemoryConfig,
}

impl Harness {
    fn new(protocol: Protocol) -> Self {
        Harness {
            state: History::new(convo("c1")),
            endpoint: endpoint(protocol),
            cfg: config(8000, 10),
        }
    }

    /// Store the user message, assemble from the state, start the turn.
    fn start(&mut self, text: &str, now: i64) -> Turn {
        let seq = self.state.next_seq();
        let mut m = msg(seq, Role::User, text);
        m.created_at = now;
        self.state.add_message(m.clone());
        let a = assemble(
            &AssemblyInput {
                system_prompt: &self.endpoint.system_prompt,
                summary: None,
                entities: &[],
                history: &self.state.messages,
                new_message: &m,
                config: &self.cfg,
                protocol: self.endpoint.protocol,
                user_facts: &[],
                project: None,
                recall: &[],
            },
            &HeuristicEstimator,
        );
        Turn::start(TurnStart {
            conversation: &self.state.conversation,
            history: &self.state.messages,
            endpoint: &self.endpoint,
            new_message_id: &m.id,
            assembly: &a,
            reply_id: &format!("m{}", seq + 1),
            reply_seq: seq + 1,
        })
        .unwrap()
    }

    /// Drain actions, applying each to the state like the driver does.
    fn drain(&mut self, turn: &mut Turn, now: i64) -> Vec<Action> {
        let mut out = vec![];
        while let Some(a) = turn.poll_action() {
            self.state.apply(&a, now);
            out.push(a);
        }
        out
    }

    /// A complete turn: text deltas, optional response id, done.
    fn exchange(
        &mut self,
        text: &str,
        reply: &str,
        response_id: Option<&str>,
        now: i64,
    ) -> Vec<Action> {
        let mut t = self.start(text, now);
        let mut acts = self.drain(&mut t, now);
        t.handle_event(StreamEvent::TextDelta(reply.into()), now + 10);
        if let Some(id) = response_id {
            t.handle_event(StreamEvent::ResponseId(id.into()), now + 11);
        }
        t.handle_event(
            StreamEvent::Done {
                finish_reason: Some("stop".into()),
            },
            now + 20,
        );
        acts.extend(self.drain(&mut t, now + 20));
        acts
    }
}

fn sent(actions: &[Action]) -> Vec<(TurnPath, Option<String>, usize)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::SendRequest {
                path,
                prompt,
                previous_response_id,
                ..
            } => Some((*path, previous_response_id.clone(), prompt.messages.len())),
            _ => None,
        })
        .collect()
}

fn outcome(actions: &[Action]) -> TurnOutcome {
    match actions.last() {
        Some(Action::Finished(o)) => o.clone(),
        other => panic!("last action is not Finished: {other:?}"),
    }
}

fn check_paths(protocol: Protocol, response_ids: &[Option<&str>], expected: &[TurnPath]) {
    let mut h = Harness::new(protocol);
    for (i, rid) in response_ids.iter().enumerate() {
        let acts = h.exchange(
            &format!("question {i}"),
            &format!("answer {i}"),
            *rid,
            i as i64 * 10_000,
        );
        assert_eq!(outcome(&acts).path, expected[i], "{protocol:?} turn {i}");
        assert_eq!(h.state.conversation.last_path, Some(expected[i]));
    }
}

#[test]
fn turn_paths() {
    use TurnPath::*;
    check_paths(
        Protocol::OpenAiChat,
        &[None, None, None],
        &[Fresh, Reinjected, Reinjected],
    );
    check_paths(
        Protocol::Anthropic,
        &[None, Some("ignored")],
        &[Fresh, Reinjected],
    );
    check_paths(
        Protocol::OpenAiResponses,
        &[Some("r1"), Some("r2"), Some("r3")],
        &[Fresh, Resumed, Resumed],
    );
    // No response id: nothing to resume next time.
    check_paths(
        Protocol::OpenAiResponses,
        &[None, Some("r2"), Some("r3")],
        &[Fresh, Reinjected, Resumed],
    );
}

#[test]
fn resume_sends_only_the_new_message_with_the_handle() {
    let mut h = Harness::new(Protocol::OpenAiResponses);
    h.exchange("hi", "hello", Some("resp_1"), 0);
    let handle = h.state.conversation.remote_handle.clone().unwrap();
    assert_eq!(
        (handle.id.as_str(), handle.covers_up_to_seq, handle.dead),
        ("resp_1", 2, false)
    );
    assert_eq!(handle.endpoint_key, h.endpoint.key());
    let mut t = h.start("and then?", 10_000);
    let acts = h.drain(&mut t, 10_000);
    assert_eq!(
        sent(&acts),
        vec![(TurnPath::Resumed, Some("resp_1".into()), 1)]
    );
}

fn check_handle_case(mutate: impl Fn(&mut Harness), expected: HandleCheck) {
    let mut h = Harness::new(Protocol::OpenAiResponses);
    h.exchange("hi", "hello", Some("resp_1"), 0);
    mutate(&mut h);
    let previous_seq = h.state.messages.last().map(|m| m.seq);
    let stored = h.state.conversation.remote_handle.as_ref();
    assert_eq!(check_handle(stored, &h.endpoint, previous_seq), expected);
    let mut t = h.start("next", 10_000);
    let acts = h.drain(&mut t, 10_000);
    let want = if expected == HandleCheck::Usable {
        TurnPath::Resumed
    } else {
        TurnPath::Reinjected
    };
    assert_eq!(sent(&acts)[0].0, want);
    if want == TurnPath::Reinjected {
        assert_eq!(sent(&acts)[0].1, None);
        assert!(sent(&acts)[0].2 >= 3, "full context re-sent");
    }
}

#[test]
fn handle_is_only_used_when_alive_for_this_endpoint_and_up_to_date() {
    check_handle_case(|_| {}, HandleCheck::Usable);
    check_handle_case(
        |h| h.state.conversation.remote_handle.as_mut().unwrap().dead = true,
        HandleCheck::Dead,
    );
    check_handle_case(
        |h| h.endpoint.model = "other-model".into(),
        HandleCheck::OtherEndpoint,
    );
    check_handle_case(
        |h| h.state.conversation.remote_handle = None,
        HandleCheck::Missing,
    );
    // A message was added after the handle was confirmed (e.g. a failed turn): stale.
    check_handle_case(
        |h| {
            let s = h.state.next_seq();
            h.state.add_message(msg(s, Role::Tool, "tool output"));
        },
        HandleCheck::Stale,
    );
}

#[test]
fn another_conversations_handle_is_never_used() {
    let mut a = Harness::new(Protocol::OpenAiResponses);
    a.exchange("hi", "hello", Some("resp_A"), 0);
    assert!(a.state.conversation.remote_handle.is_some());
    // Conversation B with history but no handle of its own re-injects.
    let mut b = Harness::new(Protocol::OpenAiResponses);
    b.state = History::new(convo("c2"));
    let mut m1 = msg(1, Role::User, "earlier");
    m1.conversation_id = "c2".into();
    b.state.add_message(m1);
    let mut t = {
        let seq = b.state.next_seq();
        let mut m = msg(seq, Role::User, "now");
        m.conversation_id = "c2".into();
        b.state.add_message(m.clone());
        let asm = assemble(
            &AssemblyInput {
                system_prompt: "s",
                summary: None,
                entities: &[],
                history: &b.state.messages,
                new_message: &m,
                config: &b.cfg,
                protocol: b.endpoint.protocol,
                user_facts: &[],
                project: None,
                recall: &[],
            },
            &HeuristicEstimator,
        );
        Turn::start(TurnStart {
            conversation: &b.state.conversation,
            history: &b.state.messages,
            endpoint: &b.endpoint,
            new_message_id: &m.id,
            assembly: &asm,
            reply_id: "r",
            reply_seq: seq + 1,
        })
        .unwrap()
    };
    let acts = b.drain(&mut t, 0);
    assert_eq!(sent(&acts), vec![(TurnPath::Reinjected, None, 2)]);
    t.handle_event(StreamEvent::ResponseId("resp_B".into()), 1);
    t.handle_event(
        StreamEvent::Done {
            finish_reason: None,
        },
        2,
    );
    let acts = b.drain(&mut t, 2);
    let stored: Vec<&String> = acts
        .iter()
        .filter_map(|a| match a {
            Action::StoreHandle {
                conversation_id, ..
            } => Some(conversation_id),
            _ => None,
        })
        .collect();
    assert_eq!(stored, vec!["c2"]);
    assert_eq!(
        a.state.conversation.remote_handle.as_ref().unwrap().id,
        "resp_A"
    );
}

fn check_session_gone(deliver: impl Fn(&mut Turn)) {
    let mut h = Harness::new(Protocol::OpenAiResponses);
    h.exchange("my name is Ada", "hello Ada", Some("resp_1"), 0);
    let mut t = h.start("what is my name?", 10_000);
    let first = h.drain(&mut t, 10_000);
    assert_eq!(sent(&first)[0].0, TurnPath::Resumed);
    deliver(&mut t);
    let acts = h.drain(&mut t, 10_100);
    // The handle is marked dead, then the turn is re-sent with the full context.
    match &acts[0] {
        Action::StoreHandle {
            handle: Some(hd), ..
        } => assert!(hd.dead && hd.id == "resp_1"),
        other => panic!("expected dead handle, got {other:?}"),
    }
    let resend = sent(&acts);
    assert_eq!(resend, vec![(TurnPath::Reinjected, None, 3)]);
    if let Action::SendRequest { prompt, .. } = &acts[1] {
        assert!(prompt
            .messages
            .iter()
            .any(|m| m.content.contains("my name is Ada")));
    }
    assert!(h.state.conversation.remote_handle.as_ref().unwrap().dead);
    t.handle_event(StreamEvent::TextDelta("Ada".into()), 10_200);
    t.handle_event(StreamEvent::ResponseId("resp_2".into()), 10_201);
    t.handle_event(
        StreamEvent::Done {
            finish_reason: None,
        },
        10_300,
    );
    let acts = h.drain(&mut t, 10_300);
    let o = outcome(&acts);
    assert_eq!(
        (o.status, o.path, o.attempts, o.content.as_str()),
        (TurnStatus::Complete, TurnPath::Reinjected, 2, "Ada")
    );
    let hd = h.state.conversation.remote_handle.clone().unwrap();
    assert_eq!(
        (hd.id.as_str(), hd.dead, hd.covers_up_to_seq),
        ("resp_2", false, 4)
    );
}

#[test]
fn session_gone_marks_handle_dead_and_reinjects() {
    check_session_gone(|t| {
        t.handle_failure(
            Failure {
                kind: FailureKind::SessionGone,
                message: "gone".into(),
                fix: None,
                status: Some(404),
            },
            10_050,
        )
    });
    check_session_gone(|t| {
        t.handle_event(
            StreamEvent::Error(StreamError {
                code: Some("previous_response_not_found".into()),
                message: "Previous response not found".into(),
            }),
            10_050,
        )
    });
    check_session_gone(|t| {
        t.handle_failure(
            Failure {
                kind: FailureKind::BadRequest,
                message: "Invalid 'previous_response_id': not found".into(),
                fix: None,
                status: Some(400),
            },
            10_050,
        )
    });
}

#[test]
fn session_gone_when_not_resuming_is_an_error_not_a_loop() {
    let mut h = Harness::new(Protocol::OpenAiResponses);
    let mut t = h.start("hi", 0);
    h.drain(&mut t, 0);
    t.handle_failure(
        Failure {
            kind: FailureKind::SessionGone,
            message: "gone".into(),
            fix: None,
            status: Some(404),
        },
        5,
    );
    let acts = h.drain(&mut t, 5);
    assert!(sent(&acts).is_empty());
    assert_eq!(outcome(&acts).status, TurnStatus::Error);
}

fn check_ending(deliver: impl Fn(&mut Turn), status: TurnStatus, content: &str) {
    let mut h = Harness::new(Protocol::OpenAiChat);
    let mut t = h.start("hi", 0);
    h.drain(&mut t, 0);
    deliver(&mut t);
    let acts = h.drain(&mut t, 100);
    let o = outcome(&acts);
    assert_eq!((o.status, o.content.as_str()), (status, content));
    let reply = h.state.messages.iter().find(|m| m.id == "m2").unwrap();
    assert_eq!(
        (reply.status, reply.content.as_str()),
        (status.message_status(), content)
    );
    assert_eq!(t.poll_timeout(), None, "no deadline after the end");
    // Nothing happens after the end.
    t.handle_event(StreamEvent::TextDelta("late".into()), 200);
    t.handle_stop(200);
    assert!(t.poll_action().is_none());
}

fn fail(kind: FailureKind) -> Failure {
    Failure {
        kind,
        message: "x".into(),
        fix: None,
        status: None,
    }
}

#[test]
fn turn_endings() {
    let text = |t: &mut Turn| t.handle_event(StreamEvent::TextDelta("part".into()), 10);
    check_ending(
        |t| {
            text(t);
            t.handle_event(
                StreamEvent::Done {
                    finish_reason: None,
                },
                20,
            )
        },
        TurnStatus::Complete,
        "part",
    );
    check_ending(
        |t| {
            text(t);
            t.handle_stop(20)
        },
        TurnStatus::Interrupted,
        "part",
    );
    check_ending(
        |t| {
            text(t);
            t.handle_failure(fail(FailureKind::Network), 20)
        },
        TurnStatus::Interrupted,
        "part",
    );
    check_ending(
        |t| {
            text(t);
            t.handle_failure(fail(FailureKind::Malformed), 20)
        },
        TurnStatus::Interrupted,
        "part",
    );
    check_ending(
        |t| t.handle_failure(fail(FailureKind::Network), 20),
        TurnStatus::Error,
        "",
    );
    check_ending(
        |t| t.handle_failure(fail(FailureKind::Auth), 20),
        TurnStatus::Error,
        "",
    );
    check_ending(
        |t| {
            text(t);
            t.handle_failure(fail(FailureKind::Server), 20)
        },
        TurnStatus::Error,
        "part",
    );
    check_ending(
        |t| {
            text(t);
            t.handle_event(
                StreamEvent::Error(StreamError {
                    code: None,
                    message: "overloaded".into(),
                }),
                20,
            )
        },
        TurnStatus::Error,
        "part",
    );
    check_ending(|t| t.handle_stop(5), TurnStatus::Interrupted, "");
}

#[test]
fn stop_cancels_the_request() {
    let mut h = Harness::new(Protocol::OpenAiChat);
    let mut t = h.start("hi", 0);
    h.drain(&mut t, 0);
    t.handle_stop(10);
    let acts = h.drain(&mut t, 10);
    assert_eq!(acts[0], Action::CancelRequest);
}

#[test]
fn streaming_saves_are_throttled_with_a_final_save() {
    let mut h = Harness::new(Protocol::OpenAiChat);
    let mut t = h.start("hi", 0);
    h.drain(&mut t, 0);
    let mut saves = vec![];
    for i in 0..30i64 {
        let now = 100 + i * 100; // 100..3000 ms, one delta every 100 ms
        if t.poll_timeout().is_some_and(|d| d <= now) {
            t.handle_timeout(now);
        }
        t.handle_event(StreamEvent::TextDelta(format!("w{i} ")), now);
        for a in h.drain(&mut t, now) {
            if let Action::SaveReply(s) = a {
                saves.push((now, s.is_final, s.status, s.content.len()));
            }
        }
    }
    t.handle_event(
        StreamEvent::Usage(Usage {
            prompt_tokens: 50,
            completion_tokens: 30,
        }),
        3050,
    );
    t.handle_event(
        StreamEvent::Done {
            finish_reason: None,
        },
        3100,
    );
    for a in h.drain(&mut t, 3100) {
        if let Action::SaveReply(s) = a {
            saves.push((3100, s.is_final, s.status, s.content.len()));
        }
    }
    // 2.9 s of streaming: saves at 100, 1100, 2100, then the final one.
    let times: Vec<i64> = saves.iter().map(|s| s.0).collect();
    assert_eq!(times, vec![100, 1100, 2100, 3100]);
    assert!(saves[..3]
        .iter()
        .all(|s| !s.1 && s.2 == MessageStatus::Streaming));
    assert!(saves[3].1 && saves[3].2 == MessageStatus::Complete);
    assert!(
        saves.windows(2).all(|w| w[0].3 < w[1].3),
        "each save has more text"
    );
    let reply = h.state.messages.iter().find(|m| m.id == "m2").unwrap();
    assert_eq!(
        reply.meta.usage,
        Some(Usage {
            prompt_tokens: 50,
            completion_tokens: 30
        })
    );
    assert_eq!(reply.meta.path, Some(TurnPath::Fresh));
}

#[test]
fn held_save_fires_on_timeout() {
    let mut h = Harness::new(Protocol::OpenAiChat);
    let mut t = h.start("hi", 0);
    h.drain(&mut t, 0);
    t.handle_event(StreamEvent::TextDelta("a".into()), 10);
    t.handle_event(StreamEvent::TextDelta("b".into()), 20);
    assert_eq!(h.drain(&mut t, 20).len(), 1);
    assert_eq!(t.poll_timeout(), Some(1010));
    t.handle_timeout(1010);
    match h.drain(&mut t, 1010).as_slice() {
        [Action::SaveReply(s)] => assert_eq!(s.content, "ab"),
        other => panic!("{other:?}"),
    }
    assert_eq!(t.poll_timeout(), None);
}

#[test]
fn tool_call_deltas_accumulate_by_index() {
    let mut h = Harness::new(Protocol::OpenAiChat);
    let mut t = h.start("weather?", 0);
    h.drain(&mut t, 0);
    let d = |index, id: Option<&str>, name: Option<&str>, args: &str| StreamEvent::ToolCallDelta {
        index,
        id: id.map(Into::into),
        name: name.map(Into::into),
        arguments: args.into(),
    };
    t.handle_event(d(1, Some("c2"), Some("time"), "{}"), 1);
    t.handle_event(d(0, Some("c1"), Some("weather"), "{\"city\":"), 2);
    t.handle_event(d(0, None, None, "\"Paris\"}"), 3);
    t.handle_event(
        StreamEvent::Done {
            finish_reason: Some("tool_calls".into()),
        },
        4,
    );
    let o = outcome(&h.drain(&mut t, 4));
    let calls: Vec<(&str, &str, &str)> = o
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
        .collect();
    assert_eq!(
        calls,
        vec![
            ("c1", "weather", "{\"city\":\"Paris\"}"),
            ("c2", "time", "{}")
        ]
    );
}

/// A call of a reply that ended whole waits for the tool loop (a call without an id gets one);
/// a call of a reply stopped, cut off or capped (its arguments may be cut) is interrupted and
/// never run.
#[test]
fn a_replys_calls_wait_for_the_loop_unless_the_reply_was_cut() {
    let call = |id: Option<&str>| StreamEvent::ToolCallDelta {
        index: 0,
        id: id.map(Into::into),
        name: Some("echo".into()),
        arguments: "{}".into(),
    };
    let check = |end: Option<StreamEvent>, id: Option<&str>, expected: (&str, ToolStatus)| {
        let mut h = Harness::new(Protocol::Ollama);
        let mut t = h.start("echo?", 0);
        h.drain(&mut t, 0);
        t.handle_event(call(id), 1);
        match end.clone() {
            Some(e) => t.handle_event(e, 2),
            None => t.handle_stop(2),
        }
        let o = outcome(&h.drain(&mut t, 2));
        let got: Vec<(&str, ToolStatus)> = o
            .round_calls
            .iter()
            .map(|c| (c.id.as_str(), c.status()))
            .collect();
        assert_eq!(got, [expected], "{end:?}");
        assert_eq!(o.tool_calls, o.round_calls);
        assert_eq!(
            h.state.messages.last().unwrap().meta.tool_calls,
            o.round_calls
        );
    };
    let done = Some(StreamEvent::Done {
        finish_reason: Some("stop".into()),
    });
    check(done.clone(), None, ("call_1_0", ToolStatus::Waiting));
    check(done, Some("c7"), ("c7", ToolStatus::Waiting));
    check(None, Some("c7"), ("c7", ToolStatus::Interrupted));
    let cut = StreamEvent::Error(StreamError {
        code: Some(CODE_CUT_OFF.into()),
        message: "cut".into(),
    });
    check(Some(cut), Some("c7"), ("c7", ToolStatus::Interrupted));
    let capped = Some(StreamEvent::Done {
        finish_reason: Some("length".into()),
    });
    check(capped, Some("c7"), ("c7", ToolStatus::Interrupted));
}

#[test]
fn calibration_sample_only_for_full_context_requests() {
    let mut h = Harness::new(Protocol::OpenAiResponses);
    let mut t = h.start("hi", 0);
    h.drain(&mut t, 0);
    t.handle_event(
        StreamEvent::Usage(Usage {
            prompt_tokens: 40,
            completion_tokens: 5,
        }),
        1,
    );
    t.handle_event(StreamEvent::ResponseId("r1".into()), 1);
    t.handle_event(
        StreamEvent::Done {
            finish_reason: None,
        },
        2,
    );
    let o = outcome(&h.drain(&mut t, 2));
    assert_eq!(o.calibration.map(|c| c.reported), Some(40));
    assert!(o.calibration.unwrap().estimated > 0);
    let mut t = h.start("again", 10);
    h.drain(&mut t, 10);
    t.handle_event(
        StreamEvent::Usage(Usage {
            prompt_tokens: 90,
            completion_tokens: 5,
        }),
        11,
    );
    t.handle_event(
        StreamEvent::Done {
            finish_reason: None,
        },
        12,
    );
    let o = outcome(&h.drain(&mut t, 12));
    assert_eq!((o.path, o.calibration), (TurnPath::Resumed, None));
}

// ---------- seed 004: the context-loss bug ----------

/// The buggy design of seed 004, reduced to its essence: the session records history in one list,
/// but the engine builds prompts from its own state's history, which nothing ever updates.
struct BuggyAgent {
    session_history: Vec<String>,
    state_history: Vec<String>,
}

impl BuggyAgent {
    fn user(&mut self, text: &str) -> String {
        self.session_history.push(format!("user: {text}"));
        // build_full_prompt(&state): reads state.history
        let mut prompt = self.state_history.join("\n");
        prompt.push_str(&format!("\nuser: {text}"));
        prompt
    }
    fn reply(&mut self, text: &str) {
        self.session_history.push(format!("assistant: {text}"));
    }
}

#[test]
fn seed_004_bug_reproduced_in_the_buggy_design() {
    let mut agent = BuggyAgent {
        session_history: vec![],
        state_history: vec![],
    };
    agent.user("my name is Ada");
    agent.reply("Nice to meet you, Ada.");
    let second = agent.user("what is my name?");
    assert_eq!(
        agent.session_history.len(),
        3,
        "the session has the history..."
    );
    assert!(
        !second.contains("Ada"),
        "...but the prompt was built from the empty state: context lost"
    );
}

fn tool_result(seq: u64, text: &str) -> Message {
    msg(seq, Role::Tool, text)
}

#[test]
fn seed_004_cannot_happen_here() {
    let mut h = Harness::new(Protocol::OpenAiChat);
    // Turn 1: user message, assistant reply with a tool call.
    let mut t = h.start("my name is Ada; check the weather in Paris", 0);
    assert_eq!(
        h.state.messages.len(),
        1,
        "user message is in history before the request"
    );
    h.drain(&mut t, 0);
    t.handle_event(StreamEvent::TextDelta("Nice to meet you, Ada.".into()), 10);
    t.handle_event(
        StreamEvent::ToolCallDelta {
            index: 0,
            id: Some("c1".into()),
            name: Some("weather".into()),
            arguments: "{}".into(),
        },
        11,
    );
    t.handle_event(
        StreamEvent::Done {
            finish_reason: None,
        },
        20,
    );
    h.drain(&mut t, 20);
    assert_eq!(h.state.messages.len(), 2, "assistant reply is in history");
    // A tool result arrives.
    let s = h.state.next_seq();
    h.state.add_message(tool_result(s, "Paris: 18°C, sunny"));
    assert_eq!(h.state.messages.len(), 3, "tool result is in history");
    // Turn 2: the prompt carries all three.
    let mut t = h.start("what is my name, and how warm is it?", 30);
    let acts = h.drain(&mut t, 30);
    let Action::SendRequest { prompt, path, .. } = &acts[0] else {
        panic!()
    };
    assert_eq!(*path, TurnPath::Reinjected);
    let all: String = prompt
        .messages
        .iter()
        .map(|m| m.content.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(all.contains("my name is Ada"));
    // The reply carries its call (engine_tool_history.rs: each protocol's form).
    let reply = prompt
        .messages
        .iter()
        .find(|m| m.content == "Nice to meet you, Ada.");
    let called: Vec<&str> = reply
        .unwrap()
        .tool_calls
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(called, ["weather"]);
    assert!(all.contains("[tool result]\nParis: 18°C, sunny"));
    assert!(all.ends_with("how warm is it?"));
    assert_eq!(h.state.messages.len(), 4);
}

#[test]
fn seed_004_stale_context_is_refused() {
    // A driver that assembles from a copy of the history taken before the last event.
    let mut h = Harness::new(Protocol::OpenAiChat);
    h.exchange("my name is Ada", "Hi Ada", None, 0);
    let stale_copy: Vec<Message> = h.state.messages[..1].to_vec(); // never updated after the reply
    let new = msg(3, Role::User, "what is my name?");
    h.state.add_message(new.clone());
    let a = assemble(
        &AssemblyInput {
            system_prompt: "s",
            summary: None,
            entities: &[],
            history: &stale_copy,
            new_message: &new,
            config: &h.cfg,
            protocol: Protocol::OpenAiChat,
            user_facts: &[],
            project: None,
            recall: &[],
        },
        &HeuristicEstimator,
    );
    let err = Turn::start(TurnStart {
        conversation: &h.state.conversation,
        history: &h.state.messages,
        endpoint: &h.endpoint,
        new_message_id: "m3",
        assembly: &a,
        reply_id: "m4",
        reply_seq: 4,
    })
    .unwrap_err();
    assert_eq!(
        err,
        TurnError::StaleContext {
            assembled: Some(1),
            actual: Some(2)
        }
    );
    // And one assembled for another message is refused too.
    let other = msg(9, Role::User, "x");
    let b = assemble(
        &AssemblyInput {
            system_prompt: "s",
            summary: None,
            entities: &[],
            history: &h.state.messages,
            new_message: &other,
            config: &h.cfg,
            protocol: Protocol::OpenAiChat,
            user_facts: &[],
            project: None,
            recall: &[],
        },
        &HeuristicEstimator,
    );
    assert!(matches!(
        Turn::start(TurnStart {
            conversation: &h.state.conversation,
            history: &h.state.messages,
            endpoint: &h.endpoint,
            new_message_id: "m3",
            assembly: &b,
            reply_id: "m4",
            reply_seq: 4,
        }),
        Err(TurnError::WrongNewMessage { .. })
    ));
}

// ---------- reasoning ----------

/// A turn whose reply thinks (`thoughts`, each at its time) and then answers at `answer_at` (or,
/// with `None`, is stopped at 9000 while thinking): the reasoning saved with its times, and the next
/// turn's request, in `format`, without a word of it.
fn check_reasoning(
    protocol: Protocol,
    format: HistoryFormat,
    thoughts: &[(&str, i64)],
    answer_at: Option<i64>,
    expected: Option<Reasoning>,
) {
    let mut h = Harness::new(protocol);
    h.cfg.history_format = format;
    let mut t = h.start("How many r in strawberry?", 1000);
    h.drain(&mut t, 1000);
    for (thought, at) in thoughts {
        t.handle_event(StreamEvent::ReasoningDelta(thought.to_string()), *at);
    }
    match answer_at {
        Some(at) => {
            t.handle_event(StreamEvent::TextDelta("There are 3.".into()), at);
            if !thoughts.is_empty() {
                t.handle_event(StreamEvent::ReasoningDelta(" late".into()), at + 1);
            }
            t.handle_event(
                StreamEvent::Done {
                    finish_reason: None,
                },
                at + 500,
            );
        }
        None => t.handle_stop(9000),
    }
    let acts = h.drain(&mut t, 10_000);
    let what = format!("{protocol:?} {format:?} {thoughts:?}");
    let last_save = acts.iter().rev().find_map(|a| match a {
        Action::SaveReply(s) => Some(s.clone()),
        _ => None,
    });
    assert_eq!(last_save.unwrap().reasoning, expected, "{what}");
    let reply = h.state.messages.last().unwrap();
    assert_eq!(reply.meta.reasoning, expected, "{what}: stored");
    let mut next = h.start("And in raspberry?", 20_000);
    let request = format!("{:?}", h.drain(&mut next, 20_000));
    for (thought, _) in thoughts {
        assert!(!request.contains(thought.trim()), "{what}: {request}");
    }
}

#[test]
fn reasoning_is_kept_with_its_times_and_never_sent_back() {
    let thoughts = [("SECRET-STEP one", 1200), (" SECRET-STEP two", 2100)];
    let thought = |text: &str, ended: i64| {
        Some(Reasoning {
            text: text.into(),
            started_at: 1200,
            ended_at: Some(ended),
        })
    };
    for protocol in Protocol::ALL {
        for format in [HistoryFormat::Messages, HistoryFormat::Transcript] {
            let both = "SECRET-STEP one SECRET-STEP two";
            // Late reasoning (after the answer began) is kept; the clock stopped at the answer.
            let late = format!("{both} late");
            check_reasoning(
                protocol,
                format,
                &thoughts,
                Some(4200),
                thought(&late, 4200),
            );
            // Stopped while thinking: what was thought is kept, ended at the stop.
            check_reasoning(protocol, format, &thoughts, None, thought(both, 9000));
            check_reasoning(protocol, format, &[], Some(4200), None);
        }
    }
    let r = thought("x", 4200).unwrap();
    assert_eq!(r.seconds(), Some(3));
    let quick = Reasoning {
        ended_at: Some(1300),
        ..r.clone()
    };
    assert_eq!(quick.seconds(), Some(1));
    let open = Reasoning {
        ended_at: None,
        ..r
    };
    assert_eq!(open.seconds(), None);
}

// ---------- generation figures ----------

/// A turn sent at 1000 whose pieces arrive at `pieces`, with the server's `usage` and `timings`:
/// the figures saved with the reply.
fn check_stats(
    pieces: &[i64],
    usage: Option<u32>,
    timings: Option<Timings>,
    expected: Option<GenerationStats>,
) {
    let mut h = Harness::new(Protocol::OpenAiChat);
    let mut t = h.start("Hi", 900);
    h.drain(&mut t, 900);
    t.handle_sent(1000);
    for at in pieces {
        t.handle_event(StreamEvent::TextDelta("word ".into()), *at);
    }
    if let Some(n) = usage {
        t.handle_event(
            StreamEvent::Usage(Usage {
                prompt_tokens: 5,
                completion_tokens: n,
            }),
            5000,
        );
    }
    if let Some(timings) = timings {
        t.handle_event(StreamEvent::Timings(timings), 5000);
    }
    t.handle_event(
        StreamEvent::Done {
            finish_reason: None,
        },
        5000,
    );
    h.drain(&mut t, 5000);
    let got = h.state.messages.last().unwrap().meta.stats;
    assert_eq!(got, expected, "{pieces:?} {usage:?} {timings:?}");
}

#[test]
fn generation_figures_are_the_servers_or_measured() {
    let stats = |tokens, first: Option<u32>, speed: Option<f32>| {
        Some(GenerationStats {
            tokens,
            first_token_ms: first,
            tokens_per_s: speed,
            cached_tokens: None,
        })
    };
    // Measured: first piece 300 ms after the request, 11 tokens over the next second.
    check_stats(
        &[1300, 1800, 2300],
        Some(11),
        None,
        stats(11, Some(300), Some(10.0)),
    );
    // What the server reported wins (llama.cpp's timings, Ollama's durations).
    let server = Timings {
        tokens: Some(12),
        first_token_ms: Some(41.6),
        tokens_per_s: Some(99.5),
    };
    check_stats(
        &[1300, 2300],
        Some(11),
        Some(server),
        stats(12, Some(42), Some(99.5)),
    );
    // One piece: no span to measure a speed over.
    check_stats(&[1300], Some(1), None, stats(1, Some(300), None));
    // No token count reported: no figures at all.
    check_stats(&[1300, 2300], None, None, None);
    check_stats(&[1300, 2300], Some(0), None, None);
}

// ---------- replies that end: the cap, Continue ----------

impl Harness {
    /// Continue: the turn that asks for the rest of the last reply, built as the driver builds it
    /// (the prompt assembled for the user message it answers, from the history up to that message).
    fn continue_last(&mut self) -> Turn {
        let reply = self.state.messages.last().unwrap().clone();
        let user_at = self
            .state
            .messages
            .iter()
            .rposition(|m| m.role == Role::User)
            .unwrap();
        let history = self.state.messages[..=user_at].to_vec();
        let user = history.last().unwrap().clone();
        let a = assemble(
            &AssemblyInput {
                system_prompt: &self.endpoint.system_prompt,
                summary: None,
                entities: &[],
                history: &history,
                new_message: &user,
                config: &self.cfg,
                protocol: self.endpoint.protocol,
                user_facts: &[],
                project: None,
                recall: &[],
            },
            &HeuristicEstimator,
        );
        let start = TurnStart {
            conversation: &self.state.conversation,
            history: &history,
            endpoint: &self.endpoint,
            new_message_id: &user.id,
            assembly: &a,
            reply_id: &reply.id,
            reply_seq: reply.seq,
        };
        Turn::continue_reply(start, &reply).unwrap()
    }
}

/// A reply of `protocol` that ends with `finish_reason` is marked capped (complete, not failed)
/// exactly when `capped`.
fn check_capped(protocol: Protocol, finish_reason: Option<&str>, capped: bool) {
    assert_eq!(
        capped_by(protocol, finish_reason),
        capped,
        "{protocol:?} {finish_reason:?}"
    );
    let mut h = Harness::new(protocol);
    let mut t = h.start("Tell me a long story", 1000);
    h.drain(&mut t, 1000);
    t.handle_event(StreamEvent::TextDelta("Once upon a time".into()), 1100);
    let finish_reason = finish_reason.map(str::to_string);
    t.handle_event(StreamEvent::Done { finish_reason }, 1200);
    let acts = h.drain(&mut t, 1200);
    let reply = h.state.messages.last().unwrap();
    assert_eq!(reply.status, MessageStatus::Complete, "{protocol:?}");
    assert_eq!(reply.meta.capped, capped, "{protocol:?}");
    assert_eq!(reply.meta.error, None, "{protocol:?}");
    let Some(Action::Finished(outcome)) = acts.last() else {
        panic!("finished")
    };
    assert_eq!(
        (outcome.status, outcome.capped),
        (TurnStatus::Complete, capped)
    );
}

#[test]
fn a_reply_cut_by_the_cap_is_marked_capped_by_each_protocols_own_signal() {
    use Protocol::*;
    check_capped(OpenAiChat, Some("length"), true);
    check_capped(OpenAiResponses, Some("max_output_tokens"), true);
    check_capped(Ollama, Some("length"), true);
    check_capped(Anthropic, Some("max_tokens"), true);
    check_capped(OpenAiChat, Some("stop"), false);
    check_capped(OpenAiChat, None, false);
    check_capped(OpenAiResponses, Some("completed"), false);
    check_capped(OpenAiResponses, Some("content_filter"), false);
    check_capped(Ollama, Some("stop"), false);
    check_capped(Anthropic, Some("end_turn"), false);
    check_capped(Anthropic, Some("length"), false);
    check_capped(OpenAiChat, Some("max_tokens"), false);
}

#[test]
fn the_cached_prompt_tokens_the_server_reported_are_kept_in_the_replys_figures() {
    for cached in [None, Some(0), Some(2840)] {
        let mut h = Harness::new(Protocol::OpenAiChat);
        let mut t = h.start("Hi", 900);
        h.drain(&mut t, 900);
        t.handle_sent(1000);
        t.handle_event(StreamEvent::TextDelta("Hello".into()), 1420);
        let usage = Usage {
            prompt_tokens: 3000,
            completion_tokens: 312,
        };
        t.handle_event(StreamEvent::Usage(usage), 1500);
        if let Some(n) = cached {
            t.handle_event(StreamEvent::CachedTokens(n), 1500);
        }
        let finish_reason = Some("stop".into());
        t.handle_event(StreamEvent::Done { finish_reason }, 1500);
        h.drain(&mut t, 1500);
        let stats = h.state.messages.last().unwrap().meta.stats.unwrap();
        assert_eq!((stats.tokens, stats.cached_tokens), (312, cached));
    }
}

/// The request for the rest of `written` in `protocol`: the answered prompt's messages, then
/// `tail` (role and text).
fn check_continuation(protocol: Protocol, written: &str, tail: &[(Role, &str)]) {
    let prompt = Prompt {
        system: "Be brief.".into(),
        messages: vec![WireMessage {
            role: Role::User,
            content: "Tell me a story".into(),
            images: vec![],
            tool_calls: vec![],
        }],
    };
    let got = continuation_prompt(protocol, &prompt, written);
    assert_eq!(got.system, prompt.system);
    assert_eq!(got.messages[..1], prompt.messages[..]);
    let rest: Vec<(Role, &str)> = got.messages[1..]
        .iter()
        .map(|m| (m.role, m.content.as_str()))
        .collect();
    assert_eq!(rest, tail, "{protocol:?}");
}

#[test]
fn the_request_for_the_rest_carries_what_was_written() {
    use Protocol::*;
    use Role::{Assistant, User};
    let go_on = CONTINUE_INSTRUCTION;
    check_continuation(
        OpenAiChat,
        "Once upon a ",
        &[(Assistant, "Once upon a "), (User, go_on)],
    );
    check_continuation(
        OpenAiResponses,
        "Once upon",
        &[(Assistant, "Once upon"), (User, go_on)],
    );
    check_continuation(Ollama, "Once\n", &[(Assistant, "Once\n"), (User, go_on)]);
    // Anthropic continues a final assistant message itself (a prefill), which may not end in
    // whitespace.
    check_continuation(Anthropic, "Once upon a \n ", &[(Assistant, "Once upon a")]);
    check_continuation(
        Anthropic,
        "Once upon a time",
        &[(Assistant, "Once upon a time")],
    );
}

#[test]
fn continue_appends_to_the_same_reply_which_may_be_capped_again_and_a_stop_keeps_it() {
    let mut h = Harness::new(Protocol::OpenAiChat);
    let mut t = h.start("Tell me a long story", 1000);
    h.drain(&mut t, 1000);
    t.handle_event(StreamEvent::TextDelta("Once upon a ".into()), 1100);
    let length = || StreamEvent::Done {
        finish_reason: Some("length".into()),
    };
    t.handle_event(length(), 1200);
    h.drain(&mut t, 1200);
    let first = h.state.messages.last().unwrap().clone();
    assert!(first.meta.capped);

    // Continue: the whole context, the reply so far, the instruction; never a resumed session.
    let mut t = h.continue_last();
    let acts = h.drain(&mut t, 2000);
    let Some(Action::SendRequest {
        prompt,
        previous_response_id,
        ..
    }) = acts.first()
    else {
        panic!("a request first, got {acts:?}")
    };
    assert_eq!(*previous_response_id, None);
    let n = prompt.messages.len();
    assert_eq!(prompt.messages[n - 2].content, "Once upon a ");
    assert_eq!(prompt.messages[n - 2].role, Role::Assistant);
    assert_eq!(prompt.messages[n - 1].content, CONTINUE_INSTRUCTION);
    assert_eq!(prompt.messages[n - 3].content, "Tell me a long story");
    t.handle_event(StreamEvent::TextDelta("time, a ".into()), 2100);
    t.handle_event(length(), 2200);
    h.drain(&mut t, 2200);
    let grown = h.state.messages.last().unwrap().clone();
    assert_eq!(
        (grown.id.as_str(), grown.seq),
        (first.id.as_str(), first.seq)
    );
    assert_eq!(grown.content, "Once upon a time, a ");
    assert!(grown.meta.capped, "capped again");
    assert_eq!(h.state.messages.len(), 2, "no new message");

    // Continue again, then Stop: what came is kept, no longer capped but interrupted.
    let mut t = h.continue_last();
    h.drain(&mut t, 3000);
    t.handle_event(StreamEvent::TextDelta("dragon".into()), 3100);
    t.handle_stop(3200);
    h.drain(&mut t, 3200);
    let stopped = h.state.messages.last().unwrap();
    assert_eq!(stopped.content, "Once upon a time, a dragon");
    assert_eq!(stopped.status, MessageStatus::Interrupted);
    assert!(!stopped.meta.capped);
    assert_eq!(stopped.id, first.id);
}

// ---------- a failed, stopped or cut-off turn: what Retry and a new message replace, what goes
// back to the model ----------

/// A message `m<seq>`: `u` the user's, `a` a complete reply, `f` a reply that failed empty, `p` a
/// reply that failed with text, `s` a stopped reply, `x` one cut off, `e` one stopped empty,
/// `d` a deleted (tombstone) reply.
fn m(seq: u64, kind: char) -> Message {
    let stopped = aborted().message;
    let (role, status, content, error) = match kind {
        'u' => (Role::User, MessageStatus::Complete, "a question", None),
        'a' => (Role::Assistant, MessageStatus::Complete, "an answer", None),
        'f' => (
            Role::Assistant,
            MessageStatus::Error,
            "",
            Some("Can't reach"),
        ),
        'p' => (Role::Assistant, MessageStatus::Error, "half of", Some("x")),
        's' => (
            Role::Assistant,
            MessageStatus::Interrupted,
            "half an",
            Some(stopped.as_str()),
        ),
        'x' => (
            Role::Assistant,
            MessageStatus::Interrupted,
            "half an",
            Some("The connection dropped"),
        ),
        'e' => (
            Role::Assistant,
            MessageStatus::Interrupted,
            "",
            Some(stopped.as_str()),
        ),
        'd' => (Role::Assistant, MessageStatus::Complete, "", None),
        _ => unreachable!(),
    };
    Message {
        id: format!("m{seq}"),
        conversation_id: "c1".into(),
        seq,
        role,
        content: content.to_string(),
        status,
        created_at: seq as i64 * 1000,
        meta: MessageMeta {
            error: error.map(str::to_string),
            deleted: kind == 'd',
            ..Default::default()
        },
    }
}

/// A branch from a pattern: one character per message, seqs from 1.
fn branch(pattern: &str) -> Vec<Message> {
    pattern
        .chars()
        .enumerate()
        .map(|(i, k)| m(i as u64 + 1, k))
        .collect()
}

// ---------- what Retry and a new message replace ----------

fn check_retry(pattern: &str, expected: Option<(u64, Option<u64>)>) {
    let want = expected.map(|(u, r)| RetryPlan {
        user_id: format!("m{u}"),
        replaces: r.map(|r| format!("m{r}")),
    });
    assert_eq!(retry_plan(&branch(pattern)), want, "retry on {pattern}");
}

#[test]
fn retry_replaces_a_failed_reply_and_keeps_one_that_said_something() {
    check_retry("uauf", Some((3, Some(4))));
    check_retry("uau", Some((3, None)));
    check_retry("uaux", Some((3, None)));
    check_retry("uaus", Some((3, None)));
    check_retry("uaup", Some((3, None)));
    check_retry("uaufd", Some((3, Some(4))));
    check_retry("", None);
    check_retry("a", None);
}

fn check_failed_turn(pattern: &str, expected: Option<u64>) {
    let b = branch(pattern);
    let got = failed_turn(&b).map(|m| m.id.clone());
    assert_eq!(
        got,
        expected.map(|s| format!("m{s}")),
        "failed turn of {pattern}"
    );
}

#[test]
fn a_new_message_after_a_failed_turn_takes_the_failed_question_s_place() {
    check_failed_turn("uauf", Some(3));
    check_failed_turn("uau", Some(3));
    check_failed_turn("uauff", Some(3));
    check_failed_turn("uaufd", Some(3));
    check_failed_turn("uaua", None);
    check_failed_turn("uaux", None);
    check_failed_turn("uaue", None);
    check_failed_turn("uaup", None);
    check_failed_turn("", None);
}

// ---------- what goes back to the model ----------

fn check_wire(kind: char, expected: &str) {
    let (wire, _) = render_message(&m(2, kind), 2000);
    assert_eq!(wire.content, expected, "{kind}");
}

#[test]
fn a_reply_that_did_not_end_goes_back_marked() {
    check_wire('a', "an answer");
    check_wire('s', &format!("half an … {STOPPED_MARKER}"));
    check_wire('x', &format!("half an … {CUT_OFF_MARKER}"));
    check_wire('e', STOPPED_MARKER);
    check_wire('u', "a question");
}

/// What the request carries of `pattern` then a new question: the roles in order ("u"/"a") and the
/// ids left out as unanswered.
fn check_sent(pattern: &str, roles: &str, unanswered: &[u64]) {
    let history = branch(pattern);
    let mut new = m(history.len() as u64 + 1, 'u');
    new.content = "the new question".into();
    let config = MemoryConfig {
        context_tokens: 8000,
        reply_reserve_tokens: 100,
        ..MemoryConfig::default()
    };
    let a = assemble(
        &AssemblyInput {
            system_prompt: "",
            summary: None,
            entities: &[],
            history: &history,
            new_message: &new,
            config: &config,
            protocol: Protocol::OpenAiChat,
            user_facts: &[],
            project: None,
            recall: &[],
        },
        &HeuristicEstimator,
    );
    let got: String = a
        .prompt
        .messages
        .iter()
        .map(|w| if w.role == Role::User { 'u' } else { 'a' })
        .collect();
    assert_eq!(
        got, roles,
        "roles sent for {pattern}: {:?}",
        a.prompt.messages
    );
    let dropped: Vec<String> = a
        .dropped
        .iter()
        .filter(|d| d.reason == DropReason::Unanswered)
        .map(|d| d.message_id.clone())
        .collect();
    let want: Vec<String> = unanswered.iter().map(|s| format!("m{s}")).collect();
    assert_eq!(dropped, want, "unanswered in {pattern}");
    assert!(
        !got.contains("uu"),
        "two user messages in a row for {pattern}"
    );
}

/// A history ending with the user's message and no failed reply: nothing is left out.
fn check_sent_with_pair(pattern: &str) {
    let history = branch(pattern);
    let new = m(history.len() as u64 + 1, 'u');
    let config = MemoryConfig::default();
    let a = assemble(
        &AssemblyInput {
            system_prompt: "",
            summary: None,
            entities: &[],
            history: &history,
            new_message: &new,
            config: &config,
            protocol: Protocol::OpenAiChat,
            user_facts: &[],
            project: None,
            recall: &[],
        },
        &HeuristicEstimator,
    );
    assert!(a.dropped.is_empty(), "{pattern}: {:?}", a.dropped);
}

#[test]
fn the_request_never_carries_two_user_messages_in_a_row() {
    check_sent("ua", "uau", &[]);
    check_sent("uauf", "uau", &[3]);
    // Without a failed reply between (an import's messages), both are the user's words and go.
    check_sent_with_pair("uau");
    check_sent("uaufuf", "uau", &[3, 5]);
    check_sent("uaue", "uauau", &[]);
    check_sent("uaux", "uauau", &[]);
    check_sent("uaup", "uau", &[3]);
}

/// A stream that ended before anything arrived (`deliver`) on `protocol`, then the probe's answer
/// (`probe`: `None` when no probe is expected): whether a probe went out, and the failure the turn
/// ends with.
fn check_probe(
    protocol: Protocol,
    deliver: impl Fn(&mut Turn),
    probe: Option<Option<Failure>>,
    expected: (bool, FailureKind),
) {
    let mut h = Harness::new(protocol);
    let mut t = h.start("hi", 0);
    let first = h.drain(&mut t, 0);
    let sent_prompt = match &first[0] {
        Action::SendRequest { prompt, .. } => prompt.clone(),
        other => panic!("first action is not a send: {other:?}"),
    };
    deliver(&mut t);
    let mut acts = h.drain(&mut t, 20);
    let probed = matches!(acts.first(), Some(Action::Probe { .. }));
    if let Some(Action::Probe { prompt }) = acts.first() {
        assert_eq!(
            prompt, &sent_prompt,
            "the probe sends the request that went"
        );
        t.handle_probe(probe.clone().flatten(), 30);
        acts = h.drain(&mut t, 30);
    }
    let failure = outcome(&acts).failure.map(|f| f.kind);
    assert_eq!((probed, failure), (expected.0, Some(expected.1)));
    // Nothing follows the end, not even a late answer to a probe.
    t.handle_probe(Some(too_long()), 40);
    assert!(t.poll_action().is_none());
}

/// What a decoder reports of a body that ended before anything arrived (or, `code`, another fault).
fn stream_error(code: &str) -> StreamEvent {
    StreamEvent::Error(StreamError {
        code: Some(code.into()),
        message: "The endpoint closed the connection without sending a reply.".into(),
    })
}

fn too_long() -> Failure {
    Failure {
        kind: FailureKind::ContextTooLong {
            window: Some(2048),
            prompt_tokens: Some(2519),
        },
        message: "The prompt was longer than the server's context of 2,048 tokens (HTTP 400)."
            .into(),
        fix: None,
        status: Some(400),
    }
}

#[test]
fn a_stream_that_ended_before_anything_arrived_is_asked_why_once() {
    use Protocol::*;
    let empty = |t: &mut Turn| t.handle_event(stream_error(CODE_CUT_OFF), 10);
    let too = FailureKind::ContextTooLong {
        window: Some(2048),
        prompt_tokens: Some(2519),
    };
    // llama-cpp-python's empty 200 for a prompt longer than its context: the probe's 400 says it.
    check_probe(
        OpenAiChat,
        empty,
        Some(Some(too_long())),
        (true, too.clone()),
    );
    // The probe went through (or failed to say anything): the first failure stands.
    check_probe(
        OpenAiChat,
        empty,
        Some(None),
        (true, FailureKind::Malformed),
    );
    // Something arrived before the end: no probe.
    let heard = |t: &mut Turn| {
        t.handle_event(StreamEvent::Usage(Usage::default()), 5);
        t.handle_event(stream_error(CODE_CUT_OFF), 10)
    };
    check_probe(OpenAiChat, heard, None, (false, FailureKind::Malformed));
    // A body that is not the protocol's (garbage) is not asked about: asking again says nothing new.
    let garbage = |t: &mut Turn| t.handle_event(stream_error(CODE_MALFORMED), 10);
    check_probe(OpenAiChat, garbage, None, (false, FailureKind::Malformed));
    // Other failures, and other protocols (whose servers refuse before streaming), are not probed.
    let http = |t: &mut Turn| t.handle_failure(too_long(), 10);
    check_probe(OpenAiChat, http, None, (false, too));
    let net = |t: &mut Turn| t.handle_failure(fail(FailureKind::Network), 10);
    check_probe(OpenAiChat, net, None, (false, FailureKind::Network));
    check_probe(Ollama, empty, None, (false, FailureKind::Malformed));
    check_probe(Anthropic, empty, None, (false, FailureKind::Malformed));
}
