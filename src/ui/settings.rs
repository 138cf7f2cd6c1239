//! The settings dialog: endpoint presets, URL, protocol, model (offered from `/models` where the
//! endpoint has it), API key (stored locally, with a plain warning, never exported), system prompt,
//! memory settings (N, M, context tokens, reply reserve, history format) globally or for the open
//! conversation, "Test connection", and storage usage. Focus stays in the dialog while it is open.
//! Must not import `store` or `transport`.

use crate::engine::format::bytes;
use crate::engine::model::{HistoryFormat, MemoryOverrides, Protocol};
use crate::engine::settings::{apply_preset, Settings, PRESETS};
use crate::ui::controller::Controller;
use leptos::html;
use leptos::prelude::*;
use wasm_bindgen::JsCast;

/// The settings dialog (rendered only while open).
#[component]
pub fn SettingsDialog() -> impl IntoView {
    let st = expect_context::<Controller>().state;
    // The form starts from the settings in force, so it waits until the saved ones are loaded: opened
    // earlier, it would show (and could save) the defaults over them.
    view! {
        <Show when=move || st.settings_open.get() && st.ready.get()>
            <SettingsForm/>
        </Show>
    }
}

#[component]
fn SettingsForm() -> impl IntoView {
    let ctl = expect_context::<Controller>();
    let st = ctl.state;
    let draft = RwSignal::new(st.settings.get_untracked());
    let error = RwSignal::new(None::<String>);
    let status = RwSignal::new(None::<String>);
    let testing = RwSignal::new(false);
    let models = RwSignal::new(Vec::<String>::new());
    let scope_conversation = RwSignal::new(false);
    let overrides = RwSignal::new(MemoryOverrides::default());
    let dialog_ref = NodeRef::<html::Div>::new();

    // Load this conversation's overrides, and storage usage.
    if let Some(id) = st.current.get_untracked() {
        ctl.run(move |s, _| async move {
            if let Some(c) = s.conversation(&id).await? {
                overrides.set(c.memory_overrides);
            }
            Ok(())
        });
    }
    ctl.refresh_storage();
    // Focus the first field when the dialog opens.
    Effect::new(move |_| {
        if let Some(el) = dialog_ref.get() {
            if let Ok(Some(first)) = el.query_selector("select, input") {
                if let Ok(first) = first.dyn_into::<web_sys::HtmlElement>() {
                    let _ = first.focus();
                }
            }
        }
    });

    // Focus goes back to whatever opened the dialog once it closes.
    let opener = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.active_element())
        .and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok())
        .map(send_wrapper::SendWrapper::new);
    on_cleanup(move || {
        if let Some(el) = opener {
            if el.is_connected() {
                let _ = el.focus();
            }
        }
    });

    let close = move || st.settings_open.set(false);
    let on_key = move |ev: leptos::ev::KeyboardEvent| match ev.key().as_str() {
        "Escape" => {
            ev.prevent_default();
            ev.stop_propagation();
            close();
        }
        "Tab" => {
            if let Some(dialog) = dialog_ref.get_untracked() {
                trap_tab(&dialog, &ev);
            }
        }
        _ => {}
    };
    let save = move |_| {
        let s = draft.get_untracked();
        if let Err(e) = s.validate() {
            error.set(Some(e));
            return;
        }
        error.set(None);
        if scope_conversation.get_untracked() {
            if let Some(id) = st.current.get_untracked() {
                let o = overrides.get_untracked();
                ctl.run(move |s, _| async move { s.set_overrides(&id, o).await });
            }
        }
        ctl.save_settings(s, move |r| {
            if let Err(e) = r {
                error.set(Some(e));
            }
        });
    };
    let test = move |_| {
        let s = draft.get_untracked();
        testing.set(true);
        status.set(None);
        error.set(None);
        ctl.run(move |session, _| async move {
            let r = session.test_connection(&s).await;
            testing.set(false);
            match r {
                Ok(found) => {
                    status.set(Some(if found.is_empty() {
                        "Connected.".to_string()
                    } else {
                        format!("Connected: {} models available.", found.len())
                    }));
                    models.set(found);
                }
                Err(e) => error.set(Some(e.to_string())),
            }
            Ok(())
        });
    };
    let text_field = move |get: fn(&Settings) -> String, set: fn(&mut Settings, String)| {
        (
            move || draft.with(get),
            move |ev: leptos::ev::Event| {
                let v = event_target_value(&ev);
                draft.update(|d| set(d, v));
            },
        )
    };
    let (url, set_url) = text_field(
        |s| s.endpoint.base_url.clone(),
        |s, v| s.endpoint.base_url = v.trim().to_string(),
    );
    let (model, set_model) = text_field(
        |s| s.endpoint.model.clone(),
        |s, v| s.endpoint.model = v.trim().to_string(),
    );
    let (key, set_key) = text_field(
        |s| s.endpoint.api_key.clone().unwrap_or_default(),
        |s, v| s.endpoint.api_key = (!v.trim().is_empty()).then(|| v.trim().to_string()),
    );
    let (system, set_system) = text_field(
        |s| s.endpoint.system_prompt.clone(),
        |s, v| s.endpoint.system_prompt = v,
    );
    let (memory_model, set_memory_model) = text_field(
        |s| s.memory_endpoint.model.clone(),
        |s, v| s.memory_endpoint.model = v.trim().to_string(),
    );
    let (memory_url, set_memory_url) = text_field(
        |s| s.memory_endpoint.base_url.clone(),
        |s, v| s.memory_endpoint.base_url = v.trim().to_string(),
    );
    let (memory_key, set_memory_key) = text_field(
        |s| s.memory_endpoint.api_key.clone().unwrap_or_default(),
        |s, v| s.memory_endpoint.api_key = (!v.trim().is_empty()).then(|| v.trim().to_string()),
    );
    let num = |ev: &leptos::ev::Event| event_target_value(ev).trim().parse::<u64>().ok();

    view! {
        <div class="dialog-backdrop" on:click=move |_| close()></div>
        <div class="dialog" data-testid="settings-dialog" role="dialog" aria-modal="true" aria-labelledby="settings-title" node_ref=dialog_ref on:keydown=on_key>
            <h2 id="settings-title">"Settings"</h2>
            <section>
                <h3>"Endpoint"</h3>
                <label>"Preset"
                    <select data-testid="settings-preset" aria-label="Endpoint preset" on:change=move |ev| {
                        let name = event_target_value(&ev);
                        if let Some(p) = PRESETS.iter().find(|p| p.name == name) {
                            draft.update(|d| apply_preset(d, p));
                        }
                    }>
                        <option value="">"Custom"</option>
                        {PRESETS.iter().map(|p| view! { <option value=p.name>{p.name}</option> }).collect_view()}
                    </select>
                </label>
                <label>"URL"
                    <input data-testid="settings-endpoint-url" type="url" placeholder="http://127.0.0.1:11434" prop:value=url on:input=set_url/>
                </label>
                <label>"Protocol"
                    <select data-testid="settings-protocol" aria-label="Protocol"
                        prop:value=move || draft.with(|d| d.endpoint.protocol.as_str().to_string())
                        on:change=move |ev| {
                            if let Some(p) = Protocol::parse(&event_target_value(&ev)) {
                                draft.update(|d| d.endpoint.protocol = p);
                            }
                        }>
                        {Protocol::ALL.iter().map(|p| view! {
                            <option value=p.as_str() selected=move || draft.with(|d| d.endpoint.protocol == *p)>{p.as_str()}</option>
                        }).collect_view()}
                    </select>
                </label>
                <label>"Model"
                    <input data-testid="settings-model" list="model-options" prop:value=model on:input=set_model/>
                    <datalist id="model-options">
                        <For each=move || models.get() key=|m| m.clone() let:m>
                            <option value=m.clone()></option>
                        </For>
                    </datalist>
                </label>
                <label>"API key"
                    <input data-testid="settings-api-key" type="password" autocomplete="off" prop:value=key on:input=set_key/>
                </label>
                <p class="hint warn">"The key is stored in this browser only, unencrypted, and is never included in exports. Anyone with access to this browser profile can read it."</p>
                <label>"System prompt"
                    <textarea data-testid="settings-system-prompt" rows="3" prop:value=system on:input=set_system></textarea>
                </label>
                <div class="row">
                    <button data-testid="settings-test" on:click=test disabled=move || testing.get()>"Test connection"</button>
                    <Show when=move || testing.get()><span class="spinner small" aria-hidden="true"></span></Show>
                    <span class="ok" role="status">{move || status.get().unwrap_or_default()}</span>
                </div>
            </section>
            <section>
                <h3>"Memory"</h3>
                <Show when=move || st.current.with(|c| c.is_some())>
                    <label class="inline">
                        <input type="checkbox" data-testid="settings-scope-conversation"
                            prop:checked=move || scope_conversation.get()
                            on:change=move |ev| scope_conversation.set(event_target_checked(&ev))/>
                        " Only for this conversation"
                    </label>
                </Show>
                <Show
                    when=move || !scope_conversation.get()
                    fallback=move || view! { <OverrideFields overrides=overrides/> }
                >
                    <label>"Recent messages (N)"
                        <input data-testid="settings-recent-count" type="number" min="1" max="1000"
                            prop:value=move || draft.with(|d| d.memory.recent_messages.to_string())
                            on:input=move |ev| if let Some(v) = num(&ev) { draft.update(|d| d.memory.recent_messages = v as usize) }/>
                    </label>
                    <label>"Update memory every M exchanges"
                        <input data-testid="settings-summary-frequency" type="number" min="1" max="1000"
                            prop:value=move || draft.with(|d| d.memory.summary_every_pairs.to_string())
                            on:input=move |ev| if let Some(v) = num(&ev) { draft.update(|d| d.memory.summary_every_pairs = v as usize) }/>
                    </label>
                    <label>"Context tokens"
                        <input data-testid="settings-context-tokens" type="number" min="512"
                            prop:value=move || draft.with(|d| d.memory.context_tokens.to_string())
                            on:input=move |ev| if let Some(v) = num(&ev) { draft.update(|d| d.memory.context_tokens = v.min(u32::MAX as u64) as u32) }/>
                    </label>
                    <label>"Reply reserve (tokens)"
                        <input data-testid="settings-reply-reserve" type="number" min="0"
                            prop:value=move || draft.with(|d| d.memory.reply_reserve_tokens.to_string())
                            on:input=move |ev| if let Some(v) = num(&ev) { draft.update(|d| d.memory.reply_reserve_tokens = v.min(u32::MAX as u64) as u32) }/>
                    </label>
                    <details class="memory-model" data-testid="settings-memory-model-section"
                        prop:open=move || draft.with(|d| d.memory_endpoint != Default::default())>
                        <summary>"Memory model"</summary>
                        <p class="hint">"Memory updates can use another model, and another endpoint: a small local model can keep the memory of a chat held with a large remote one. Leave empty to use the chat model."</p>
                        <label>"Model for memory updates"
                            <input data-testid="settings-memory-model" list="model-options" placeholder="(the chat model)"
                                prop:value=memory_model on:input=set_memory_model/>
                        </label>
                        <label>"Memory endpoint URL"
                            <input data-testid="settings-memory-endpoint-url" type="url" placeholder="(the chat endpoint)"
                                prop:value=memory_url on:input=set_memory_url/>
                        </label>
                        <Show when=move || draft.with(|d| !d.memory_endpoint.base_url.is_empty())>
                            <label>"Memory endpoint protocol"
                                <select data-testid="settings-memory-protocol"
                                    on:change=move |ev| {
                                        if let Some(p) = Protocol::parse(&event_target_value(&ev)) {
                                            draft.update(|d| d.memory_endpoint.protocol = p);
                                        }
                                    }>
                                    {Protocol::ALL.iter().map(|p| view! {
                                        <option value=p.as_str() selected=move || draft.with(|d| d.memory_endpoint.protocol == *p)>{p.as_str()}</option>
                                    }).collect_view()}
                                </select>
                            </label>
                            <label>"Memory endpoint API key"
                                <input data-testid="settings-memory-api-key" type="password" autocomplete="off"
                                    prop:value=memory_key on:input=set_memory_key/>
                            </label>
                        </Show>
                    </details>
                    <label>"History format"
                        <select data-testid="settings-history-format"
                            on:change=move |ev| draft.update(|d| d.memory.history_format = parse_format(&event_target_value(&ev)))>
                            <option value="messages" selected=move || draft.with(|d| d.memory.history_format == HistoryFormat::Messages)>"messages (chat APIs)"</option>
                            <option value="transcript" selected=move || draft.with(|d| d.memory.history_format == HistoryFormat::Transcript)>"transcript (single prompt)"</option>
                        </select>
                    </label>
                </Show>
            </section>
            <section>
                <h3>"Storage"</h3>
                <p data-testid="storage-usage">{move || match st.storage.get() {
                    Some(s) => format!(
                        "{} used of {} available{}",
                        bytes(s.usage),
                        bytes(s.quota),
                        if s.persisted { " · persistent" } else { " · the browser may evict it under pressure" }
                    ),
                    None => "Measuring…".to_string(),
                }}</p>
            </section>
            <crate::ui::sync::SyncSection/>
            <p class="error" role="alert">{move || error.get().unwrap_or_default()}</p>
            <div class="dialog-actions">
                <button data-testid="settings-cancel" on:click=move |_| close()>"Cancel"</button>
                <button class="primary" data-testid="settings-save" on:click=save>"Save"</button>
            </div>
        </div>
    }
}

