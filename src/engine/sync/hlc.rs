//! The hybrid logical clock that orders every synced edit: wall time (passed in, never read), a
//! counter for edits within one millisecond or behind a faster peer, and the device id as the final
//! tie-break, so two devices can never produce equal stamps. Stamps order totally (`Ord`).
//!
//! The clock cannot be pinned (issue 28): [`Clock::observe`] takes `now` and a bound on skew
//! ([`MAX_SKEW_MS`], one day) and does not take in a stamp further ahead than that, and
//! [`Clock::tick`] moves its wall on by a millisecond when its counter is full, so every stamp it
//! gives out is greater than the one before, whatever it saw: two summary versions never share an
//! id and a `/clear` never covers a summary made after it.
//!
//! A pulled document whose stamps are more than [`MAX_SKEW_MS`] ahead of this device's clock (or
//! before 1970) is refused, not applied with its stamps clamped (`sync::check`): a stamp is part of
//! a document's identity (a summary's `_id`) and of every merge, so rewriting it on one device would
//! make that device's copy differ from the server's and from every other device's (each would clamp
//! to its own clock), and the copies would never converge; each device would push its own rewrite
//! back. A clamped stamp would also still win every register for a day. A refused document changes
//! nothing here, is counted in the sync status and named in the console; a device whose clock is a
//! day fast is the one to fix.
//! Must not import anything outside `crate::engine` (no clock: `now` is an argument).

use serde::{Deserialize, Serialize};

use crate::engine::model::Millis;

/// One stamp: `(wall, counter, device)` compared in that order.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Hlc {
    #[serde(rename = "t")]
    pub wall: Millis,
    #[serde(rename = "c")]
    pub counter: u32,
    #[serde(rename = "d")]
    pub device: String,
}

impl Hlc {
    pub fn new(wall: Millis, counter: u32, device: &str) -> Hlc {
        Hlc {
            wall,
            counter,
            device: device.to_string(),
        }
    }

    /// A compact text form that sorts like the stamp for walls in 0..10^15 (used inside `_id`s).
    pub fn key(&self) -> String {
        format!(
            "{:015}.{:08x}.{}",
            self.wall.max(0),
            self.counter,
            self.device
        )
    }
}

/// How far ahead of this device's clock a stamp may be and still be observed (or pulled): one day,
/// far more than any honest device's clock error.
pub const MAX_SKEW_MS: Millis = 86_400_000;

/// Whether `wall` is a time a stamp may carry: not before 1970 (a stamp's `_id` text would not sort)
/// and at most `max_skew` ahead of `now`.
pub fn wall_in_window(wall: Millis, now: Millis, max_skew: Millis) -> bool {
    wall >= 0 && wall <= now.saturating_add(max_skew)
}

/// One device's clock. Keep `last()` across restarts (the store persists it) so stamps never repeat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clock {
    device: String,
    wall: Millis,
    counter: u32,
}

impl Clock {
    /// A clock for `device`, continuing after `last` (a stamp it gave out or saw before), if any.
    pub fn new(device: &str, last: Option<&Hlc>) -> Clock {
        let (wall, counter) = last.map_or((Millis::MIN, 0), |h| (h.wall, h.counter));
        Clock {
            device: device.to_string(),
            wall,
            counter,
        }
    }

    /// [`Clock::new`] for a device that reads its clock back from the store at `now`: a kept stamp
    /// more than `max_skew` ahead (a clock pinned by a build that observed any stamp) is dropped,
    /// so the device's stamps follow its wall time again.
    pub fn resume(device: &str, last: Option<&Hlc>, now: Millis, max_skew: Millis) -> Clock {
        Clock::new(
            device,
            last.filter(|h| wall_in_window(h.wall, now, max_skew)),
        )
    }

    pub fn device(&self) -> &str {
        &self.device
    }

    /// A new stamp, greater than every stamp given out or observed before (a full counter moves
    /// the wall on by a millisecond rather than repeat a stamp).
    pub fn tick(&mut self, now: Millis) -> Hlc {
        if now > self.wall {
            self.wall = now;
            self.counter = 0;
        } else if self.counter == u32::MAX {
            self.wall = self.wall.saturating_add(1);
            self.counter = 0;
        } else {
            self.counter += 1;
        }
        Hlc::new(self.wall, self.counter, &self.device)
    }

    /// Takes in a stamp seen on a pulled document, so the next local stamp comes after it; a stamp
    /// more than `max_skew` ahead of `now` (or before 1970) is not taken in. Returns whether it was
    /// within that window.
    pub fn observe(&mut self, seen: &Hlc, now: Millis, max_skew: Millis) -> bool {
        if !wall_in_window(seen.wall, now, max_skew) {
            return false;
        }
        if (seen.wall, seen.counter) > (self.wall, self.counter) {
            self.wall = seen.wall;
            self.counter = seen.counter;
        }
        true
    }

    /// The last stamp position, to persist (as a stamp of this device).
    pub fn last(&self) -> Hlc {
        Hlc::new(self.wall, self.counter, &self.device)
    }
}
