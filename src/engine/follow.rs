//! Whether the chat view follows the bottom (a growing reply, a new message) or stays where the user
//! put it. The view feeds in what happened — the user's input, scrolls, an opened conversation, a
//! message brought into view — with the time and positions in pixels, and asks [`Follow::follows`].
//! The rules: a move up counts only right after the user's own input (layout changes also move the
//! view), a wheel or key upwards stops following at once, and coming back near the bottom resumes.
//! Pure: imports only `crate::engine`; `now` is passed in.

/// How close to the bottom (px) counts as "at the bottom".
pub const NEAR_BOTTOM_PX: i32 = 40;
/// How long after the user's input (ms) a scroll is taken as the user's.
pub const INPUT_WINDOW_MS: i64 = 1_000;

/// The follow state of one chat view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Follow {
    stick: bool,
    last_top: i32,
    last_input_at: Option<i64>,
}

impl Default for Follow {
    fn default() -> Self {
        Follow {
            stick: true,
            last_top: 0,
            last_input_at: None,
        }
    }
}

impl Follow {
    /// The user touched the view (wheel, pointer, touch, key). `upwards`: a wheel or key that
    /// scrolls up, which stops following before the scroll even lands.
    pub fn handle_input(&mut self, now: i64, upwards: bool) {
        self.last_input_at = Some(now);
        if upwards {
            self.stick = false;
        }
    }

    /// The view scrolled to `top`, `gap` px above the bottom.
    pub fn handle_scroll(&mut self, top: i32, gap: i32, now: i64) {
        let by_user = self
            .last_input_at
            .is_some_and(|t| now.saturating_sub(t) < INPUT_WINDOW_MS);
        if gap < NEAR_BOTTOM_PX {
            self.stick = true;
        } else if by_user && top < self.last_top - 2 {
            self.stick = false;
        }
        self.last_top = top;
    }

    /// The view itself moved to `top` (following, keeping an anchor): not a move of the user's.
    pub fn handle_moved(&mut self, top: i32) {
        self.last_top = top;
    }

    /// A conversation was opened: it starts at the bottom.
    pub fn handle_opened(&mut self) {
        self.stick = true;
    }

    /// A message was brought into view (a search hit): stay there.
    pub fn handle_focused(&mut self, top: i32) {
        self.stick = false;
        self.last_top = top;
    }

    /// Whether the view should scroll to the bottom now. Never when the window stops short of the
    /// latest message (`at_latest` false): that bottom is not the conversation's end.
    pub fn follows(&self, at_latest: bool) -> bool {
        self.stick && at_latest
    }
}
