#![cfg(not(target_arch = "wasm32"))]
//! Attachments (`engine::attach`): what may be attached, the resize, each provider's token rule,
//! a text file's block and its cut, an endpoint's refusal of images, an image's size read from its
//! header before it is decoded, and the sanity check of an
//! attachment read from a backup.

use memoire::engine::attach::*;
use memoire::engine::model::{Attachment, AttachmentKind, Protocol};

fn check_intake(name: &str, mime: &str, size: u64, want: &str) {
    let got = match intake(name, mime, size) {
        Intake::Image => "image".to_string(),
        Intake::Text => "text".to_string(),
        Intake::Pdf => "pdf".to_string(),
        Intake::Refused(why) => why,
    };
    assert!(got.contains(want), "{name} {mime} {size}: {got}");
}

#[test]
fn what_can_be_attached() {
    check_intake("a.png", "image/png", 1_000, "image");
    check_intake("a.jpg", "IMAGE/JPEG", 1_000, "image");
    check_intake(
        "huge.png",
        "image/png",
        MAX_IMAGE_BYTES + 1,
        "images up to 30 MB",
    );
    check_intake("n.md", "", 10, "text");
    check_intake("r.pdf", "application/pdf", 10, "pdf");
    check_intake("r.PDF", "", 10, "pdf");
    check_intake(
        "huge.pdf",
        "application/pdf",
        21 * 1024 * 1024,
        "PDFs up to 20 MB",
    );
    check_intake("d.csv", "text/csv", 10, "text");
    check_intake("x.json", "application/json", 10, "text");
    check_intake("main.rs", "application/octet-stream", 10, "text");
    check_intake(
        "big.txt",
        "text/plain",
        MAX_FILE_BYTES + 1,
        "text files up to 512 KB",
    );
    check_intake(
        "a.exe",
        "application/x-msdownload",
        10,
        "cannot be attached",
    );
    check_intake("a.svg", "image/svg+xml", 10, "cannot be attached");
}

fn check_resize(w: u32, h: u32, want: (u32, u32)) {
    assert_eq!(resized(w, h), want, "{w}x{h}");
}

#[test]
fn images_are_resized_to_a_long_edge_of_1568() {
    check_resize(4000, 3000, (1568, 1176));
    check_resize(3000, 4000, (1176, 1568));
    check_resize(1568, 10, (1568, 10));
    check_resize(800, 600, (800, 600));
    check_resize(100_000, 1, (1568, 1));
    check_resize(0, 0, (1, 1));
}

fn check_tokens(p: Protocol, w: u32, h: u32, want: u32) {
    assert_eq!(image_tokens(p, w, h), want, "{p:?} {w}x{h}");
}

#[test]
fn each_provider_counts_an_image_by_its_published_rule() {
    // Anthropic: w*h/750 (their table: 1092x1092 is about 1,590 tokens).
    check_tokens(Protocol::Anthropic, 1092, 1092, 1590);
    check_tokens(Protocol::Anthropic, 200, 200, 54);
    check_tokens(Protocol::Anthropic, 4000, 3000, 2459); // counted at 1568x1176
                                                         // OpenAI: OpenAI's examples: 1024x1024 -> 765; 2048x4096 -> 1105; 512x512 -> 255.
    check_tokens(Protocol::OpenAiChat, 1024, 1024, 765);
    check_tokens(Protocol::OpenAiResponses, 2048, 4096, 1105);
    check_tokens(Protocol::OpenAiChat, 512, 512, 255);
    // Ollama: no published rule; the pixel rule.
    check_tokens(Protocol::Ollama, 1092, 1092, 1590);
}

fn file(name: &str, text: &str) -> Attachment {
    Attachment {
        kind: AttachmentKind::File,
        name: name.into(),
        mime: "text/plain".into(),
        size: text.len() as u64,
        hash: "0".repeat(64),
        width: 0,
        height: 0,
        text: text.into(),
    }
}

fn check_block(name: &str, text: &str, max: usize, want: &str, cut: bool) {
    let (block, was_cut) = file_block(&file(name, text), max);
    assert_eq!((block.as_str(), was_cut), (want, cut), "{name}");
}

