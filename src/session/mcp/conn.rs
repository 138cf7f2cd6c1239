//! The MCP connections' driver: one `engine::mcp::McpClient` per server the user added, each
//! `McpAction::Http` run with `fetch` (`transport::open_any`: any status, a streamed body, a
//! `Stopper` per exchange), its head, chunks and end fed back; the client's deadlines on a
//! `gloo-timers` timer; its tools, state and calls' results kept for the servers service and the
//! runner. What to send, when a request failed and how to say so are the client's; this moves
//! data. A client replaced (reconnect, removal) is closed first (its DELETE goes out) and its
//! exchanges never reach the new one (`gen`). Must not import `ui`.

use std::collections::BTreeMap;
use std::rc::Rc;
use std::task::{Poll, Waker};

use wasm_bindgen_futures::spawn_local;

use super::browser;
use crate::engine::failure::Failure;
use crate::engine::mcp::{origin_of, HttpMethod, McpAction, McpClient, McpConfig, McpHttp};
use crate::engine::request::HttpRequest;
use crate::engine::tools::ToolDef;
use crate::session::shared::held::Held;
use crate::session::shared::{now, Core};
use crate::store::{McpServer, Store, StoreError};
use crate::transport::{self, Read, Stopper, Timeouts, TransportError};

/// How long one MCP request may wait for its answer (the client's own deadline).
const REQUEST_MS: u64 = 30_000;
/// The transport's limits: none that matter (the client keeps the deadlines; the standing GET
/// stream may be quiet for hours).
const OPEN_ENDED: Timeouts = Timeouts {
    first_byte_ms: 86_400_000,
    idle_ms: 86_400_000,
};

/// Where a server's connection stands.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Status {
    /// Not asked for yet.
    Idle,
    Connecting,
    /// The handshake is done and its tools are listed.
    Connected,
    /// The client's failure: its line and its "How to fix".
    Failed(Failure),
}

/// One server: its saved record and its live connection.
pub(super) struct Server {
    pub saved: McpServer,
    pub status: Status,
    pub tools: Vec<ToolDef>,
    /// Why tools of the listing were skipped.
    pub skipped: Vec<String>,
    client: Option<McpClient>,
    /// Counts the clients made for this server: an exchange feeds only its own.
    gen: u64,
    stoppers: BTreeMap<(u64, u64), Stopper>,
    /// The armed timer: (its number, when).
    timer: Option<(u64, i64)>,
}

/// Everything the driver keeps between its awaits.
#[derive(Default)]
struct State {
    /// The servers were read from the store.
    loaded: bool,
    servers: Vec<Server>,
    /// The calls under way and, once done, their results (the text the model reads).
    calls: BTreeMap<String, Option<Result<String, String>>>,
    /// Futures waiting for a change.
    wakers: Vec<Waker>,
    /// Told of every change (Settings → Tools, while it is open).
    watcher: Option<Rc<dyn Fn()>>,
    timers: u64,
}

impl State {
    fn server(&mut self, id: &str) -> Option<&mut Server> {
        self.servers.iter_mut().find(|s| s.saved.id == id)
    }
}

/// The connections of this page: one, made on first use, in the core (`Core::mcp`).
pub(crate) struct Registry {
    pub(super) store: Store,
    state: Held<State>,
}

impl Registry {
    /// The page's registry over `core`.
    pub(crate) fn of(core: &Core) -> Rc<Registry> {
        let any = core
            .mcp
            .get_or_init(|| {
                Rc::new(Registry {
                    store: core.store.clone(),
                    state: Held::new(State::default()),
                })
            })
            .clone();
        any.downcast::<Registry>()
            .expect("Core::mcp holds the MCP registry only")
    }

    /// Reads the saved servers once.
    pub(super) async fn load(&self) -> Result<(), StoreError> {
        if self.state.with(|s| s.loaded) {
            return Ok(());
        }
        let saved = self.store.mcp_servers().await?;
        self.state.with(|s| {
            if !s.loaded {
                s.loaded = true;
                s.servers = saved.into_iter().map(server_of).collect();
            }
        });
        Ok(())
    }

