//! What each endpoint's server says about itself: its slots (`engine::slots`) and how many tokens
//! its context holds (`engine::context_window`). A server is asked (`GET
//! /props`) once per page and server (and key), in the background, after its first reply that
//! carried llama.cpp's `timings` (so other servers are never asked, and log no 404); no request
//! waits for the answer (the ones before it go without a slot). A server that did not answer at all (down, or no CORS
//! on `/props`) is asked again after `engine::slots::ASK_AGAIN_MS`; one that answered anything else
//! than llama.cpp's props is not asked again. A server that refused a prompt as longer than its
//! context, and said how long it may be, is held to that ([`Core::learn_window`]). Never stored: a
//! reload asks afresh (a server restarted with a larger context is then used in full). Must not
//! import `ui`.

use super::core::{now, Core, Known};
use crate::engine::context_window::fit;
use crate::engine::model::{Conversation, EndpointProfile, MemoryConfig};
use crate::engine::request::{props_request, HttpRequest};
use crate::engine::slots::{ask_again, parse_props, slot_for, LlamaServer, Purpose, SlotUse};
use crate::transport::{self, Stopper, Timeouts, TransportError};

/// The largest `/props` body read (it carries the chat template).
const PROPS_MAX_BYTES: usize = 1 << 20;
const PROPS_TIMEOUTS: Timeouts = Timeouts {
    first_byte_ms: 10_000,
    idle_ms: 10_000,
};

impl Core {
    /// How a request to `endpoint` for `purpose` uses its server's slots (`engine::slots`): `None`
    /// until the server is known to be llama.cpp's.
    pub(crate) fn slot_use(&self, endpoint: &EndpointProfile, purpose: Purpose) -> Option<SlotUse> {
        let (key, _) = props_of(endpoint)?;
        match self.servers.borrow().get(&key) {
            Some(Known::Answered(server)) => slot_for(*server, purpose),
            _ => None,
        }
    }

    /// How many tokens `endpoint`'s server holds in its context, when it said (at `/props`, or
    /// refusing a prompt): the smaller of the two.
    pub(crate) fn server_window(&self, endpoint: &EndpointProfile) -> Option<u32> {
        let refused = self.windows.borrow().get(&endpoint.key()).copied();
        let props = props_of(endpoint).and_then(|(key, _)| match self.servers.borrow().get(&key) {
            Some(Known::Answered(Some(server))) => server.n_ctx,
            _ => None,
        });
        refused.into_iter().chain(props).min()
    }

    /// `endpoint`'s server refused a prompt as longer than its context of `window` tokens.
    pub(crate) fn learn_window(&self, endpoint: &EndpointProfile, window: u32) {
        self.learn_window_of(&endpoint.key(), window)
    }

    /// [`Core::learn_window`], by the endpoint's key.
    pub(crate) fn learn_window_of(&self, endpoint_key: &str, window: u32) {
        let mut windows = self.windows.borrow_mut();
        let known = windows.entry(endpoint_key.to_string()).or_insert(window);
        *known = (*known).min(window);
    }

    /// The memory config of `conv`, fitted to what its chat server holds.
    pub(crate) fn config_for(&self, conv: &Conversation) -> MemoryConfig {
        let settings = self.settings.borrow();
        let config = conv.memory_overrides.apply(&settings.memory);
        let endpoint = settings.chat_endpoint_for(&conv.memory_overrides);
        drop(settings);
        match self.server_window(&endpoint) {
            Some(window) => fit(&config, window),
            None => config,
        }
    }

    /// A reply from `endpoint` carried llama.cpp's `timings`: its server is asked what it has,
    /// unless it was already (or did not answer a moment ago).
    pub(crate) fn heard_timings(&self, endpoint: &EndpointProfile) {
        let Some((key, req)) = props_of(endpoint) else {
            return;
        };
        match self.servers.borrow().get(&key) {
            None => {}
            Some(Known::Unreachable(at)) if ask_again(*at, now()) => {}
            Some(_) => return,
        }
        self.servers.borrow_mut().insert(key.clone(), Known::Asking);
        let servers = self.servers.clone();
        wasm_bindgen_futures::spawn_local(async move {
            let known = match ask(&req).await {
                Ok(server) => Known::Answered(server),
                Err(_) => Known::Unreachable(now()),
            };
            servers.borrow_mut().insert(key, known);
        });
    }
}

/// The key a server is known by (its `/props` URL and the headers sent there) and the request that
/// asks it; `None` where no `/props` is asked (`engine::request::props_request`).
fn props_of(endpoint: &EndpointProfile) -> Option<(String, HttpRequest)> {
    let req = props_request(endpoint)?.ok()?;
    Some((format!("{}\n{:?}", req.url, req.headers), req))
}

/// The server `req` reaches, when it is llama.cpp's (an HTTP error means it is not); `Err` when
/// nothing answered.
async fn ask(req: &HttpRequest) -> Result<Option<LlamaServer>, TransportError> {
    let stopper = Stopper::new();
    match transport::open(req, &stopper, PROPS_TIMEOUTS).await {
        Ok(mut body) => Ok(parse_props(&body.read_text(PROPS_MAX_BYTES).await?)),
        Err(TransportError::Http { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}
