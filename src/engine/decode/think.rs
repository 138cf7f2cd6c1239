//! `think`: the `<think>…</think>` form of reasoning, which servers that do not split it (Qwen3,
//! R1 distills behind a plain chat template) put at the very start of the reply's text. Sits between
//! a protocol's text and the [`super::Emitter`]'s events: while the reply's first text could still
//! be `<think>` (after optional whitespace) it is held; inside the block everything is reasoning
//! except a tail that could be the start of `</think>`; after it the whitespace opening the answer
//! is dropped and the rest is text. A reply that does not open with `<think>` is passed through
//! unchanged, and one whose block never closes is reasoning to its end ([`ThinkSplit::finish`]).
//! The result depends only on the concatenated text, never on how it was cut into deltas.
//! Must not import anything outside `crate::engine`.

const OPEN: &str = "<think>";
const CLOSE: &str = "</think>";

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Nothing but whitespace (or a prefix of `<think>`) has arrived yet.
    #[default]
    Start,
    /// Inside the block.
    Thinking,
    /// The block closed; the whitespace opening the answer is dropped.
    AfterThink,
    /// Everything is text from here.
    Text,
}

/// The split of one reply's text into reasoning and text.
#[derive(Debug, Default)]
pub(crate) struct ThinkSplit {
    state: State,
    held: String,
}

/// What one piece of text becomes: reasoning (first), then text. Either may be empty.
pub(crate) type Split = (String, String);

impl ThinkSplit {
    /// Text passes through untouched from now on.
    pub(crate) fn passing(&self) -> bool {
        self.state == State::Text
    }

    /// The next piece of the reply's text.
    pub(crate) fn push(&mut self, text: &str) -> Split {
        match self.state {
            State::Text => (String::new(), text.to_string()),
            State::AfterThink => (String::new(), self.after(text)),
            State::Thinking => {
                self.held.push_str(text);
                self.thinking()
            }
            State::Start => {
                self.held.push_str(text);
                let trimmed = self.held.trim_start();
                if let Some(rest) = trimmed.strip_prefix(OPEN) {
                    self.held = rest.to_string();
                    self.state = State::Thinking;
                    self.thinking()
                } else if OPEN.starts_with(trimmed) {
                    (String::new(), String::new())
                } else {
                    self.state = State::Text;
                    (String::new(), std::mem::take(&mut self.held))
                }
            }
        }
    }

    /// The reply ended: what is still held (a block that never closed is reasoning).
    pub(crate) fn finish(&mut self) -> Split {
        let held = std::mem::take(&mut self.held);
        let state = std::mem::replace(&mut self.state, State::Text);
        match state {
            State::Thinking => (held, String::new()),
            _ => (String::new(), held),
        }
    }

    /// Inside the block: give out what cannot be the start of `</think>`.
    fn thinking(&mut self) -> Split {
        if let Some(at) = self.held.find(CLOSE) {
            let rest = self.held.split_off(at);
            let reasoning = std::mem::take(&mut self.held);
            self.state = State::AfterThink;
            return (reasoning, self.after(&rest[CLOSE.len()..]));
        }
        // `CLOSE` is ASCII and opens with `<`, so a held tail starts on a char boundary.
        let keep = (1..CLOSE.len())
            .rev()
            .find(|&n| self.held.ends_with(&CLOSE[..n]))
            .unwrap_or(0);
        let tail = self.held.split_off(self.held.len() - keep);
        (std::mem::replace(&mut self.held, tail), String::new())
    }

    /// After the block: the answer starts at its first character that is not whitespace.
    fn after(&mut self, text: &str) -> String {
        let text = text.trim_start();
        if !text.is_empty() {
            self.state = State::Text;
        }
        text.to_string()
    }
}
