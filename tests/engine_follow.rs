#![cfg(not(target_arch = "wasm32"))]
//! The chat view's follow rule: it follows the bottom until the user moves up, and resumes near the
//! bottom; moves the user did not make never stop it.

use memoire::engine::follow::{Follow, INPUT_WINDOW_MS, NEAR_BOTTOM_PX};

/// One thing that happens to the view.
#[derive(Clone, Copy)]
enum Step {
    /// User input at a time; `true` for a wheel or key upwards.
    Input(i64, bool),
    /// A scroll to (top, gap) at a time.
    Scroll(i32, i32, i64),
    Moved(i32),
    Opened,
    Focused(i32),
}
use Step::*;

fn check(steps: &[Step], at_latest: bool, want: bool) {
    let mut f = Follow::default();
    for s in steps {
        match *s {
            Input(t, up) => f.handle_input(t, up),
            Scroll(top, gap, t) => f.handle_scroll(top, gap, t),
            Moved(top) => f.handle_moved(top),
            Opened => f.handle_opened(),
            Focused(top) => f.handle_focused(top),
        }
    }
    assert_eq!(f.follows(at_latest), want, "after {} steps", steps.len());
}

#[test]
fn follows_until_the_user_moves_up() {
    let far = NEAR_BOTTOM_PX + 500;
    check(&[], true, true);
    // Never when the window stops short of the latest message.
    check(&[], false, false);
    // A wheel or key upwards stops at once.
    check(&[Input(0, true)], true, false);
    // A move up right after the user's input stops; the same move without input (a re-render,
    // the browser clamping) does not, nor does one long after the input.
    check(
        &[Moved(900), Input(10, false), Scroll(800, far, 20)],
        true,
        false,
    );
    check(&[Moved(900), Scroll(800, far, 20)], true, true);
    check(
        &[
            Moved(900),
            Input(10, false),
            Scroll(800, far, 10 + INPUT_WINDOW_MS),
        ],
        true,
        true,
    );
    // Small moves (under 3 px) are jitter.
    check(
        &[Moved(900), Input(10, false), Scroll(898, far, 20)],
        true,
        true,
    );
    // Back near the bottom: following again.
    check(
        &[Input(0, true), Scroll(1000, NEAR_BOTTOM_PX - 1, 5)],
        true,
        true,
    );
    // Opening a conversation follows; a focused search hit stays put.
    check(&[Input(0, true), Opened], true, true);
    check(&[Focused(300)], true, false);
    // After a focus, moving down from there is not a move up.
    check(
        &[Focused(300), Input(1, false), Scroll(400, far, 2)],
        true,
        false,
    );
}
