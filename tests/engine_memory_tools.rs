#![cfg(not(target_arch = "wasm32"))]
//! The built-in memory tools (`engine/memory_tools.rs`, issue 44 item 4) and the loop's settings
//! (`engine::tools::{limits, always_allowed}`): when a turn offers them, which conversations they
//! may read (memory off, projects), what a call asks, and what the model reads back (search ranked
//! as recall ranks, a span of messages, the facts in scope).

use memoire::engine::memory::recall::Found;
use memoire::engine::memory_tools::*;
use memoire::engine::model::*;
use memoire::engine::tools::{
    always_allowed, always_key, limits, ToolPrefs, ToolSource, DEFAULT_MAX_STEPS,
};

mod chat_builders;
use chat_builders::{convo, msg};

fn in_project(id: &str, project: Option<&str>, memory: Option<bool>) -> Conversation {
    let mut c = convo(id);
    c.title = format!("T {id}");
    c.memory_overrides.project = project.map(str::to_string);
    c.memory_overrides.user_memory = memory;
    c
}

fn project(id: &str, deleted: Option<Millis>) -> Project {
    Project {
        id: id.into(),
        name: id.into(),
        instructions: String::new(),
        created_at: 0,
        updated_at: 0,
        deleted,
    }
}

fn fact(text: &str, scope: Option<&str>, forgotten: Option<Millis>) -> UserFact {
    UserFact {
        id: text.into(),
        text: text.into(),
        kind: FactKind::Other,
        claim_key: String::new(),
        source: None,
        valid_from: 1,
        valid_to: None,
        forgotten,
        scope: scope.map(str::to_string),
        updated_at: 1,
    }
}

/// The memory tools are offered exactly when `expected`.
fn check_offered(on: bool, memory: bool, private: bool, temporary: bool, expected: bool) {
    assert_eq!(offered(on, memory, private, temporary), expected);
}

#[test]
fn the_memory_tools_follow_the_switches() {
    check_offered(true, true, false, false, true);
    check_offered(false, true, false, false, false);
    check_offered(true, false, false, false, false);
    check_offered(true, true, true, false, false);
    check_offered(true, true, false, true, false);
}

#[test]
fn the_defs_are_builtin_with_object_schemas() {
    let d = defs();
    let names: Vec<&str> = d.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, [SEARCH, READ, FACTS]);
    for def in &d {
        assert_eq!(def.source, ToolSource::Builtin);
        let v: serde_json::Value = serde_json::from_str(&def.parameters).unwrap();
        assert_eq!(v["type"], "object", "{}", def.name);
    }
}

/// A turn in `here` (in project `scope`) may read `c` exactly when `expected`.
fn check_reach(scope: Option<&str>, c: Conversation, expected: bool) {
    let projects = [
        project("p", None),
        project("q", None),
        project("gone", Some(5)),
    ];
    let here = in_project("here", scope, None);
    let reach = Reach::of(&here, &projects);
    assert_eq!(
        reach.may_read(&c, &projects),
        expected,
        "{:?}",
        c.memory_overrides
    );
}

#[test]
fn the_tools_read_only_what_a_prompt_may_carry() {
    check_reach(None, in_project("a", None, None), true);
    check_reach(None, in_project("a", None, Some(true)), true);
    check_reach(None, in_project("a", None, Some(false)), false);
    check_reach(None, in_project("a", Some("p"), None), false);
    check_reach(Some("p"), in_project("a", Some("p"), None), true);
    check_reach(Some("p"), in_project("a", Some("q"), None), false);
    check_reach(Some("p"), in_project("a", None, None), true);
    check_reach(Some("p"), in_project("a", Some("p"), Some(false)), false);
    // A deleted project's conversations are in none.
    check_reach(None, in_project("a", Some("gone"), None), true);
}

