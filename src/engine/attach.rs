//! Attachments: what may be attached (kinds, types, size limits; a PDF's own limits and text are
//! `engine::pdf`'s), the size an image is resized to,
//! what an image costs in each provider's tokens, how a text file goes into the message (a fenced
//! block with its name, cut to a budget with a visible note), what stands for an image where its
//! bytes do not go (memory updates, transcripts, protocols without images), whether an endpoint's
//! refusal is about images, and whether an attachment read from a file or another device is sane.
//! Pure: the shells measure, hash and encode; this module decides. Must not import anything outside
//! `crate::engine`.
//!
//! # Token rules
//! - Anthropic (published): `width * height / 750`, after the image fits 1,568 px on its long edge.
//! - OpenAI chat and Responses (published, "high" detail): the image is scaled to fit 2,048 x 2,048,
//!   then its short side to 768 px; it costs 85 + 170 per 512-px tile.
//! - Ollama and anything else (no published rule): the Anthropic rule, which reads only the pixels
//!   and so needs no setting; vision models of that size (LLaVA 1.6, Llama 3.2 Vision, Qwen2-VL)
//!   spend a few hundred to a few thousand tokens on such an image, as it does.

use std::collections::HashMap;

use crate::engine::model::{Attachment, AttachmentKind, Millis, Prompt, Protocol, WireImage};

/// Longest edge an image is resized to before it is stored and sent (Anthropic's useful maximum;
/// OpenAI scales larger images down itself).
pub const MAX_IMAGE_EDGE: u32 = 1_568;
/// Largest image file accepted for attaching (before resizing).
pub const MAX_IMAGE_BYTES: u64 = 30 * 1024 * 1024;
/// Most pixels an image may have to be decoded (8,192 x 8,192: a 50-megapixel camera's photo
/// fits; a small file of a huge blank picture, which decodes to gigabytes, does not). Read from
/// its header ([`image_size`]) before the browser decodes it.
pub const MAX_IMAGE_PIXELS: u64 = 8_192 * 8_192;
/// Bytes of an image's start read for its header (a JPEG's metadata may come first); when its
/// size is not in them, the whole file is read.
pub const IMAGE_HEAD_BYTES: usize = 1 << 20;
/// Largest text file accepted.
pub const MAX_FILE_BYTES: u64 = 512 * 1024;
/// Most attachments on one message.
pub const MAX_ATTACHMENTS: usize = 16;
/// Longest name kept (longer names are cut).
pub const MAX_NAME_CHARS: usize = 200;
/// Image types the composer takes (what every protocol here accepts).
pub const IMAGE_TYPES: &[&str] = &["image/png", "image/jpeg", "image/webp", "image/gif"];
/// Endings of the text files the composer takes when the browser gives no useful type.
pub const TEXT_ENDINGS: &[&str] = &[
    "txt", "md", "markdown", "csv", "tsv", "json", "jsonl", "xml", "yaml", "yml", "toml", "ini",
    "log", "rs", "py", "js", "mjs", "ts", "tsx", "jsx", "c", "h", "cpp", "hpp", "cc", "java", "kt",
    "go", "rb", "php", "cs", "swift", "sh", "bash", "sql", "html", "css", "scss", "lua", "r", "pl",
    "hs", "ex", "exs", "clj", "scala", "dart", "vue", "svelte", "tex", "org", "rst", "conf",
];

/// What a picked, pasted or dropped file is, or why it cannot be attached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Intake {
    Image,
    Text,
    /// A PDF: its text is read (`engine::pdf`) and attached as a text file's would be.
    Pdf,
    Refused(String),
}

fn ending(name: &str) -> String {
    name.rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default()
}

