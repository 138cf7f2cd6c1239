//! The backup menu in the chat header: export this conversation (JSON, Markdown) or everything,
//! import a backup or another app's export (a progress bar with Cancel while it is read and while
//! it is written, and a preview to confirm in between, which lists what the file brings that
//! acts beyond its own conversations: shared memory, system prompts, models, project
//! instructions, system messages). The menu closes on a choice, Esc or a click outside; after Esc
//! or a choice (the preview's too) the focus is back on the Backup button, and the arrow keys move
//! between the menu's items. An import's preview is behind split point `import_views` (its progress is not: it must show from the start). Its store (`store`) owns exports, the import's state and the storage
//! figure. Must not import `crate::store` or `crate::transport`.

pub mod store;

use crate::session::{ErrorKind, TransferError};
use crate::ui::behaviour::{focus_opener, focus_testid, roving_focus, use_dismiss, use_roving};
use crate::ui::lazy::{lazy, Built};
use crate::ui::stores::{use_chat, use_shell, use_stores, use_transfer};
use leptos::html;
use leptos::prelude::*;
use store::{Export, ImportState};

/// The backup button, its menu, the import progress and the import preview.
#[component]
pub fn BackupMenu() -> impl IntoView {
    let (transfer, shell) = (use_transfer(), use_shell());
    // An import's progress shows at once (its chunk would come too late to show the reading); its
    // preview is behind split point `import_views`, fetched when the first import starts,
    // alongside the import chunk.
    let importing = move || transfer.with_import(|i| !matches!(i, ImportState::Idle));
    let open = RwSignal::new(false);
    let root = NodeRef::<html::Div>::new();
    use_dismiss(root, open);
    view! {
        <div class="export" node_ref=root>
            <button
                class="hicon"
                data-testid="export-button"
                aria-label="Backup"
                aria-haspopup="menu"
                aria-expanded=move || open.get().to_string()
                on:click=move |_| open.update(|o| *o = !*o)
            >
                <span class="label">"Backup"</span>
            </button>
            <Show when=move || open.get()>
                <BackupItems open=open root=root/>
            </Show>
            <ImportProgress/>
            {lazy(importing, import_views_split, nothing, move |e: TransferError| {
                shell.fail(e.to_string(), ErrorKind::Other)
            })}
        </div>
    }
}

/// Split point `import_views`: an import's preview.
#[cfg_attr(feature = "split", wasm_split_helpers::wasm_split(import_views, fallible, return_wrapper(let views = _; { views.await } -> Result<Built, TransferError>)))]
fn import_views_split() -> std::future::Ready<Result<Built, TransferError>> {
    std::future::ready(Ok(import_views))
}

fn import_views() -> AnyView {
    view! { <ImportPreview/> }.into_any()
}

fn nothing() -> AnyView {
    ().into_any()
}

/// What the arrow keys move between in the backup menu: its buttons and the import's file input.
const MENU_ITEMS: &str = "button[role=menuitem], input[type=file]";

