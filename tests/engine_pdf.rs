#![cfg(not(target_arch = "wasm32"))]
//! PDFs (`engine::pdf`): the text of real small PDFs (tests/fixtures/pdf, written by
//! scripts/make-pdf-fixtures.py), the refusals of hostile and unreadable ones with words a user can
//! act on, the cleanup and the cut, and no panic on any cut or damaged copy of a fixture.

use memoire::engine::pdf::{self, clean, extract, Extraction, Limits, PdfError, LIMITS};

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!("tests/fixtures/pdf/{name}"))
        .expect("fixture (scripts/make-pdf-fixtures.py)")
}

/// The text of fixture `name` holds every one of `want`, in that order.
fn check_text(name: &str, want: &[&str]) {
    let text = extract(fixture(name), name, LIMITS).unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut at = 0;
    for w in want {
        match text[at..].find(w) {
            Some(i) => at += i + w.len(),
            None => panic!("{name}: {w:?} not found (in order) in {text:?}"),
        }
    }
}

#[test]
fn the_text_of_each_kind_of_pdf() {
    check_text(
        "plain.pdf",
        &[
            "Quarterly report\nRevenue grew by 12%, costs fell.\nWord gap",
            "\n\nSecond page: café (open)",
        ],
    );
    check_text("flate.pdf", &["Compressed words"]);
    check_text("a85.pdf", &["Armoured text"]);
    check_text("tounicode.pdf", &["Hello Zoé\nUnicode map"]);
    check_text("differences.pdf", &["finance isn’t €5"]);
    check_text("objstm.pdf", &["Packed objects", "Inside a form"]);
    // Written by real writers (scripts/make-pdf-fixtures.py: cairo through python3-cairo, Chromium's
    // print to PDF through Playwright): subset fonts with Unicode maps, runs placed with Td.
    check_text("cairo.pdf", &["Cairo writes this page.\nLigatures: office, fluff, affine — “quotes” and café.\nZweite Zeile: Grüße aus Köln.\n\nPage two of the cairo file."]);
    check_text("chromium.pdf", &["Chromium prints this\nA paragraph with office, fluff and a café — “quoted”.\n\nSecond page from Chromium."]);
    // ...and under the default limits, past 10,000 runs forms are left out.
    let forms = extract(fixture("forms.pdf"), "forms.pdf", LIMITS).unwrap();
    assert_eq!(forms.matches("again").count(), 10_000);
}

fn check_refused(name: &str, limits: Limits, want: PdfError) {
    match extract(fixture(name), name, limits) {
        Ok(text) => panic!("{name}: read as {text:?}"),
        Err(e) => assert_eq!(e, want, "{name}"),
    }
}

#[test]
fn hostile_and_unreadable_pdfs_are_refused_with_a_reason() {
    check_refused("encrypted.pdf", LIMITS, PdfError::Encrypted);
    check_refused("scanned.pdf", LIMITS, PdfError::NoText);
    check_refused("nomap.pdf", LIMITS, PdfError::Unreadable);
    check_refused("bomb.pdf", LIMITS, PdfError::Bomb(LIMITS.max_inflated));
    check_refused("deep.pdf", LIMITS, PdfError::TooDeep);
    check_refused("wide.pdf", LIMITS, PdfError::TooWide);
    check_refused("widemap.pdf", LIMITS, PdfError::TooWide);
    let tight = Limits {
        max_memory: 2_000,
        ..LIMITS
    };
    check_refused("plain.pdf", tight, PdfError::TooLarge);
    check_refused("flate.pdf", tight, PdfError::TooLarge);
    let few = Limits {
        max_objects: 3,
        ..LIMITS
    };
    check_refused("plain.pdf", few, PdfError::TooManyObjects(3));
    let small = Limits {
        max_inflated: 10,
        ..LIMITS
    };
    check_refused("flate.pdf", small, PdfError::Bomb(10));
}

fn check_message(e: PdfError, want: &str) {
    let m = e.message("report.pdf");
    assert!(m.starts_with("“report.pdf” ") && m.contains(want), "{m}");
}

#[test]
fn every_refusal_says_what_to_do() {
    check_message(PdfError::NoText, "no text layer");
    check_message(PdfError::Encrypted, "Save a copy without protection");
    check_message(PdfError::Bomb(LIMITS.max_inflated), "more than 64 MB");
    check_message(
        PdfError::TooManyObjects(200_000),
        "more than 200000 objects",
    );
    check_message(PdfError::NotPdf, "not a PDF");
    check_message(PdfError::TooWide, "a list longer than a real document");
    check_message(
        PdfError::TooLarge,
        "more memory to read than a PDF attachment may (128 MB)",
    );
    assert!(pdf::size_check("big.pdf", LIMITS.max_bytes + 1)
        .unwrap_err()
        .contains("PDFs up to 20 MB"));
    assert!(pdf::size_check("ok.pdf", LIMITS.max_bytes).is_ok());
}

#[test]
fn text_past_the_limit_is_cut_with_a_note() {
    let limits = Limits {
        max_text_bytes: 520,
        ..LIMITS
    };
    let mut ex = Extraction::open(fixture("plain.pdf"), limits).unwrap();
    let mut steps = 0;
    while ex.step().unwrap() {
        steps += 1;
    }
    assert_eq!(
        steps, 0,
        "the first page already fills the 8 bytes left under the note's room"
    );
    let text = ex.finish("plain.pdf").unwrap();
    assert!(
        text.ends_with("[plain.pdf cut at 520 bytes: its text up to page 1 of 2]"),
        "{text}"
    );
    assert!(text.len() <= 520);
}

