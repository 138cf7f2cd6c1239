#![cfg(not(target_arch = "wasm32"))]
//! `engine::sort`: the same order as std's stable sort, ties kept in input order.

use memoire::engine::sort::{sort_by, sort_by_key};
use proptest::prelude::*;

/// Sorts (key, position) pairs by key alone both ways; equal keys must keep their positions' order.
fn check(keys: &[u8]) {
    let items: Vec<(u8, usize)> = keys.iter().copied().zip(0..).collect();
    let mut expected = items.clone();
    expected.sort_by_key(|p| p.0);
    let mut ours = items.clone();
    sort_by_key(&mut ours, |p| p.0);
    assert_eq!(ours, expected, "sort_by_key of {keys:?}");
    let mut ours = items;
    sort_by(&mut ours, |a, b| b.0.cmp(&a.0));
    expected.sort_by_key(|p| std::cmp::Reverse(p.0));
    assert_eq!(ours, expected, "sort_by (descending) of {keys:?}");
}

#[test]
fn sorts_like_std_and_is_stable() {
    check(&[]);
    check(&[7]);
    check(&[3, 1, 2]);
    check(&[2, 1, 2, 1, 2, 1]);
    check(&[5, 5, 5, 5]);
    check(&(0..100).rev().map(|i| (i % 7) as u8).collect::<Vec<_>>());
}

proptest! {
    #[test]
    fn any_input(keys in proptest::collection::vec(0u8..8, 0..300)) {
        check(&keys);
    }
}
