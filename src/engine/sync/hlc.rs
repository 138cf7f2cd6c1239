//! The hybrid logical clock that orders every synced edit: wall time (passed in, never read), a
//! counter for edits within one millisecond or behind a faster peer, and the device id as the final
//! tie-break, so two devices can never produce equal stamps. Stamps order totally (`Ord`).
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

    pub fn device(&self) -> &str {
        &self.device
    }

    /// A new stamp, greater than every stamp given out or observed before.
    pub fn tick(&mut self, now: Millis) -> Hlc {
        if now > self.wall {
            self.wall = now;
            self.counter = 0;
        } else {
            self.counter = self.counter.saturating_add(1);
        }
        Hlc::new(self.wall, self.counter, &self.device)
    }

    /// Takes in a stamp seen on a pulled document, so the next local stamp comes after it.
    pub fn observe(&mut self, seen: &Hlc) {
        if (seen.wall, seen.counter) > (self.wall, self.counter) {
            self.wall = seen.wall;
            self.counter = seen.counter;
        }
    }

    /// The last stamp position, to persist (as a stamp of this device).
    pub fn last(&self) -> Hlc {
        Hlc::new(self.wall, self.counter, &self.device)
    }
}