/// The menu's items: exports, and the file input of an import.
#[component]
fn BackupItems(
    /// Whether the menu is open; a choice closes it.
    open: RwSignal<bool>,
    /// The backup menu (its button gets the focus back after a choice).
    root: NodeRef<html::Div>,
) -> impl IntoView {
    let transfer = use_transfer();
    let chat = use_chat();
    let stores = use_stores();
    // A temporary chat is not stored: there is nothing of it to export.
    let stored = move || chat.has_current() && !chat.is_temporary();
    let export = move |what: Export| {
        open.set(false);
        stores.export(what);
        focus_opener(root);
    };
    // A menu: one tab stop, the arrow keys move between its items, the first has the focus when
    // it opens.
    let menu = NodeRef::<html::Div>::new();
    use_roving(menu, MENU_ITEMS, move || {
        let _ = stored();
    });
    Effect::new(move |_| {
        if let Some(el) = menu.get() {
            roving_focus(&el, MENU_ITEMS, 0);
        }
    });
    let on_import = move |ev: leptos::ev::Event| {
        let input: web_sys::HtmlInputElement = event_target(&ev);
        let Some(file) = input.files().and_then(|f| f.get(0)) else {
            return;
        };
        input.set_value("");
        open.set(false);
        focus_opener(root);
        transfer.import_file(file);
    };
    view! {
        <div class="menu" role="menu" aria-label="Backup" node_ref=menu>
            <Show when=stored>
                <button role="menuitem" data-testid="export-conversation-json" on:click=move |_| export(Export::ConversationJson)>
                    "Export this conversation (JSON)"
                </button>
                <button role="menuitem" data-testid="export-conversation-markdown" on:click=move |_| export(Export::ConversationMarkdown)>
                    "Export this conversation (Markdown)"
                </button>
            </Show>
            <button role="menuitem" data-testid="export-all-json" on:click=move |_| export(Export::Everything)>
                "Export everything (JSON)"
            </button>
            <label class="import" role="menuitem">
                <span class="file-button">"Import a backup or another app's export…"</span>
                <span class="hint">"Memoire, ChatGPT, Claude, Open WebUI, LobeChat and more: .json, .jsonl or .zip"</span>
                <input
                    type="file"
                    class="visually-hidden"
                    accept="application/json,application/zip,.json,.jsonl,.zip"
                    data-testid="import-input"
                    on:change=on_import
                />
            </label>
        </div>
    }
}

/// A running import: its phase (reading, checking, writing), how far it is, and Cancel (nothing
/// is written).
#[component]
fn ImportProgress() -> impl IntoView {
    let transfer = use_transfer();
    let progress = move || {
        transfer.with_import(|i| match i {
            ImportState::Running(p, _) => Some(*p),
            _ => None,
        })
    };
    let running = move || transfer.with_import(|i| matches!(i, ImportState::Running(..)));
    view! {
        <Show when=running>
            <div class="import-running" role="status">
                <span class="phase">{move || progress().map(|p| format!("{}…", p.phase.label()))}</span>
                <progress
                    class="import-progress"
                    data-testid="import-progress"
                    aria-label="Import progress"
                    data-phase=move || progress().map(|p| p.phase.key())
                    value=move || progress().map(|p| p.done as f64).unwrap_or(0.0)
                    max=move || progress().map(|p| p.total.max(1) as f64).unwrap_or(1.0)
                ></progress>
                <button data-testid="import-cancel" on:click=move |_| transfer.cancel_import()>"Cancel"</button>
            </div>
        </Show>
    }
}

/// A file read and checked (our backup or another app's export), waiting for the user to confirm.
#[component]
fn ImportPreview() -> impl IntoView {
    let transfer = use_transfer();
    let stores = use_stores();
    let preview = move || {
        transfer.with_import(|i| match i {
            ImportState::Preview(p) => {
                Some((p.file_name.clone(), p.preview.clone(), p.reach.clone()))
            }
            _ => None,
        })
    };
    move || {
        preview().map(|(file_name, text, reach)| {
            let reach = (!reach.is_empty()).then(|| {
                view! {
                    <p class="reach-head">"It also brings what acts beyond these conversations:"</p>
                    <ul class="reach" data-testid="import-preview-reach">
                        {reach.into_iter().map(|line| view! { <li>{line}</li> }).collect_view()}
                    </ul>
                }
            });
            view! {
                <div class="import-preview" role="dialog" aria-label="Import preview" data-testid="import-preview">
                    <p class="file">{file_name}</p>
                    <p>{text}</p>
                    {reach}
                    <div class="actions">
                        <button class="primary" data-testid="import-confirm" on:click=move |_| {
                            stores.confirm_import();
                            focus_testid("export-button");
                        }>"Import"</button>
                        <button data-testid="import-cancel" on:click=move |_| {
                            transfer.cancel_import();
                            focus_testid("export-button");
                        }>"Cancel"</button>
                    </div>
                </div>
            }
        })
    }
}
