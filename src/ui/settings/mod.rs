//! The settings dialog: endpoint presets, URL, protocol, model (offered from `/models` where the
//! endpoint has it), API key (stored locally, with a plain warning, never exported; a key given
//! for another origin than the URL's is not shown, and a line says it must be entered again),
//! system prompt,
//! memory settings (N, M; context tokens, reply reserve, history format and the chat model's
//! reasoning effort behind "Advanced")
//! globally or for the open conversation, "Test connection" (which picks the first model listed when
//! none is set), storage usage, the Sync section (`ui/sync`'s form) and Tools (`tools.rs`: MCP servers). One Save saves the whole
//! dialog, sync included (sync first: its errors keep the dialog open and are said in it). Protocols are named as people know them (`Protocol::label`), a
//! model given as a file path says the name it is shown by. Every setting says in a line what it does.
//! Focus stays in the dialog while it is open (`use_focus_trap`); Save stays in view. The form is behind split point `settings` (a wasm chunk fetched on the first opening). Its store
//! (`store`) owns the settings in force, the dialog's state and the endpoint's model list. Must not
//! import `crate::store` or `crate::transport`.

pub mod store;
pub mod tools;

use crate::engine::format::{bytes, model_label, plural};
use crate::engine::model::{
    EndpointProfile, HistoryFormat, MemoryOverrides, Protocol, ReasoningEffort,
};
use crate::engine::settings::{
    apply_preset, key_note, key_use, model_name_note, pick_listed_model, KeyUse, Settings, PRESETS,
};
use crate::session::SettingsError;
use crate::ui::behaviour::use_focus_trap;
use crate::ui::lazy::{lazy, Built};
use crate::ui::stores::{use_chat, use_settings, use_shell, use_stores, use_sync, use_transfer};
use crate::ui::sync::{SyncForm, SyncSection};
use leptos::html;
use leptos::prelude::*;
use tools::ToolsSection;

/// The settings dialog (rendered only while open). Its form is behind split point `settings`: the
/// first opening fetches that chunk (the dialog's frame shows meanwhile); one that cannot be fetched
/// closes the dialog and the banner says so (`SettingsError::Unavailable`), and the next opening
/// tries again.
#[component]
pub fn SettingsDialog() -> impl IntoView {
    let settings = use_settings();
    let shell = use_shell();
    // The form starts from the settings in force, so it waits until the saved ones are loaded: opened
    // earlier, it would show (and could save) the defaults over them.
    lazy(
        move || settings.dialog_open() && shell.ready(),
        form_split,
        form_placeholder,
        move |e: SettingsError| {
            settings.close_dialog();
            shell.fail(e.to_string(), e.kind());
        },
    )
}

/// Split point `settings`: the form and what only it reaches (every section, the presets, the
/// sync form).
#[cfg_attr(feature = "split", wasm_split_helpers::wasm_split(settings, fallible, return_wrapper(let form = _; { form.await } -> Result<Built, SettingsError>)))]
fn form_split() -> std::future::Ready<Result<Built, SettingsError>> {
    std::future::ready(Ok(form_view))
}

fn form_view() -> AnyView {
    view! { <SettingsForm/> }.into_any()
}

/// The dialog's frame while its chunk is fetched, at the size the form takes.
fn form_placeholder() -> AnyView {
    view! {
        <div class="dialog-backdrop"></div>
        <div class="dialog dialog-loading" aria-busy="true" aria-label="Settings">
            <div class="dialog-head"><h2>"Settings"</h2></div>
        </div>
    }
    .into_any()
}

/// The form's working copy and what it has heard back.
#[derive(Clone, Copy)]
struct Form {
    draft: RwSignal<Settings>,
    /// Edit the open conversation's overrides instead of the global memory settings.
    scope_conversation: RwSignal<bool>,
    overrides: RwSignal<MemoryOverrides>,
    error: RwSignal<Option<String>>,
    status: RwSignal<Option<String>>,
    testing: RwSignal<bool>,
    /// Save is under way (sync's may ask its server first).
    saving: RwSignal<bool>,
    models: RwSignal<Vec<String>>,
}

