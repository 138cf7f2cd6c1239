//! The bench's driver of `engine::mcp::McpClient` over real HTTP (`benches/mcp.rs`): it executes
//! each `McpAction::Http` on a thread of its own (HTTP/1.1 over a loopback socket, `Connection:
//! close`, the body streamed to the client chunk by chunk as it is read, chunked transfer coding
//! undone), aborts an exchange by shutting its socket, ticks `handle_timeout` at `poll_timeout`,
//! and reports the other actions to its caller. Every decision is the engine's; only the sockets,
//! the threads and the clock are the bench's. Plain `http://` only (the suite's servers and
//! server-everything listen on loopback).
#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::thread;
use std::time::{Duration, Instant};

use memoire::engine::mcp::{HttpMethod, McpAction, McpClient, McpConfig, McpHttp};

/// What an exchange's thread saw, and when.
#[derive(Debug)]
enum Seen {
    Head {
        status: u16,
        content_type: String,
        session: Option<String>,
    },
    Body(Vec<u8>),
    End,
    Failed,
}

struct Event {
    exchange: u64,
    at: Instant,
    seen: Seen,
}

/// An action the engine gave that is not the driver's to execute, with the time spent on the wire
/// by the exchange whose bytes produced it (from its request leaving to those bytes read).
pub struct Outcome {
    pub action: McpAction,
    pub wire: Option<Duration>,
    pub at: Instant,
}

pub struct Driver {
    pub client: McpClient,
    start: Instant,
    tx: Sender<Event>,
    rx: Receiver<Event>,
    sockets: HashMap<u64, TcpStream>,
    sent_at: HashMap<u64, Instant>,
}

impl Driver {
    pub fn new(url: &str, timeout_ms: u64) -> Driver {
        let (tx, rx) = channel();
        let client = McpClient::new(McpConfig {
            server_id: "bench".into(),
            url: url.into(),
            // The page is the server's own origin: nothing is hidden by CORS here.
            page_origin: memoire::engine::mcp::origin_of(url).unwrap_or_default(),
            token: None,
            client_version: env!("CARGO_PKG_VERSION").into(),
            timeout_ms,
        });
        Driver {
            client,
            start: Instant::now(),
            tx,
            rx,
            sockets: HashMap::new(),
            sent_at: HashMap::new(),
        }
    }

    pub fn now(&self) -> i64 {
        self.start.elapsed().as_millis() as i64
    }

    /// Runs until `want` accepts an outcome (returned with every outcome before it), or `limit`.
    pub fn until(
        &mut self,
        limit: Duration,
        mut want: impl FnMut(&McpAction) -> bool,
    ) -> Result<Vec<Outcome>, Vec<Outcome>> {
        let end = Instant::now() + limit;
        let mut got = Vec::new();
        let mut wire = None;
        loop {
            while let Some(a) = self.client.poll_action() {
                if let Some(action) = self.execute(a) {
                    let done = want(&action);
                    let at = Instant::now();
                    got.push(Outcome { action, wire, at });
                    if done {
                        return Ok(got);
                    }
                }
            }
            let now = Instant::now();
            if now >= end {
                return Err(got);
            }
            let tick = self
                .client
                .poll_timeout()
                .map(|t| Duration::from_millis((t - self.now()).max(0) as u64))
                .unwrap_or(end - now)
                .min(end - now);
            match self.rx.recv_timeout(tick) {
                Ok(ev) => wire = self.feed(ev),
                Err(RecvTimeoutError::Timeout) => {
                    let now = self.now();
                    self.client.handle_timeout(now);
                }
                Err(RecvTimeoutError::Disconnected) => return Err(got),
            }
        }
    }

    /// Gives an event to the client; the wire time of its exchange so far.
    fn feed(&mut self, ev: Event) -> Option<Duration> {
        let now = self.now();
        let ex = ev.exchange;
        let wire = self.sent_at.get(&ex).map(|s| ev.at.duration_since(*s));
        match ev.seen {
            Seen::Head {
                status,
                content_type,
                session,
            } => self
                .client
                .handle_head(ex, status, &content_type, session.as_deref(), now),
            Seen::Body(b) => self.client.handle_body(ex, &b, now),
            Seen::End => {
                self.sockets.remove(&ex);
                self.client.handle_end(ex, now);
            }
            Seen::Failed => {
                self.sockets.remove(&ex);
                self.client.handle_fetch_failed(ex, now);
            }
        }
        wire
    }

    fn execute(&mut self, a: McpAction) -> Option<McpAction> {
        match a {
            McpAction::Http(h) => {
                self.spawn(h);
                None
            }
            McpAction::Abort { exchange } => {
                if let Some(s) = self.sockets.remove(&exchange) {
                    let _ = s.shutdown(Shutdown::Both);
                }
                None
            }
            other => Some(other),
        }
    }