/// Whether a file of this name, type and size can be attached, and as what.
pub fn intake(name: &str, mime: &str, size: u64) -> Intake {
    let mime = mime.trim().to_ascii_lowercase();
    if IMAGE_TYPES.contains(&mime.as_str()) {
        return if size > MAX_IMAGE_BYTES {
            Intake::Refused(format!(
                "“{}” is {}: images up to {} can be attached.",
                short_name(name),
                human_bytes(size),
                human_bytes(MAX_IMAGE_BYTES)
            ))
        } else {
            Intake::Image
        };
    }
    if mime == "application/pdf"
        || (mime.is_empty() || mime == "application/octet-stream") && ending(name) == "pdf"
    {
        return match crate::engine::pdf::size_check(name, size) {
            Ok(()) => Intake::Pdf,
            Err(why) => Intake::Refused(why),
        };
    }
    let texty = mime.starts_with("text/")
        || matches!(
            mime.as_str(),
            "application/json" | "application/xml" | "application/x-yaml" | "application/toml"
        )
        || TEXT_ENDINGS.contains(&ending(name).as_str());
    if !texty {
        return Intake::Refused(format!(
            "“{}” cannot be attached: images (PNG, JPEG, WebP, GIF), PDFs and text files (plain text, Markdown, code, CSV, JSON) can.",
            short_name(name)
        ));
    }
    if size > MAX_FILE_BYTES {
        return Intake::Refused(format!(
            "“{}” is {}: text files up to {} can be attached.",
            short_name(name),
            human_bytes(size),
            human_bytes(MAX_FILE_BYTES)
        ));
    }
    Intake::Text
}

/// Bytes in words ("512 KB", "30 MB").
pub fn human_bytes(n: u64) -> String {
    const KB: u64 = 1024;
    const MB: u64 = 1024 * 1024;
    if n >= MB {
        format!("{:.1} MB", n as f64 / MB as f64).replace(".0 MB", " MB")
    } else if n >= KB {
        format!("{} KB", n.div_ceil(KB))
    } else {
        format!("{n} bytes")
    }
}

/// A name as kept: control characters dropped, at most [`MAX_NAME_CHARS`].
pub fn short_name(name: &str) -> String {
    let clean: String = name.chars().filter(|c| !c.is_control()).collect();
    let clean = clean.trim();
    let out: String = clean.chars().take(MAX_NAME_CHARS).collect();
    if out.is_empty() {
        "attachment".to_string()
    } else {
        out
    }
}

/// The size an image of `width` x `height` is stored and sent at: its long edge at most
/// [`MAX_IMAGE_EDGE`], its proportions kept, never enlarged, never 0.
pub fn resized(width: u32, height: u32) -> (u32, u32) {
    let long = width.max(height);
    if long <= MAX_IMAGE_EDGE || width == 0 || height == 0 {
        return (width.max(1), height.max(1));
    }
    let scale = MAX_IMAGE_EDGE as f64 / long as f64;
    let w = ((width as f64 * scale).round() as u32).clamp(1, MAX_IMAGE_EDGE);
    let h = ((height as f64 * scale).round() as u32).clamp(1, MAX_IMAGE_EDGE);
    (w, h)
}

/// Tokens an image of `width` x `height` costs with `protocol` (module header, "Token rules").
pub fn image_tokens(protocol: Protocol, width: u32, height: u32) -> u32 {
    let (w, h) = (width.max(1) as u64, height.max(1) as u64);
    match protocol {
        Protocol::OpenAiChat | Protocol::OpenAiResponses => openai_tokens(w as f64, h as f64),
        Protocol::Anthropic | Protocol::Ollama => {
            let (w, h) = resized(w as u32, h as u32);
            ((w as u64 * h as u64).div_ceil(750)).max(1) as u32
        }
    }
}

fn openai_tokens(mut w: f64, mut h: f64) -> u32 {
    let fit = (2048.0 / w.max(h)).min(1.0);
    w *= fit;
    h *= fit;
    let short = (768.0 / w.min(h)).min(1.0);
    w *= short;
    h *= short;
    let tiles = (w / 512.0).ceil() * (h / 512.0).ceil();
    85 + 170 * tiles as u32
}

