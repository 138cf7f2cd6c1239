#![cfg(not(target_arch = "wasm32"))]
//! Constrained memory updates: the update's JSON schema (strict-mode shape), how each form travels in
//! each protocol's request, the fallback order, refusals recorded from real servers, parsing the JSON
//! object (whole and cut at every byte), and structured replies decoded from recorded streams split at
//! every byte offset.

use memoire::engine::decode::{decoder_for, StreamEvent};
use memoire::engine::memory::form::{SCHEMA_MAX_ENTITIES, SCHEMA_NAME};
use memoire::engine::memory::parse::close_truncated;
use memoire::engine::memory::*;
use memoire::engine::model::*;
use memoire::engine::request::{build, OutputForm};
use serde_json::{json, Value};

use OutputForm::*;
use Protocol::{Anthropic, Ollama, OpenAiChat, OpenAiResponses};

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn endpoint(protocol: Protocol) -> EndpointProfile {
    EndpointProfile {
        id: "e".into(),
        base_url: "http://127.0.0.1:9/v1".into(),
        protocol,
        model: "m".into(),
        api_key: None,
        key_origin: String::new(),
        system_prompt: String::new(),
        no_user_memory: false,
    }
}

fn a_request() -> UpdateRequest {
    let messages = vec![Message {
        id: "m1".into(),
        conversation_id: "c".into(),
        seq: 1,
        role: Role::User,
        content: "My cat is called Zorblax.".into(),
        status: MessageStatus::Complete,
        created_at: 0,
        meta: MessageMeta::default(),
    }];
    build_update_request(None, &messages, &[], &UpdateLimits::default()).expect("a request")
}

// ---------- the schema ----------

fn schema_value() -> Value {
    serde_json::from_str(&update_schema()).expect("the schema is JSON")
}

#[test]
fn the_schema_lists_the_summary_first_and_each_entitys_name_early() {
    // A constrained server generates properties in the schema's order.
    let text = update_schema();
    let at = |needle: &str| text.find(needle).unwrap_or_else(|| panic!("{needle}"));
    assert!(at("\"summary\"") < at("\"entities\""));
    assert!(at("\"id\"") < at("\"name\"") && at("\"name\"") < at("\"aliases\""));
    assert!(at("\"name\"") < at("\"relationships\""));
    // And the request carries that text unchanged.
    let req = a_request();
    let form = MemoryForm::Constrained(JsonSchema);
    let http = build(
        &endpoint(OpenAiChat),
        &req.prompt_for(form),
        &req.request_options(form),
    )
    .expect("the key may go there");
    assert!(http.body.contains(&text));
}

/// Every object: `additionalProperties: false` and every property required; only keywords OpenAI's
/// strict mode accepts.
fn assert_strict(schema: &Value, path: &str) {
    let obj = schema
        .as_object()
        .unwrap_or_else(|| panic!("{path}: not an object"));
    for key in obj.keys() {
        assert!(
            [
                "type",
                "properties",
                "required",
                "additionalProperties",
                "items",
                "enum",
                "maxItems",
                // An annotation strict mode takes (it guides the model, constrains nothing).
                "description"
            ]
            .contains(&key.as_str()),
            "{path}: keyword {key} is not allowed in strict mode"
        );
    }
    match obj.get("type").and_then(Value::as_str) {
        Some("object") => {
            assert_eq!(
                obj.get("additionalProperties"),
                Some(&Value::Bool(false)),
                "{path}"
            );
            let props = obj["properties"].as_object().expect("properties");
            let mut required: Vec<&str> = obj["required"]
                .as_array()
                .expect("required")
                .iter()
                .filter_map(Value::as_str)
                .collect();
            let mut names: Vec<&str> = props.keys().map(String::as_str).collect();
            required.sort();
            names.sort();
            assert_eq!(required, names, "{path}: every property must be required");
            for (k, v) in props {
                assert_strict(v, &format!("{path}.{k}"));
            }
        }
        Some("array") => assert_strict(&obj["items"], &format!("{path}[]")),
        Some("string") | Some("number") => {}
        other => panic!("{path}: unexpected type {other:?}"),
    }
}

#[test]
fn the_schema_satisfies_strict_mode() {
    let schema = schema_value();
    assert_strict(&schema, "$");
    let entity = &schema["properties"]["entities"]["items"];
    assert_eq!(
        entity["properties"]["type"]["enum"],
        json!(["person", "place", "concept", "event", "task", "other"])
    );
    assert_eq!(
        schema["properties"]["entities"]["maxItems"],
        json!(SCHEMA_MAX_ENTITIES)
    );
    assert_eq!(
        entity["properties"]["properties"]["items"]["required"],
        json!(["key", "value"])
    );
}

