#![cfg(not(target_arch = "wasm32"))]
//! The in-memory history window: it follows the driver's writes exactly, and says "stale" whenever
//! an input shows it missed a change, never guessing.

use memoire::engine::model::*;
use memoire::engine::window::{join_page, upsert_listed, Applied, Edge, HistoryWindow};

fn conv(id: &str, count: u64) -> Conversation {
    Conversation {
        id: id.into(),
        title: "t".into(),
        title_is_custom: false,
        created_at: 0,
        updated_at: 0,
        message_count: count,
        endpoint_profile_id: None,
        remote_handle: None,
        last_path: None,
        memory_overrides: MemoryOverrides::default(),
    }
}

fn msg(conv: &str, seq: u64) -> Message {
    Message {
        id: format!("{conv}-{seq}"),
        conversation_id: conv.into(),
        seq,
        role: if seq % 2 == 0 {
            Role::Assistant
        } else {
            Role::User
        },
        content: format!("m{seq}"),
        status: MessageStatus::Complete,
        created_at: seq as i64 * 10,
        meta: MessageMeta::default(),
    }
}

/// A window over messages `first..=last` of conversation "c" holding `count` messages in all.
fn window(first: u64, last: u64, count: u64, capacity: usize) -> HistoryWindow {
    let messages = (first..=last).rev().map(|s| msg("c", s)).collect();
    HistoryWindow::new(conv("c", count), messages, capacity)
}

fn seqs(w: &HistoryWindow) -> Vec<u64> {
    w.messages().iter().map(|m| m.seq).collect()
}

fn check_added(mut w: HistoryWindow, m: Message, want: Applied, want_seqs: &[u64]) {
    let before = w.clone();
    let got = w.handle_added(m);
    assert_eq!(got, want);
    if want == Applied::Applied {
        assert_eq!(seqs(&w), want_seqs);
        assert_eq!(
            w.conversation().message_count,
            before.conversation().message_count + 1
        );
    } else {
        assert_eq!(w, before, "a refused input leaves the window as it was");
    }
}

#[test]
fn new_sorts_and_keeps_the_last_capacity_messages() {
    assert_eq!(seqs(&window(1, 5, 5, 3)), vec![3, 4, 5]);
    assert_eq!(seqs(&window(1, 5, 5, 10)), vec![1, 2, 3, 4, 5]);
}

#[test]
fn added_messages() {
    check_added(
        window(1, 3, 3, 10),
        msg("c", 4),
        Applied::Applied,
        &[1, 2, 3, 4],
    );
    check_added(
        window(1, 3, 3, 3),
        msg("c", 4),
        Applied::Applied,
        &[2, 3, 4],
    );
    check_added(window(1, 0, 0, 3), msg("c", 7), Applied::Applied, &[7]);
    // A repeat or another conversation's message changes nothing.
    check_added(window(1, 3, 3, 10), msg("c", 3), Applied::Ignored, &[]);
    check_added(window(1, 3, 3, 10), msg("d", 4), Applied::Ignored, &[]);
    // A seq gap: something was appended that the window never saw.
    check_added(window(1, 3, 3, 10), msg("c", 5), Applied::Stale, &[]);
    // An unknown message below the tail cannot be placed.
    check_added(window(3, 5, 5, 10), msg("c", 2), Applied::Stale, &[]);
    // An empty window over a conversation that has messages was loaded wrong.
    check_added(window(1, 0, 2, 10), msg("c", 3), Applied::Stale, &[]);
}

#[test]
fn added_messages_move_updated_at_forward_only() {
    let mut w = window(1, 3, 3, 10);
    let mut m = msg("c", 4);
    m.created_at = 1_000;
    w.handle_added(m);
    assert_eq!(w.conversation().updated_at, 1_000);
    let mut m = msg("c", 5);
    m.created_at = 5;
    w.handle_added(m);
    assert_eq!(w.conversation().updated_at, 1_000);
}

fn check_updated(w: HistoryWindow, m: Message, want: Applied) {
    let mut w = w;
    let before = w.clone();
    assert_eq!(w.handle_updated(&m), want);
    match want {
        Applied::Applied => assert_eq!(w.message(&m.id), Some(&m)),
        _ => assert_eq!(w, before),
    }
}

#[test]
fn updated_messages() {
    let edited = |seq| Message {
        content: "new text".into(),
        status: MessageStatus::Interrupted,
        ..msg("c", seq)
    };
    check_updated(window(1, 3, 3, 10), edited(3), Applied::Applied);
    check_updated(window(1, 3, 3, 10), edited(1), Applied::Applied);
    // Older than the window: not ours to hold.
    check_updated(window(5, 9, 9, 5), edited(2), Applied::Ignored);
    check_updated(window(1, 3, 3, 10), msg("d", 3), Applied::Ignored);
    // Inside the window's range but unknown, or known with another seq: missed a change.
    check_updated(window(1, 3, 3, 10), edited(7), Applied::Stale);
    check_updated(
        window(1, 3, 3, 10),
        Message {
            seq: 9,
            ..msg("c", 3)
        },
        Applied::Stale,
    );
}

fn check_conversation(c: Conversation, want: Applied) {
    let mut w = window(1, 3, 3, 10);
    let before = w.clone();
    assert_eq!(w.handle_conversation(&c), want);
    match want {
        Applied::Applied => assert_eq!(w.conversation(), &c),
        _ => assert_eq!(w, before),
    }
}

#[test]
fn conversation_records() {
    check_conversation(
        Conversation {
            title: "renamed".into(),
            ..conv("c", 3)
        },
        Applied::Applied,
    );
    check_conversation(conv("d", 3), Applied::Ignored);
    // The store counts messages the window never saw (an import), or fewer (an edit removed some).
    check_conversation(conv("c", 5), Applied::Stale);
    check_conversation(conv("c", 1), Applied::Stale);
}

