//! The chat header's model picker: the model the open conversation (or the new chat) uses from its
//! next turn, chosen from the endpoint's model list (listed when the menu first opens, by the path
//! Settings' "Test connection" takes), shown by readable names. The choice is kept with the
//! conversation's overrides; the list is the settings store's, the choice the chat store's. The
//! button always names a model (`engine::format::model_in_use`: with none set, the server's one model
//! or its default), never "Model" alone. Must
//! not import `crate::store` or `crate::transport`.

use crate::engine::format::{model_in_use, model_label};
use crate::ui::behaviour::{focus_opener, roving_focus, use_dismiss, use_roving};
use crate::ui::settings::store::ModelList;
use crate::ui::stores::{use_chat, use_settings, use_stores};
use leptos::html;
use leptos::prelude::*;
use wasm_bindgen::JsCast;

/// The picker: a button naming the model in use, and its menu.
#[component]
pub fn ModelPicker() -> impl IntoView {
    let chat = use_chat();
    let stores = use_stores();
    let settings = use_settings();
    let open = RwSignal::new(false);
    let root = NodeRef::<html::Div>::new();
    use_dismiss(root, open);
    // The conversation's own model (or the new chat's), if it picked one.
    let own = move || match stores.open_conversation() {
        Some(c) => c.memory_overrides.model,
        None if chat.has_current() => None,
        None => chat.new_chat_model(),
    };
    let in_use =
        move || own().unwrap_or_else(|| settings.with_settings(|s| s.endpoint.model.clone()));
    let name = move || model_in_use(&in_use(), &listed(settings.models()));
    let set_open = move |opening: bool| {
        open.set(opening);
        if opening {
            settings.load_models();
        }
    };
    let toggle = move |_| set_open(!open.get_untracked());
    // ArrowDown or ArrowUp on the closed button opens the list (focus goes to the chosen model).
    let on_key = move |ev: leptos::ev::KeyboardEvent| {
        if matches!(ev.key().as_str(), "ArrowDown" | "ArrowUp") && !open.get_untracked() {
            ev.prevent_default();
            set_open(true);
        }
    };
    view! {
        <div class="model-picker" node_ref=root>
            <button
                data-testid="model-picker"
                data-model=in_use
                aria-haspopup="listbox"
                aria-expanded=move || open.get().to_string()
                title=move || format!("Model for this conversation: {}", name())
                on:click=toggle
                on:keydown=on_key
            >
                <span class="model-name" data-testid="model-picker-name">{name}</span>
                <span class="caret" aria-hidden="true">"\u{a0}▾"</span>
            </button>
            <Show when=move || open.get()>
                <ModelMenu open=open own=Signal::derive(own) root=root/>
            </Show>
        </div>
    }
}

/// The menu: "as in Settings", then the endpoint's models (or why they could not be listed).
#[component]
fn ModelMenu(
    /// Whether the menu is open; a choice closes it.
    open: RwSignal<bool>,
    /// The model the conversation picked, if any.
    own: Signal<Option<String>>,
    /// The picker (its button gets the focus back after a choice).
    root: NodeRef<html::Div>,
) -> impl IntoView {
    let stores = use_stores();
    let settings = use_settings();
    let pick = move |m: Option<String>| {
        open.set(false);
        stores.pick_model(m);
        focus_opener(root);
    };
    // A listbox: one tab stop, the arrow keys move between the models; opening it focuses the
    // model in use (once the list is there).
    let list = NodeRef::<html::Div>::new();
    use_roving(list, "[role=option]", move || {
        let _ = settings.models();
    });
    use_focus_chosen(list, move || {
        let _ = settings.models();
    });
    let global = move || {
        let list = listed(settings.models());
        settings.with_settings(|s| model_in_use(&s.endpoint.model, &list))
    };
    let listed = move || listed(settings.models());
    view! {
        <div class="menu" role="listbox" aria-label="Models" node_ref=list>
            <button role="option" data-testid="model-option" data-model=""
                aria-selected=move || own.get().is_none().to_string()
                on:click=move |_| pick(None)>
                {move || format!("As in Settings ({})", global())}
            </button>
            <For each=listed key=|m| m.clone() let:m>
                {
                    let chosen = m.clone();
                    let selected = m.clone();
                    view! {
                        <button role="option" data-testid="model-option" data-model=m.clone() title=m.clone()
                            aria-selected=move || (own.get().as_deref() == Some(selected.as_str())).to_string()
                            on:click=move |_| pick(Some(chosen.clone()))>
                            {model_label(&m)}
                        </button>
                    }
                }
            </For>
            {move || match settings.models() {
                ModelList::Loading | ModelList::Unknown => Some(view! {
                    <p class="hint" role="status">"Listing the endpoint's models…"</p>
                }.into_any()),
                ModelList::Failed(why) => Some(view! {
                    <p class="hint" role="status" data-testid="model-list-error">{format!("The models could not be listed. {why}")}</p>
                }.into_any()),
                ModelList::Loaded(l) if l.is_empty() => Some(view! {
                    <p class="hint" role="status">"The endpoint lists no models; pick one in Settings."</p>
                }.into_any()),
                ModelList::Loaded(_) => None,
            }}
        </div>
    }
}

/// Once the list is drawn (again, as `track` says), and unless the focus is already in it, the
/// chosen option (or the first) gets the focus.
fn use_focus_chosen(list: NodeRef<html::Div>, track: impl Fn() + 'static) {
    Effect::new(move |_| {
        track();
        request_animation_frame(move || {
            let Some(Some(el)) = list.try_get_untracked() else {
                return;
            };
            let inside = web_sys::window()
                .and_then(|w| w.document())
                .and_then(|d| d.active_element())
                .is_some_and(|a| el.contains(Some(&a)));
            if inside {
                return;
            }
            let options = el.query_selector_all("[role=option]").ok();
            let at = options
                .map(|o| {
                    (0..o.length())
                        .filter_map(|i| o.item(i))
                        .filter_map(|n| n.dyn_into::<web_sys::Element>().ok())
                        .position(|e| e.get_attribute("aria-selected").as_deref() == Some("true"))
                        .unwrap_or(0)
                })
                .unwrap_or(0);
            roving_focus(&el, "[role=option]", at);
        });
    });
}

/// The models listed so far (none while loading or after a failure).
fn listed(models: ModelList) -> Vec<String> {
    match models {
        ModelList::Loaded(list) => list,
        _ => Vec::new(),
    }
}