// ---------- each form in its protocol's request ----------

/// The request for `form` carries the schema at `pointer`, and `extra` (pointer, value) as well.
fn check_form(protocol: Protocol, form: MemoryForm, pointer: &str, extra: &[(&str, Value)]) {
    let expected = schema_value();
    let req = a_request();
    let http = build(
        &endpoint(protocol),
        &req.prompt_for(form),
        &req.request_options(form),
    )
    .expect("the key may go there");
    let body: Value = serde_json::from_str(&http.body).expect("JSON body");
    let what = format!("{} {}", protocol.as_str(), form.as_str());
    assert_eq!(
        body.pointer(pointer),
        Some(&expected),
        "{what}: schema at {pointer}"
    );
    for (p, v) in extra {
        assert_eq!(body.pointer(p), Some(v), "{what}: {p}");
    }
    assert!(body["stream"].as_bool().unwrap_or(false), "{what}: streams");
}

#[test]
fn each_form_travels_in_its_protocols_field() {
    check_form(
        OpenAiChat,
        MemoryForm::Constrained(JsonSchema),
        "/response_format/json_schema/schema",
        &[
            ("/response_format/type", json!("json_schema")),
            ("/response_format/json_schema/name", json!(SCHEMA_NAME)),
            ("/response_format/json_schema/strict", json!(true)),
            ("/temperature", json!(0.0)),
            ("/max_tokens", json!(a_request().options.max_tokens)),
        ],
    );
    check_form(
        OpenAiChat,
        MemoryForm::Constrained(JsonObject),
        "/response_format/schema",
        &[("/response_format/type", json!("json_object"))],
    );
    check_form(
        Ollama,
        MemoryForm::Constrained(OllamaFormat),
        "/format",
        &[],
    );
    check_form(
        Anthropic,
        MemoryForm::Constrained(ForcedTool),
        "/tools/0/input_schema",
        &[
            ("/tools/0/name", json!(SCHEMA_NAME)),
            ("/tool_choice", json!({"type": "tool", "name": SCHEMA_NAME})),
        ],
    );
    check_form(
        OpenAiResponses,
        MemoryForm::Constrained(ResponsesFormat),
        "/text/format/schema",
        &[
            ("/text/format/type", json!("json_schema")),
            ("/text/format/name", json!(SCHEMA_NAME)),
            ("/text/format/strict", json!(true)),
        ],
    );
}

#[test]
fn the_sections_form_sends_no_constraint_and_asks_for_sections() {
    let req = a_request();
    for protocol in Protocol::ALL {
        let http = build(
            &endpoint(protocol),
            &req.prompt_for(MemoryForm::Sections),
            &req.request_options(MemoryForm::Sections),
        )
        .expect("the key may go there");
        // (Responses' constraint is `"text": {"format": …}`; an Anthropic text block's `"text":` is
        // not one.)
        for field in [
            "response_format",
            "\"format\"",
            "tool_choice",
            "\"text\":{\"format\"",
        ] {
            assert!(!http.body.contains(field), "{}: {field}", protocol.as_str());
        }
        assert!(
            http.body.contains("=== CONVERSATION MEMORY ==="),
            "{}",
            protocol.as_str()
        );
    }
    let structured = req.prompt_for(MemoryForm::Constrained(JsonSchema));
    assert!(structured.system.starts_with(MEMORY_REQUEST_OPENING));
    assert!(!structured.system.contains("=== CONVERSATION MEMORY ==="));
    // The constrained forms carry the known entities and the new messages, not the previous summary
    // (the engine carries that forward itself).
    let user = &structured.messages[0].content;
    assert!(user.contains("KNOWN ENTITIES") && user.contains("My cat is called Zorblax."));
    assert!(!user.contains("PREVIOUS SUMMARY"));
    assert!(req.prompt.messages[0].content.contains("PREVIOUS SUMMARY"));
}

#[test]
fn a_form_of_another_protocol_is_not_sent() {
    let req = a_request();
    let form = MemoryForm::Constrained(ForcedTool);
    let http = build(
        &endpoint(OpenAiChat),
        &req.prompt_for(form),
        &req.request_options(form),
    )
    .expect("the key may go there");
    assert!(!http.body.contains("tool") && !http.body.contains("response_format"));
}

// ---------- order and memory of forms ----------

