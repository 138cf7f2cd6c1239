#![cfg(target_arch = "wasm32")]
//! Math in the browser's wasm: the formulas at `engine::math`'s nesting limits convert without
//! overflowing the wasm stack (a stack overflow there aborts the whole app, so the limits are
//! checked where they matter; this build is unoptimised, whose frames are larger than the app's),
//! and one beyond them is refused before the parser runs.

use memoire::engine::math::{to_mathml, Display, MathError, MAX_CHAIN, MAX_COST, MAX_DEPTH};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

/// `depth` groups open (each a `\frac`'s denominator), then a run of `chain` commands inside.
fn deepest(depth: usize, chain: usize) -> String {
    "\\frac{1}{".repeat(depth) + &"\\sqrt".repeat(chain) + " x" + &"}".repeat(depth)
}

#[wasm_bindgen_test]
fn the_deepest_formula_within_the_limits_converts() {
    for (depth, chain) in [(MAX_DEPTH, 0), (0, MAX_CHAIN), (20, 40), (10, 60)] {
        assert!(2 * depth + chain <= MAX_COST);
        let tex = deepest(depth, chain);
        let mathml = to_mathml(&tex, Display::Block).expect("converts");
        assert!(mathml.starts_with("<math display=\"block\">"), "{mathml}");
    }
    assert_eq!(
        to_mathml(&deepest(MAX_DEPTH + 1, 0), Display::Block),
        Err(MathError::TooLarge)
    );
    assert_eq!(
        to_mathml(&deepest(0, MAX_CHAIN + 1), Display::Block),
        Err(MathError::TooLarge)
    );
    // What overflowed the stack here before the cost was counted: refused.
    for (depth, chain) in [(40, 20), (20, 60)] {
        assert_eq!(
            to_mathml(&deepest(depth, chain), Display::Block),
            Err(MathError::TooLarge)
        );
    }
}