#[test]
fn a_text_file_goes_as_a_fenced_block_with_its_name_cut_with_a_note() {
    check_block(
        "a.csv",
        "x,y\n1,2\n",
        100,
        "```csv a.csv\nx,y\n1,2\n```",
        false,
    );
    check_block("notes", "hi", 100, "```notes\nhi\n```", false);
    check_block("f.md", "a ``` b", 100, "````md f.md\na ``` b\n````", false);
    check_block(
        "long.txt",
        "abcdef",
        3,
        "```txt long.txt\nabc\n```\n[long.txt cut to fit the context: the first 3 of 6 characters]",
        true,
    );
    check_block(
        "bad`\nname.txt",
        "x",
        9,
        "```txt badname.txt\nx\n```",
        false,
    );
}

#[test]
fn a_refusal_naming_images_is_told_apart() {
    let cases = [
        (
            400,
            r#"{"error":{"message":"image input is not supported by this model"}}"#,
            true,
        ),
        (400, "this model does not support vision", true),
        (422, "multimodal content is not supported", true),
        (400, "context length exceeded", false),
        (401, "invalid key for image models", false),
        (500, "image decoder crashed", false),
    ];
    for (status, body, want) in cases {
        assert_eq!(refuses_images(status, body), want, "{status} {body}");
    }
}

fn check_sane(a: Attachment, want: Result<(), &str>) {
    let got = check(&a);
    match want {
        Ok(()) => assert_eq!(got, Ok(()), "{a:?}"),
        Err(w) => assert!(got.as_ref().is_err_and(|e| e.contains(w)), "{a:?}: {got:?}"),
    }
}

#[test]
fn an_attachment_from_a_file_or_another_device_is_checked() {
    let img = Attachment {
        kind: AttachmentKind::Image,
        name: "a.png".into(),
        mime: "image/png".into(),
        size: 10,
        hash: "f".repeat(64),
        width: 10,
        height: 10,
        text: String::new(),
    };
    check_sane(img.clone(), Ok(()));
    check_sane(file("n.txt", "hello"), Ok(()));
    check_sane(
        Attachment {
            hash: "F".repeat(64),
            ..img.clone()
        },
        Err("hash"),
    );
    check_sane(
        Attachment {
            hash: "../x".into(),
            ..img.clone()
        },
        Err("hash"),
    );
    check_sane(
        Attachment {
            mime: "text/html".into(),
            ..img.clone()
        },
        Err("not taken"),
    );
    check_sane(
        Attachment {
            width: 5000,
            ..img.clone()
        },
        Err("pixels"),
    );
    check_sane(
        Attachment {
            name: "a\u{0}b".into(),
            ..img.clone()
        },
        Err("name"),
    );
    check_sane(
        Attachment {
            text: "x".into(),
            ..img.clone()
        },
        Err("no text"),
    );
    let big = "x".repeat(MAX_FILE_BYTES as usize + 1);
    check_sane(file("big.txt", &big), Err("size limit"));
}

#[test]
fn placeholders_and_hex() {
    assert_eq!(placeholder(&file("a.txt", "")), "[file: a.txt]");
    let img = Attachment {
        kind: AttachmentKind::Image,
        name: "s.png".into(),
        ..Attachment::default()
    };
    assert_eq!(placeholder(&img), "[image: s.png]");
    assert_eq!(hex(&[0, 15, 255]), "000fff");
    assert!(is_hash(&hex(&[7; 32])));
}

// ---- images in each protocol's request ---------------------------------------------------------

use memoire::engine::model::{EndpointProfile, Prompt, Role, WireImage, WireMessage};
use memoire::engine::request::{build, RequestOptions};
use serde_json::{json, Value};

fn image_prompt(data: &str) -> Prompt {
    Prompt {
        system: String::new(),
        messages: vec![WireMessage {
            role: Role::User,
            content: "What is this?".into(),
            images: vec![WireImage {
                name: "cat.png".into(),
                mime: "image/png".into(),
                hash: "a".repeat(64),
                width: 2,
                height: 2,
                size: 3,
                data: data.into(),
            }],
            tool_calls: vec![],
        }],
    }
}