fn check_order(protocol: Protocol, expected: &[MemoryForm]) {
    assert_eq!(forms_for(protocol), expected, "{}", protocol.as_str());
    let mut walked = vec![start_form(protocol, None)];
    while let Some(next) = next_form(protocol, *walked.last().unwrap()) {
        walked.push(next);
    }
    assert_eq!(walked, expected, "{}: walked", protocol.as_str());
}

#[test]
fn fallback_order_per_protocol() {
    use MemoryForm::{Constrained as C, Sections};
    check_order(OpenAiChat, &[C(JsonSchema), C(JsonObject), Sections]);
    check_order(Ollama, &[C(OllamaFormat), Sections]);
    check_order(Anthropic, &[C(ForcedTool), Sections]);
    check_order(OpenAiResponses, &[C(ResponsesFormat), Sections]);
}

#[test]
fn the_remembered_form_starts_when_the_protocol_can_carry_it() {
    use MemoryForm::{Constrained as C, Sections};
    assert_eq!(start_form(OpenAiChat, Some(C(JsonObject))), C(JsonObject));
    assert_eq!(start_form(OpenAiChat, Some(Sections)), Sections);
    assert_eq!(start_form(OpenAiChat, Some(C(ForcedTool))), C(JsonSchema));
    assert_eq!(start_form(Anthropic, Some(C(JsonObject))), C(ForcedTool));
    for form in forms_for(OpenAiChat).iter().chain(forms_for(Anthropic)) {
        assert_eq!(MemoryForm::parse(form.as_str()), Some(*form));
    }
    assert_eq!(MemoryForm::parse("nonsense"), None);
}

// ---------- refusals recorded from real servers ----------

/// `tests/fixtures/memory-refusals.json`: each case names the server, the form it was sent, the
/// status and body it answered, and whether that is a refusal of the form.
#[test]
fn recorded_refusals_move_to_the_next_form_and_other_errors_do_not() {
    let cases: Value = serde_json::from_slice(&fixture("memory-refusals.json")).expect("JSON");
    let cases = cases.as_array().expect("a list");
    assert!(cases.len() >= 10);
    for case in cases {
        let server = case["server"].as_str().expect("server");
        let form = MemoryForm::parse(case["form"].as_str().expect("form")).expect("a form");
        let status = case["status"].as_u64().expect("status") as u16;
        let body = case["body"].as_str().expect("body");
        let refusal = case["refusal"].as_bool().expect("refusal");
        assert_eq!(
            refused_http(form, status, body),
            refusal,
            "{server}: {status} {body}"
        );
    }
}

#[test]
fn stream_error_events_that_name_the_form_are_refusals() {
    use memoire::engine::decode::StreamError;
    let form = MemoryForm::Constrained(ResponsesFormat);
    let said = |code: Option<&str>, message: &str| StreamError {
        code: code.map(str::to_string),
        message: message.into(),
    };
    assert!(refused_stream(
        form,
        &said(Some("invalid_json_schema"), "Invalid schema.")
    ));
    assert!(refused_stream(
        form,
        &said(None, "Unsupported parameter: 'text.format'.")
    ));
    assert!(!refused_stream(
        form,
        &said(Some("server_error"), "The server had an error.")
    ));
    assert!(!refused_stream(MemoryForm::Sections, &said(None, "schema")));
}

// ---------- parsing the JSON object ----------

/// In the schema's order, as a constrained server writes it.
fn structured_text() -> String {
    concat!(
        r#"{"summary": "The user is Ana from Lisbon. She has a cat named Zorblax.", "entities": ["#,
        r#"{"id": "ana", "type": "person", "name": "Ana", "aliases": ["Annie"], "description": "The user.", "#,
        r#""properties": [{"key": "city", "value": "Lisbon"}], "#,
        r#""relationships": [{"targetId": "zorblax", "relationship": "owns", "strength": 0.9}]}, "#,
        r#"{"id": "zorblax", "type": "other", "name": "Zorblax", "aliases": [], "description": "Ana's cat.", "#,
        r#""properties": [], "relationships": []}]}"#
    )
    .to_string()
}

#[test]
fn the_json_object_parses_with_properties_as_pairs() {
    let parsed = parse_reply(&structured_text()).expect("parses");
    assert_eq!(
        parsed.summary.as_deref(),
        Some("The user is Ana from Lisbon. She has a cat named Zorblax.")
    );
    let names: Vec<&str> = parsed.entities.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["Ana", "Zorblax"]);
    assert_eq!(
        parsed.entities[0]
            .properties
            .get("city")
            .map(String::as_str),
        Some("Lisbon")
    );
    assert_eq!(parsed.entities[0].aliases, ["Annie"]);
    assert_eq!(parsed.entities[0].relationships[0].target, "zorblax");
    assert_eq!(parsed.entities[0].entity_type, EntityType::Person);
    assert!(parsed.notes.is_empty(), "{:?}", parsed.notes);
}