/// Characters a text file of the new message keeps: about half the prompt budget (at ~4 characters
/// a token), and never fewer than 2,000; past that it is cut with a visible note.
pub fn file_chars(budget_tokens: u32) -> usize {
    (budget_tokens as usize * 2).max(2_000)
}

/// Tokens and request bytes the images of one message cost with `protocol` (base64 is 4/3 of
/// the bytes, plus the JSON around each).
pub fn images_cost(protocol: Protocol, images: &[WireImage]) -> (u32, usize) {
    images.iter().fold((0u32, 0usize), |(t, b), i| {
        (
            t.saturating_add(image_tokens(protocol, i.width, i.height)),
            b + (i.size as usize).div_ceil(3) * 4 + i.mime.len() + 64,
        )
    })
}

/// The context inspector's note on a section's images: "2 images: 1590 tokens" (empty: none).
pub fn images_note(protocol: Protocol, images: &[&WireImage]) -> String {
    if images.is_empty() {
        return String::new();
    }
    let tokens: u32 = images
        .iter()
        .map(|i| image_tokens(protocol, i.width, i.height))
        .fold(0u32, u32::saturating_add);
    let n = images.len();
    format!(
        "{n} image{}: {tokens} tokens",
        if n == 1 { "" } else { "s" }
    )
}

/// The hashes of the images `prompt` carries (each once), whose bytes the driver reads.
pub fn image_hashes(prompt: &Prompt) -> Vec<String> {
    let mut out: Vec<String> = prompt
        .messages
        .iter()
        .flat_map(|m| m.images.iter().map(|i| i.hash.clone()))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Puts each image's bytes (`bytes`, by hash) into `prompt` as base64; an image whose bytes are
/// absent stays empty and goes as its `[image: name]` (`engine::request`).
pub fn fill_images(prompt: &mut Prompt, bytes: &HashMap<String, Vec<u8>>) {
    use base64::Engine as _;
    for m in &mut prompt.messages {
        for i in &mut m.images {
            if let Some(b) = bytes.get(&i.hash) {
                i.data = base64::engine::general_purpose::STANDARD.encode(b);
            }
        }
    }
}

/// What stands for an image where its bytes do not go: `[image: name]`.
pub fn placeholder(a: &Attachment) -> String {
    match a.kind {
        AttachmentKind::Image => format!("[image: {}]", short_name(&a.name)),
        AttachmentKind::File => format!("[file: {}]", short_name(&a.name)),
    }
}

/// The note that ends a file cut to the budget.
pub fn cut_note(name: &str, kept: usize, total: usize) -> String {
    format!(
        "[{} cut to fit the context: the first {kept} of {total} characters]",
        short_name(name)
    )
}

/// A text file as it goes into its message: a fenced block with its name, cut to `max_chars`
/// characters with a visible note. Returns the block and whether it was cut.
pub fn file_block(a: &Attachment, max_chars: usize) -> (String, bool) {
    let total = a.text.chars().count();
    let (body, cut) = match a.text.char_indices().nth(max_chars) {
        None => (a.text.as_str(), false),
        Some((byte, _)) => (&a.text[..byte], true),
    };
    let longest_run = longest_backtick_run(body);
    let fence = "`".repeat(longest_run.max(2) + 1);
    let mut out = format!("{fence}{}\n{body}", fence_label(&a.name));
    if !body.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&fence);
    if cut {
        out.push('\n');
        out.push_str(&cut_note(&a.name, max_chars, total));
    }
    (out, cut)
}

/// The info string of a file's fence: its ending as the language (so code reads as code), then its
/// name, with nothing that could end the fence line.
fn fence_label(name: &str) -> String {
    let name = short_name(name).replace(['`', '\n', '\r'], "");
    let lang = ending(&name);
    let lang = if lang.chars().all(|c| c.is_ascii_alphanumeric()) {
        lang
    } else {
        String::new()
    };
    format!("{lang} {name}").trim_start().to_string()
}

fn longest_backtick_run(s: &str) -> usize {
    let (mut best, mut run) = (0, 0);
    for c in s.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        best = best.max(run);
    }
    best
}