/// The form: endpoint, memory, storage and sync sections, Cancel and Save.
#[component]
fn SettingsForm() -> impl IntoView {
    let settings = use_settings();
    let chat = use_chat();
    let stores = use_stores();
    let form = Form {
        draft: RwSignal::new(untrack(|| settings.with_settings(Settings::clone))),
        scope_conversation: RwSignal::new(false),
        overrides: RwSignal::new(
            untrack(|| stores.open_conversation())
                .map(|c| c.memory_overrides)
                .unwrap_or_default(),
        ),
        error: RwSignal::new(None),
        status: RwSignal::new(None),
        testing: RwSignal::new(false),
        saving: RwSignal::new(false),
        models: RwSignal::new(Vec::new()),
    };
    use_transfer().refresh_storage();
    let dialog_ref = NodeRef::<html::Div>::new();
    use_focus_trap(dialog_ref);
    let close = move || settings.close_dialog();
    let on_key = move |ev: leptos::ev::KeyboardEvent| {
        if ev.key() == "Escape" {
            ev.prevent_default();
            ev.stop_propagation();
            close();
        }
    };
    let sync = SyncForm::new(use_sync());
    // One Save for the whole dialog: the settings are checked, then sync is saved (which may ask
    // its server), then the settings; any error keeps the dialog open and says what to fix.
    let save = move |_| {
        let s = form.draft.get_untracked();
        if let Err(e) = s.validate() {
            form.error.set(Some(e));
            return;
        }
        form.error.set(None);
        form.saving.set(true);
        let overrides = untrack(|| chat.current())
            .filter(|_| form.scope_conversation.get_untracked())
            .map(|id| (id, form.overrides.get_untracked()));
        sync.save(move |r| {
            if let Err(e) = r {
                form.saving.set(false);
                form.error.set(Some(format!("Sync was not saved: {e}")));
                return;
            }
            settings.save(s, overrides, move |r| {
                form.saving.set(false);
                match r {
                    Ok(()) => close(),
                    Err(e) => form.error.set(Some(e)),
                }
            });
        });
    };
    view! {
        <div class="dialog-backdrop" on:click=move |_| close()></div>
        <div class="dialog" data-testid="settings-dialog" role="dialog" aria-modal="true" aria-labelledby="settings-title" node_ref=dialog_ref on:keydown=on_key>
            <div class="dialog-head">
                <h2 id="settings-title">"Settings"</h2>
                <button class="icon" data-testid="settings-close" aria-label="Close settings" on:click=move |_| close()>"✕"</button>
            </div>
            <EndpointSection form=form/>
            <MemorySection form=form/>
            <StorageSection/>
            <SyncSection form=sync/>
            <ToolsSection store=settings.tools()/>
            <div class="dialog-actions">
                <p class="error" role="alert">{move || form.error.get().unwrap_or_default()}</p>
                <button data-testid="settings-cancel" on:click=move |_| close()>"Cancel"</button>
                <button class="primary" data-testid="settings-save" on:click=save
                    disabled=move || form.saving.get()>"Save"</button>
            </div>
        </div>
    }
}

/// A text field bound to one part of the draft.
fn text_field(
    draft: RwSignal<Settings>,
    get: fn(&Settings) -> String,
    set: fn(&mut Settings, String),
) -> (
    impl Fn() -> String + Copy + Send + Sync,
    impl Fn(leptos::ev::Event) + Copy,
) {
    (
        move || draft.with(get),
        move |ev: leptos::ev::Event| {
            let v = event_target_value(&ev);
            draft.update(|d| set(d, v));
        },
    )
}

/// What a key field shows: the key, unless it was given for another origin (then the field is
/// empty, asking for this endpoint's key, and [`KeyNote`] says why).
fn shown_key(e: &EndpointProfile) -> String {
    match key_use(e) {
        KeyUse::OtherOrigin { .. } => String::new(),
        _ => e.api_key.clone().unwrap_or_default(),
    }
}