fn check_object(text: &str, summary: Option<&str>, entities: usize) {
    let parsed = parse_reply(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    assert_eq!(parsed.summary.as_deref(), summary, "{text}");
    assert_eq!(parsed.entities.len(), entities, "{text}");
}

#[test]
fn json_object_variants() {
    check_object(
        r#"{"summary": "Short.", "entities": []}"#,
        Some("Short."),
        0,
    );
    check_object(
        "```json\n{\"summary\": \"Fenced.\", \"entities\": []}\n```",
        Some("Fenced."),
        0,
    );
    check_object(
        r#"Here you go: {"summary": "After prose.", "entities": []}"#,
        Some("After prose."),
        0,
    );
    check_object(r#"{"summary": "", "entities": [{"name": "Bo"}]}"#, None, 1);
    check_object(
        r#"{"summary": "Trailing comma.", "entities": [],}"#,
        Some("Trailing comma."),
        0,
    );
    check_object(
        r#"{"summary": "Pairs.", "entities": [{"name": "X", "properties": [["k", "v"]]}]}"#,
        Some("Pairs."),
        1,
    );
    check_object(
        r#"{"summary": "Cut in the middle of a wo"#,
        Some("Cut in the middle of a wo"),
        0,
    );
    check_object(
        r#"{"summary": "Cut after.", "entities": [{"id": "a", "name": "A"}, {"id": "b", "na"#,
        Some("Cut after."),
        1,
    );
    assert_eq!(
        parse_reply(r#"{"summary": "", "entities": []}"#),
        Err(MemoryError::NoMemory)
    );
    assert_eq!(
        parse_reply(r#"{"summary": 3, "entities": "no"}"#),
        Err(MemoryError::NoMemory)
    );
}

#[test]
fn a_json_object_cut_at_every_byte_never_panics_and_keeps_what_was_complete() {
    let text = structured_text();
    let summary_start = text.find("The user").expect("summary");
    for cut in 0..=text.len() {
        if !text.is_char_boundary(cut) {
            continue;
        }
        let prefix = &text[..cut];
        let result = parse_reply(prefix);
        if cut > summary_start {
            let parsed = result.unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
            let summary = parsed.summary.expect("a summary");
            assert!(
                text[summary_start..].starts_with(summary.trim()),
                "cut at {cut}: {summary}"
            );
            for e in &parsed.entities {
                assert!(
                    ["Ana", "Zorblax"].contains(&e.name.as_str()),
                    "cut at {cut}"
                );
            }
        }
    }
}

fn check_close(input: &str, expected: Option<&str>) {
    assert_eq!(close_truncated(input).as_deref(), expected, "{input}");
}

#[test]
fn closing_cut_json() {
    check_close(r#"{"a": "b"}"#, None);
    check_close(r#"{"a": "b"#, Some(r#"{"a": "b"}"#));
    check_close(r#"{"a": "b\"#, Some(r#"{"a": "b"}"#));
    check_close(r#"{"a": "b\u00"#, Some(r#"{"a": "b"}"#));
    check_close(r#"{"a": "b", "c"#, Some(r#"{"a": "b"}"#));
    check_close(
        r#"{"a": "b", "c": ["d", "e"#,
        Some(r#"{"a": "b", "c": ["d"]}"#),
    );
    check_close(r#"{"a": "b", "c":"#, Some(r#"{"a": "b"}"#));
    check_close(r#"{"a": [1, 2"#, Some(r#"{"a": [1]}"#));
    check_close(r#"{"a": [{"x": 1}, {"y"#, Some(r#"{"a": [{"x": 1}, {}]}"#));
    check_close(r#"{"a": [["#, Some(r#"{"a": [[]]}"#));
    check_close("", None);
    check_close(&"[".repeat(40), None);
}

// ---------- structured replies from recorded streams, split at every byte ----------

/// Decodes `bytes` in the given chunks and collects the memory reply.
fn collect<'a>(
    protocol: Protocol,
    form: MemoryForm,
    chunks: impl IntoIterator<Item = &'a [u8]>,
) -> String {
    let mut decoder = decoder_for(protocol);
    let mut collector = ReplyCollector::new(form);
    let mut out = None;
    let mut feed = |decoder: &mut Box<dyn memoire::engine::decode::Decoder>,
                    out: &mut Option<String>| {
        while let Some(ev) = decoder.poll_event() {
            if out.is_none() {
                if let Some(r) = collector.handle_event(ev) {
                    *out = Some(r.unwrap_or_else(|e| panic!("stream error: {e:?}")));
                }
            }
        }
    };
    for chunk in chunks {
        decoder.handle_bytes(chunk);
        feed(&mut decoder, &mut out);
    }
    decoder.handle_eof();
    feed(&mut decoder, &mut out);
    out.expect("the stream finished")
}

fn check_structured_stream(
    name: &str,
    protocol: Protocol,
    form: MemoryForm,
    summary_has: &str,
    names: &[&str],
) {
    let bytes = fixture(name);
    let whole = collect(protocol, form, [&bytes[..]]);
    for i in 0..=bytes.len() {
        let (a, b) = bytes.split_at(i);
        assert_eq!(
            collect(protocol, form, [a, b]),
            whole,
            "{name}: split at {i}"
        );
    }
    assert_eq!(
        collect(protocol, form, bytes.chunks(1)),
        whole,
        "{name}: 1-byte chunks"
    );
    let parsed = parse_reply(&whole).unwrap_or_else(|e| panic!("{name}: {e}\n{whole}"));
    assert!(
        parsed
            .summary
            .as_deref()
            .unwrap_or("")
            .contains(summary_has),
        "{name}: {parsed:?}"
    );
    for n in names {
        assert!(
            parsed.entities.iter().any(|e| e.name == *n),
            "{name}: no entity {n}: {parsed:?}"
        );
    }
}

#[test]
fn anthropic_forced_tool_input_is_the_update() {
    check_structured_stream(
        "anthropic-memory-tool.sse",
        Anthropic,
        MemoryForm::Constrained(ForcedTool),
        "Lisbon",
        &["Ana", "Zorblax"],
    );
}

#[test]
fn the_collector_prefers_text_except_for_the_forced_tool() {
    let events = || {
        vec![
            StreamEvent::TextDelta("text".into()),
            StreamEvent::ToolCallDelta {
                index: 0,
                id: None,
                name: None,
                arguments: "args".into(),
            },
        ]
    };
    for (form, expected) in [
        (MemoryForm::Constrained(ForcedTool), "args"),
        (MemoryForm::Constrained(JsonSchema), "text"),
        (MemoryForm::Sections, "text"),
    ] {
        let mut c = ReplyCollector::new(form);
        for ev in events() {
            assert!(c.handle_event(ev).is_none());
        }
        assert_eq!(c.partial(), expected);
        let done = c.handle_event(StreamEvent::Done {
            finish_reason: None,
        });
        assert_eq!(done, Some(Ok(expected.to_string())));
    }
}

// ---------- the summary keeps what the update left out ----------

fn check_carry(previous: Option<&str>, new: &str, expected: &str, carried: usize) {
    assert_eq!(
        carry_forward(previous, new, 6000),
        (expected.to_string(), carried),
        "{previous:?} + {new}"
    );
}

#[test]
fn facts_the_new_summary_left_out_are_carried_forward() {
    check_carry(None, "Ana lives in Lisbon.", "Ana lives in Lisbon.", 0);
    check_carry(
        Some("Ana lives in Lisbon. She has a cat named Zorblax."),
        "Ana lives in Lisbon. She is learning the cello.",
        "She has a cat named Zorblax. Ana lives in Lisbon. She is learning the cello.",
        1,
    );
    // Restated in other words, with the same names: covered, not repeated.
    check_carry(
        Some("The user, Ana, lives in Lisbon with her cat Zorblax."),
        "Ana and her cat Zorblax live in Lisbon.",
        "Ana and her cat Zorblax live in Lisbon.",
        0,
    );
    // A sentence the model repeats is kept once.
    check_carry(
        None,
        "Ana rows.\nAna rows. Ana rows!",
        "Ana rows. Ana rows!",
        0,
    );
    check_carry(Some("Yes."), "Ana rows.", "Ana rows.", 0);
}

#[test]
fn carried_sentences_give_way_past_the_cap_filler_first_then_oldest() {
    let previous: String = (0..400).map(|i| format!("Fact{i} is kept. ")).collect();
    let (text, carried) = carry_forward(Some(&previous), "Something new.", 6000);
    assert!(text.len() <= 6000);
    assert!(
        text.ends_with("Fact399 is kept. Something new."),
        "{}",
        &text[text.len() - 60..]
    );
    assert!(!text.contains("Fact0 "));
    assert!(carried > 100 && carried < 400);
    // Filler goes before facts, whatever its age; facts keep their order.
    let previous = "Ingrid lives in Trondheim. it depends on the conditions around you. \
                    her cat is called Zorblax. start small and adjust step by step.";
    let (text, carried) = carry_forward(Some(previous), "Something new.", 80);
    assert_eq!(
        text,
        "Ingrid lives in Trondheim. her cat is called Zorblax. Something new."
    );
    assert_eq!(carried, 2);
}

#[test]
fn a_looping_model_keeps_one_copy_and_the_facts_keep_their_place() {
    // SmolLM2-135M in the recall bench: the same sentence with new numbers, eight times.
    let mut previous = String::from("I have a cat named Zorblax. I am allergic to hazelnuts. ");
    for i in 0..8 {
        previous.push_str(&format!(
            "The user asked for a stretching routine with the first {} steps: - {}. ",
            20 + i,
            i
        ));
    }
    let (text, _) = carry_forward(Some(&previous), "Something new.", 260);
    assert!(
        text.contains("Zorblax") && text.contains("hazelnuts"),
        "{text}"
    );
    assert!(text.matches("stretching").count() <= 2, "{text}");
    assert!(text.ends_with("Something new."));
}

#[test]
fn a_runaway_new_summary_cannot_push_every_earlier_fact_out() {
    let previous = "I have a cat named Zorblax. I live in Trondheim. I am allergic to hazelnuts.";
    let new: String = (1..40)
        .map(|i| format!("Step {i}: stretch your back and your arms. "))
        .collect();
    let (text, carried) = carry_forward(Some(previous), &new, 400);
    assert!(text.len() <= 400, "{}", text.len());
    assert!(
        text.contains("Zorblax") && text.contains("Trondheim") && text.contains("hazelnuts"),
        "{text}"
    );
    assert_eq!(carried, 3);
    assert!(
        text.contains("Step 1:"),
        "the new text starts the new part: {text}"
    );
}

#[test]
fn a_run_on_sentence_is_cut_at_a_word_and_stays_one_sentence() {
    let loop_text = "Ingrid, Einar, Sjøbenkarl, Naradaglade, ".repeat(40);
    let (text, _) = carry_forward(Some("I have a cat named Zorblax."), &loop_text, 6000);
    let run_on = text.strip_prefix("I have a cat named Zorblax. ").unwrap();
    assert!(run_on.len() <= 240 + "….".len(), "{}", run_on.len());
    assert!(
        run_on.ends_with("Naradaglade….") || run_on.ends_with("…."),
        "{run_on}"
    );
    // Stored and split again, it stays one sentence: the fact before it is still carried.
    let (again, carried) = carry_forward(Some(&text), "Something new.", 6000);
    assert_eq!(carried, 2, "{again}");
}

#[test]
fn a_capital_that_starts_a_clause_is_not_a_name() {
    // "You" and "The" after a list marker are not names: the fact with no name at all still wins.
    let previous = "My favourite food is pierogi. Tips: 1) You can; 2) The end.";
    let (text, _) = carry_forward(Some(previous), "Something new.", 50);
    assert_eq!(text, "My favourite food is pierogi. Something new.");
}

#[test]
fn the_summary_cap_follows_the_prompt_budget() {
    use memoire::engine::memory::summary::summary_max_chars;
    let cap = |context_tokens, reply_reserve_tokens| {
        summary_max_chars(&MemoryConfig {
            context_tokens,
            reply_reserve_tokens,
            ..MemoryConfig::default()
        })
    };
    assert_eq!(cap(1400, 400), 2000);
    assert_eq!(cap(500, 400), 600, "never below 600");
    assert_eq!(cap(128_000, 4000), 6000, "never above 6,000");
}

#[test]
fn a_summary_that_copies_the_request_scaffolding_is_cleaned() {
    let reply = json!({
        "summary": "Hi! My name is Ingrid.\n\nKNOWN ENTITIES (id | type | name | aliases) — reuse these ids:\n- e1 | person | Ingrid | Inge\n- e2 | place | Oslo | \n[USER]: I have a cat called Zorblax.\nPREVIOUS SUMMARY:\nNo previous conversation",
        "entities": []
    })
    .to_string();
    let parsed = parse_reply(&reply).expect("parses");
    assert_eq!(
        parsed.summary.as_deref(),
        Some("Hi! My name is Ingrid.\n\nI have a cat called Zorblax.")
    );
}

#[test]
fn raw_line_breaks_inside_json_strings_are_accepted() {
    check_object(
        "{\"summary\": \"Line one.\nLine two.\", \"entities\": []}",
        Some("Line one.\nLine two."),
        0,
    );
}

#[test]
fn the_same_failure_again_is_a_repeat() {
    let at =
        |t: i64, reason: &str| MemoryFailure::new(t, reason.into(), "raw", MemoryForm::Sections);
    assert!(at(2, "HTTP 500").repeats(Some(&at(1, "HTTP 500"))));
    assert!(!at(2, "HTTP 500").repeats(Some(&at(1, "no summary"))));
    assert!(!at(2, "HTTP 500").repeats(None));
    let from = |f: MemoryFailure, key: &str| f.following(None, 4, key);
    assert!(
        !from(at(2, "HTTP 500"), "other").repeats(Some(&from(at(1, "HTTP 500"), "e"))),
        "the same reason from another endpoint is a change"
    );
    let long = "x".repeat(MAX_RAW_REPLY_CHARS + 10);
    assert_eq!(
        MemoryFailure::new(1, "r".into(), &long, MemoryForm::Sections)
            .raw_reply
            .len(),
        MAX_RAW_REPLY_CHARS
    );
}

/// A failure after `attempts` in a row, at t = 0, of an update that looked at messages up to seq 4.
fn failed(attempts: u32) -> MemoryFailure {
    let new = || MemoryFailure::new(0, "HTTP 500".into(), "", MemoryForm::Sections);
    let mut f = new().following(None, 4, "key");
    f.attempts = attempts - 1;
    new().following(Some(&f), 4, "key")
}

/// `turns` user turns (each with its reply) after seq 4.
fn turns_after(turns: usize) -> Vec<Message> {
    (0..turns * 2)
        .map(|i| Message {
            id: format!("m{i}"),
            conversation_id: "c".into(),
            seq: 5 + i as u64,
            role: if i % 2 == 0 {
                Role::User
            } else {
                Role::Assistant
            },
            content: "text".into(),
            status: MessageStatus::Complete,
            created_at: 0,
            meta: Default::default(),
        })
        .collect()
}

/// (failures in a row, user turns since, minutes since) -> may an automatic update run?
fn check_backoff(attempts: u32, turns: usize, minutes: i64, allowed: bool) {
    let f = failed(attempts);
    assert_eq!(f.attempts, attempts);
    assert_eq!(
        retry_allowed(Some(&f), &turns_after(turns), "key", minutes * 60_000),
        allowed,
        "{attempts} failures, {turns} turns, {minutes} min"
    );
}

#[test]
fn automatic_memory_updates_back_off_after_failures() {
    check_backoff(1, 0, 0, false);
    check_backoff(1, 1, 0, false);
    check_backoff(1, 2, 0, true);
    check_backoff(1, 0, 5, true);
    check_backoff(2, 3, 9, false);
    check_backoff(2, 4, 0, true);
    check_backoff(2, 0, 10, true);
    check_backoff(3, 7, 19, false);
    check_backoff(3, 8, 0, true);
    check_backoff(10, 31, 359, false);
    check_backoff(10, 32, 0, true);
    check_backoff(u32::MAX, 0, 360, true);
    check_backoff(u32::MAX, 31, 359, false);
    assert_eq!(retry_wait(1), (2, 5 * 60_000));
    assert_eq!(retry_wait(30), (MAX_RETRY_TURNS, MAX_RETRY_MS));
}

#[test]
fn a_change_or_no_failure_lets_the_memory_update_run() {
    assert!(retry_allowed(None, &[], "key", 0));
    assert!(
        retry_allowed(Some(&failed(5)), &[], "another model", 0),
        "another memory endpoint or model is tried at once"
    );
    let mut msgs = turns_after(2);
    msgs.iter_mut().for_each(|m| m.seq -= 4);
    assert!(
        !retry_allowed(Some(&failed(1)), &msgs, "key", 0),
        "turns the failed update already saw do not count"
    );
    let reset = MemoryFailure::new(0, "r".into(), "", MemoryForm::Sections).following(
        Some(&failed(4)),
        9,
        "other",
    );
    assert_eq!(
        reset.attempts, 1,
        "a failure at another endpoint starts over"
    );
}

/// The summaries SmolLM2-135M wrote in one run of the recall bench (`benches/memory_recall.rs`), in
/// order (`null` where the update gave none), carried forward under the bench's cap: what the stored
/// summary still says at the end.
fn replay_recorded_summaries(cap: usize) -> String {
    let raw = include_str!("fixtures/memory/smollm2-recall-summaries.json");
    let replies: Vec<Option<String>> = serde_json::from_str(raw).unwrap();
    let mut stored: Option<String> = None;
    for reply in replies.into_iter().flatten() {
        let (text, _) = carry_forward(stored.as_deref(), &reply, cap);
        assert!(text.len() <= cap, "{} > {cap}", text.len());
        stored = Some(text);
    }
    stored.unwrap()
}

#[test]
fn a_real_models_summaries_keep_the_planted_facts_under_the_cap() {
    // The ten facts the bench plants in its first ten turns; twelve turns of questions follow.
    let facts = [
        "Valcourt",
        "Trondheim",
        "Zorblax",
        "glassblower",
        "Odalys",
        "pierogi",
        "Volvo",
        "Maelle",
        "hazelnuts",
        "Lofoten",
    ];
    let text = replay_recorded_summaries(summary_max_chars(&MemoryConfig {
        context_tokens: 1400,
        reply_reserve_tokens: 400,
        ..MemoryConfig::default()
    }));
    let lost: Vec<&str> = facts
        .iter()
        .copied()
        .filter(|f| !text.contains(f))
        .collect();
    assert!(lost.is_empty(), "lost {lost:?} from: {text}");
}

#[test]
fn a_shortened_summary_keeps_statements_in_their_order() {
    use memoire::engine::memory::summary::shorten;
    let text =
        "Ana lives in Lisbon. How do tides work? She has a cat named Zorblax. Why is the sky blue?";
    assert_eq!(shorten(text, 1000), text);
    assert_eq!(
        shorten(text, 60),
        "Ana lives in Lisbon. She has a cat named Zorblax."
    );
    assert_eq!(shorten(text, 5), "");
}

/// The summary an update stores once the user's own statements it left out are added.
fn check_user_statements(summary: Option<&str>, said: &[&str], want: Option<&str>) {
    use memoire::engine::memory::summary::with_user_statements;
    let said: Vec<String> = said.iter().map(|s| s.to_string()).collect();
    assert_eq!(
        with_user_statements(summary, &said).as_deref(),
        want,
        "{summary:?} {said:?}"
    );
}

#[rustfmt::skip]
#[test]
fn the_users_own_statements_the_summary_left_out_are_kept() {
    check_user_statements(Some("Ingrid lives in Trondheim."), &["I live in Trondheim, in Norway."], Some("Ingrid lives in Trondheim. User: I live in Trondheim, in Norway."));
    check_user_statements(Some("Ingrid lives in Trondheim, Norway."), &["I live in Trondheim, in Norway."], Some("Ingrid lives in Trondheim, Norway."));
    // SmolLM2-135M's update for this turn had no summary at all.
    check_user_statements(None, &["Hi! I work as a glassblower in a small studio"], Some("User: I work as a glassblower in a small studio."));
    // Questions and small talk tell nothing about the user.
    check_user_statements(Some("S."), &["How do tides work? Thanks! Ok."], Some("S."));
    check_user_statements(None, &["Why is the sky blue?"], None);
    check_user_statements(None, &[], None);
}

#[test]
fn a_pasted_document_adds_a_bounded_part() {
    use memoire::engine::memory::summary::{with_user_statements, MAX_USER_STATEMENT_CHARS};
    let doc: String = (0..500)
        .map(|i| format!("Clause {i} of the contract binds the tenant. "))
        .collect();
    let out = with_user_statements(Some("A contract."), &[doc]).unwrap();
    assert!(
        out.len() < "A contract. ".len() + MAX_USER_STATEMENT_CHARS + 200,
        "{}",
        out.len()
    );
    assert!(out.starts_with("A contract. User: Clause 0 of the contract"));
}

#[test]
fn the_request_grounds_the_summary_in_what_the_user_said() {
    let req = a_request();
    let mut p =
        parse_reply(r#"{"summary": "", "entities": [{"name": "Zorblax", "type": "other"}]}"#)
            .unwrap();
    req.ground(&mut p);
    assert_eq!(
        p.summary.as_deref(),
        Some("User: My cat is called Zorblax (said 1970-01-01).")
    );
    let mut p =
        parse_reply(r#"{"summary": "The user's cat is called Zorblax.", "entities": []}"#).unwrap();
    req.ground(&mut p);
    assert_eq!(
        p.summary.as_deref(),
        Some("The user's cat is called Zorblax.")
    );
}
