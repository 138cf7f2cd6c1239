//! Reusable browser behaviours in the `use_x` / `use_x_with_options` shape of leptos-use: each is
//! called in a component, keeps what it needs in that component's owner, and removes its timers and
//! listeners when the owner goes (`on_cleanup`). Built on Leptos's own helpers
//! (`set_timeout_with_handle`, `window_event_listener`). Holds no app state and makes no decision:
//! the follow rule is `engine::follow`, the roving focus `engine::keys`. Also `focus_testid`, the one
//! way views move focus to an element named by its `data-testid`, and `in_text_field`. Must not import `crate::store`, `crate::transport` or
//! `session`, nor any store.

use crate::engine::follow::Follow;
use crate::engine::keys::roving_step;
use crate::ui::time::now_ms;
use leptos::html;
use leptos::prelude::*;
use std::time::Duration;
use wasm_bindgen::JsCast;

/// Calls `f` once `ms` milliseconds have passed without another call of the returned function.
/// A pending call is dropped when the owner goes.
pub fn use_debounce_fn(f: impl Fn() + Clone + 'static, ms: u64) -> impl Fn() + Clone + 'static {
    let pending = StoredValue::new(None::<TimeoutHandle>);
    on_cleanup(move || {
        if let Some(h) = pending.try_get_value().flatten() {
            h.clear();
        }
    });
    move || {
        if let Some(h) = pending.get_value() {
            h.clear();
        }
        let f = f.clone();
        let h = set_timeout_with_handle(
            move || {
                pending.try_set_value(None);
                f()
            },
            Duration::from_millis(ms),
        )
        .ok();
        pending.set_value(h);
    }
}

/// Calls `f` with the idle period's deadline once the page is idle (`requestIdleCallback`), and within
/// `timeout_ms` even on a page that is never idle; where the browser has no idle callbacks (Safari),
/// after `fallback_ms` with no deadline. False when neither could be scheduled.
pub fn when_idle(
    f: impl FnOnce(Option<web_sys::IdleDeadline>) + 'static,
    timeout_ms: u32,
    fallback_ms: i32,
) -> bool {
    let Some(window) = web_sys::window() else {
        return false;
    };
    let run =
        wasm_bindgen::closure::Closure::once_into_js(move |deadline: wasm_bindgen::JsValue| {
            f(deadline.dyn_into::<web_sys::IdleDeadline>().ok())
        });
    if js_sys::Reflect::has(&window, &"requestIdleCallback".into()).unwrap_or(false) {
        let options = web_sys::IdleRequestOptions::new();
        options.set_timeout(timeout_ms);
        window
            .request_idle_callback_with_options(run.unchecked_ref(), &options)
            .is_ok()
    } else {
        window
            .set_timeout_with_callback_and_timeout_and_arguments_0(run.unchecked_ref(), fallback_ms)
            .is_ok()
    }
}

/// Options of [`use_clipboard_with_options`].
#[derive(Clone, Copy)]
pub struct UseClipboardOptions {
    /// How long `copied` (or `failed`) stays true after a copy.
    pub reset_after_ms: u64,
}

impl Default for UseClipboardOptions {
    fn default() -> Self {
        UseClipboardOptions {
            reset_after_ms: 1500,
        }
    }
}

/// What [`use_clipboard`] returns.
#[derive(Clone, Copy)]
pub struct UseClipboardReturn {
    /// True for a moment after a successful copy.
    pub copied: Signal<bool>,
    /// True for a moment after a copy the browser refused.
    pub failed: Signal<bool>,
    outcome: RwSignal<Option<bool>>,
    reset: StoredValue<Option<TimeoutHandle>>,
    reset_after_ms: u64,
}

impl UseClipboardReturn {
    /// Writes `text` to the clipboard.
    pub fn copy(&self, text: &str) {
        let Some(w) = web_sys::window() else { return };
        let done = w.navigator().clipboard().write_text(text);
        let this = *self;
        wasm_bindgen_futures::spawn_local(async move {
            let ok = wasm_bindgen_futures::JsFuture::from(done).await.is_ok();
            if this.outcome.try_set(Some(ok)).is_some() {
                return; // the owner went meanwhile
            }
            if let Some(h) = this.reset.try_get_value().flatten() {
                h.clear();
            }
            let outcome = this.outcome;
            let h = set_timeout_with_handle(
                move || {
                    outcome.try_set(None);
                },
                Duration::from_millis(this.reset_after_ms),
            )
            .ok();
            this.reset.try_set_value(h);
        });
    }
}

/// Copies text, with `copied` / `failed` signals that reset after 1.5 s.
pub fn use_clipboard() -> UseClipboardReturn {
    use_clipboard_with_options(UseClipboardOptions::default())
}

/// [`use_clipboard`] with its reset delay chosen.
pub fn use_clipboard_with_options(options: UseClipboardOptions) -> UseClipboardReturn {
    let outcome = RwSignal::new(None::<bool>);
    let reset = StoredValue::new(None::<TimeoutHandle>);
    on_cleanup(move || {
        if let Some(h) = reset.try_get_value().flatten() {
            h.clear();
        }
    });
    UseClipboardReturn {
        copied: Signal::derive(move || outcome.get() == Some(true)),
        failed: Signal::derive(move || outcome.get() == Some(false)),
        outcome,
        reset,
        reset_after_ms: options.reset_after_ms,
    }
}

/// Keeps keyboard focus inside `target` while it is mounted: focuses its first field when it
/// appears, wraps Tab and Shift+Tab at its ends, and gives focus back to whatever had it before
/// when the owner goes.
pub fn use_focus_trap(target: NodeRef<html::Div>) {
    Effect::new(move |_| {
        if let Some(el) = target.get() {
            if let Ok(Some(first)) = el.query_selector("select, input, textarea") {
                if let Ok(first) = first.dyn_into::<web_sys::HtmlElement>() {
                    let _ = first.focus();
                }
            }
        }
    });
    let opener = active_element().map(send_wrapper::SendWrapper::new);
    let handle = window_event_listener(leptos::ev::keydown, move |ev| {
        if ev.key() == "Tab" {
            if let Some(el) = target.get_untracked() {
                trap_tab(&el, &ev);
            }
        }
    });
    on_cleanup(move || {
        handle.remove();
        if let Some(el) = opener {
            if el.is_connected() {
                let _ = el.focus();
            }
        }
    });
}

fn active_element() -> Option<web_sys::HtmlElement> {
    web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.active_element())
        .and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok())
}