fn last_message(protocol: Protocol, data: &str) -> Value {
    let endpoint = EndpointProfile {
        base_url: "http://127.0.0.1:1".into(),
        protocol,
        model: "m".into(),
        ..EndpointProfile::default()
    };
    let req = build(&endpoint, &image_prompt(data), &RequestOptions::default()).unwrap();
    let body: Value = serde_json::from_str(&req.body).unwrap();
    let list = if protocol == Protocol::OpenAiResponses {
        "input"
    } else {
        "messages"
    };
    body[list].as_array().unwrap().last().unwrap().clone()
}

fn check_shape(protocol: Protocol, data: &str, want: Value) {
    assert_eq!(last_message(protocol, data), want, "{protocol:?}");
}

#[test]
fn an_image_goes_in_each_protocols_own_shape() {
    check_shape(
        Protocol::OpenAiChat,
        "QUJD",
        json!({"role": "user", "content": [
            {"type": "text", "text": "What is this?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJD"}}
        ]}),
    );
    check_shape(
        Protocol::OpenAiResponses,
        "QUJD",
        json!({"role": "user", "content": [
            {"type": "input_text", "text": "What is this?"},
            {"type": "input_image", "image_url": "data:image/png;base64,QUJD"}
        ]}),
    );
    check_shape(
        Protocol::Anthropic,
        "QUJD",
        json!({"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "QUJD"}},
            {"type": "text", "text": "What is this?"}
        ]}),
    );
    check_shape(
        Protocol::Ollama,
        "QUJD",
        json!({"role": "user", "content": "What is this?", "images": ["QUJD"]}),
    );
    // Bytes not on this device: the image is named in the text, in every protocol.
    for p in [Protocol::OpenAiChat, Protocol::Ollama, Protocol::Anthropic] {
        check_shape(
            p,
            "",
            json!({"role": "user", "content": "What is this? [image: cat.png]"}),
        );
    }
}

// ---- the prompt: images and files counted, carried, cut; memory gets a placeholder -----------

use memoire::engine::assemble::{assemble, AssemblyInput, SectionKind};
use memoire::engine::model::{HistoryFormat, MemoryConfig, Message, MessageMeta, MessageStatus};
use memoire::engine::tokens::HeuristicEstimator;

fn user(seq: u64, text: &str, attachments: Vec<Attachment>) -> Message {
    Message {
        id: format!("m{seq}"),
        conversation_id: "c".into(),
        seq,
        role: Role::User,
        content: text.into(),
        status: MessageStatus::Complete,
        created_at: seq as i64,
        meta: MessageMeta {
            attachments,
            ..MessageMeta::default()
        },
    }
}

fn reply(seq: u64, text: &str) -> Message {
    Message {
        role: Role::Assistant,
        ..user(seq, text, vec![])
    }
}

fn picture(w: u32, h: u32) -> Attachment {
    Attachment {
        kind: AttachmentKind::Image,
        name: "shot.png".into(),
        mime: "image/png".into(),
        size: 1000,
        hash: "e".repeat(64),
        width: w,
        height: h,
        text: String::new(),
    }
}

fn run(
    protocol: Protocol,
    format: HistoryFormat,
    history: &[Message],
    new: &Message,
    context: u32,
) -> memoire::engine::assemble::Assembly {
    let config = MemoryConfig {
        context_tokens: context,
        reply_reserve_tokens: 0,
        history_format: format,
        ..MemoryConfig::default()
    };
    assemble(
        &AssemblyInput {
            system_prompt: "",
            summary: None,
            entities: &[],
            history,
            new_message: new,
            config: &config,
            protocol,
            user_facts: &[],
            project: None,
            recall: &[],
        },
        &HeuristicEstimator,
    )
}

fn tokens_of(a: &memoire::engine::assemble::Assembly, kind: SectionKind) -> u32 {
    a.section(kind).map_or(0, |s| s.tokens)
}