/// Tool `name` called with `args` asks `expected` (or fails with words holding it).
fn check_call(name: &str, args: &str, expected: Result<MemoryCall, &str>) {
    match (parse_call(name, args), expected) {
        (Ok(got), Ok(want)) => assert_eq!(got, want, "{name} {args}"),
        (Err(got), Err(want)) => assert!(got.contains(want), "{got:?} lacks {want:?}"),
        (got, want) => panic!("{name} {args}: {got:?}, expected {want:?}"),
    }
}

fn read(id: &str, from: u64, to: u64) -> MemoryCall {
    MemoryCall::Read {
        conversation_id: id.into(),
        from,
        to,
    }
}

#[test]
fn a_call_says_what_it_asks() {
    let search = |q: &str| MemoryCall::Search { query: q.into() };
    check_call(
        SEARCH,
        r#"{"query":"bakery Porto"}"#,
        Ok(search("bakery Porto")),
    );
    check_call(SEARCH, r#"{"query":"  "}"#, Err("empty"));
    check_call(SEARCH, r#"{"q":"x"}"#, Err("not valid"));
    check_call(SEARCH, "not json", Err("not valid"));
    check_call(
        READ,
        r#"{"conversation_id":"c","from_seq":3,"to_seq":5}"#,
        Ok(read("c", 3, 5)),
    );
    check_call(
        READ,
        r#"{"conversation_id":"c"}"#,
        Ok(read("c", 0, MAX_READ_MESSAGES - 1)),
    );
    check_call(
        READ,
        r#"{"conversation_id":"c","from_seq":10,"to_seq":500}"#,
        Ok(read("c", 10, 29)),
    );
    check_call(
        READ,
        r#"{"conversation_id":"c","from_seq":10,"to_seq":2}"#,
        Ok(read("c", 10, 29)),
    );
    check_call(FACTS, "", Ok(MemoryCall::Facts));
    check_call(FACTS, "{}", Ok(MemoryCall::Facts));
    check_call("rm_rf", "{}", Err("no memory tool named rm_rf"));
}

fn found(conv: &str, seq: u64, text: &str, private: bool) -> Found {
    let mut m = msg(seq, Role::User, text);
    m.conversation_id = conv.into();
    m.id = format!("{conv}-{seq}");
    Found {
        message: m,
        title: format!("T {conv}"),
        private,
    }
}

/// What a search in conversation `here` over `found` reads holds every `has` and none of `lacks`.
fn check_search(found: Vec<Found>, query: &str, has: &[&str], lacks: &[&str]) {
    let reach = Reach {
        here: "here".into(),
        scope: None,
    };
    let text = search_text(found, &search_words(query), &reach);
    for h in has {
        assert!(text.contains(h), "{text:?} lacks {h:?}");
    }
    for l in lacks {
        assert!(!text.contains(l), "{text:?} has {l:?}");
    }
}

#[test]
fn a_search_ranks_as_recall_and_keeps_out_what_it_may_not_read() {
    let bakery = "The bakery in Porto was called Manteigaria";
    check_search(
        vec![found("a", 4, bakery, false)],
        "bakery Porto",
        &[
            "conversation_id=a",
            "title=\"T a\"",
            "seq=4",
            "user: ",
            "Manteigaria",
        ],
        &[],
    );
    check_search(
        vec![found("a", 4, bakery, true)],
        "bakery Porto",
        &["No earlier"],
        &["Manteigaria"],
    );
    check_search(
        vec![found("here", 4, bakery, false)],
        "bakery Porto",
        &["No earlier"],
        &["Manteigaria"],
    );
    // Two words looked up: a passage must hold both.
    check_search(
        vec![
            found("a", 1, "a bakery in Lisbon", false),
            found("b", 2, bakery, false),
        ],
        "bakery Porto",
        &["conversation_id=b"],
        &["conversation_id=a"],
    );
}

/// What a read of `c` over `messages` gives.
fn check_read(c: Option<&Conversation>, messages: &[Message], expected: Result<&str, &str>) {
    match (read_text(c, messages), expected) {
        (Ok(got), Ok(want)) => assert_eq!(got, want),
        (Err(got), Err(want)) => assert!(got.contains(want), "{got:?}"),
        (got, want) => panic!("{got:?}, expected {want:?}"),
    }
}

#[test]
fn a_read_shows_the_span_without_what_is_gone() {
    let c = in_project("c1", None, None);
    let mut deleted = msg(3, Role::User, "secret");
    deleted.meta.deleted = true;
    let failed = MessageStatus::Error;
    let long = "x".repeat(READ_MESSAGE_CHARS + 5);
    let messages = [
        msg(1, Role::User, "hello"),
        msg(2, Role::Assistant, "hi"),
        deleted,
        chat_builders::with_status(msg(4, Role::Assistant, "oops"), failed),
    ];
    check_read(
        Some(&c),
        &messages,
        Ok("Conversation \"T c1\":\nseq=1 user: hello\nseq=2 assistant: hi"),
    );
    check_read(
        Some(&c),
        &[],
        Ok("Conversation \"T c1\": no messages in that span."),
    );
    let cut = format!(
        "Conversation \"T c1\":\nseq=5 user: {}…",
        "x".repeat(READ_MESSAGE_CHARS)
    );
    check_read(Some(&c), &[msg(5, Role::User, &long)], Ok(&cut));
    check_read(None, &messages, Err("no conversation with that id"));
}

/// The facts a turn in project `scope` reads.
fn check_facts(scope: Option<&str>, expected: &str) {
    let facts = [
        fact("I live in Oslo.", None, None),
        fact("I forgot this.", None, Some(3)),
        fact("The client is Acme.", Some("p"), None),
        fact("The budget is 5k.", Some("q"), None),
    ];
    let reach = Reach {
        here: "c".into(),
        scope: scope.map(str::to_string),
    };
    assert_eq!(facts_text(&facts, &reach), expected);
}

#[test]
fn the_facts_are_those_in_scope() {
    check_facts(None, "- I live in Oslo.");
    check_facts(Some("p"), "- I live in Oslo.\n- The client is Acme.");
    let reach = Reach {
        here: "c".into(),
        scope: None,
    };
    assert_eq!(
        facts_text(&[], &reach),
        "No fact about the user is remembered."
    );
}

#[test]
fn the_loop_settings() {
    assert_eq!(limits(None).max_steps, DEFAULT_MAX_STEPS);
    assert_eq!(limits(Some(0)).max_steps, DEFAULT_MAX_STEPS);
    assert_eq!(limits(Some(3)).max_steps, 3);
    let builtin = &defs()[0];
    let mut echo = builtin.clone();
    echo.name = "echo".into();
    echo.source = ToolSource::Mcp("s1".into());
    assert_eq!(always_key(builtin), "builtin:search_conversations");
    assert_eq!(always_key(&echo), "mcp:s1:echo");
    let always = vec!["mcp:s1:echo".to_string()];
    assert!(always_allowed(&always, &echo));
    assert!(!always_allowed(&always, builtin));
    echo.source = ToolSource::Mcp("s2".into());
    assert!(!always_allowed(&always, &echo));
}

/// The stored prefs `json` read as `expected` (a field left out: its default).
fn check_prefs(json: &str, expected: ToolPrefs) {
    assert_eq!(
        serde_json::from_str::<ToolPrefs>(json).unwrap(),
        expected,
        "{json}"
    );
}

#[test]
fn the_tool_prefs_default_what_is_not_stored() {
    check_prefs("{}", ToolPrefs::default());
    let always = ToolPrefs {
        always: vec!["builtin:user_facts".into()],
        ..Default::default()
    };
    check_prefs(r#"{"always":["builtin:user_facts"]}"#, always);
    let off = ToolPrefs {
        off: true,
        max_steps: Some(2),
        ..Default::default()
    };
    check_prefs(r#"{"off":true,"max_steps":2}"#, off);
    assert_eq!(
        limits(ToolPrefs::default().max_steps).max_steps,
        DEFAULT_MAX_STEPS
    );
}
