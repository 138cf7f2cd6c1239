#![cfg(not(target_arch = "wasm32"))]
//! The keyboard table (`engine::keys`): which key does what in which scene, how the sheet writes
//! each shortcut, and the roving focus of a group that is one tab stop.

use memoire::engine::keys::{
    action_for, roving_step, send_on_start, KeyAction, KeyPress, KeyScene, SHORTCUTS,
};
use KeyAction::*;

/// A press written as "Ctrl+Shift+o", "Meta+k", "Shift+Escape", "?".
fn press(spec: &str) -> KeyPress {
    let mut p = KeyPress::default();
    let mut parts: Vec<&str> = spec.split('+').collect();
    // "?" and "+" keys stay whole; the last part is the key.
    p.key = parts.pop().unwrap_or_default().to_string();
    for m in parts {
        match m {
            "Ctrl" => p.ctrl = true,
            "Meta" => p.meta = true,
            "Shift" => p.shift = true,
            "Alt" => p.alt = true,
            other => panic!("unknown modifier {other}"),
        }
    }
    p
}

/// A scene written as flags: "text", "sheet", "dialog", "page", "drawer", "streaming", "handled".
fn scene(flags: &str) -> KeyScene {
    let has = |f: &str| flags.split_whitespace().any(|x| x == f);
    KeyScene {
        in_text_field: has("text"),
        sheet_open: has("sheet"),
        dialog_open: has("dialog"),
        page_open: has("page"),
        drawer_open: has("drawer"),
        streaming: has("streaming"),
        popup_open: has("popup"),
        handled: has("handled"),
    }
}

fn check(key: &str, flags: &str, want: &[KeyAction]) {
    assert_eq!(
        action_for(&press(key), &scene(flags)),
        want,
        "{key} in [{flags}]"
    );
}

#[test]
fn new_chat_is_ctrl_or_cmd_shift_o_even_while_typing() {
    check("Ctrl+Shift+o", "", &[NewChat]);
    check("Ctrl+Shift+O", "text", &[NewChat]);
    check("Meta+Shift+O", "", &[NewChat]);
}

#[test]
fn ctrl_o_without_shift_or_with_alt_is_not_new_chat() {
    check("Ctrl+o", "", &[]);
    check("Ctrl+Alt+Shift+o", "", &[]);
}

#[test]
fn shift_escape_focuses_the_composer_and_stops_nothing() {
    check("Shift+Escape", "", &[FocusComposer]);
    check("Shift+Escape", "streaming text", &[FocusComposer]);
}

#[test]
fn ctrl_k_and_cmd_k_search() {
    check("Ctrl+k", "", &[Search]);
    check("Meta+K", "text", &[Search]);
}

#[test]
fn plain_k_types() {
    check("k", "", &[]);
}

#[test]
fn question_mark_shows_the_sheet_outside_text_fields_only() {
    check("Shift+?", "", &[ShowShortcuts]);
    check("?", "", &[ShowShortcuts]);
    check("Shift+?", "text", &[]);
}

#[test]
fn question_mark_again_closes_the_sheet() {
    check("?", "sheet", &[CloseShortcuts]);
}

#[test]
fn a_key_taken_nearer_the_focus_does_nothing_more() {
    check("Ctrl+k", "handled", &[]);
}

#[test]
fn escape_stops_a_streaming_reply() {
    check("Escape", "streaming", &[Stop]);
    check("Escape", "streaming text", &[Stop]);
}

#[test]
fn escape_with_nothing_open_and_nothing_streaming_does_nothing() {
    check("Escape", "", &[]);
}

#[test]
fn escape_closes_the_nearest_thing_first_and_keeps_the_reply() {
    check("Escape", "sheet dialog streaming", &[CloseShortcuts]);
    check("Escape", "dialog page streaming", &[CloseSettings]);
    check("Escape", "page drawer", &[ClosePage]);
}

#[test]
fn escape_in_an_open_menu_is_the_menu_s_and_keeps_the_reply() {
    check("Escape", "popup streaming", &[]);
    check("Escape", "popup drawer streaming", &[]);
    check("Escape", "popup", &[]);
    check("Escape", "handled streaming", &[]);
}

#[test]
fn escape_on_the_drawer_closes_it_and_stops_the_reply() {
    check("Escape", "drawer", &[CloseDrawer]);
    check("Escape", "drawer streaming", &[CloseDrawer, Stop]);
}

fn sheet(mac: bool) -> Vec<String> {
    SHORTCUTS
        .iter()
        .map(|s| format!("{} {}", s.keys(mac), s.label))
        .collect()
}

#[test]
fn the_sheet_lists_every_shortcut_as_pc_keys() {
    assert_eq!(
        sheet(false),
        [
            "Ctrl+Shift+O New chat",
            "Shift+Esc Focus the message box",
            "Ctrl+K Search conversations",
            "Esc Stop the reply being written",
            "? Show these shortcuts",
        ]
    );
}

#[test]
fn the_sheet_writes_mac_keys_with_symbols() {
    assert_eq!(sheet(true)[0], "⌘⇧O New chat");
    assert_eq!(sheet(true)[2], "⌘K Search conversations");
}

#[test]
fn every_action_of_the_sheet_is_what_its_own_keys_do() {
    for s in SHORTCUTS {
        let mut p = KeyPress {
            key: s.key.to_string(),
            shift: s.shift,
            ..KeyPress::default()
        };
        p.ctrl = s.modifier == memoire::engine::keys::Modifier::Primary;
        let streaming = scene("streaming");
        assert_eq!(action_for(&p, &streaming), [s.action], "{}", s.label);
    }
}

fn roving(key: &str, at: usize, count: usize, want: Option<usize>) {
    assert_eq!(
        roving_step(key, at, count),
        want,
        "{key} from {at} of {count}"
    );
}

#[test]
fn arrows_move_to_the_next_and_previous_item_and_wrap() {
    roving("ArrowRight", 0, 3, Some(1));
    roving("ArrowDown", 2, 3, Some(0));
    roving("ArrowLeft", 0, 3, Some(2));
    roving("ArrowUp", 1, 3, Some(0));
}

#[test]
fn home_and_end_go_to_the_ends() {
    roving("Home", 2, 3, Some(0));
    roving("End", 0, 3, Some(2));
}

#[test]
fn other_keys_and_empty_groups_move_nothing() {
    roving("Enter", 0, 3, None);
    roving("ArrowDown", 0, 0, None);
}

#[test]
fn a_position_past_the_end_counts_as_the_last() {
    roving("ArrowDown", 7, 3, Some(0));
}

/// Enter pressed in the static first screen: does the app send `draft` once it is ready?
fn on_start(draft: &str, has_endpoint: bool, want: bool) {
    assert_eq!(
        send_on_start(draft, has_endpoint),
        want,
        "{draft:?} endpoint {has_endpoint}"
    );
}

#[test]
fn enter_before_ready_sends_a_message_to_a_configured_endpoint() {
    on_start("hello there", true, true);
    on_start("  two\nlines ", true, true);
}

#[test]
fn enter_before_ready_without_an_endpoint_leaves_the_text() {
    on_start("hello there", false, false);
}

#[test]
fn enter_before_ready_sends_nothing_blank_and_never_clears() {
    on_start("", true, false);
    on_start(" \n ", true, false);
    on_start(" /clear ", true, false);
}