    fn spawn(&mut self, h: McpHttp) {
        let tx = self.tx.clone();
        let ex = h.exchange;
        let Some((host, port, path)) = split_url(&h.url) else {
            let _ = tx.send(Event {
                exchange: ex,
                at: Instant::now(),
                seen: Seen::Failed,
            });
            return;
        };
        // The wire's time starts here: the connection, the request, the server, the answer.
        self.sent_at.insert(ex, Instant::now());
        let sock = match TcpStream::connect((host.as_str(), port)) {
            Ok(s) => s,
            Err(_) => {
                let _ = tx.send(Event {
                    exchange: ex,
                    at: Instant::now(),
                    seen: Seen::Failed,
                });
                return;
            }
        };
        let _ = sock.set_nodelay(true);
        if let Ok(c) = sock.try_clone() {
            self.sockets.insert(ex, c);
        }
        thread::spawn(move || exchange(sock, &host, port, &path, &h, &tx));
    }
}

/// `http://host[:port]/path` → (host, port, path).
fn split_url(url: &str) -> Option<(String, u16, String)> {
    let rest = url.strip_prefix("http://")?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].to_string()),
        None => (rest, "/".to_string()),
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) => (h.to_string(), p.parse().ok()?),
        None => (authority.to_string(), 80),
    };
    Some((host.trim_matches(['[', ']']).to_string(), port, path))
}

fn method_name(m: HttpMethod) -> &'static str {
    match m {
        HttpMethod::Post => "POST",
        HttpMethod::Get => "GET",
        HttpMethod::Delete => "DELETE",
    }
}

/// One exchange on its own connection: the request, then the head and the body as read.
fn exchange(sock: TcpStream, host: &str, port: u16, path: &str, h: &McpHttp, tx: &Sender<Event>) {
    let send = |seen: Seen| {
        let _ = tx.send(Event {
            exchange: h.exchange,
            at: Instant::now(),
            seen,
        });
    };
    let mut req = format!(
        "{} {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n",
        method_name(h.method)
    );
    for (n, v) in &h.headers {
        req.push_str(&format!("{n}: {v}\r\n"));
    }
    let body = h.body.as_deref().unwrap_or("");
    if h.body.is_some() {
        req.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    req.push_str("\r\n");
    req.push_str(body);
    let mut w = &sock;
    if w.write_all(req.as_bytes()).is_err() {
        return send(Seen::Failed);
    }
    let mut r = BufReader::new(&sock);
    let Some(head) = read_head(&mut r) else {
        return send(Seen::Failed);
    };
    let chunked = head
        .header("transfer-encoding")
        .is_some_and(|v| v.contains("chunked"));
    let length = head
        .header("content-length")
        .and_then(|v| v.parse::<usize>().ok());
    send(Seen::Head {
        status: head.status,
        content_type: head.header("content-type").unwrap_or("").to_string(),
        session: head.header("mcp-session-id").map(str::to_string),
    });
    let mut body = |b: &[u8]| send(Seen::Body(b.to_vec()));
    if chunked {
        read_chunked(&mut r, &mut body);
    } else {
        read_plain(&mut r, length, &mut body);
    }
    send(Seen::End);
}

const BUF: usize = 16 * 1024;

struct Head {
    status: u16,
    headers: Vec<(String, String)>,
}

impl Head {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn read_head(r: &mut impl BufRead) -> Option<Head> {
    let mut line = String::new();
    r.read_line(&mut line).ok()?;
    let status = line.split_whitespace().nth(1)?.parse().ok()?;
    let mut headers = Vec::new();
    loop {
        line.clear();
        if r.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let l = line.trim_end();
        if l.is_empty() {
            return Some(Head { status, headers });
        }
        if let Some((n, v)) = l.split_once(':') {
            headers.push((n.trim().to_string(), v.trim().to_string()));
        }
    }
}

/// A body of `length` bytes, or to the connection's end; each read passed on as it came.
fn read_plain(r: &mut impl Read, length: Option<usize>, out: &mut impl FnMut(&[u8])) {
    let mut left = length.unwrap_or(usize::MAX);
    let mut buf = [0u8; BUF];
    while left > 0 {
        let n = match r.read(&mut buf[..left.min(BUF)]) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        out(&buf[..n]);
        left -= n;
    }
}

/// A chunked body; each read of a chunk's data passed on as it came.
fn read_chunked(r: &mut impl BufRead, out: &mut impl FnMut(&[u8])) {
    let mut line = String::new();
    loop {
        line.clear();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let size = line.trim().split(';').next().unwrap_or("");
        let Ok(size) = usize::from_str_radix(size, 16) else {
            return;
        };
        if size == 0 {
            return;
        }
        let mut left = size;
        let mut buf = [0u8; BUF];
        while left > 0 {
            let n = match r.read(&mut buf[..left.min(BUF)]) {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            out(&buf[..n]);
            left -= n;
        }
        line.clear();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
    }
}
