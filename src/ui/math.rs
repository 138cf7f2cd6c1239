//! Math in the chat pane: the formulas of a finished reply, which the markdown shows as code
//! (`code.math-tex` holding the TeX), become MathML once the browser is idle after the text is
//! shown, a formula at a time while the idle period lasts. The conversion (`engine::math`: the
//! crate and the MathML allow-list writer) is behind split point `math`, a wasm chunk fetched when
//! the first formula waits for it (scripts/build-wasm.sh); when it cannot be fetched the formulas
//! stay code and the next reply tries again. A formula that does not convert stays code, with the
//! reason as its tooltip. Each formula becomes `span.math[data-tex]` holding the allow-listed
//! `<math>` (whose `<annotation>` holds the TeX); [`copy_with_tex`] makes a selection's formulas
//! copy as their TeX. Must not import `crate::store` or `crate::transport`.

use crate::engine::math::{to_mathml, Display};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use wasm_bindgen::JsCast;
use wasm_split_helpers::SplitLoaderError;

/// The formulas still to convert.
const PENDING: &str = "code.math-tex:not([data-math-done])";

thread_local! {
    /// Elements (a message's content) whose formulas wait for idle time.
    static QUEUE: RefCell<VecDeque<web_sys::Element>> = const { RefCell::new(VecDeque::new()) };
    static SCHEDULED: Cell<bool> = const { Cell::new(false) };
}

/// Converts the formulas under `root` once the browser is idle. Which formulas is read then, so a
/// call made before `root`'s markup is replaced still finds the new ones; a reply without any
/// fetches nothing.
pub fn typeset_later(root: web_sys::Element) {
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
    let scheduled = crate::ui::behaviour::when_idle(
        |deadline| {
            // Replies without a formula leave the queue here, before the chunk is asked for.
            QUEUE.with(|q| {
                q.borrow_mut().retain(|root| {
                    root.is_connected() && root.query_selector(PENDING).ok().flatten().is_some()
                })
            });
            if QUEUE.with(|q| q.borrow().is_empty()) {
                SCHEDULED.with(|s| s.set(false));
                return;
            }
            wasm_bindgen_futures::spawn_local(async move {
                let done = drain_split(deadline).await;
                SCHEDULED.with(|s| s.set(false));
                match done {
                    Ok(()) if QUEUE.with(|q| !q.borrow().is_empty()) => schedule(),
                    Ok(()) => {}
                    Err(e) => {
                        QUEUE.with(|q| q.borrow_mut().clear());
                        web_sys::console::warn_1(&format!("memoire: math stays code: {e}").into());
                    }
                }
            })
        },
        500,
        20,
    );
    if !scheduled {
        SCHEDULED.with(|s| s.set(false));
    }
}

/// Split point `math`: [`drain`] and what only it reaches (the TeX converter, the allow-list).
#[cfg_attr(feature = "split", wasm_split_helpers::wasm_split(math, fallible, return_wrapper(let done = _; { done.await } -> Result<(), SplitLoaderError>)))]
fn drain_split(
    deadline: Option<web_sys::IdleDeadline>,
) -> std::future::Ready<Result<(), SplitLoaderError>> {
    drain(deadline);
    std::future::ready(Ok(()))
}

/// Converts queued formulas while the idle period lasts (at least one).
fn drain(deadline: Option<web_sys::IdleDeadline>) {
    crate::ui::behaviour::drain_idle_queue(&QUEUE, PENDING, deadline, typeset);
}

/// Replaces one formula's code with its MathML, or marks it as code for good (with the reason).
fn typeset(code: &web_sys::Element) {
    let tex = code.text_content().unwrap_or_default();
    let block = code.get_attribute("data-math").as_deref() == Some("block");
    let display = if block {
        Display::Block
    } else {
        Display::Inline
    };
    let _ = code.set_attribute("data-math-done", "code");
    let mathml = match to_mathml(&tex, display) {
        Ok(m) => m,
        Err(e) => {
            let _ = code.set_attribute("title", &e.to_string());
            return;
        }
    };
    let Some(span) = code
        .owner_document()
        .and_then(|d| d.create_element("span").ok())
    else {
        return;
    };
    span.set_class_name("math");
    let _ = span.set_attribute("data-math", if block { "block" } else { "inline" });
    let delimited = if block {
        format!("$${}$$", tex.trim())
    } else {
        format!("${}$", tex.trim())
    };
    let _ = span.set_attribute("data-tex", &delimited);
    // Allow-listed MathML (engine::markdown::mathml), as the markdown itself is set.
    span.set_inner_html(&mathml);
    let _ = code.replace_with_with_node_1(&span);
}

/// The message list's `copy`: when the selection holds formulas (or lies inside one), the plain
/// text copied has each formula's TeX, delimited as the model wrote it (`$…$`, `$$…$$`), where the
/// browser would copy MathML's characters; otherwise the browser copies as it would.
pub fn copy_with_tex(ev: &web_sys::Event) {
    let Some(ev) = ev.dyn_ref::<web_sys::ClipboardEvent>() else {
        return;
    };
    let Some(text) = selection_with_tex() else {
        return;
    };
    if let Some(data) = ev.clipboard_data() {
        if data.set_data("text/plain", &text).is_ok() {
            ev.prevent_default();
        }
    }
}

/// The selection's text with its formulas as TeX, or `None` when it holds no formula.
fn selection_with_tex() -> Option<String> {
    let selection = web_sys::window()?.get_selection().ok()??;
    if selection.range_count() == 0 || selection.is_collapsed() {
        return None;
    }
    let range = selection.get_range_at(0).ok()?;
    let common = range.common_ancestor_container().ok()?;
    let element = match common.dyn_ref::<web_sys::Element>() {
        Some(e) => Some(e.clone()),
        None => common.parent_element(),
    };
    if let Some(formula) = element.and_then(|e| e.closest("span.math").ok().flatten()) {
        return formula.get_attribute("data-tex");
    }
    let fragment = range.clone_contents().ok()?;
    let formulas = fragment.query_selector_all("span.math").ok()?;
    if formulas.length() == 0 {
        return None;
    }
    for i in 0..formulas.length() {
        let Some(formula) = formulas
            .item(i)
            .and_then(|n| n.dyn_into::<web_sys::Element>().ok())
        else {
            continue;
        };
        let tex = formula.get_attribute("data-tex").unwrap_or_default();
        let _ = formula.replace_with_with_str_1(&tex);
    }
    fragment.text_content()
}
