#![cfg(target_arch = "wasm32")]
//! The PDF reader's memory in the browser's wasm (issue 43): a file under 200 KB that inflates to
//! about 60 MB of `[0 0 …] TJ` is refused without a panic, in under 2 s, and the wasm memory (which
//! never shrinks) grows by little; 12 MB of such arrays are read to their text likewise. Before
//! the width and memory bounds the first took about a gigabyte (each zero a 32-byte value).

use memoire::engine::pdf::{extract, PdfError, LIMITS};
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

/// The wasm memory's size now (bytes).
fn memory() -> f64 {
    wasm_bindgen::memory()
        .unchecked_into::<js_sys::WebAssembly::Memory>()
        .buffer()
        .unchecked_into::<js_sys::ArrayBuffer>()
        .byte_length() as f64
}

fn now() -> f64 {
    js_sys::Date::now()
}

/// Reading `bytes` gives `want` within `max_ms` and grows the wasm memory by at most `max_mb`.
fn check(name: &str, bytes: &[u8], want: Result<&str, PdfError>, max_ms: f64, max_mb: f64) {
    let (before, t) = (memory(), now());
    let got = extract(bytes.to_vec(), name, LIMITS);
    let (took, grew) = (now() - t, (memory() - before) / 1048576.0);
    web_sys::console::log_1(&format!("{name}: {took} ms, wasm memory +{grew:.1} MB").into());
    assert_eq!(got.as_deref().map_err(Clone::clone), want, "{name}");
    assert!(took < max_ms, "{name}: {took} ms");
    assert!(grew <= max_mb, "{name}: +{grew} MB");
}

#[wasm_bindgen_test]
fn sixty_megabytes_of_tj_zeros_are_refused_fast_in_bounded_memory() {
    let wide = include_bytes!("fixtures/pdf/wide.pdf");
    assert!(wide.len() < 200_000);
    check("wide.pdf", wide, Err(PdfError::TooWide), 2_000.0, 16.0);
    let flood = include_bytes!("fixtures/pdf/flood.pdf");
    check("flood.pdf", flood, Ok("x"), 60_000.0, 16.0);
}
