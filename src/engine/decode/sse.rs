//! The shared byte layer of the decoders: an incremental line splitter (LF, CRLF and CR endings,
//! whatever the chunk boundaries; also used for Ollama's NDJSON) and an incremental Server-Sent
//! Events parser following the WHATWG `text/event-stream` rules (`event:`/`data:`/`id:`/`retry:`
//! fields, one optional space after the colon, `:` comments, multi-line `data:`, a blank line
//! dispatches, a leading BOM is dropped; the last `id` and `retry` are kept for a reconnection).
//!
//! Bytes are kept until a line is complete, so a multi-byte UTF-8 character split across chunks is
//! whole when the line is decoded (UTF-8 continuation bytes are never CR or LF). Lines that arrive
//! whole inside one chunk are parsed in place, without copying.
//!
//! Deviations from the browser `EventSource`, on purpose:
//! - a line with an unknown field name (e.g. `<html>` or `{"error": ...}`) means the body is not an
//!   event stream at all: the parser switches to "junk" mode and keeps a capped sample of the body so
//!   the decoder can report what the server actually said;
//! - an `error: {json}` line (llama.cpp's server reports failures that way) is dispatched at once as
//!   an `error` event;
//! - at the end of the body, a pending event is still dispatched (a server that omits the last blank
//!   line is not punished); the protocol layer decides whether the stream was complete.
//!
//! Written by hand rather than with an SSE crate: the crates found either own the transport or
//! allocate per line, and this must stay sans-IO and fast (see `benches/decode.rs`).
//! Must not import anything outside `crate::engine`.

/// Longest line (or event `data`) the parser buffers before giving up.
pub(crate) const MAX_LINE_BYTES: usize = 8 << 20;
/// How much of a non-event-stream body is kept to explain it.
const JUNK_SAMPLE_BYTES: usize = 4096;
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Why a line could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LineError {
    InvalidUtf8,
    TooLong,
}

impl LineError {
    pub(crate) fn message(self) -> String {
        match self {
            LineError::InvalidUtf8 => {
                "The endpoint sent bytes that are not valid UTF-8 text.".into()
            }
            LineError::TooLong => format!(
                "The endpoint sent a line longer than {} MiB; the stream was abandoned.",
                MAX_LINE_BYTES >> 20
            ),
        }
    }
}

/// Splits a byte stream into lines ended by LF, CRLF or CR.
#[derive(Debug, Default)]
pub(crate) struct LineSplitter {
    /// The start of a line whose end has not arrived yet.
    buf: Vec<u8>,
    /// The last chunk ended in CR: a LF opening the next chunk belongs to that line ending.
    skip_lf: bool,
    /// No line has been produced yet (a BOM may open it).
    started: bool,
}

fn decode_line<'a>(line: &'a [u8], started: &mut bool) -> Result<&'a str, LineError> {
    let line = if *started {
        line
    } else {
        *started = true;
        line.strip_prefix(BOM).unwrap_or(line)
    };
    std::str::from_utf8(line).map_err(|_| LineError::InvalidUtf8)
}