/// The line next to a key field when its key was given for another origin (engine's `key_note`).
#[component]
fn KeyNote(
    /// The note's `data-testid`.
    testid: &'static str,
    /// The settings being edited.
    draft: RwSignal<Settings>,
    /// True for the memory endpoint's key.
    memory: bool,
) -> impl IntoView {
    let note = move || {
        draft.with(|d| {
            if memory {
                key_note(&d.memory_endpoint.as_profile())
            } else {
                key_note(&d.endpoint)
            }
        })
    };
    view! {
        <Show when=move || note().is_some()>
            <p class="hint warn" role="status" data-testid=testid>{note}</p>
        </Show>
    }
}

/// The endpoint: preset, URL, protocol, model, API key, system prompt, Test connection.
#[component]
fn EndpointSection(
    /// The form being edited.
    form: Form,
) -> impl IntoView {
    let draft = form.draft;
    let (url, set_url) = text_field(
        draft,
        |s| s.endpoint.base_url.clone(),
        |s, v| s.endpoint.base_url = v.trim().to_string(),
    );
    let (key, set_key) = text_field(
        draft,
        |s| shown_key(&s.endpoint),
        |s, v| s.set_key(false, &v),
    );
    let (system, set_system) = text_field(
        draft,
        |s| s.endpoint.system_prompt.clone(),
        |s, v| s.endpoint.system_prompt = v,
    );
    view! {
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
                <span class="hint">"Fills in the URL and protocol of a common server."</span>
            </label>
            <label>"URL"
                <input data-testid="settings-endpoint-url" type="url" placeholder="http://127.0.0.1:11434" prop:value=url on:input=set_url/>
                <span class="hint">"Where your agent answers, e.g. http://127.0.0.1:11434 for Ollama."</span>
            </label>
            <ProtocolSelect testid="settings-protocol" draft=draft memory=false/>
            <ModelField form=form/>
            <label>"API key"
                <input data-testid="settings-api-key" type="password" autocomplete="off" prop:value=key on:input=set_key/>
            </label>
            <KeyNote testid="settings-api-key-note" draft=draft memory=false/>
            <p class="hint warn">"The key is stored in this browser only, unencrypted, and is never included in exports. Anyone with access to this browser profile can read it."</p>
            <label>"System prompt"
                <textarea data-testid="settings-system-prompt" rows="3" prop:value=system on:input=set_system></textarea>
                <span class="hint">"Sent first in every request: who the agent is and how it should answer."</span>
            </label>
            <label class="check">
                <input type="checkbox" data-testid="settings-endpoint-no-user-memory"
                    prop:checked=move || draft.with(|d| d.endpoint.no_user_memory)
                    on:change=move |ev| {
                        let on = event_target_checked(&ev);
                        draft.update(|d| d.endpoint.no_user_memory = on)
                    }/>
                " Don't send memory about me to this endpoint"
            </label>
            <TestConnection form=form/>
        </section>
    }
}

/// The protocol of the chat endpoint, or of the memory endpoint (`memory`).
#[component]
fn ProtocolSelect(
    /// The select's `data-testid`.
    testid: &'static str,
    /// The settings being edited.
    draft: RwSignal<Settings>,
    /// True for the memory endpoint's protocol.
    memory: bool,
) -> impl IntoView {
    let get = move |d: &Settings| {
        if memory {
            d.memory_endpoint.protocol
        } else {
            d.endpoint.protocol
        }
    };
    view! {
        <label>{if memory { "Memory server type" } else { "Server type" }}
            <select data-testid=testid aria-label=if memory { "Memory server type" } else { "Server type" }
                prop:value=move || draft.with(|d| get(d).as_str().to_string())
                on:change=move |ev| {
                    if let Some(p) = Protocol::parse(&event_target_value(&ev)) {
                        draft.update(|d| if memory { d.memory_endpoint.protocol = p } else { d.endpoint.protocol = p });
                    }
                }>
                {Protocol::ALL.iter().map(|p| view! {
                    <option value=p.as_str() selected=move || draft.with(|d| get(d) == *p)>{p.label()}</option>
                }).collect_view()}
            </select>
            <span class="hint">"The kind of server: the preset knows; change it only for another kind of server."</span>
        </label>
    }
}

