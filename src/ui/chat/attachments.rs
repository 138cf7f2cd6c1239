//! Attachments in the chat pane: the composer's picker (`composer-attach`, an `input type=file`),
//! its thumbnails and chips (each removable until sent), paste and drop, and the images and files
//! on a sent message (`attachment`, `data-kind` "image" or "file"). Must not import `crate::store`
//! or `crate::transport`.

use crate::engine::attach::human_bytes;
use crate::engine::model::{Attachment, AttachmentKind};
use crate::ui::stores::use_composer;
use leptos::prelude::*;

/// What the picker takes: images, PDFs and the text files `engine::attach::intake` accepts.
const ACCEPT: &str = "image/png,image/jpeg,image/webp,image/gif,application/pdf,.pdf,text/*,.md,.markdown,.csv,.tsv,.json,.jsonl,.xml,.yaml,.yml,.toml,.log,.rs,.py,.js,.ts,.go,.java,.c,.h,.cpp,.rb,.sh,.sql,.html,.css";

/// The files of a `FileList`, in order.
pub fn files_of(list: Option<web_sys::FileList>) -> Vec<web_sys::File> {
    let Some(list) = list else {
        return Vec::new();
    };
    (0..list.length()).filter_map(|i| list.get(i)).collect()
}

/// The files a paste carries (none for a paste of text alone).
pub fn pasted(ev: &leptos::ev::ClipboardEvent) -> Vec<web_sys::File> {
    ev.clipboard_data()
        .map(|d| files_of(d.files()))
        .unwrap_or_default()
}

/// The files a drop carries.
pub fn dropped(ev: &leptos::ev::DragEvent) -> Vec<web_sys::File> {
    ev.data_transfer()
        .map(|d| files_of(d.files()))
        .unwrap_or_default()
}

/// The picker button and the composer's attachments.
#[component]
pub fn ComposerAttachments() -> impl IntoView {
    let composer = use_composer();
    let input = NodeRef::<leptos::html::Input>::new();
    let list = move || {
        composer.with_attachments(|files| {
            files
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    let a = f.attachment.clone();
                    let url = f.url.clone();
                    view! {
                        <span class="attachment pending" data-testid="attachment" data-kind=a.kind.as_str()
                            title=describe(&a)>
                            <Preview attachment=a.clone() url=url/>
                            <button class="attachment-remove" data-testid="attachment-remove"
                                aria-label=format!("Remove {}", a.name)
                                on:click=move |_| composer.remove_attachment(i)>"×"</button>
                        </span>
                    }
                })
                .collect_view()
        })
    };
    view! {
        <div class="composer-attachments" aria-live="polite">
            <label class="attach-button" title="Attach images or text files">
                <span aria-hidden="true">"📎"</span>
                <span class="visually-hidden">"Attach images or text files"</span>
                <input type="file" multiple accept=ACCEPT data-testid="composer-attach" node_ref=input
                    class="visually-hidden"
                    on:change=move |_| {
                        if let Some(el) = input.get() {
                            composer.attach_files(files_of(el.files()));
                            el.set_value("");
                        }
                    }/>
            </label>
            {list}
            <Show when=move || composer.attaching()>
                <span class="attaching">"Preparing…"</span>
            </Show>
        </div>
    }
}

/// Name, size and, for an image, its pixels: the tooltip of an attachment.
fn describe(a: &Attachment) -> String {
    match a.kind {
        AttachmentKind::Image => format!(
            "{} ({}×{}, {})",
            a.name,
            a.width,
            a.height,
            human_bytes(a.size)
        ),
        AttachmentKind::File => format!("{} ({})", a.name, human_bytes(a.size)),
    }
}

/// A thumbnail (image) or a chip with the name (file).
#[component]
fn Preview(attachment: Attachment, url: Option<String>) -> impl IntoView {
    match (attachment.kind, url) {
        (AttachmentKind::Image, Some(url)) => {
            view! { <img class="thumbnail" src=url alt=attachment.name.clone()/> }.into_any()
        }
        (AttachmentKind::Image, None) => {
            view! { <span class="chip">"🖼 " {attachment.name.clone()}</span> }.into_any()
        }
        (AttachmentKind::File, _) => {
            view! { <span class="chip">"📄 " {attachment.name.clone()}</span> }.into_any()
        }
    }
}

/// The images and files of a sent message.
#[component]
pub fn MessageAttachments(attachments: Vec<Attachment>) -> impl IntoView {
    let composer = use_composer();
    let items = attachments
        .into_iter()
        .map(|a| {
            let kind = a.kind.as_str();
            let title = describe(&a);
            let shown = a.clone();
            let thumb = move || {
                let url = composer.thumbnail(&shown);
                view! { <Preview attachment=shown.clone() url=url/> }
            };
            view! {
                <span class="attachment" data-testid="attachment" data-kind=kind title=title>
                    {thumb}
                </span>
            }
        })
        .collect_view();
    view! { <div class="message-attachments">{items}</div> }
}
