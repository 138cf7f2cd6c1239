//! When sync's loop starts again after it stopped on an error of its own: its part of the app
//! (the split point `sync`) could not be fetched, the server could not be asked about encryption,
//! a store read or write failed. The replicator retries what goes wrong inside a connection
//! (`replicate`); this decides for the loop around it, which otherwise stays stopped until the
//! settings are saved again. A failure that can pass without the user ([`Stop::Passing`]) starts
//! the loop again after a backoff (1 s, 2 s, … up to a minute, as the replicator's) and at once
//! when the browser comes back online; one only the user can fix ([`Stop::UserMustAct`]: the
//! address, the passphrase) waits for new settings. Sans-IO: `now` is an argument, the shell sleeps
//! until [`Restart::poll_timeout`]. Must not import anything outside `crate::engine`.

use super::replicate::backoff_ms;
use crate::engine::model::Millis;

/// Why the sync loop stopped, as far as starting it again goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// It can pass without the user: a part of the app or the server out of reach, a store error.
    Passing,
    /// Only the user can fix it (the sync settings, the passphrase).
    UserMustAct,
}

/// The sync loop's restarts for one settings generation (new settings: a new one).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Restart {
    /// Stops in a row since the loop last connected.
    errors: u32,
    /// When the stopped loop starts again (`None`: running, or waiting for the user).
    retry_at: Option<Millis>,
    /// The loop is stopped on a failure that can pass.
    passing: bool,
}

impl Restart {
    /// The loop stopped at `now` for `stop`: when it starts again (`None`: once the settings are
    /// saved).
    pub fn handle_stopped(&mut self, now: Millis, stop: Stop) -> Option<Millis> {
        self.passing = stop == Stop::Passing;
        self.retry_at = match stop {
            Stop::Passing => {
                self.errors += 1;
                Some(now + backoff_ms(self.errors))
            }
            Stop::UserMustAct => None,
        };
        self.retry_at
    }

    /// The browser came back online: a loop stopped on a failure that can pass starts now, its
    /// backoff from the start.
    pub fn handle_online(&mut self, now: Millis) {
        if self.passing {
            self.errors = 0;
            self.retry_at = Some(now);
        }
    }

    /// The loop connected (it got as far as the server): the next stop backs off from the start.
    pub fn handle_connected(&mut self) {
        self.errors = 0;
    }

    /// When the stopped loop starts again; `None` while running or waiting for the user.
    pub fn poll_timeout(&self) -> Option<Millis> {
        self.retry_at
    }

    /// Whether the stopped loop starts again now (and is counted as running from here).
    pub fn poll_start(&mut self, now: Millis) -> bool {
        match self.retry_at {
            Some(at) if now >= at => {
                self.retry_at = None;
                self.passing = false;
                true
            }
            _ => false,
        }
    }
}
