//! Views loaded on first use: a view behind a split point (`#[wasm_split(name)]`: the view and what
//! only it reaches are a wasm chunk, fetched the first time the view is shown; ARCHITECTURE.md
//! "The split build") is a plain function building it, handed out by its split function once the
//! chunk is here. [`lazy`] shows a placeholder of the view's size until then, so nothing jumps.
//! Must not import `crate::store` or `crate::transport`.

use leptos::prelude::*;
use leptos::task::spawn_local;
use std::future::Future;

/// A view's constructor, built in its chunk (a plain function: `Copy`).
pub type Built = fn() -> AnyView;

/// Shows the view `load` hands out while `when` holds: the first time, `placeholder` while its
/// chunk is fetched (one fetch at a time); a fetch that fails goes to `failed` and the next showing
/// tries again.
pub fn lazy<E, Fut>(
    when: impl Fn() -> bool + Copy + Send + Sync + 'static,
    load: fn() -> Fut,
    placeholder: fn() -> AnyView,
    failed: impl Fn(E) + Copy + 'static,
) -> impl IntoView
where
    Fut: Future<Output = Result<Built, E>> + 'static,
    E: 'static,
{
    let built = RwSignal::new(None::<Built>);
    let fetching = StoredValue::new(false);
    Effect::new(move |_| {
        if when() && built.with_untracked(Option::is_none) && !fetching.get_value() {
            fetching.set_value(true);
            spawn_local(async move {
                let result = load().await;
                fetching.set_value(false);
                match result {
                    Ok(view) => built.set(Some(view)),
                    Err(e) => failed(e),
                }
            });
        }
    });
    move || when().then(|| built.get().map_or_else(placeholder, |view| view()))
}
