//! A badge that explains itself: a button holding the badge, whose click or tap shows what it means
//! in visible text (Esc or a press outside closes it): the continuity badge in the chat header and
//! on each row of the sidebar ("new", "memory sent", …; the words are `engine::format::continuity`'s).
//! A tooltip alone is not enough: touch has none. Its close listeners exist only while it is open
//! (a sidebar has a badge per row). Must not import `crate::store`, `crate::transport` or
//! `session`, nor any store.

use crate::ui::behaviour::use_dismiss;
use leptos::html;
use leptos::prelude::*;

/// The `data-testid`s of one place's badge: the button, the badge in it, the explanation.
#[derive(Clone, Copy)]
pub struct BadgeIds {
    pub info: &'static str,
    pub badge: &'static str,
    pub explained: &'static str,
}

/// The badge `label` (class `badge-{key}`, `data-continuity` = `key`) in a button that shows `why`.
#[component]
pub fn ExplainedBadge(
    /// The kind, for its colour and `data-continuity`.
    key: &'static str,
    /// What the badge says.
    label: &'static str,
    /// What it means, shown on a click or tap.
    why: &'static str,
    /// Its `data-testid`s.
    ids: BadgeIds,
) -> impl IntoView {
    let open = RwSignal::new(false);
    let root = NodeRef::<html::Div>::new();
    view! {
        <div class="badge-wrap" node_ref=root>
            <button class="badge-button" data-testid=ids.info
                aria-label=format!("{label}: what this means") aria-expanded=move || open.get().to_string()
                on:click=move |_| open.update(|o| *o = !*o)>
                <span class=format!("badge badge-{key}") data-testid=ids.badge data-continuity=key>
                    {label}
                </span>
            </button>
            <Show when=move || open.get()>
                <Explained root open why testid=ids.explained/>
            </Show>
        </div>
    }
}

/// The explanation, while it is shown; it closes on Esc or a press outside `root`.
#[component]
fn Explained(
    root: NodeRef<html::Div>,
    open: RwSignal<bool>,
    why: &'static str,
    testid: &'static str,
) -> impl IntoView {
    use_dismiss(root, open);
    view! { <p class="badge-explained" role="note" data-testid=testid>{why}</p> }
}