    /// Runs `f` over the servers (read only what is needed; nothing is called back inside).
    pub(super) fn read<R>(&self, f: impl FnOnce(&[Server]) -> R) -> R {
        self.state.with(|s| f(&s.servers))
    }

    /// Changes server `id`'s record in memory (`f`), returning the new record.
    pub(super) fn edit(&self, id: &str, f: impl FnOnce(&mut McpServer)) -> Option<McpServer> {
        let out = self.state.with(|s| {
            let srv = s.server(id)?;
            f(&mut srv.saved);
            Some(srv.saved.clone())
        });
        self.changed();
        out
    }

    /// Adds a server (already saved).
    pub(super) fn insert(&self, saved: McpServer) {
        self.state.with(|s| s.servers.push(server_of(saved)));
        self.changed();
    }

    /// `f` is told of every change from now on (`None`: nobody).
    pub(super) fn watch(&self, f: Option<Rc<dyn Fn()>>) {
        self.state.with(|s| s.watcher = f);
    }

    /// Wakes the waiting futures and tells the watcher.
    fn changed(&self) {
        let (wakers, watcher) = self
            .state
            .with(|s| (std::mem::take(&mut s.wakers), s.watcher.clone()));
        wakers.into_iter().for_each(Waker::wake);
        if let Some(w) = watcher {
            w();
        }
    }

    /// Waits until `f` gives an answer, asked again after every change.
    async fn until<R>(&self, mut f: impl FnMut(&mut State) -> Option<R>) -> R {
        std::future::poll_fn(|cx| {
            self.state.with(|s| match f(s) {
                Some(r) => Poll::Ready(r),
                None => {
                    s.wakers.push(cx.waker().clone());
                    Poll::Pending
                }
            })
        })
        .await
    }
}

fn server_of(saved: McpServer) -> Server {
    Server {
        saved,
        status: Status::Idle,
        tools: Vec::new(),
        skipped: Vec::new(),
        client: None,
        gen: 0,
        stoppers: BTreeMap::new(),
        timer: None,
    }
}

/// The client's configuration for `saved`: the token only when the URL is still on the origin it
/// was typed for.
fn config_of(saved: &McpServer) -> McpConfig {
    let token = saved
        .token
        .clone()
        .filter(|_| saved.token_origin.is_some() && saved.token_origin == origin_of(&saved.url));
    McpConfig {
        server_id: saved.id.clone(),
        url: saved.url.clone(),
        page_origin: browser::page_origin(),
        token,
        client_version: env!("CARGO_PKG_VERSION").to_string(),
        timeout_ms: REQUEST_MS,
    }
}

/// Connects server `id` unless it is connected or connecting (`again`: closes what there is and
/// starts afresh).
pub(super) fn connect(reg: &Rc<Registry>, id: &str, again: bool) {
    let started = reg.state.with(|s| {
        let srv = s.server(id)?;
        let busy = matches!(srv.status, Status::Connecting | Status::Connected);
        if busy && !again {
            return Some(false);
        }
        if let Some(mut old) = srv.client.take() {
            old.close(now());
            srv.client = Some(old);
        }
        Some(true)
    });
    if started != Some(true) {
        return;
    }
    // The old client's last actions (its DELETE, its aborts) go out before it is replaced.
    pump(reg, id);
    reg.state.with(|s| {
        if let Some(srv) = s.server(id) {
            let mut c = McpClient::new(config_of(&srv.saved));
            c.connect(now());
            srv.client = Some(c);
            srv.gen += 1;
            srv.status = Status::Connecting;
            srv.tools.clear();
            srv.timer = None;
        }
    });
    pump(reg, id);
}