impl LineSplitter {
    /// Calls `on_line` with every line completed by `bytes`, without its terminator.
    /// Stops early when `on_line` returns false.
    pub(crate) fn feed<F>(&mut self, mut bytes: &[u8], on_line: &mut F)
    where
        F: FnMut(Result<&str, LineError>) -> bool,
    {
        if bytes.is_empty() {
            return;
        }
        if self.skip_lf {
            self.skip_lf = false;
            if bytes[0] == b'\n' {
                bytes = &bytes[1..];
            }
        }
        while let Some(pos) = find_eol(bytes) {
            let mut next = pos + 1;
            if bytes[pos] == b'\r' {
                match bytes.get(next) {
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                    None => self.skip_lf = true,
                }
            }
            let go_on = if self.buf.is_empty() {
                on_line(decode_line(&bytes[..pos], &mut self.started))
            } else if self.buf.len() + pos > MAX_LINE_BYTES {
                on_line(Err(LineError::TooLong))
            } else {
                let mut line = std::mem::take(&mut self.buf);
                line.extend_from_slice(&bytes[..pos]);
                let go_on = on_line(decode_line(&line, &mut self.started));
                line.clear();
                self.buf = line;
                go_on
            };
            bytes = &bytes[next..];
            if !go_on {
                return;
            }
        }
        if self.buf.len() + bytes.len() > MAX_LINE_BYTES {
            self.buf = Vec::new();
            on_line(Err(LineError::TooLong));
            return;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The body ended: hands over an unterminated last line, if any.
    pub(crate) fn finish<F>(&mut self, on_line: &mut F)
    where
        F: FnMut(Result<&str, LineError>) -> bool,
    {
        if !self.buf.is_empty() {
            let line = std::mem::take(&mut self.buf);
            // A body that ends inside a multi-byte character was cut off: keep the whole part.
            let line = match std::str::from_utf8(&line) {
                Err(e) if e.error_len().is_none() => &line[..e.valid_up_to()],
                _ => &line[..],
            };
            on_line(decode_line(line, &mut self.started));
        }
    }
}

/// Position of the first CR or LF, eight bytes per step (SWAR: portable, wasm included).
fn find_eol(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    const LF: u64 = ONES * b'\n' as u64;
    const CR: u64 = ONES * b'\r' as u64;
    let words = bytes.chunks_exact(8);
    let tail = words.remainder();
    for (k, word) in words.enumerate() {
        let mut w = [0u8; 8];
        w.copy_from_slice(word);
        let w = u64::from_le_bytes(w);
        let (a, b) = (w ^ LF, w ^ CR);
        // The lowest flagged byte is the first zero byte of `a` or `b` (exact for the lowest one).
        let found = ((a.wrapping_sub(ONES) & !a) | (b.wrapping_sub(ONES) & !b)) & HIGH;
        if found != 0 {
            return Some(k * 8 + (found.trailing_zeros() / 8) as usize);
        }
    }
    let start = bytes.len() - tail.len();
    tail.iter()
        .position(|&b| b == b'\n' || b == b'\r')
        .map(|p| start + p)
}

/// One dispatched server-sent event. `event` is `message` when the stream named none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SseEvent<'a> {
    pub event: &'a str,
    pub data: &'a str,
}

#[derive(Debug, Default)]
struct SseState {
    event: String,
    data: String,
    has_data: bool,
    junk: Option<String>,
    /// The last `id:` field seen (the stream's last event id, for `Last-Event-ID`).
    last_id: Option<String>,
    /// The last valid `retry:` field, in milliseconds.
    retry_ms: Option<u64>,
}

impl SseState {
    /// Handles one line; returns false to stop.
    fn on_line<F>(&mut self, line: Result<&str, LineError>, emit: &mut F) -> bool
    where
        F: FnMut(Result<SseEvent<'_>, LineError>) -> bool,
    {
        let line = match line {
            Ok(line) => line,
            Err(e) => return emit(Err(e)),
        };
        if let Some(junk) = &mut self.junk {
            push_capped(junk, line);
            return true;
        }
        if line.is_empty() {
            return self.dispatch(emit);
        }
        if line.starts_with(':') {
            return true;
        }
        let (field, value) = match line.find(':') {
            Some(i) => {
                let value = &line[i + 1..];
                (&line[..i], value.strip_prefix(' ').unwrap_or(value))
            }
            None => (line, ""),
        };
        match field {
            "data" => {
                if self.data.len() + value.len() > MAX_LINE_BYTES {
                    return emit(Err(LineError::TooLong));
                }
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => {
                self.event.clear();
                self.event.push_str(value);
            }
            // An id holding NUL is ignored (WHATWG).
            "id" if !value.contains('\0') => self.last_id = Some(value.to_string()),
            "retry" => {
                if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
                    self.retry_ms = value.parse().ok();
                }
            }
            "id" => {}
            // llama.cpp's server reports a failure mid-stream as an `error: {json}` line.
            "error" => {
                return emit(Ok(SseEvent {
                    event: "error",
                    data: value,
                }))
            }
            _ => {
                let mut junk = String::new();
                push_capped(&mut junk, line);
                self.junk = Some(junk);
            }
        }
        true
    }

    fn dispatch<F>(&mut self, emit: &mut F) -> bool
    where
        F: FnMut(Result<SseEvent<'_>, LineError>) -> bool,
    {
        if !self.has_data {
            self.event.clear();
            return true;
        }
        let event = if self.event.is_empty() {
            "message"
        } else {
            self.event.as_str()
        };
        let go_on = emit(Ok(SseEvent {
            event,
            data: &self.data,
        }));
        self.event.clear();
        self.data.clear();
        self.has_data = false;
        go_on
    }
}

fn is_field_name_prefix(line: &str) -> bool {
    !line.is_empty()
        && ["data", "event", "id", "retry"]
            .iter()
            .any(|field| field.starts_with(line))
}

fn push_capped(junk: &mut String, line: &str) {
    if junk.len() >= JUNK_SAMPLE_BYTES {
        return;
    }
    if !junk.is_empty() {
        junk.push('\n');
    }
    let room = JUNK_SAMPLE_BYTES.saturating_sub(junk.len());
    let mut end = line.len().min(room);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    junk.push_str(&line[..end]);
}

/// Incremental `text/event-stream` parser.
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    lines: LineSplitter,
    state: SseState,
}

impl SseParser {
    /// Feeds bytes; `emit` gets every dispatched event (or a line error) and returns false to stop.
    pub(crate) fn feed<F>(&mut self, bytes: &[u8], emit: &mut F)
    where
        F: FnMut(Result<SseEvent<'_>, LineError>) -> bool,
    {
        let state = &mut self.state;
        self.lines
            .feed(bytes, &mut |line| state.on_line(line, &mut *emit));
    }

    /// The body ended: handles an unterminated last line and dispatches a pending event.
    pub(crate) fn finish<F>(&mut self, emit: &mut F)
    where
        F: FnMut(Result<SseEvent<'_>, LineError>) -> bool,
    {
        let state = &mut self.state;
        let mut go_on = true;
        self.lines.finish(&mut |line| {
            // A body cut inside a field name (`dat`) is a cut-off stream, not a foreign body.
            if let Ok(line) = line {
                if state.junk.is_none() && is_field_name_prefix(line) {
                    return true;
                }
            }
            go_on = state.on_line(line, &mut *emit);
            go_on
        });
        if go_on && state.junk.is_none() {
            state.dispatch(emit);
        }
    }

    /// The last event id the stream gave (`id:`), which a reconnection sends as `Last-Event-ID`.
    pub(crate) fn last_id(&self) -> Option<&str> {
        self.state.last_id.as_deref()
    }

    /// The last reconnection delay the stream asked for (`retry:`), in milliseconds.
    pub(crate) fn retry_ms(&self) -> Option<u64> {
        self.state.retry_ms
    }

    /// A sample of the body when it turned out not to be an event stream.
    pub(crate) fn junk(&self) -> Option<&str> {
        self.state.junk.as_deref()
    }
}