/// From the last focusable control Tab wraps to the first, Shift+Tab from the first to the last;
/// focus outside the element is brought back in.
fn trap_tab(root: &web_sys::HtmlDivElement, ev: &web_sys::KeyboardEvent) {
    let mut focusable = Vec::new();
    collect_focusable(root.first_element_child(), &mut focusable);
    let (Some(first), Some(last)) = (focusable.first(), focusable.last()) else {
        return;
    };
    let active = active_element();
    let is = |e: &web_sys::HtmlElement| active.as_ref() == Some(e);
    let outside = !active
        .as_ref()
        .is_some_and(|a| root.contains(Some(a.as_ref())));
    if ev.shift_key() && (is(first) || outside) {
        ev.prevent_default();
        let _ = last.focus();
    } else if !ev.shift_key() && (is(last) || outside) {
        ev.prevent_default();
        let _ = first.focus();
    }
}

/// The visible, enabled controls under `el` and its following siblings, in document order.
fn collect_focusable(mut el: Option<web_sys::Element>, out: &mut Vec<web_sys::HtmlElement>) {
    while let Some(e) = el {
        let tag = e.tag_name().to_ascii_lowercase();
        let control = matches!(tag.as_str(), "button" | "input" | "select" | "textarea")
            || (tag == "a" && e.has_attribute("href"));
        if control && !e.has_attribute("disabled") {
            if let Ok(h) = e.clone().dyn_into::<web_sys::HtmlElement>() {
                if h.offset_width() > 0 || h.offset_height() > 0 {
                    out.push(h);
                }
            }
        }
        collect_focusable(e.first_element_child(), out);
        el = e.next_element_sibling();
    }
}

