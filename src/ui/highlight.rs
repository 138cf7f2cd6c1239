//! Syntax highlighting in the chat pane: the code blocks of a finished reply get the spans
//! `engine::highlight` finds, built with the DOM API as text nodes and `<span class="hl-…">`
//! elements (never markup: model output is untrusted), in the browser's idle time after the text is
//! shown (`requestIdleCallback`, a timer where there is none), one block at a time while the idle
//! period lasts, so a page of code never holds the main thread. The text is unchanged, so Copy
//! still copies the raw code. The highlighting itself (`drain`, `paint` and the engine's lexers) is
//! behind split point `highlight`, a wasm chunk fetched when the first code block waits for it
//! (scripts/build-wasm.sh); when it cannot be fetched the code stays plain, and the next block
//! tries again. Must not import `crate::store` or `crate::transport`.

use crate::engine::highlight::{highlight, Kind, Lang};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use wasm_split_helpers::SplitLoaderError;

/// The code blocks still to highlight: those that name a language and were not looked at yet.
const PENDING: &str = "pre > code[class^=\"language-\"]:not([data-hl])";

thread_local! {
    /// Elements (a message's content) whose code blocks wait for idle time.
    static QUEUE: RefCell<VecDeque<web_sys::Element>> = const { RefCell::new(VecDeque::new()) };
    static SCHEDULED: Cell<bool> = const { Cell::new(false) };
}

/// Highlights the code blocks under `root` once the browser is idle. Which blocks is read then, so
/// a call made before `root`'s markup is replaced still finds the new blocks.
pub fn highlight_later(root: web_sys::Element) {
    QUEUE.with(|q| {
        let mut q = q.borrow_mut();
        if !q.contains(&root) {
            q.push_back(root);
        }
    });
    schedule();
}

fn schedule() {
    if SCHEDULED.with(|s| s.replace(true)) {
        return;
    }
    // Highlighted within a second even on a page that is never idle.
    let scheduled = crate::ui::behaviour::when_idle(
        |deadline| {
            wasm_bindgen_futures::spawn_local(async move {
                // Cosmetic: code the chunk could not highlight stays plain (the next block asks again).
                let done = drain_split(deadline).await;
                SCHEDULED.with(|s| s.set(false));
                match done {
                    Ok(()) if QUEUE.with(|q| !q.borrow().is_empty()) => schedule(),
                    Ok(()) => {}
                    Err(e) => {
                        QUEUE.with(|q| q.borrow_mut().clear());
                        web_sys::console::warn_1(&format!("memoire: code stays plain: {e}").into());
                    }
                }
            })
        },
        1000,
        50,
    );
    if !scheduled {
        SCHEDULED.with(|s| s.set(false));
    }
}

/// Split point `highlight`: [`drain`] and what only it reaches (the engine's lexers).
#[cfg_attr(feature = "split", wasm_split_helpers::wasm_split(highlight, fallible, return_wrapper(let done = _; { done.await } -> Result<(), SplitLoaderError>)))]
fn drain_split(
    deadline: Option<web_sys::IdleDeadline>,
) -> std::future::Ready<Result<(), SplitLoaderError>> {
    drain(deadline);
    std::future::ready(Ok(()))
}

/// Highlights queued blocks while the idle period lasts (at least one); the caller asks for another
/// idle period while some are left.
fn drain(deadline: Option<web_sys::IdleDeadline>) {
    crate::ui::behaviour::drain_idle_queue(&QUEUE, PENDING, deadline, paint);
}

/// Replaces a code block's text with its highlighted spans (the same text), and marks it looked at.
fn paint(code: &web_sys::Element) {
    let name = code.class_name();
    let lang = name.strip_prefix("language-").and_then(Lang::from_name);
    let _ = code.set_attribute("data-hl", if lang.is_some() { "done" } else { "none" });
    let (Some(lang), Some(doc)) = (lang, code.owner_document()) else {
        return;
    };
    let text = code.text_content().unwrap_or_default();
    let spans = highlight(lang, &text);
    if spans.iter().all(|s| s.kind == Kind::Plain) {
        return;
    }
    let fragment = doc.create_document_fragment();
    for s in spans {
        let Some(part) = text.get(s.start..s.end) else {
            return;
        };
        let added = if s.kind == Kind::Plain {
            fragment.append_with_str_1(part)
        } else {
            doc.create_element("span").and_then(|span| {
                span.set_class_name(s.kind.class());
                span.set_text_content(Some(part));
                fragment.append_with_node_1(&span)
            })
        };
        if added.is_err() {
            return;
        }
    }
    code.replace_children_with_node_1(&fragment);
}
