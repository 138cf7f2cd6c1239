//! The least an app on Memoire's stack does before it is usable, for start-bounds.bench.mjs: its
//! wasm instantiated, a Leptos view mounted (the conversation list, "opening", and a composer),
//! IndexedDB opened and one store read, the list drawn again, the static first screen removed.
//! Nothing else: no settings, no locks, no sync, no second read.

use leptos::prelude::*;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

/// The result of `r` once it succeeds (null if it fails).
async fn done(r: &web_sys::IdbRequest) -> JsValue {
    let wait = js_sys::Promise::new(&mut |ok, _| {
        let ok = Closure::once_into_js(move |_: web_sys::Event| {
            let _ = ok.call0(&JsValue::NULL);
        });
        r.set_onsuccess(Some(ok.unchecked_ref()));
        r.set_onerror(Some(ok.unchecked_ref()));
    });
    let _ = wasm_bindgen_futures::JsFuture::from(wait).await;
    r.result().unwrap_or(JsValue::NULL)
}

/// Opens the database (made on a first visit) and reads every record of its one store.
async fn read() -> Option<u32> {
    let idb = web_sys::window()?.indexed_db().ok()??;
    let open = idb.open_with_u32("minimal-app", 1).ok()?;
    let request = open.clone();
    let upgrade = Closure::once_into_js(move |_: web_sys::Event| {
        if let Ok(db) = request.result() {
            let _ = db
                .unchecked_into::<web_sys::IdbDatabase>()
                .create_object_store("conversations");
        }
    });
    open.set_onupgradeneeded(Some(upgrade.unchecked_ref()));
    let db: web_sys::IdbDatabase = done(&open).await.dyn_into().ok()?;
    let tx = db.transaction_with_str("conversations").ok()?;
    let all = tx.object_store("conversations").ok()?.get_all().ok()?;
    Some(done(&all).await.dyn_into::<js_sys::Array>().ok()?.length())
}

fn main() {
    let (listed, set_listed) = signal(None::<u32>);
    wasm_bindgen_futures::spawn_local(
        async move { set_listed.set(Some(read().await.unwrap_or(0))) },
    );
    mount_to_body(move || {
        view! {
            <ul data-testid="conversation-list">
                {move || match listed.get() {
                    None => view! { <li class="spinner">"Opening…"</li> }.into_any(),
                    Some(_) => view! { <li class="empty">"No conversations yet"</li> }.into_any(),
                }}
            </ul>
            <textarea data-testid="composer-input"></textarea>
        }
    });
    let document = web_sys::window().and_then(|w| w.document());
    if let Some(screen) = document.and_then(|d| d.get_element_by_id("first-screen")) {
        screen.remove();
    }
}
