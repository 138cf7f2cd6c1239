//! The one stream pump every request of the session runs through (a chat turn, a memory update):
//! bytes from `transport` go through the protocol's decoder (`engine::decode`) into a [`Consumer`]
//! (the turn machine, or a memory reply collector), and the consumer's own deadline
//! (`poll_timeout`: a held save) is armed as a timer next to the transport's first-byte and idle
//! limits, so it fires on time even when no chunk comes.
//!
//! The pump invents nothing: every body ends in the decoder with `Done` or an `Error` (a body cut
//! short included; `tests/engine_decode.rs` checks it per protocol), and a transport failure reaches
//! the consumer as it came. Must not import `ui`.

use super::core::now;
use crate::engine::decode::{decoder_for, Decoder, StreamEvent};
use crate::engine::model::{Millis, Protocol};
use crate::engine::request::HttpRequest;
use crate::transport::{self, BodyStream, Read, Stopper, Timeouts, TransportError};

/// What a pump feeds: the engine's state machine for one request, through a thin adapter.
pub(crate) trait Consumer {
    /// A decoded event (the last one of a body is `Done` or `Error`).
    fn handle_event(&mut self, event: StreamEvent, now: Millis);
    /// The request failed on the wire (stopped, timed out, dropped, refused).
    fn handle_failure(&mut self, error: TransportError, now: Millis);
    /// When [`Consumer::handle_timeout`] is due, if ever.
    fn poll_timeout(&self) -> Option<Millis> {
        None
    }
    fn handle_timeout(&mut self, _now: Millis) {}
}

/// One response body in flight and its decoder.
pub(crate) struct Pump {
    body: Option<BodyStream>,
    decoder: Box<dyn Decoder>,
}

impl Pump {
    /// Sends `req` and waits for the response headers; a failure here is the caller's to map (a
    /// memory request tells a refused form from other failures).
    pub async fn open(
        req: &HttpRequest,
        stopper: &Stopper,
        protocol: Protocol,
    ) -> Result<Pump, TransportError> {
        let body = transport::open(req, stopper, Timeouts::default()).await?;
        Ok(Pump {
            body: Some(body),
            decoder: decoder_for(protocol),
        })
    }

    /// Waits for the next chunk, the end of the body, a failure, or the consumer's deadline, whichever
    /// comes first, and hands the consumer what it brought. Returns false once the body is over.
    pub async fn step(&mut self, c: &mut impl Consumer) -> bool {
        let Some(body) = self.body.as_mut() else {
            return false;
        };
        let wake_in = c
            .poll_timeout()
            .map(|d| (d - now()).clamp(0, i64::from(u32::MAX)) as u32);
        match body.read_within(wake_in).await {
            Ok(Read::Chunk(bytes)) => self.decoder.handle_bytes(&bytes),
            Ok(Read::End) => {
                self.body = None;
                self.decoder.handle_eof();
            }
            Ok(Read::Woke) => {}
            Err(e) => {
                self.body = None;
                c.handle_failure(e, now());
            }
        }
        let t = now();
        while let Some(event) = self.decoder.poll_event() {
            c.handle_event(event, t);
        }
        if c.poll_timeout().is_some_and(|d| t >= d) {
            c.handle_timeout(t);
        }
        self.body.is_some()
    }

    /// Steps until the body is over or `done` says the consumer needs nothing more.
    pub async fn run<C: Consumer>(&mut self, c: &mut C, done: impl Fn(&C) -> bool) {
        while !done(c) && self.step(c).await {}
    }
}
