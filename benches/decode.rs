//! Benchmark placeholder (decode): filled in by its work package.
fn main() {}
