//! Decoder throughput: a ~20 MB openai-chat SSE body shaped like the real llama-cpp-python
//! recording (its content chunks repeated, then `[DONE]`), fed in 16 KiB chunks, every event polled.
//! Prints `bench decode_sse_mb_per_s <median of 7 runs> MB/s` (MB = 10^6 bytes).

use std::time::Instant;

use memoire::engine::decode::{decoder_for, StreamEvent};
use memoire::engine::model::Protocol;

const TARGET_BYTES: usize = 20_000_000;
const CHUNK: usize = 16 * 1024;
const RUNS: usize = 7;

fn body() -> Vec<u8> {
    let fixture = include_str!("../tests/fixtures/openai-chat-llamacpp-python.sse");
    let events: Vec<&str> = fixture
        .split("\n\n")
        .filter(|e| e.starts_with("data: {") && e.contains("\"content\""))
        .collect();
    assert!(!events.is_empty(), "fixture has content chunks");
    let mut body = Vec::with_capacity(TARGET_BYTES + 4096);
    'fill: loop {
        for event in &events {
            body.extend_from_slice(event.as_bytes());
            body.extend_from_slice(b"\n\n");
            if body.len() >= TARGET_BYTES {
                break 'fill;
            }
        }
    }
    body.extend_from_slice(b"data: [DONE]\n\n");
    body
}

fn run(body: &[u8]) -> (f64, usize) {
    let start = Instant::now();
    let mut decoder = decoder_for(Protocol::OpenAiChat);
    let mut text_bytes = 0usize;
    let mut done = false;
    for chunk in body.chunks(CHUNK) {
        decoder.handle_bytes(chunk);
        while let Some(event) = decoder.poll_event() {
            match event {
                StreamEvent::TextDelta(t) => text_bytes += t.len(),
                StreamEvent::Done { .. } => done = true,
                other => panic!("unexpected event {other:?}"),
            }
        }
    }
    decoder.handle_eof();
    while decoder.poll_event().is_some() {}
    assert!(done, "the stream must finish");
    (start.elapsed().as_secs_f64(), text_bytes)
}

fn main() {
    let body = body();
    let mut rates: Vec<f64> = (0..RUNS)
        .map(|_| {
            let (secs, text_bytes) = run(&body);
            assert!(text_bytes > 0);
            body.len() as f64 / 1e6 / secs
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    println!("bench decode_sse_mb_per_s {:.0} MB/s", rates[RUNS / 2]);
}