#[test]
fn images_are_counted_by_the_protocols_rule_and_carried_where_they_were() {
    let history = [
        user(1, "look", vec![picture(1092, 1092)]),
        reply(2, "a cat"),
    ];
    let new = user(3, "and this?", vec![picture(1024, 1024)]);
    let plain = user(3, "and this?", vec![]);
    for (p, new_cost, old_cost) in [
        (Protocol::Anthropic, 1399, 1590),
        (Protocol::OpenAiChat, 765, 765),
    ] {
        let with = run(p, HistoryFormat::Messages, &history, &new, 100_000);
        let without = run(p, HistoryFormat::Messages, &history, &plain, 100_000);
        let added = tokens_of(&with, SectionKind::NewMessage)
            - tokens_of(&without, SectionKind::NewMessage);
        assert_eq!(added, new_cost, "{p:?} new message");
        let images: Vec<usize> = with
            .prompt
            .messages
            .iter()
            .map(|m| m.images.len())
            .collect();
        assert_eq!(images, [1, 0, 1], "{p:?}: each image on its own message");
        assert!(
            tokens_of(&with, SectionKind::History) > old_cost,
            "{p:?} history counts its image"
        );
    }
    // One transcript block names the older image; the new one still goes.
    let t = run(
        Protocol::OpenAiChat,
        HistoryFormat::Transcript,
        &history,
        &new,
        100_000,
    );
    assert_eq!(t.prompt.messages.len(), 1);
    assert!(t.prompt.messages[0]
        .content
        .contains("[USER]: look [image: shot.png]"));
    assert_eq!(t.prompt.messages[0].images.len(), 1);
}

#[test]
fn a_text_file_goes_as_text_cut_to_the_budget_with_a_note() {
    let small = user(1, "summarise", vec![file("notes.md", "# Plan\nship it")]);
    let a = run(
        Protocol::OpenAiChat,
        HistoryFormat::Messages,
        &[],
        &small,
        8192,
    );
    assert_eq!(
        a.prompt.messages[0].content,
        "summarise\n\n```md notes.md\n# Plan\nship it\n```"
    );
    let long = "word ".repeat(3_000);
    let big = user(1, "summarise", vec![file("long.txt", &long)]);
    let a = run(
        Protocol::OpenAiChat,
        HistoryFormat::Messages,
        &[],
        &big,
        1000,
    );
    let sent = &a.prompt.messages[0].content;
    assert!(
        sent.ends_with("[long.txt cut to fit the context: the first 2000 of 15000 characters]"),
        "{sent}"
    );
    assert!(sent.len() < 2_200);
}

#[test]
fn a_memory_update_names_an_image_and_never_carries_it() {
    use memoire::engine::memory::prompt::{build_update_request, UpdateLimits};
    let messages = [user(1, "my cat", vec![picture(10, 10)]), reply(2, "cute")];
    let req = build_update_request(None, &messages, &[], &UpdateLimits::default()).unwrap();
    let text = serde_json::to_string(&req.prompt).unwrap() + &req.structured_user;
    assert!(text.contains("my cat [image: shot.png]"), "{text}");
    assert!(!text.contains("images"), "no image travels: {text}");
}

// ---- backups carry the images' bytes; hostile ones are refused --------------------------------

use memoire::engine::backup::{
    check_import, export_with_images, image_hashes, ConversationBundle, ImageBlob, ImportLimits,
};
use memoire::engine::model::{Conversation, MemoryOverrides};

fn bundle_with_image(hash: &str) -> ConversationBundle {
    let mut m = user(
        1,
        "see",
        vec![
            Attachment {
                hash: hash.into(),
                ..picture(4, 3)
            },
            file("a.txt", "hi"),
        ],
    );
    m.conversation_id = "c".into();
    ConversationBundle {
        conversation: Conversation {
            id: "c".into(),
            title: "t".into(),
            title_is_custom: false,
            created_at: 1,
            updated_at: 1,
            message_count: 1,
            endpoint_profile_id: None,
            remote_handle: None,
            last_path: None,
            memory_overrides: MemoryOverrides::default(),
        },
        messages: vec![m],
        summaries: vec![],
        entities: vec![],
    }
}