/// The model name, with the endpoint's models (shown by their readable names) once tested.
#[component]
fn ModelField(
    /// The form being edited.
    form: Form,
) -> impl IntoView {
    let draft = form.draft;
    let (model, set_model) = text_field(
        draft,
        |s| s.endpoint.model.clone(),
        |s, v| s.endpoint.model = v.trim().to_string(),
    );
    view! {
        <label>"Model"
            <input data-testid="settings-model" list="model-options" prop:value=model on:input=set_model/>
            <datalist id="model-options">
                <For each=move || form.models.get() key=|m| m.clone() let:m>
                    <option value=m.clone() label=model_label(&m)></option>
                </For>
            </datalist>
            <span class="hint">"The model's name as the server knows it. “Test connection” lists the ones it offers."</span>
        </label>
        {move || draft.with(|d| model_name_note(&d.endpoint.model)).map(|note| view! {
            <p class="hint" data-testid="settings-model-name">{note}</p>
        })}
        <Show when=move || !form.models.with(Vec::is_empty)>
            <label>"Models on this server"
                <select data-testid="settings-model-pick"
                    on:change=move |ev| draft.update(|d| d.endpoint.model = event_target_value(&ev))>
                    <option value="" disabled=true selected=move || draft.with(|d| !form.models.with(|l| l.contains(&d.endpoint.model)))>"Pick one…"</option>
                    <For each=move || form.models.get() key=|m| m.clone() let:m>
                        {
                            let chosen = m.clone();
                            view! {
                                <option value=m.clone() title=m.clone()
                                    selected=move || draft.with(|d| d.endpoint.model == chosen)>{model_label(&m)}</option>
                            }
                        }
                    </For>
                </select>
            </label>
        </Show>
    }
}

/// "Test connection": lists the endpoint's models, or says what went wrong.
#[component]
fn TestConnection(
    /// The form whose endpoint is tested.
    form: Form,
) -> impl IntoView {
    let settings = use_settings();
    let test = move |_| {
        form.testing.set(true);
        form.status.set(None);
        form.error.set(None);
        settings.test_connection(form.draft.get_untracked(), move |r| {
            form.testing.set(false);
            match r {
                Ok(found) => {
                    // With no model set, the first one listed is chosen (saved with the rest).
                    let picked = form
                        .draft
                        .try_update(|d| pick_listed_model(d, &found))
                        .flatten();
                    form.status
                        .set(Some(connected_status(found.len(), picked.as_deref())));
                    form.models.set(found);
                }
                Err(e) => form.error.set(Some(e)),
            }
        });
    };
    view! {
        <div class="row">
            <button data-testid="settings-test" on:click=test disabled=move || form.testing.get()>"Test connection"</button>
            <Show when=move || form.testing.get()><span class="spinner small" aria-hidden="true"></span></Show>
            <span class="ok" role="status" data-testid="settings-test-status">{move || form.status.get().unwrap_or_default()}</span>
        </div>
    }
}

/// What "Test connection" says once connected: how many models, and the one it chose.
fn connected_status(count: usize, picked: Option<&str>) -> String {
    match (count, picked) {
        (0, _) => "Connected.".to_string(),
        (n, Some(m)) => format!(
            "Connected: {}. Model set to {}.",
            plural(n, "model available", "models available"),
            model_label(m)
        ),
        (n, None) => format!(
            "Connected: {}.",
            plural(n, "model available", "models available")
        ),
    }
}

/// The memory settings, global or for the open conversation only.
#[component]
fn MemorySection(
    /// The form being edited.
    form: Form,
) -> impl IntoView {
    let chat = use_chat();
    view! {
        <section>
            <h3>"Memory"</h3>
            <Show when=move || chat.has_current()>
                <label class="inline">
                    <input type="checkbox" data-testid="settings-scope-conversation"
                        prop:checked=move || form.scope_conversation.get()
                        on:change=move |ev| form.scope_conversation.set(event_target_checked(&ev))/>
                    " Only for this conversation"
                </label>
            </Show>
            <Show
                when=move || !form.scope_conversation.get()
                fallback=move || view! { <OverrideFields overrides=form.overrides/> }
            >
                <GlobalMemoryFields draft=form.draft/>
                <MemoryModelFields draft=form.draft/>
                <details class="advanced" data-testid="settings-advanced">
                    <summary>"Advanced"</summary>
                    <p class="hint">"How much the model can read, and how the history is written. The defaults suit most servers."</p>
                    <ContextFields draft=form.draft/>
                    <HistoryFormatSelect
                        testid="settings-history-format"
                        value=Signal::derive(move || Some(form.draft.with(|d| d.memory.history_format)))
                        on_pick=move |f| form.draft.update(|d| d.memory.history_format = f.unwrap_or(HistoryFormat::Messages))
                        global=false
                    />
                    <ReasoningEffortSelect draft=form.draft/>
                </details>
            </Show>
        </section>
    }
}