#[component]
fn OverrideFields(
    /// The open conversation's overrides being edited.
    overrides: RwSignal<MemoryOverrides>,
) -> impl IntoView {
    let opt = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
    let parse = |ev: &leptos::ev::Event| event_target_value(ev).trim().parse::<u64>().ok();
    view! {
        <p class="hint">"Empty fields use the global setting."</p>
        <label>"Recent messages (N)"
            <input data-testid="settings-override-recent-count" type="number" min="1"
                prop:value=move || overrides.with(|o| opt(o.recent_messages.map(|v| v as u64)))
                on:input=move |ev| { let v = parse(&ev); overrides.update(|o| o.recent_messages = v.map(|v| v as usize)) }/>
        </label>
        <label>"Update memory every M exchanges"
            <input data-testid="settings-override-summary-frequency" type="number" min="1"
                prop:value=move || overrides.with(|o| opt(o.summary_every_pairs.map(|v| v as u64)))
                on:input=move |ev| { let v = parse(&ev); overrides.update(|o| o.summary_every_pairs = v.map(|v| v as usize)) }/>
        </label>
        <label>"Context tokens"
            <input data-testid="settings-override-context-tokens" type="number" min="512"
                prop:value=move || overrides.with(|o| opt(o.context_tokens.map(u64::from)))
                on:input=move |ev| { let v = parse(&ev); overrides.update(|o| o.context_tokens = v.map(|v| v.min(u32::MAX as u64) as u32)) }/>
        </label>
        <label>"Reply reserve (tokens)"
            <input data-testid="settings-override-reply-reserve" type="number" min="0"
                prop:value=move || overrides.with(|o| opt(o.reply_reserve_tokens.map(u64::from)))
                on:input=move |ev| { let v = parse(&ev); overrides.update(|o| o.reply_reserve_tokens = v.map(|v| v.min(u32::MAX as u64) as u32)) }/>
        </label>
        <label>"Model for memory updates"
            <input data-testid="settings-override-memory-model" list="model-options" placeholder="(global)"
                prop:value=move || overrides.with(|o| o.memory_model.clone().unwrap_or_default())
                on:input=move |ev| {
                    let v = event_target_value(&ev).trim().to_string();
                    overrides.update(|o| o.memory_model = (!v.is_empty()).then_some(v))
                }/>
        </label>
        <label>"History format"
            <select data-testid="settings-override-history-format"
                on:change=move |ev| {
                    let v = event_target_value(&ev);
                    overrides.update(|o| o.history_format = (!v.is_empty()).then(|| parse_format(&v)))
                }>
                <option value="" selected=move || overrides.with(|o| o.history_format.is_none())>"(global)"</option>
                <option value="messages" selected=move || overrides.with(|o| o.history_format == Some(HistoryFormat::Messages))>"messages"</option>
                <option value="transcript" selected=move || overrides.with(|o| o.history_format == Some(HistoryFormat::Transcript))>"transcript"</option>
            </select>
        </label>
    }
}