/// True when an endpoint's refusal (an HTTP 4xx body) says the model cannot take images.
pub fn refuses_images(status: u16, body: &str) -> bool {
    if !(400..500).contains(&status) || status == 401 || status == 403 || status == 429 {
        return false;
    }
    let b = body.to_ascii_lowercase();
    ["image", "vision", "multimodal", "multi-modal", "image_url"]
        .iter()
        .any(|w| b.contains(w))
}

/// What the user reads when the endpoint refused an image.
pub const REFUSED_IMAGES: &str = "This model cannot see images: the endpoint refused the message because of its image. Your message is kept; choose a vision model in Settings, or remove the image and send again.";

/// Whether an attachment read from a backup or another device is sane; the reason when not.
pub fn check(a: &Attachment) -> Result<(), String> {
    if !is_hash(&a.hash) {
        return Err("its hash is not a SHA-256 in hex".into());
    }
    if a.name.chars().count() > MAX_NAME_CHARS || a.name.chars().any(char::is_control) {
        return Err("its name is too long or holds control characters".into());
    }
    if a.mime.len() > 100 || a.mime.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err("its type is not a media type".into());
    }
    match a.kind {
        AttachmentKind::Image => {
            if !IMAGE_TYPES.contains(&a.mime.as_str()) {
                return Err(format!("an image of type {:?} is not taken", a.mime));
            }
            if a.width == 0 || a.height == 0 || a.width.max(a.height) > MAX_IMAGE_EDGE {
                return Err("its size in pixels is not that of a stored image".into());
            }
            if !a.text.is_empty() {
                return Err("an image carries no text".into());
            }
        }
        AttachmentKind::File => {
            if a.text.len() as u64 > MAX_FILE_BYTES {
                return Err("its text is over the size limit".into());
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Images no message uses.

/// How long a stored image no message uses is kept before the start-up sweep frees it: an image
/// attached in one tab is stored at once, and its message written only when it is sent, so an
/// unused image younger than this may be another tab's draft (a week: a draft left open over a
/// weekend keeps its pictures).
pub const UNUSED_GRACE_MS: Millis = 7 * 24 * 60 * 60 * 1000;

/// A stored image as the sweep sees it: its hash, when it was stored (`None`: stored by a build
/// that did not record it) and how many messages use it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobAge {
    pub hash: String,
    pub stored_at: Option<Millis>,
    pub users: u32,
}

/// What the sweep does: the images to delete, and those to stamp with `now` (their age unknown,
/// their grace starts now).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Sweep {
    pub delete: Vec<String>,
    pub stamp: Vec<String>,
}

/// The start-up sweep: an image no message uses and stored at least `grace` before `now` is
/// deleted; one used, younger (or stamped in the future by a clock since set back) is kept; one
/// of unknown age is stamped, so a later sweep frees it once its grace is over.
pub fn sweep(blobs: &[BlobAge], now: Millis, grace: Millis) -> Sweep {
    let mut out = Sweep::default();
    for b in blobs.iter().filter(|b| b.users == 0) {
        match b.stored_at {
            None => out.stamp.push(b.hash.clone()),
            Some(at) if at <= now && now - at >= grace => out.delete.push(b.hash.clone()),
            Some(_) => {}
        }
    }
    out
}

/// The image a composer lets go of when `removed` is taken off it: its hash, to free unless a
/// message uses it; `None` for a text file (nothing stored) or an image the composer still holds
/// (the same picture attached twice).
pub fn let_go(removed: &Attachment, still_attached: &[Attachment]) -> Option<String> {
    let held = still_attached.iter().any(|a| a.hash == removed.hash);
    (removed.kind == AttachmentKind::Image && !held).then(|| removed.hash.clone())
}

/// The image type its first bytes say (PNG, JPEG, GIF or WebP: [`IMAGE_TYPES`]), whatever its
/// name or its source claims; `None` for anything else (an imported file is taken by what it is).
pub fn sniff_image(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// An image's pixel size as its header says (PNG's `IHDR`, GIF's screen, WebP's `VP8 `/`VP8L`/
/// `VP8X`, a JPEG's first start-of-frame), read from its first bytes without decoding it; `None`
/// when they do not say (not one of these types, or the header lies past `bytes`).
pub fn image_size(bytes: &[u8]) -> Option<(u32, u32)> {
    let le16 = |i: usize| Some(u16::from_le_bytes(bytes.get(i..i + 2)?.try_into().ok()?) as u32);
    let le24 = |i: usize| Some(le16(i)? | (*bytes.get(i + 2)? as u32) << 16);
    let be32 = |i: usize| Some(u32::from_be_bytes(bytes.get(i..i + 4)?.try_into().ok()?));
    match sniff_image(bytes)? {
        "image/png" if bytes.get(12..16) == Some(b"IHDR") => Some((be32(16)?, be32(20)?)),
        "image/gif" => Some((le16(6)?, le16(8)?)),
        "image/webp" => match bytes.get(12..16)? {
            b"VP8X" => Some((le24(24)? + 1, le24(27)? + 1)),
            b"VP8L" => {
                let b = u32::from_le_bytes(bytes.get(21..25)?.try_into().ok()?);
                Some(((b & 0x3fff) + 1, (b >> 14 & 0x3fff) + 1))
            }
            b"VP8 " => Some((le16(26)? & 0x3fff, le16(28)? & 0x3fff)),
            _ => None,
        },
        "image/jpeg" => jpeg_size(bytes),
        _ => None,
    }
}

/// A JPEG's size: its segments walked by their lengths to the first start-of-frame (`SOF0`-`SOF15`
/// but the `DHT`, `JPG` and `DAC` markers that share the range).
fn jpeg_size(b: &[u8]) -> Option<(u32, u32)> {
    let mut i = 2;
    loop {
        while *b.get(i)? == 0xff && b.get(i + 1) == Some(&0xff) {
            i += 1;
        }
        let (mark, marker) = (*b.get(i)?, *b.get(i + 1)?);
        if mark != 0xff {
            return None;
        }
        let len = u16::from_be_bytes([*b.get(i + 2)?, *b.get(i + 3)?]) as usize;
        if (0xc0..=0xcf).contains(&marker) && !matches!(marker, 0xc4 | 0xc8 | 0xcc) {
            let h = u16::from_be_bytes([*b.get(i + 5)?, *b.get(i + 6)?]) as u32;
            let w = u16::from_be_bytes([*b.get(i + 7)?, *b.get(i + 8)?]) as u32;
            return Some((w, h));
        }
        if len < 2 || marker == 0xd9 || marker == 0xda {
            return None;
        }
        i += 2 + len;
    }
}

/// Whether an image `name` whose header says `size` (`None`: it does not say) may be decoded;
/// the words of the refusal when not.
pub fn pixels_check(name: &str, size: Option<(u32, u32)>) -> Result<(), String> {
    let Some((w, h)) = size else {
        return Err(format!(
            "“{}” could not be read: its header does not say its size (is it a PNG, JPEG, WebP or GIF?).",
            short_name(name)
        ));
    };
    if w == 0 || h == 0 {
        return Err(format!(
            "“{}” is damaged: its header says it is {w} x {h} pixels.",
            short_name(name)
        ));
    }
    if w as u64 * h as u64 > MAX_IMAGE_PIXELS {
        return Err(format!(
            "“{}” is {w} x {h} pixels: images up to {} megapixels (8,192 x 8,192) can be attached. Scale it down and attach it again.",
            short_name(name),
            MAX_IMAGE_PIXELS / 1_000_000
        ));
    }
    Ok(())
}

/// A lowercase hex SHA-256.
pub fn is_hash(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Lowercase hex of a digest's bytes (the shell hashes; this writes the key).
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[(b >> 4) as usize] as char);
        out.push(DIGITS[(b & 15) as usize] as char);
    }
    out
}
