#![cfg(not(target_arch = "wasm32"))]
//! The memory the PDF reader takes (`engine::pdf`, issue 43): the most bytes allocated at once
//! while a hostile file is read, counted by this test binary's allocator (alone in its binary, so
//! no other test's allocations are counted).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use memoire::engine::pdf::{extract, PdfError, LIMITS};

struct Counting;
static NOW: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let now = NOW.fetch_add(l.size(), Ordering::Relaxed) + l.size();
        PEAK.fetch_max(now, Ordering::Relaxed);
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        NOW.fetch_sub(l.size(), Ordering::Relaxed);
        System.dealloc(p, l)
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

const MB: usize = 1024 * 1024;

/// Reading fixture `name` gives `want`, and at most `max_mb` MB are allocated at once beyond
/// what was before.
fn check(name: &str, want: Result<&str, PdfError>, max_mb: usize) {
    let bytes = std::fs::read(format!("tests/fixtures/pdf/{name}")).expect("fixture");
    let before = NOW.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let got = extract(bytes, name, LIMITS);
    let peak = (PEAK.load(Ordering::Relaxed) - before) / MB;
    eprintln!("{name}: peak {peak} MB");
    assert_eq!(got.as_deref().map_err(Clone::clone), want, "{name}");
    assert!(peak <= max_mb, "{name}: {peak} MB at once");
}

/// 60 MB of `[0 0 …] TJ` in one array (and of `[0 0 …]` in a font's map), 12 MB of it in arrays of
/// 50,000 zeros, and 80 MB of spaces: each read a piece of 1 MB at a time and let go, never whole,
/// nor as the 32 bytes a zero takes as a value (a gigabyte before the width and memory bounds):
/// 10 MB at the most.
#[test]
fn hostile_pdfs_are_read_or_refused_within_bounded_memory() {
    check("wide.pdf", Err(PdfError::TooWide), 10);
    check("widemap.pdf", Err(PdfError::TooWide), 10);
    check("flood.pdf", Ok("x"), 10);
    check("bomb.pdf", Err(PdfError::Bomb(LIMITS.max_inflated)), 10);
}