fn parse_format(v: &str) -> HistoryFormat {
    if v == "transcript" {
        HistoryFormat::Transcript
    } else {
        HistoryFormat::Messages
    }
}

/// Keeps Tab inside the dialog: from the last focusable field Tab wraps to the first, and
/// Shift+Tab from the first wraps to the last.
fn trap_tab(dialog: &web_sys::HtmlDivElement, ev: &leptos::ev::KeyboardEvent) {
    let mut focusable = Vec::new();
    collect_focusable(dialog.first_element_child(), &mut focusable);
    let (Some(first), Some(last)) = (focusable.first(), focusable.last()) else {
        return;
    };
    let active = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.active_element());
    let is = |e: &web_sys::HtmlElement| {
        active
            .as_ref()
            .is_some_and(|a| a == AsRef::<web_sys::Element>::as_ref(e))
    };
    let outside = !active
        .as_ref()
        .is_some_and(|a| dialog.contains(Some(a.as_ref())));
    if ev.shift_key() && (is(first) || outside) {
        ev.prevent_default();
        let _ = last.focus();
    } else if !ev.shift_key() && (is(last) || outside) {
        ev.prevent_default();
        let _ = first.focus();
    }
}

/// The visible, enabled form controls and buttons under `el` and its following siblings, in
/// document order.
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