fn exported(blob_hash: &str, mime: &str) -> String {
    let hash = "1".repeat(64);
    let b = bundle_with_image(&hash);
    assert_eq!(image_hashes(std::slice::from_ref(&b)), [hash.clone()]);
    let images = [ImageBlob {
        hash: blob_hash.into(),
        mime: mime.into(),
        bytes: vec![1, 2, 3],
    }];
    export_with_images(&[b], &[], &[], &[], &images, 5)
}

fn check_backup(text: &str, want: Result<usize, &str>) {
    match (
        check_import(text.as_bytes(), &ImportLimits::default()),
        want,
    ) {
        (Ok(c), Ok(n)) => {
            assert_eq!(c.images().len(), n);
            assert!(c.images().iter().all(|i| i.bytes == [1, 2, 3]));
        }
        (Err(e), Err(w)) => assert!(e.to_string().contains(w), "{e}"),
        (got, want) => panic!("{got:?} but wanted {want:?}"),
    }
}

#[test]
fn a_backup_carries_the_images_bytes_and_refuses_hostile_ones() {
    let good = exported(&"1".repeat(64), "image/png");
    assert!(good.contains("\"data\": \"AQID\""), "{good}");
    check_backup(&good, Ok(1));
    check_backup(&exported("../../etc", "image/png"), Err("not a SHA-256"));
    check_backup(&exported(&"1".repeat(64), "text/html"), Err("not taken"));
    check_backup(&good.replace("AQID", "A*ID"), Err("not base64"));
    let twice = good.replace("\"blobs\": [", "\"blobs\": [{\"hash\": \"1111111111111111111111111111111111111111111111111111111111111111\", \"mime\": \"image/png\", \"data\": \"AQID\"},");
    check_backup(&twice, Err("image"));
    // An attachment that is not what it says is refused with its message.
    check_backup(
        &good.replace("\"width\": 4", "\"width\": 99999"),
        Err("pixels"),
    );
    // A backup written before attachments (no blobs, no attachments) still imports.
    let old: serde_json::Value = serde_json::from_str(&good).unwrap();
    let mut old = old;
    old.as_object_mut().unwrap().remove("blobs");
    for m in old["conversations"][0]["messages"].as_array_mut().unwrap() {
        m.as_object_mut().unwrap().remove("attachments");
    }
    check_backup(&old.to_string(), Ok(0));
}

/// One sweep over `(hash, stored_at, users)` at `now` with a grace of 100: (deleted, stamped).
fn check_sweep(blobs: &[(&str, Option<i64>, u32)], now: i64, delete: &[&str], stamp: &[&str]) {
    let blobs: Vec<BlobAge> = blobs
        .iter()
        .map(|(h, at, users)| BlobAge {
            hash: h.to_string(),
            stored_at: *at,
            users: *users,
        })
        .collect();
    let got = sweep(&blobs, now, 100);
    assert_eq!(got.delete, delete, "deleted");
    assert_eq!(got.stamp, stamp, "stamped");
}

#[test]
fn the_sweep_frees_only_old_images_no_message_uses() {
    check_sweep(&[("old", Some(0), 0)], 100, &["old"], &[]);
    check_sweep(&[("used", Some(0), 1)], 1_000, &[], &[]);
    check_sweep(&[("fresh", Some(950), 0)], 1_000, &[], &[]);
    check_sweep(&[("future", Some(5_000), 0)], 1_000, &[], &[]);
    check_sweep(&[("unknown", None, 0)], 1_000, &[], &["unknown"]);
    check_sweep(&[("unknown used", None, 2)], 1_000, &[], &[]);
    check_sweep(
        &[
            ("a", Some(0), 0),
            ("b", Some(950), 0),
            ("c", Some(0), 3),
            ("d", None, 0),
        ],
        1_000,
        &["a"],
        &["d"],
    );
}

fn img(hash: &str, kind: AttachmentKind) -> Attachment {
    Attachment {
        kind,
        name: "x".into(),
        mime: "image/png".into(),
        size: 1,
        hash: hash.into(),
        width: 1,
        height: 1,
        text: String::new(),
    }
}

fn check_let_go(removed: Attachment, left: &[Attachment], want: Option<&str>) {
    assert_eq!(let_go(&removed, left).as_deref(), want);
}