/// Closes something (a menu, a drawer) on Esc and on a pointer press outside `target`, while
/// `open` is true; Esc gives the focus back to the button that opens it (`focus_opener`). Listeners
/// go with the owner.
pub fn use_dismiss(target: NodeRef<html::Div>, open: RwSignal<bool>) {
    let on_key = window_event_listener(leptos::ev::keydown, move |ev| {
        if ev.key() == "Escape" && open.get_untracked() {
            ev.prevent_default();
            open.set(false);
            focus_opener(target);
        }
    });
    let on_press = window_event_listener(leptos::ev::pointerdown, move |ev| {
        if !open.get_untracked() {
            return;
        }
        let inside = target.get_untracked().is_some_and(|el| {
            ev.target()
                .and_then(|t| t.dyn_into::<web_sys::Node>().ok())
                .is_some_and(|n| el.contains(Some(&n)))
        });
        if !inside {
            open.set(false);
        }
    });
    on_cleanup(move || {
        on_key.remove();
        on_press.remove();
    });
}

/// What [`use_follow_bottom`] returns: the follow rule's state, for the list's own scroll handler
/// and its after-render step.
#[derive(Clone, Copy)]
pub struct UseFollowBottomReturn {
    /// The rule of `engine::follow` (a plain value: handlers read it without subscribing).
    pub follow: StoredValue<Follow>,
}

impl UseFollowBottomReturn {
    /// A scroll of the list: the rule learns where the view is.
    pub fn scrolled(&self, el: &web_sys::HtmlElement) {
        // `web_sys_unstable_apis` (typed Web Locks) makes `scroll_top` an f64.
        let top = el.scroll_top() as i32;
        let gap = el.scroll_height() - top - el.client_height();
        self.follow
            .update_value(|f| f.handle_scroll(top, gap, now_ms()));
    }

    /// After new content: scrolls to the bottom when the rule says the view follows.
    pub fn stick(&self, el: &web_sys::HtmlElement, at_latest: bool) {
        if self.follow.with_value(|f| f.follows(at_latest)) {
            el.set_scroll_top(f64::from(el.scroll_height()));
            self.moved(el);
        }
    }

    /// The app moved the view itself (an anchor kept, a message focused).
    pub fn moved(&self, el: &web_sys::HtmlElement) {
        self.follow
            .update_value(|f| f.handle_moved(el.scroll_top() as i32));
    }

    /// A message was scrolled into view on purpose.
    pub fn focused(&self, el: &web_sys::HtmlElement) {
        self.follow
            .update_value(|f| f.handle_focused(el.scroll_top() as i32));
    }
}

/// Follows the bottom of a scrolling list (a streaming reply) unless the user moves away: wheel,
/// keys, pointer and touch on `target` tell the rule the user is acting; `reset` (tracked) starts
/// it over (another conversation opened).
pub fn use_follow_bottom(
    target: NodeRef<html::Div>,
    reset: impl Fn() + 'static,
) -> UseFollowBottomReturn {
    let follow = StoredValue::new(Follow::default());
    let input = move |up: bool| follow.update_value(|f| f.handle_input(now_ms(), up));
    let listeners = StoredValue::new_local(Vec::<(
        &'static str,
        wasm_bindgen::closure::Closure<dyn Fn(web_sys::Event)>,
    )>::new());
    Effect::new(move |_| {
        let Some(el) = target.get() else { return };
        let on = |name: &'static str, f: Box<dyn Fn(web_sys::Event)>| {
            let c = wasm_bindgen::closure::Closure::<dyn Fn(web_sys::Event)>::new(f);
            let _ = el.add_event_listener_with_callback(name, c.as_ref().unchecked_ref());
            listeners.update_value(|l| l.push((name, c)));
        };
        on(
            "wheel",
            Box::new(move |e| {
                let up = e
                    .dyn_ref::<web_sys::WheelEvent>()
                    .is_some_and(|w| w.delta_y() < 0.0);
                input(up)
            }),
        );
        on(
            "keydown",
            Box::new(move |e| {
                let up = e
                    .dyn_ref::<web_sys::KeyboardEvent>()
                    .is_some_and(|k| matches!(k.key().as_str(), "ArrowUp" | "PageUp" | "Home"));
                input(up)
            }),
        );
        on("pointerdown", Box::new(move |_| input(false)));
        on("touchstart", Box::new(move |_| input(false)));
    });
    on_cleanup(move || {
        let el = target.get_untracked();
        let list = listeners
            .try_update_value(std::mem::take)
            .unwrap_or_default();
        if let Some(el) = el {
            for (name, c) in &list {
                let _ = el.remove_event_listener_with_callback(name, c.as_ref().unchecked_ref());
            }
        }
    });
    Effect::new(move |_| {
        reset();
        follow.update_value(Follow::handle_opened);
    });
    UseFollowBottomReturn { follow }
}

