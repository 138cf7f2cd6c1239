//! Collecting a memory update's reply from the decoder's events: the text deltas, or, for the forced
//! tool form (anthropic), the tool's streamed arguments (`input_json_delta`), which are the update's
//! JSON object. Sans-IO: events in ([`ReplyCollector::handle_event`]), the whole reply text or the
//! stream's error out (a body that ends early ends in the decoder's cut-off error).
//! Must not import anything outside `crate::engine`.

use super::form::MemoryForm;
use crate::engine::decode::{StreamError, StreamEvent};
use crate::engine::request::OutputForm;

/// The longest reply collected; past it the reply is cut (the parser refuses it as too large).
pub const MAX_COLLECT_BYTES: usize = super::parse::MAX_REPLY_BYTES + 1;

/// What one memory request's stream has given so far.
#[derive(Debug, Clone)]
pub struct ReplyCollector {
    form: MemoryForm,
    text: String,
    tool_arguments: String,
    /// The stream ended with `Done` but no finish reason: cut short by the server (llama-cpp-python
    /// ends a running stream with `[DONE]` alone when another request waits).
    cut: bool,
}

impl ReplyCollector {
    /// A collector for a request sent in `form`.
    pub fn new(form: MemoryForm) -> ReplyCollector {
        ReplyCollector {
            form,
            text: String::new(),
            tool_arguments: String::new(),
            cut: false,
        }
    }

    /// Feeds one event. `Some` when the stream is over: the reply text, or the stream's error.
    pub fn handle_event(&mut self, event: StreamEvent) -> Option<Result<String, StreamError>> {
        match event {
            StreamEvent::TextDelta(t) => push_capped(&mut self.text, &t),
            StreamEvent::ToolCallDelta { arguments, .. } => {
                push_capped(&mut self.tool_arguments, &arguments)
            }
            StreamEvent::Done { finish_reason } => {
                self.cut = finish_reason.is_none();
                return Some(Ok(self.reply()));
            }
            StreamEvent::Error(e) => return Some(Err(e)),
            _ => {}
        }
        None
    }

    /// Whether the stream ended without saying why it finished (see the field). Only a sign: some
    /// servers give no reason on a whole reply, so the session reads it only when a chat turn came
    /// while the update ran (`schedule::judge`).
    pub fn was_cut(&self) -> bool {
        self.cut
    }

    /// The text received so far (for the memory pane when the stream failed).
    pub fn partial(&self) -> String {
        self.reply()
    }

    fn reply(&self) -> String {
        let tool_first = self.form == MemoryForm::Constrained(OutputForm::ForcedTool);
        let (first, second) = if tool_first {
            (&self.tool_arguments, &self.text)
        } else {
            (&self.text, &self.tool_arguments)
        };
        if first.trim().is_empty() {
            second.clone()
        } else {
            first.clone()
        }
    }
}

fn push_capped(buf: &mut String, s: &str) {
    if buf.len() < MAX_COLLECT_BYTES {
        buf.push_str(s);
    }
}
