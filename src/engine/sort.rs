//! The app's one stable sort. `slice::sort_by` is generic over both the element and the comparison,
//! so every call site compiles its own copy of std's sort (3-5 KB of wasm each, 14 copies once). Here
//! only a list of indices is sorted, through a `dyn` comparison, so std's sort is compiled once;
//! the elements are then moved into place. Same result as `sort_by` (stable), O(n log n).
//! Must not import anything outside `crate::engine`.

use std::cmp::Ordering;

/// Stable sort of `v` by `cmp` (as `v.sort_by(cmp)`).
pub fn sort_by<T>(v: &mut Vec<T>, cmp: impl Fn(&T, &T) -> Ordering) {
    if v.len() < 2 {
        return;
    }
    let mut order: Vec<u32> = (0..v.len() as u32).collect();
    sort_indices(&mut order, &|a, b| cmp(&v[a], &v[b]));
    let mut slots: Vec<Option<T>> = v.drain(..).map(Some).collect();
    // `order` is a permutation, so each slot is taken exactly once.
    v.extend(order.iter().filter_map(|&i| slots[i as usize].take()));
}

/// Stable sort of `v` by a key (as `v.sort_by_key(key)`; the key is computed per comparison).
pub fn sort_by_key<T, K: Ord>(v: &mut Vec<T>, key: impl Fn(&T) -> K) {
    sort_by(v, |a, b| key(a).cmp(&key(b)));
}

#[inline(never)]
fn sort_indices(order: &mut [u32], cmp: &dyn Fn(usize, usize) -> Ordering) {
    order.sort_by(|&a, &b| cmp(a as usize, b as usize));
}
