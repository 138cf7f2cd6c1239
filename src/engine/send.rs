//! Whether the composer's message may go now, and the one wording of each refusal: offline, no
//! agent endpoint, an attachment still being prepared. The chat store asks [`may_send`] with what
//! it sees; the session's own endpoint check ([`NO_ENDPOINT`]) says the same words. A refused
//! message stays in the composer. Must not import anything outside `crate::engine`.

/// What the session says when a request needs an endpoint and none is set.
pub const NO_ENDPOINT: &str =
    "No agent endpoint is set. Open Settings, pick a preset or enter your agent's URL, and save.";

/// Why the composer's message does not go now. Each says what to do; the message is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SendRefusal {
    #[error(
        "You are offline. Your message is kept in the composer; send it when you are back online."
    )]
    Offline,
    #[error("{NO_ENDPOINT} Your message is kept.")]
    NoEndpoint,
    #[error("An attachment is still being prepared; send again in a moment.")]
    StillAttaching,
}

/// What the composer sees when Send is pressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendState {
    /// The browser says it is online.
    pub online: bool,
    /// Settings name an agent endpoint.
    pub has_endpoint: bool,
    /// An attachment is still being read or resized.
    pub attaching: bool,
}

/// Whether the message may go: the first refusal that applies, in the order the user can fix them
/// (being offline first: nothing else can be checked meaningfully without the network).
pub fn may_send(state: SendState) -> Result<(), SendRefusal> {
    if !state.online {
        Err(SendRefusal::Offline)
    } else if !state.has_endpoint {
        Err(SendRefusal::NoEndpoint)
    } else if state.attaching {
        Err(SendRefusal::StillAttaching)
    } else {
        Ok(())
    }
}