/// Closes server `id`'s connection and forgets the server.
pub(super) fn remove(reg: &Rc<Registry>, id: &str) {
    reg.state.with(|s| {
        if let Some(c) = s.server(id).and_then(|v| v.client.as_mut()) {
            c.close(now());
        }
    });
    pump(reg, id);
    reg.state.with(|s| s.servers.retain(|v| v.saved.id != id));
    reg.changed();
}

/// Starts call `call_id` of tool `name` on server `id` (connecting it first if need be).
pub(super) fn start_call(reg: &Rc<Registry>, id: &str, call_id: &str, name: &str, args: &str) {
    if reg.read(|v| {
        v.iter()
            .any(|s| s.saved.id == id && s.status == Status::Idle)
    }) {
        connect(reg, id, false);
    }
    let failed = reg.state.with(|s| {
        s.calls.insert(call_id.to_string(), None);
        let srv = s.server(id)?;
        if let Status::Failed(f) = &srv.status {
            return Some(f.text());
        }
        if let Some(c) = srv.client.as_mut() {
            c.call_tool(call_id, name, args, now());
        }
        None
    });
    let failed = failed.or_else(|| {
        (!reg.read(|v| v.iter().any(|s| s.saved.id == id)))
            .then(|| "This tool's MCP server was removed in Settings → Tools.".to_string())
    });
    if let Some(text) = failed {
        reg.state
            .with(|s| s.calls.insert(call_id.to_string(), Some(Err(text))));
    }
    pump(reg, id);
}

/// Stops call `call_id` wherever it runs (the client tells its server).
pub(super) fn cancel_call(reg: &Rc<Registry>, call_id: &str) {
    let ids: Vec<String> = reg.read(|v| v.iter().map(|s| s.saved.id.clone()).collect());
    for id in ids {
        reg.state.with(|s| {
            if let Some(c) = s.server(&id).and_then(|v| v.client.as_mut()) {
                c.cancel_call(call_id, now());
            }
        });
        pump(reg, &id);
    }
}

/// Waits until no server is connecting.
pub(super) async fn settled(reg: &Rc<Registry>) {
    reg.until(|s| (!s.servers.iter().any(|v| v.status == Status::Connecting)).then_some(()))
        .await
}

/// Waits for call `call_id`'s result and forgets the call.
pub(super) async fn call_result(reg: &Rc<Registry>, call_id: &str) -> Result<String, String> {
    reg.until(|s| match s.calls.get(call_id) {
        Some(Some(_)) => s.calls.remove(call_id).flatten(),
        Some(None) => None,
        None => Some(Err("The call was stopped.".to_string())),
    })
    .await
}

/// Executes what server `id`'s client asks, until it asks nothing; then arms its timer.
fn pump(reg: &Rc<Registry>, id: &str) {
    loop {
        let step = reg.state.with(|s| {
            let srv = s.server(id)?;
            let gen = srv.gen;
            srv.client.as_mut()?.poll_action().map(|a| (gen, a))
        });
        let Some((gen, action)) = step else { break };
        act(reg, id, gen, action);
    }
    arm_timer(reg, id);
    reg.changed();
}

/// One action of server `id`'s client of generation `gen`.
fn act(reg: &Rc<Registry>, id: &str, gen: u64, action: McpAction) {
    match action {
        McpAction::Http(h) => {
            let stopper = Stopper::new();
            reg.state.with(|s| {
                if let Some(srv) = s.server(id) {
                    srv.stoppers.insert((gen, h.exchange), stopper.clone());
                }
            });
            spawn_local(exchange(reg.clone(), id.to_string(), gen, h, stopper));
        }
        McpAction::Abort { exchange } => {
            let stopper = reg
                .state
                .with(|s| s.server(id)?.stoppers.remove(&(gen, exchange)));
            if let Some(st) = stopper {
                st.stop();
            }
        }
        McpAction::Tools { defs, skipped } => reg.state.with(|s| {
            if let Some(srv) = s.server(id) {
                srv.tools = defs;
                srv.skipped = skipped;
                srv.status = Status::Connected;
            }
        }),
        McpAction::CallDone { call_id, result } => {
            let text = result.map_err(|f| f.text()).and_then(|o| o.for_loop());
            reg.state.with(|s| {
                if let Some(slot) = s.calls.get_mut(&call_id) {
                    *slot = Some(text);
                }
            });
        }
        McpAction::Failed(f) => reg.state.with(|s| {
            if let Some(srv) = s.server(id).filter(|v| v.gen == gen) {
                srv.status = Status::Failed(f);
            }
        }),
        McpAction::Ready { .. } | McpAction::Closed => {}
    }
}

