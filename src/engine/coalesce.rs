//! Save throttling for a streaming reply: at most one save per interval (about one second) while the
//! reply grows, plus a final one. The first change saves at once (so a crash right after the first
//! words still leaves a partial reply); later changes inside the interval are held and become due
//! when it ends. Pure: the caller passes `now` in and asks when the next save is due.
//! Must not import anything outside `crate::engine`.

use crate::engine::model::Millis;

/// The throttle. One per streaming reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaveThrottle {
    interval_ms: Millis,
    last_save: Option<Millis>,
    pending: bool,
    finished: bool,
}

impl Default for SaveThrottle {
    fn default() -> Self {
        Self::new(Self::DEFAULT_INTERVAL_MS)
    }
}

impl SaveThrottle {
    /// About one write per second, as ARCHITECTURE.md's storage rules ask.
    pub const DEFAULT_INTERVAL_MS: Millis = 1000;

    pub fn new(interval_ms: Millis) -> Self {
        SaveThrottle {
            interval_ms: interval_ms.max(0),
            last_save: None,
            pending: false,
            finished: false,
        }
    }

    fn due(&self, now: Millis) -> bool {
        match self.last_save {
            None => true,
            // A clock that went backwards makes the save due rather than stalling it.
            Some(last) => now < last || now - last >= self.interval_ms,
        }
    }

    /// The content changed at `now`. Returns true when it should be saved now; otherwise the change
    /// is held until [`SaveThrottle::next_deadline`].
    pub fn on_change(&mut self, now: Millis) -> bool {
        if self.finished {
            return false;
        }
        if self.due(now) {
            self.last_save = Some(now);
            self.pending = false;
            true
        } else {
            self.pending = true;
            false
        }
    }

    /// Time passed without a change: true when a held change is now due (and is counted as saved).
    pub fn on_tick(&mut self, now: Millis) -> bool {
        if self.finished || !self.pending || !self.due(now) {
            return false;
        }
        self.last_save = Some(now);
        self.pending = false;
        true
    }

    /// When a held change becomes due, if one is held.
    pub fn next_deadline(&self) -> Option<Millis> {
        if self.finished || !self.pending {
            return None;
        }
        self.last_save
            .map(|last| last.saturating_add(self.interval_ms))
    }

    /// Whether a change is waiting for its save.
    pub fn has_pending(&self) -> bool {
        self.pending && !self.finished
    }

    /// The reply ended: the final save always happens, and nothing is held after it.
    pub fn finish(&mut self, now: Millis) {
        self.last_save = Some(now);
        self.pending = false;
        self.finished = true;
    }
}
