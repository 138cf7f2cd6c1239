#![cfg(not(target_arch = "wasm32"))]
//! Attachments (`engine::attach`): what may be attached, the resize, each provider's token rule,
//! a text file's block and its cut, an endpoint's refusal of images, and the sanity check of an
//! attachment read from a backup.

use memoire::engine::attach::*;
use memoire::engine::model::{Attachment, AttachmentKind, Protocol};

fn check_intake(name: &str, mime: &str, size: u64, want: &str) {
    let got = match intake(name, mime, size) {
        Intake::Image => "image".to_string(),
        Intake::Text => "text".to_string(),
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