/// What each memory number means, in a line.
/// What "Remember me across conversations" does.
const ACROSS_HINT: &str = "What you say about yourself (your name, where you live, your work, people, likes) is kept as facts and carried in every conversation. See and forget them under About you.";
const RECENT_HINT: &str = "How many of the latest messages are sent word for word; older ones reach the agent through the summary and memory.";
const EVERY_HINT: &str = "After this many question-and-answer pairs, Memoire asks the model to update the summary and the people, places and facts it remembers.";
const CONTEXT_HINT: &str =
    "How much the model can read at once (its context window); the request is kept under it.";
const RESERVE_HINT: &str = "Room kept free in the context window for the reply.";

fn num(ev: &leptos::ev::Event) -> Option<u64> {
    event_target_value(ev).trim().parse::<u64>().ok()
}

/// The global memory numbers: recent messages and update frequency.
#[component]
fn GlobalMemoryFields(
    /// The settings being edited.
    draft: RwSignal<Settings>,
) -> impl IntoView {
    let show = move |f: fn(&Settings) -> u64| move || draft.with(|d| f(d).to_string());
    view! {
        <label class="check">
            <input type="checkbox" data-testid="settings-memory-across"
                prop:checked=move || draft.with(|d| d.memory.user_memory)
                on:change=move |ev| {
                    let on = event_target_checked(&ev);
                    draft.update(|d| d.memory.user_memory = on)
                }/>
            " Remember me across conversations"
        </label>
        <span class="hint">{ACROSS_HINT}</span>
        <label>"Recent messages"
            <input data-testid="settings-recent-count" type="number" min="1" max="1000"
                prop:value=show(|d| d.memory.recent_messages as u64)
                on:input=move |ev| if let Some(v) = num(&ev) { draft.update(|d| d.memory.recent_messages = v as usize) }/>
            <span class="hint">{RECENT_HINT}</span>
        </label>
        <label>"Update memory every … exchanges"
            <input data-testid="settings-summary-frequency" type="number" min="1" max="1000"
                prop:value=show(|d| d.memory.summary_every_pairs as u64)
                on:input=move |ev| if let Some(v) = num(&ev) { draft.update(|d| d.memory.summary_every_pairs = v as usize) }/>
            <span class="hint">{EVERY_HINT}</span>
        </label>
    }
}

/// The advanced numbers: the context window and the room kept for the reply.
#[component]
fn ContextFields(
    /// The settings being edited.
    draft: RwSignal<Settings>,
) -> impl IntoView {
    let show = move |f: fn(&Settings) -> u64| move || draft.with(|d| f(d).to_string());
    view! {
        <label>"Context size (tokens)"
            <input data-testid="settings-context-tokens" type="number" min="512"
                prop:value=show(|d| u64::from(d.memory.context_tokens))
                on:input=move |ev| if let Some(v) = num(&ev) { draft.update(|d| d.memory.context_tokens = v.min(u32::MAX as u64) as u32) }/>
            <span class="hint">{CONTEXT_HINT}</span>
        </label>
        <label>"Room kept for the reply (tokens)"
            <input data-testid="settings-reply-reserve" type="number" min="0"
                prop:value=show(|d| u64::from(d.memory.reply_reserve_tokens))
                on:input=move |ev| if let Some(v) = num(&ev) { draft.update(|d| d.memory.reply_reserve_tokens = v.min(u32::MAX as u64) as u32) }/>
            <span class="hint">{RESERVE_HINT}</span>
        </label>
    }
}

