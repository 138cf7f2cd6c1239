//! Benchmark placeholder (merge): filled in by its work package.
fn main() {}