#[test]
fn serves_what_it_was_loaded_for_or_everything_when_complete() {
    let partial = window(6, 10, 10, 5);
    assert!(partial.serves(5));
    assert!(partial.serves(3));
    assert!(!partial.serves(6));
    let whole = window(1, 4, 4, 5);
    assert!(whole.serves(1_000));
    // Trimming on add loses the oldest message: no longer complete.
    let mut w = window(1, 5, 5, 5);
    assert!(w.serves(50));
    w.handle_added(msg("c", 6));
    assert!(!w.serves(50));
    assert_eq!(w.last(2).iter().map(|m| m.seq).collect::<Vec<_>>(), [5, 6]);
    assert_eq!(w.last(99).len(), 5);
}

#[test]
fn placing_a_stored_message_in_a_views_window() {
    use memoire::engine::window::{place, Placement::*};
    let check = |last, at_latest, seq, shown, want| {
        assert_eq!(
            place(last, at_latest, seq, shown),
            want,
            "{last:?} {at_latest} {seq} {shown}"
        );
    };
    check(Some(4), true, 5, false, Show);
    check(None, true, 9, false, Show);
    check(Some(4), true, 2, false, Show); // an older message goes in at its seq
    check(Some(4), true, 4, true, Show); // already shown: updated in place
    check(Some(4), true, 7, false, Behind); // a gap: the window missed 5 and 6
    check(Some(4), false, 5, false, Beyond); // far up: the latest is not mounted
    check(Some(4), false, 3, true, Show);
}

fn check_join(mounted: &[u64], page: &[u64], edge: Edge, cap: usize, want: &[u64], dropped: usize) {
    let mut m = mounted.to_vec();
    let d = join_page(&mut m, page.to_vec(), edge, cap, |a, b| a == b);
    assert_eq!(
        (m.as_slice(), d),
        (want, dropped),
        "{mounted:?} + {page:?} at {edge:?}"
    );
}

#[test]
fn a_page_joins_its_end_and_the_other_end_gives_way() {
    check_join(&[5, 6], &[3, 4], Edge::Start, 10, &[3, 4, 5, 6], 0);
    check_join(&[5, 6], &[3, 4], Edge::Start, 3, &[3, 4, 5], 1);
    check_join(&[5, 6], &[4, 5, 6], Edge::Start, 10, &[4, 5, 6], 0);
    check_join(&[5, 6], &[7, 8], Edge::End, 10, &[5, 6, 7, 8], 0);
    check_join(&[5, 6], &[6, 7, 8], Edge::End, 3, &[6, 7, 8], 1);
    check_join(&[5, 6], &[7, 8, 9], Edge::End, 2, &[8, 9], 3);
    check_join(&[], &[1, 2], Edge::End, 10, &[1, 2], 0);
    check_join(&[], &[1, 2], Edge::Start, 1, &[1], 1);
}

/// `list` and `changed` as `(id, updated_at)`; `want` the ids of the window after, top first.
fn check_upsert(
    list: &[(&str, i64)],
    changed: &[(&str, i64)],
    (above, more_below, cap): (usize, bool, usize),
    want: &[&str],
    want_more_below: bool,
) {
    let at = |&(id, t): &(&str, i64)| Conversation {
        updated_at: t,
        ..conv(id, 1)
    };
    let mut l: Vec<Conversation> = list.iter().map(at).collect();
    let more = upsert_listed(&mut l, changed.iter().map(at), above, more_below, cap);
    let ids: Vec<&str> = l.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        (ids.as_slice(), more),
        (want, want_more_below),
        "{list:?} + {changed:?}, above {above}, more below {more_below}, cap {cap}"
    );
}

#[test]
fn a_changed_conversation_goes_where_its_activity_puts_it_in_the_mounted_list() {
    let list = [("c", 30), ("b", 20), ("a", 10)];
    let open = (0, false, 90);
    // New and newest: on top; the oldest: at the bottom when nothing lies below.
    check_upsert(&list, &[("d", 40)], open, &["d", "c", "b", "a"], false);
    check_upsert(&list, &[("z", 5)], open, &["c", "b", "a", "z"], false);
    // A conversation with new activity moves up; equal times are ordered by id, descending.
    check_upsert(&list, &[("a", 35)], open, &["a", "c", "b"], false);
    check_upsert(&list, &[("bb", 20)], open, &["c", "bb", "b", "a"], false);
    // Above the window (rows not mounted there) or below it: left to the page read on scrolling.
    check_upsert(&list, &[("d", 40)], (5, false, 90), &["c", "b", "a"], false);
    check_upsert(&list, &[("z", 5)], (0, true, 90), &["c", "b", "a"], true);
    check_upsert(&list, &[("a", 35)], (5, false, 90), &["c", "b"], false);
    // A batch past the cap: each placed as if alone, the window full, more below it.
    check_upsert(
        &list,
        &[("d", 40), ("e", 50)],
        (0, false, 4),
        &["e", "d", "c", "b"],
        true,
    );
    // Once full, an older one falls below the window; a newer one pushes the last row off.
    check_upsert(
        &list,
        &[("x", 2), ("y", 1)],
        (0, false, 4),
        &["c", "b", "a", "x"],
        true,
    );
    check_upsert(
        &list,
        &[("x", 1), ("y", 2)],
        (0, false, 4),
        &["c", "b", "a", "y"],
        true,
    );
    check_upsert(&[], &[("a", 1), ("a", 2)], open, &["a"], false);
}