/// The model (and endpoint) memory updates use, when not the chat's.
#[component]
fn MemoryModelFields(
    /// The settings being edited.
    draft: RwSignal<Settings>,
) -> impl IntoView {
    let (memory_model, set_memory_model) = text_field(
        draft,
        |s| s.memory_endpoint.model.clone(),
        |s, v| s.memory_endpoint.model = v.trim().to_string(),
    );
    let (memory_url, set_memory_url) = text_field(
        draft,
        |s| s.memory_endpoint.base_url.clone(),
        |s, v| s.memory_endpoint.base_url = v.trim().to_string(),
    );
    let (memory_key, set_memory_key) = text_field(
        draft,
        |s| shown_key(&s.memory_endpoint.as_profile()),
        |s, v| s.set_key(true, &v),
    );
    view! {
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
                <ProtocolSelect testid="settings-memory-protocol" draft=draft memory=true/>
                <label>"Memory endpoint API key"
                    <input data-testid="settings-memory-api-key" type="password" autocomplete="off"
                        prop:value=memory_key on:input=set_memory_key/>
                </label>
                <KeyNote testid="settings-memory-api-key-note" draft=draft memory=true/>
            </Show>
        </details>
    }
}

/// How the history is sent: as chat messages, or as one transcript in a single prompt.
#[component]
fn HistoryFormatSelect(
    /// The select's `data-testid`.
    testid: &'static str,
    /// The format chosen (`None`: the global one, for an override).
    #[prop(into)]
    value: Signal<Option<HistoryFormat>>,
    /// Called with the format picked.
    on_pick: impl Fn(Option<HistoryFormat>) + 'static,
    /// Offer "(global)" (for an override).
    global: bool,
) -> impl IntoView {
    view! {
        <label>"History format"
            <select data-testid=testid
                on:change=move |ev| {
                    let v = event_target_value(&ev);
                    on_pick((!v.is_empty()).then(|| parse_format(&v)))
                }>
                {global.then(|| view! { <option value="" selected=move || value.get().is_none()>"(global)"</option> })}
                <option value="messages" selected=move || value.get() == Some(HistoryFormat::Messages)>"As chat messages (most servers)"</option>
                <option value="transcript" selected=move || value.get() == Some(HistoryFormat::Transcript)>"As one transcript (text-completion models)"</option>
            </select>
            <span class="hint">"Chat APIs take the history as messages; a transcript suits models that only complete text."</span>
        </label>
    }
}

/// What asking for an effort sends, per protocol.
fn effort_hint(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::OpenAiChat => "Sent as reasoning_effort, to models that think (o-series, gpt-oss, DeepSeek, Qwen3 on vLLM).",
        Protocol::OpenAiResponses => "Sent as reasoning effort, with a summary of the thinking to show.",
        Protocol::Anthropic => "Turns on extended thinking, with a budget of 2,048, 8,192 or 24,576 tokens.",
        Protocol::Ollama => "Turns on thinking (think: true) for models that can think.",
    }
}

/// The reasoning effort asked of the chat model (kept per model; "Not sent" leaves requests as
/// they are).
#[component]
fn ReasoningEffortSelect(
    /// The settings being edited.
    draft: RwSignal<Settings>,
) -> impl IntoView {
    let current = move || draft.with(|d| d.reasoning_effort_for(&d.endpoint.model));
    let model = move || draft.with(|d| model_label(&d.endpoint.model).to_string());
    view! {
        <label>{move || format!("Reasoning effort for {}", model())}
            <select disabled=move || draft.with(|d| d.endpoint.model.trim().is_empty())
                on:change=move |ev| {
                    let v = event_target_value(&ev);
                    draft.update(|d| {
                        let model = d.endpoint.model.clone();
                        d.set_reasoning_effort(&model, ReasoningEffort::parse(&v));
                    })
                }>
                <option value="" selected=move || current().is_none()>"Not sent (the model's default)"</option>
                {ReasoningEffort::ALL.into_iter().map(|e| view! {
                    <option value=e.as_str() selected=move || current() == Some(e)>{e.as_str()}</option>
                }).collect_view()}
            </select>
            <span class="hint">{move || effort_hint(draft.with(|d| d.endpoint.protocol))}</span>
        </label>
    }
}