/// Offers `text` as a file download named `name`.
pub fn save_file(name: &str, mime: &str, text: &str) {
    let parts = js_sys::Array::of1(&wasm_bindgen::JsValue::from_str(text));
    let opts = web_sys::BlobPropertyBag::new();
    opts.set_type(mime);
    let Ok(blob) = web_sys::Blob::new_with_str_sequence_and_options(&parts, &opts) else {
        return;
    };
    let Ok(url) = web_sys::Url::create_object_url_with_blob(&blob) else {
        return;
    };
    let doc = web_sys::window().and_then(|w| w.document());
    if let Some(a) = doc
        .and_then(|d| d.create_element("a").ok())
        .and_then(|a| a.dyn_into::<web_sys::HtmlAnchorElement>().ok())
    {
        a.set_href(&url);
        a.set_download(name);
        a.click();
    }
    let _ = web_sys::Url::revoke_object_url(&url);
}

/// Focuses the element with this `data-testid`.
pub fn focus_testid(testid: &str) {
    let el = web_sys::window().and_then(|w| w.document()).and_then(|d| {
        d.query_selector(&format!("[data-testid=\"{testid}\"]"))
            .ok()
            .flatten()
    });
    if let Some(el) = el.and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok()) {
        let _ = el.focus();
    }
}

/// Focuses the button under `target` that opens its popup (`[aria-haspopup]`): where focus goes
/// back after Esc or a choice in a menu.
pub fn focus_opener(target: NodeRef<html::Div>) {
    let opener = target
        .get_untracked()
        .and_then(|el| el.query_selector("[aria-haspopup]").ok().flatten())
        .and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok());
    if let Some(b) = opener {
        let _ = b.focus();
    }
}

/// Whether focus is in a text field (input, textarea, select or editable content), where plain
/// keys type.
pub fn in_text_field() -> bool {
    active_element().is_some_and(|e| {
        let tag = e.tag_name().to_ascii_lowercase();
        matches!(tag.as_str(), "input" | "textarea" | "select") || e.is_content_editable()
    })
}

/// Whether a menu or list box is open: focus is inside one, or on the button that opened it
/// (`aria-haspopup`, `aria-expanded="true"`; the drawer's button is no popup's).
pub fn in_open_popup() -> bool {
    active_element().is_some_and(|e| {
        e.closest("[role=menu],[role=listbox]")
            .ok()
            .flatten()
            .is_some()
            || (e.has_attribute("aria-haspopup")
                && e.get_attribute("aria-expanded").as_deref() == Some("true"))
    })
}

/// The enabled items of a roving group.
fn roving_items(root: &web_sys::Element, selector: &str) -> Vec<web_sys::HtmlElement> {
    let Ok(list) = root.query_selector_all(selector) else {
        return Vec::new();
    };
    (0..list.length())
        .filter_map(|i| list.item(i))
        .filter_map(|n| n.dyn_into::<web_sys::HtmlElement>().ok())
        .filter(|e| !e.has_attribute("disabled"))
        .collect()
}

/// Makes item `at` the group's one tab stop (`tabindex=0`, the others -1); `None` keeps the
/// current one if it is still there, else the first.
fn roving_settle(root: &web_sys::Element, selector: &str, at: Option<usize>) {
    let items = roving_items(root, selector);
    let current = at.or_else(|| items.iter().position(|e| e.tab_index() == 0));
    let current = current.filter(|&i| i < items.len()).unwrap_or(0);
    for (i, e) in items.iter().enumerate() {
        let _ = e.set_attribute("tabindex", if i == current { "0" } else { "-1" });
    }
}

/// Focuses item `at` of the group (the first or the selected one when a menu opens).
pub fn roving_focus(root: &web_sys::Element, selector: &str, at: usize) {
    roving_settle(root, selector, Some(at));
    if let Some(e) = roving_items(root, selector).get(at) {
        let _ = e.focus();
    }
}