#[test]
fn a_removed_image_is_let_go_unless_the_composer_still_holds_it() {
    use AttachmentKind::*;
    check_let_go(img("h1", Image), &[], Some("h1"));
    check_let_go(img("h1", Image), &[img("h2", Image)], Some("h1"));
    check_let_go(img("h1", Image), &[img("h1", Image)], None);
    check_let_go(img("t1", File), &[], None);
}

/// The first bytes of a PNG, GIF, WebP (each of its three headers) or JPEG that is `w` x `h`.
fn header(kind: &str, w: u32, h: u32) -> Vec<u8> {
    let mut b = Vec::new();
    match kind {
        "png" => {
            b.extend_from_slice(b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR");
            b.extend_from_slice(&w.to_be_bytes());
            b.extend_from_slice(&h.to_be_bytes());
        }
        "gif" => {
            b.extend_from_slice(b"GIF89a");
            b.extend_from_slice(&(w as u16).to_le_bytes());
            b.extend_from_slice(&(h as u16).to_le_bytes());
        }
        "vp8x" | "vp8l" | "vp8" => {
            b.extend_from_slice(b"RIFF\0\0\0\0WEBP");
            match kind {
                "vp8x" => {
                    b.extend_from_slice(b"VP8X\x0a\0\0\0\0\0\0\0");
                    b.extend_from_slice(&(w - 1).to_le_bytes()[..3]);
                    b.extend_from_slice(&(h - 1).to_le_bytes()[..3]);
                }
                "vp8l" => {
                    b.extend_from_slice(b"VP8L\0\0\0\0\x2f");
                    b.extend_from_slice(&((w - 1) | (h - 1) << 14).to_le_bytes());
                }
                _ => {
                    b.extend_from_slice(b"VP8 \0\0\0\0\0\0\0\x9d\x01\x2a");
                    b.extend_from_slice(&(w as u16).to_le_bytes());
                    b.extend_from_slice(&(h as u16).to_le_bytes());
                }
            }
        }
        _ => {
            // SOI, an APP1 of 70 KB of metadata, a DQT, then the frame (SOF2: progressive).
            b.extend_from_slice(&[0xff, 0xd8, 0xff, 0xe1, 0xff, 0xff]);
            b.extend(std::iter::repeat_n(0u8, 0xfffd));
            b.extend_from_slice(&[0xff, 0xdb, 0, 4, 0, 0]);
            b.extend_from_slice(&[0xff, 0xc2, 0, 17, 8]);
            b.extend_from_slice(&(h as u16).to_be_bytes());
            b.extend_from_slice(&(w as u16).to_be_bytes());
        }
    }
    b
}

fn check_size(kind: &str, w: u32, h: u32) {
    assert_eq!(image_size(&header(kind, w, h)), Some((w, h)), "{kind}");
}

/// Issue 43: an image's pixel size is read from its header before it is decoded, and a huge one
/// is refused with what to do.
#[test]
fn an_images_size_is_read_from_its_header_and_a_huge_one_refused() {
    for kind in ["png", "gif", "vp8x", "vp8l", "vp8", "jpeg"] {
        check_size(kind, 4000, 3000);
        check_size(kind, 1, 1);
    }
    check_size("png", 100_000, 100_000);
    // Cut before the size, or no image at all: not said.
    let png = header("png", 10, 10);
    assert_eq!(image_size(&png[..20]), None);
    let jpeg = header("jpeg", 10, 10);
    assert_eq!(image_size(&jpeg[..40_000]), None);
    assert_eq!(image_size(b"%PDF-1.4"), None);
    assert_eq!(pixels_check("a.png", Some((8_192, 8_192))), Ok(()));
    let huge = pixels_check("a.png", Some((100_000, 100_000))).unwrap_err();
    assert!(
        huge.contains("100000 x 100000 pixels: images up to 67 megapixels"),
        "{huge}"
    );
    assert!(huge.contains("Scale it down"), "{huge}");
    let unsaid = pixels_check("a.png", None).unwrap_err();
    assert!(unsaid.contains("does not say its size"), "{unsaid}");
    assert!(pixels_check("a.png", Some((0, 5))).is_err());
}