/// Arms server `id`'s timer for its client's next deadline, unless one is armed sooner.
fn arm_timer(reg: &Rc<Registry>, id: &str) {
    let armed = reg.state.with(|s| {
        s.timers += 1;
        let n = s.timers;
        let srv = s.server(id)?;
        let at = srv.client.as_ref()?.poll_timeout()?;
        if srv.timer.is_some_and(|(_, t)| t <= at) {
            return None;
        }
        srv.timer = Some((n, at));
        Some((n, at))
    });
    let Some((n, at)) = armed else { return };
    let (reg, id) = (reg.clone(), id.to_string());
    spawn_local(async move {
        let wait = (at - now()).clamp(0, i64::from(i32::MAX)) as u32;
        gloo_timers::future::TimeoutFuture::new(wait).await;
        let due = reg.state.with(|s| {
            let srv = s.server(&id)?;
            if srv.timer.map(|t| t.0) != Some(n) {
                return None;
            }
            srv.timer = None;
            srv.client.as_mut().map(|c| c.handle_timeout(now()))
        });
        if due.is_some() {
            pump(&reg, &id);
        }
    });
}

/// Feeds server `id`'s client of generation `gen` (`f`), then executes what it asks.
fn feed(reg: &Rc<Registry>, id: &str, gen: u64, f: impl FnOnce(&mut McpClient, i64)) {
    let fed = reg.state.with(|s| {
        let srv = s.server(id).filter(|v| v.gen == gen)?;
        srv.client.as_mut().map(|c| f(c, now()))
    });
    if fed.is_some() {
        pump(reg, id);
    }
}

/// One exchange: the request, its head, its body chunk by chunk, its end.
async fn exchange(reg: Rc<Registry>, id: String, gen: u64, h: McpHttp, stopper: Stopper) {
    let ex = h.exchange;
    let req = HttpRequest {
        method: match h.method {
            HttpMethod::Post => "POST",
            HttpMethod::Get => "GET",
            HttpMethod::Delete => "DELETE",
        }
        .into(),
        url: h.url,
        headers: h.headers,
        body: h.body.unwrap_or_default(),
    };
    let names = ["content-type", "mcp-session-id"];
    match transport::open_any(&req, &stopper, OPEN_ENDED, &names).await {
        Err(TransportError::Aborted) => {}
        Err(_) => feed(&reg, &id, gen, |c, now| c.handle_fetch_failed(ex, now)),
        Ok(answer) => {
            let status = answer.status;
            let ct = answer.headers[0].clone().unwrap_or_default();
            let sid = answer.headers[1].clone();
            feed(&reg, &id, gen, |c, now| {
                c.handle_head(ex, status, &ct, sid.as_deref(), now)
            });
            if let Some(mut body) = answer.body {
                loop {
                    // `read_within`, not `next_chunk`: the first screen's reader stays inlined.
                    match body.read_within(None).await {
                        Ok(Read::Chunk(b)) => {
                            feed(&reg, &id, gen, |c, now| c.handle_body(ex, &b, now))
                        }
                        Ok(Read::Woke) => {}
                        // The end, a broken body or an abort: the client is told below.
                        _ => break,
                    }
                }
            }
            if !stopper.is_stopped() {
                feed(&reg, &id, gen, |c, now| c.handle_end(ex, now));
            }
        }
    }
    reg.state.with(|s| {
        if let Some(srv) = s.server(&id) {
            srv.stoppers.remove(&(gen, ex));
        }
    });
}