/// A group that is one tab stop (a toolbar, a listbox): the items under `target` matching
/// `selector` get a roving `tabindex`, the arrow keys, Home and End move the focus among them
/// (`engine::keys::roving_step`), and the item focused last stays the tab stop. `track` subscribes
/// to whatever adds or removes items; the tab stop is settled again after each change.
pub fn use_roving(target: NodeRef<html::Div>, selector: &'static str, track: impl Fn() + 'static) {
    Effect::new(move |_| {
        track();
        request_animation_frame(move || {
            if let Some(Some(el)) = target.try_get_untracked() {
                roving_settle(&el, selector, None);
            }
        });
    });
    let listeners = StoredValue::new_local(Vec::<(
        &'static str,
        wasm_bindgen::closure::Closure<dyn Fn(web_sys::Event)>,
    )>::new());
    Effect::new(move |_| {
        let Some(el) = target.get() else { return };
        let root: web_sys::Element = el.clone().into();
        let on_key = {
            let root = root.clone();
            move |e: web_sys::Event| {
                let Some(k) = e.dyn_ref::<web_sys::KeyboardEvent>() else {
                    return;
                };
                let items = roving_items(&root, selector);
                let active = active_element();
                let at = items.iter().position(|i| Some(i) == active.as_ref());
                let Some(to) = at.and_then(|at| roving_step(&k.key(), at, items.len())) else {
                    return;
                };
                k.prevent_default();
                roving_focus(&root, selector, to);
            }
        };
        let on_focus = move |_: web_sys::Event| {
            let items = roving_items(&root, selector);
            let active = active_element();
            if let Some(at) = items.iter().position(|i| Some(i) == active.as_ref()) {
                roving_settle(&root, selector, Some(at));
            }
        };
        for (name, f) in [
            ("keydown", Box::new(on_key) as Box<dyn Fn(web_sys::Event)>),
            ("focusin", Box::new(on_focus)),
        ] {
            let c = wasm_bindgen::closure::Closure::<dyn Fn(web_sys::Event)>::new(f);
            let _ = el.add_event_listener_with_callback(name, c.as_ref().unchecked_ref());
            listeners.update_value(|l| l.push((name, c)));
        }
    });
    on_cleanup(move || {
        let el = target.get_untracked();
        let list = listeners
            .try_update_value(std::mem::take)
            .unwrap_or_default();
        if let Some(el) = el {
            for (name, c) in &list {
                let _ = el.remove_event_listener_with_callback(name, c.as_ref().unchecked_ref());
            }
        }
    });
}

/// Works through `queue` (roots of rendered messages) while the idle period lasts, at least one
/// element: each root's next element matching `pending` goes to `each`, which must mark it so it no
/// longer matches; a root with none left (or no longer in the page) leaves the queue. Without a
/// deadline (no idle callbacks) the period is [`IDLE_TIMER_BUDGET_MS`]. What the code highlighter
/// and the math typesetter share: each calls it inside its own split chunk.
pub fn drain_idle_queue(
    queue: &'static std::thread::LocalKey<
        std::cell::RefCell<std::collections::VecDeque<web_sys::Element>>,
    >,
    pending: &str,
    deadline: Option<web_sys::IdleDeadline>,
    each: impl Fn(&web_sys::Element),
) {
    let clock = web_sys::window().and_then(|w| w.performance());
    let started = clock.as_ref().map_or(0.0, |c| c.now());
    let time_left = || match (&deadline, &clock) {
        (Some(d), _) => d.time_remaining(),
        (None, Some(c)) => IDLE_TIMER_BUDGET_MS - (c.now() - started),
        (None, None) => 0.0,
    };
    loop {
        let Some(root) = queue.with(|q| q.borrow().front().cloned()) else {
            return;
        };
        let next = root
            .is_connected()
            .then(|| root.query_selector(pending).ok().flatten())
            .flatten();
        match next {
            Some(element) => each(&element),
            None => {
                queue.with(|q| q.borrow_mut().pop_front());
            }
        }
        if time_left() < IDLE_MIN_MS {
            break;
        }
    }
}

/// [`drain_idle_queue`] leaves an idle period with less than this (ms) left to the page.
const IDLE_MIN_MS: f64 = 4.0;

/// Without `requestIdleCallback`: how long one timer's turn of [`drain_idle_queue`] may work (ms).
const IDLE_TIMER_BUDGET_MS: f64 = 8.0;