fn check_clean(raw: &str, want: &str) {
    assert_eq!(clean(raw), want, "{raw:?}");
}

#[test]
fn text_is_tidied() {
    check_clean("  a   b \n\n\n\n c\t d ", "a b\n\nc d");
    check_clean("ﬁnance ﬂow oﬀ", "finance flow off");
    check_clean("soft\u{ad}hyphen\u{7}", "softhyphen");
    check_clean("line\r\nnext\rlast", "line\nnext\nlast");
    check_clean("", "");
}

#[test]
fn not_a_pdf_is_refused() {
    assert_eq!(
        extract(b"hello".to_vec(), "x.pdf", LIMITS),
        Err(PdfError::NotPdf)
    );
    assert_eq!(
        extract(b"%PDF-1.4\n".to_vec(), "x.pdf", LIMITS),
        Err(PdfError::NoPages)
    );
}

/// Prefixes of each fixture (every one of a small one's), and copies with bytes overwritten, give
/// text or an error (under a 64 KB budget, so that the self-drawing form ends soon).
#[test]
fn cut_or_damaged_pdfs_never_panic() {
    let limits = Limits {
        max_inflated: 1 << 16,
        ..LIMITS
    };
    let names = [
        "plain.pdf",
        "flate.pdf",
        "tounicode.pdf",
        "differences.pdf",
        "objstm.pdf",
        "encrypted.pdf",
        "scanned.pdf",
        "nomap.pdf",
        "forms.pdf",
        "cairo.pdf",
        "chromium.pdf",
    ];
    for name in names {
        let bytes = fixture(name);
        // The real writers' files (10-20 KB) are cut at 150 points and damaged 40 times.
        let big = bytes.len() > 4096;
        let step = if big { bytes.len() / 150 } else { 1 };
        for cut in (0..bytes.len()).step_by(step) {
            let _ = extract(bytes[..cut].to_vec(), name, limits);
        }
        let mut seed = 0x9e37_79b9u32;
        for _ in 0..if big { 40 } else { 300 } {
            let mut copy = bytes.clone();
            for _ in 0..4 {
                seed ^= seed << 13;
                seed ^= seed >> 17;
                seed ^= seed << 5;
                let at = seed as usize % copy.len();
                copy[at] = (seed >> 8) as u8;
            }
            let _ = extract(copy, name, limits);
        }
    }
}

/// Issue 43: a file under 200 KB inflating to about 60 MB of one `[0 0 …] TJ` is refused in under
/// 2 s (in this unoptimised build; the memory it takes is `tests/engine_pdf_memory.rs`'s and
/// `tests/browser_pdf_memory.rs`'s).
#[test]
fn sixty_megabytes_of_tj_zeros_are_refused_in_under_two_seconds() {
    let bytes = fixture("wide.pdf");
    assert!(bytes.len() < 200_000, "{}", bytes.len());
    let t = std::time::Instant::now();
    assert_eq!(extract(bytes, "wide.pdf", LIMITS), Err(PdfError::TooWide));
    let took = t.elapsed();
    assert!(took.as_secs_f64() < 2.0, "{took:?}");
}

#[test]
fn fifty_pages_read_in_order() {
    let bytes =
        std::fs::read("tests/e2e/fixtures/fifty.pdf").expect("scripts/make-pdf-fixtures.py");
    let text = extract(bytes, "fifty.pdf", LIMITS).unwrap();
    let mut at = 0;
    for page in 1..=50 {
        let title = format!("Page {page} of the annual report\n");
        at += text[at..]
            .find(&title)
            .unwrap_or_else(|| panic!("page {page}"))
            + title.len();
    }
    assert_eq!(text.matches("Line 44.").count(), 50);
}

/// A one-page PDF whose content shows `lines` lines of text, in no font (the default encoding).
fn long_pdf(lines: usize) -> Vec<u8> {
    let mut content = String::from("BT 12 TL\n");
    for i in 0..lines {
        content.push_str(&format!(
            "(Line {i} holds a few words to fill the page.) Tj T*\n"
        ));
    }
    content.push_str("ET");
    format!(
        "%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n\
         2 0 obj << /Type /Pages /Kids [3 0 R] /Count 1 >> endobj\n\
         3 0 obj << /Type /Page /Parent 2 0 R /Contents 4 0 R >> endobj\n\
         4 0 obj << >> stream\n{content}\nendstream endobj\n%%EOF\n"
    )
    .into_bytes()
}

#[test]
fn a_long_pdfs_text_is_cut_to_an_attachment_that_passes_the_checks() {
    use memoire::engine::attach::{check, MAX_FILE_BYTES};
    use memoire::engine::model::{Attachment, AttachmentKind};
    assert_eq!(LIMITS.max_text_bytes as u64, MAX_FILE_BYTES);
    let text = extract(long_pdf(15_000), "long.pdf", LIMITS).unwrap();
    assert!(text.len() as u64 <= MAX_FILE_BYTES, "{}", text.len());
    assert!(text.starts_with("Line 0 holds a few words to fill the page.\nLine 1 holds"));
    assert!(text.ends_with("[long.pdf cut at 512 KB: its text up to page 1 of 1]"));
    let a = Attachment {
        kind: AttachmentKind::File,
        name: "long.pdf".into(),
        mime: "application/pdf".into(),
        size: text.len() as u64,
        hash: "0".repeat(64),
        width: 0,
        height: 0,
        text,
    };
    assert_eq!(check(&a), Ok(()));
}