/// The open conversation's overrides of the global settings.
#[component]
fn OverrideFields(
    /// The open conversation's overrides being edited.
    overrides: RwSignal<MemoryOverrides>,
) -> impl IntoView {
    let opt = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
    view! {
        <p class="hint">"Empty fields use the global setting."</p>
        <label>"System prompt"
            <textarea data-testid="conversation-system-prompt" rows="3" placeholder="(the system prompt above)"
                prop:value=move || overrides.with(|o| o.system_prompt.clone().unwrap_or_default())
                on:input=move |ev| {
                    let v = event_target_value(&ev);
                    overrides.update(|o| o.system_prompt = (!v.trim().is_empty()).then_some(v))
                }></textarea>
            <span class="hint">"This conversation's instructions to the agent, sent instead of the system prompt above."</span>
        </label>
        <label>"Recent messages"
            <input data-testid="settings-override-recent-count" type="number" min="1"
                prop:value=move || overrides.with(|o| opt(o.recent_messages.map(|v| v as u64)))
                on:input=move |ev| { let v = num(&ev); overrides.update(|o| o.recent_messages = v.map(|v| v as usize)) }/>
            <span class="hint">{RECENT_HINT}</span>
        </label>
        <label>"Update memory every … exchanges"
            <input data-testid="settings-override-summary-frequency" type="number" min="1"
                prop:value=move || overrides.with(|o| opt(o.summary_every_pairs.map(|v| v as u64)))
                on:input=move |ev| { let v = num(&ev); overrides.update(|o| o.summary_every_pairs = v.map(|v| v as usize)) }/>
            <span class="hint">{EVERY_HINT}</span>
        </label>
        <label>"Context size (tokens)"
            <input data-testid="settings-override-context-tokens" type="number" min="512"
                prop:value=move || overrides.with(|o| opt(o.context_tokens.map(u64::from)))
                on:input=move |ev| { let v = num(&ev); overrides.update(|o| o.context_tokens = v.map(|v| v.min(u32::MAX as u64) as u32)) }/>
            <span class="hint">{CONTEXT_HINT}</span>
        </label>
        <label>"Room kept for the reply (tokens)"
            <input data-testid="settings-override-reply-reserve" type="number" min="0"
                prop:value=move || overrides.with(|o| opt(o.reply_reserve_tokens.map(u64::from)))
                on:input=move |ev| { let v = num(&ev); overrides.update(|o| o.reply_reserve_tokens = v.map(|v| v.min(u32::MAX as u64) as u32)) }/>
            <span class="hint">{RESERVE_HINT}</span>
        </label>
        <label>"Model for memory updates"
            <input data-testid="settings-override-memory-model" list="model-options" placeholder="(global)"
                prop:value=move || overrides.with(|o| o.memory_model.clone().unwrap_or_default())
                on:input=move |ev| {
                    let v = event_target_value(&ev).trim().to_string();
                    overrides.update(|o| o.memory_model = (!v.is_empty()).then_some(v))
                }/>
            <span class="hint">"A model for this conversation's memory updates only."</span>
        </label>
        <HistoryFormatSelect
            testid="settings-override-history-format"
            value=Signal::derive(move || overrides.with(|o| o.history_format))
            on_pick=move |f| overrides.update(|o| o.history_format = f)
            global=true
        />
    }
}

/// How much the browser stores, and whether it may evict it.
#[component]
fn StorageSection() -> impl IntoView {
    let transfer = use_transfer();
    view! {
        <section>
            <h3>"Storage"</h3>
            <p data-testid="storage-usage">{move || match transfer.storage() {
                Some(s) => format!(
                    "{} used of {} available{}{}",
                    bytes(s.usage),
                    bytes(s.quota),
                    match s.images {
                        0 => String::new(),
                        1 => format!(" · 1 image ({})", bytes(s.image_bytes)),
                        n => format!(" · {n} images ({})", bytes(s.image_bytes)),
                    },
                    if s.persisted { " · persistent" } else { " · the browser may evict it under pressure" }
                ),
                None => "Measuring…".to_string(),
            }}</p>
        </section>
    }
}

fn parse_format(v: &str) -> HistoryFormat {
    if v == "transcript" {
        HistoryFormat::Transcript
    } else {
        HistoryFormat::Messages
    }
}
