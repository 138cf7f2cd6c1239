#![cfg(not(target_arch = "wasm32"))]
//! `engine::coalesce`: the save throttle of a streaming reply.

use memoire::engine::coalesce::SaveThrottle;

#[test]
fn throttle_saves_at_most_once_per_interval_plus_final() {
    let mut t = SaveThrottle::new(1000);
    assert!(t.on_change(0)); // first change saves at once
    assert!(!t.on_change(200));
    assert!(!t.on_change(999));
    assert_eq!(t.next_deadline(), Some(1000));
    assert!(!t.on_tick(500));
    assert!(t.on_tick(1000));
    assert_eq!(t.next_deadline(), None);
    assert!(!t.on_tick(5000)); // nothing held
    assert!(!t.on_change(1500));
    assert!(t.on_change(2000));
    assert!(t.on_change(1000)); // clock went backwards: save rather than stall
    t.finish(3000);
    assert!(!t.on_change(9000));
    assert_eq!(t.next_deadline(), None);
}
