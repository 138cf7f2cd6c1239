//! Benchmark placeholder (assemble): filled in by its work package.
fn main() {}
