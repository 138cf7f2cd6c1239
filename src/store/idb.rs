//! Thin raw `web-sys` IndexedDB helpers: a request as a future, a transaction whose completion (or
//! abort, with its `DOMException`) is a future, the key ranges the store uses, which of many ids a
//! store may hold (one key range's keys: [`maybe_stored`]); and [`Span`], a
//! phase of sync's work as a user-timing measure (for the sync bench; the store's and the driver's).
//!
//! Why not rexie (the IndexedDB wrapper ARCHITECTURE.md names): rexie 0.6 keeps its `IdbDatabase` and
//! `IdbTransaction` private, so through it we cannot (a) see `transaction.error` when a transaction
//! aborts — which is the only place a `QuotaExceededError` shows up (its `done()` just says "Aborted"),
//! (b) set `onversionchange` to tell the UI, (c) react to `onblocked` on open (its `build()` hangs until
//! the other tab closes), or (d) rename a legacy object store during the upgrade. Every transaction must
//! come from the connection, so once the connection is ours the whole store talks to IndexedDB through
//! these helpers, and rexie is not a dependency at all.
//!
//! Futures resolve through a `Promise` whose resolve/reject are the request's handlers: continuation runs
//! in the microtask checkpoint of the success event, while the transaction is still active, so several
//! awaited requests can share one transaction (never await anything else inside one).

use js_sys::{Array, Promise};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{
    DomException, IdbDatabase, IdbKeyRange, IdbRequest, IdbTransaction, IdbTransactionMode,
};

use super::error::StoreError;

/// Error from a `DOMException`, or a generic one when the browser gave none.
pub(crate) fn dom_error(e: Option<DomException>, what: &str) -> StoreError {
    match e {
        Some(e) => StoreError::from_dom(&e.name(), &e.message()),
        None => StoreError::Idb {
            name: "UnknownError".into(),
            message: what.into(),
        },
    }
}

/// Error from a thrown `JsValue` (a synchronous IndexedDB call threw).
pub(crate) fn js_error(v: JsValue) -> StoreError {
    match v.dyn_into::<DomException>() {
        Ok(e) => StoreError::from_dom(&e.name(), &e.message()),
        Err(v) => StoreError::Idb {
            name: "Error".into(),
            message: v.as_string().unwrap_or_else(|| format!("{v:?}")),
        },
    }
}

/// Reads `keys` from `store` in one round trip: every `get` is queued before the first is awaited.
/// One value per key, in order; `undefined` where a key is absent.
pub(crate) async fn get_each<K: AsRef<str>>(
    store: &web_sys::IdbObjectStore,
    keys: &[K],
) -> Result<Vec<JsValue>, StoreError> {
    let reqs = keys
        .iter()
        .map(|k| store.get(&JsValue::from_str(k.as_ref())))
        .collect::<Result<Vec<_>, _>>()
        .map_err(js_error)?;
    let mut out = Vec::with_capacity(reqs.len());
    for r in &reqs {
        out.push(request(r).await?);
    }
    Ok(out)
}

/// Which of `ids` may be stored in `store`, keyed by them (sorted, each once): one `getAllKeys` over
/// `[least, greatest]`. An import's ids usually share a prefix, so that range holds few or no stored
/// keys, and only the ids found need a `get`. If the range is crowded (more than `4 * ids + 1000`
/// stored keys), all of them.
pub(crate) async fn maybe_stored<'a>(
    store: &web_sys::IdbObjectStore,
    ids: impl IntoIterator<Item = &'a str>,
) -> Result<Vec<&'a str>, StoreError> {
    let mut wanted: Vec<&str> = ids.into_iter().collect();
    // Equal `&str`s are indistinguishable, so the shared stable sort gives the same order.
    crate::engine::sort::sort_by(&mut wanted, |a, b| a.cmp(b));
    wanted.dedup();
    let (Some(lo), Some(hi)) = (wanted.first(), wanted.last()) else {
        return Ok(wanted);
    };
    let cap = (wanted.len() as u32).saturating_mul(4).saturating_add(1000);
    let range =
        IdbKeyRange::bound(&JsValue::from_str(lo), &JsValue::from_str(hi)).map_err(js_error)?;
    let keys: Array = request(
        &store
            .get_all_keys_with_key_and_limit(&range, cap)
            .map_err(js_error)?,
    )
    .await?
    .into();
    if keys.length() >= cap {
        return Ok(wanted);
    }
    let stored: std::collections::HashSet<String> =
        keys.iter().filter_map(|k| k.as_string()).collect();
    Ok(wanted
        .into_iter()
        .filter(|id| stored.contains(*id))
        .collect())
}

/// Awaits one request and returns its result. The request's handlers are replaced.
pub(crate) async fn request(req: &IdbRequest) -> Result<JsValue, StoreError> {
    let promise = Promise::new(&mut |resolve, reject| {
        req.set_onsuccess(Some(&resolve));
        req.set_onerror(Some(&reject));
    });
    let outcome = JsFuture::from(promise).await;
    req.set_onsuccess(None);
    req.set_onerror(None);
    match outcome {
        Ok(_) => req.result().map_err(js_error),
        Err(_) => Err(dom_error(
            req.error().ok().flatten(),
            "a storage request failed",
        )),
    }
}

/// A transaction plus a future for its end, registered before any request can complete.
pub(crate) struct Tx {
    pub tx: IdbTransaction,
    done: JsFuture,
}

impl Tx {
    pub fn new(db: &IdbDatabase, stores: &[&str], write: bool) -> Result<Tx, StoreError> {
        let names: Array = stores.iter().map(|s| JsValue::from_str(s)).collect();
        let mode = if write {
            IdbTransactionMode::Readwrite
        } else {
            IdbTransactionMode::Readonly
        };
        let tx = db
            .transaction_with_str_sequence_and_mode(&names, mode)
            .map_err(js_error)?;
        let done = JsFuture::from(Promise::new(&mut |resolve, reject| {
            tx.set_oncomplete(Some(&resolve));
            tx.set_onabort(Some(&reject));
        }));
        Ok(Tx { tx, done })
    }

    pub fn store(&self, name: &str) -> Result<web_sys::IdbObjectStore, StoreError> {
        self.tx.object_store(name).map_err(js_error)
    }

    /// Waits until the transaction commits. An abort becomes the transaction's error
    /// (`QuotaExceededError` -> [`StoreError::Full`]).
    pub async fn done(self) -> Result<(), StoreError> {
        match self.done.await {
            Ok(_) => Ok(()),
            Err(_) => Err(dom_error(
                self.tx.error(),
                "a storage transaction was aborted",
            )),
        }
    }

    /// Aborts (ignoring "already finished") and returns the transaction's own error when it has one
    /// (a request failed and the browser aborted it: that request's `ConstraintError`, or a
    /// `QuotaExceededError`), else `err`, which is then only a pending request's `AbortError`.
    pub async fn abort_with<T>(self, err: StoreError) -> Result<T, StoreError> {
        let _ = self.tx.abort();
        let cause = self.tx.error();
        let _ = self.done.await;
        match cause {
            Some(c) => Err(dom_error(Some(c), "a storage transaction was aborted")),
            None => Err(err),
        }
    }

    /// Aborts (ignoring "already finished") and returns `err`, so nothing of the transaction is kept.
    pub async fn fail<T>(self, err: StoreError) -> Result<T, StoreError> {
        let _ = self.tx.abort();
        let _ = self.done.await;
        Err(err)
    }
}

/// All keys `[prefix, ...]`: from `[prefix]` (sorts before any longer array) to `[prefix, []]`
/// (arrays sort after every number and string), so compound keys of one conversation are one range.
pub(crate) fn prefix_range(prefix: &str) -> Result<JsValue, StoreError> {
    let lower = Array::of1(&JsValue::from_str(prefix));
    let upper = Array::of2(&JsValue::from_str(prefix), &Array::new());
    IdbKeyRange::bound(&lower, &upper)
        .map(JsValue::from)
        .map_err(js_error)
}

/// `[prefix, lo] ..= [prefix, hi]` with optional open ends.
pub(crate) fn seq_range(
    prefix: &str,
    lo: f64,
    lo_open: bool,
    hi: Option<f64>,
    hi_open: bool,
) -> Result<JsValue, StoreError> {
    let p = JsValue::from_str(prefix);
    let lower = Array::of2(&p, &JsValue::from_f64(lo));
    let upper: JsValue = match hi {
        Some(h) => Array::of2(&p, &JsValue::from_f64(h)).into(),
        None => Array::of2(&p, &Array::new()).into(),
    };
    IdbKeyRange::bound_with_lower_open_and_upper_open(
        &lower,
        &upper,
        lo_open,
        hi_open && hi.is_some(),
    )
    .map(JsValue::from)
    .map_err(js_error)
}

/// Reads up to `limit` values from a cursor request (already opened with a range and direction).
pub(crate) async fn collect_cursor(
    req: &IdbRequest,
    limit: usize,
) -> Result<Vec<JsValue>, StoreError> {
    let mut out = Vec::new();
    if limit == 0 {
        return Ok(out);
    }
    loop {
        let c = request(req).await?;
        if c.is_null() || c.is_undefined() {
            break;
        }
        let cursor: web_sys::IdbCursorWithValue = c.unchecked_into();
        out.push(cursor.value().map_err(js_error)?);
        if out.len() >= limit {
            break;
        }
        cursor.continue_().map_err(js_error)?;
    }
    Ok(out)
}

/// Converts a record to a plain JS object (maps become objects, `None` becomes `null`).
///
/// Records cross the wasm boundary as JSON text, built by `serde_json` and turned into objects by the
/// browser's `JSON.parse` (and back with `JSON.stringify`): one call per record instead of one per
/// field, and every record type's serde code is the `serde_json` instantiation the app links anyway,
/// so no second serializer (serde-wasm-bindgen) is shipped.
pub(crate) fn to_js<T: serde::Serialize>(v: &T) -> Result<JsValue, StoreError> {
    let text = serde_json::to_string(v).map_err(|e| StoreError::Encode(e.to_string()))?;
    js_sys::JSON::parse(&text).map_err(js_error)
}

/// Reads a record back; damaged data is an error, never a panic.
pub(crate) fn from_js<T: serde::de::DeserializeOwned>(
    v: JsValue,
    what: &'static str,
) -> Result<T, StoreError> {
    let bad = |detail: String| StoreError::BadRecord { what, detail };
    // `stringify` throws on a BigInt or a cycle, and gives `undefined` for `undefined`: all damage.
    let text = js_sys::JSON::stringify(&v)
        .map_err(|e| {
            bad(e
                .dyn_ref::<js_sys::Error>()
                .map_or_else(|| "unreadable value".into(), |e| e.message().into()))
        })?
        .as_string()
        .ok_or_else(|| bad("not a stored record".into()))?;
    serde_json::from_str(&text).map_err(|e| bad(e.to_string()))
}

/// A phase of sync's work as a user-timing measure, `memoire-sync:<name>`, from [`Span::new`] to its
/// drop: the sync bench says which phase a long task ran in (the driver's and the store's). The mark and measure are cleared at
/// once (performance observers still see them), so a long-running page keeps none.
pub struct Span(&'static str);

impl Span {
    pub fn new(name: &'static str) -> Span {
        if let Some(p) = performance() {
            let _ = p.mark(name);
        }
        Span(name)
    }
}

impl Drop for Span {
    fn drop(&mut self) {
        let Some(p) = performance() else { return };
        let measure = format!("memoire-sync:{}", self.0);
        let _ = p.measure_with_str(&measure, self.0);
        p.clear_marks_with_mark_name(self.0);
        p.clear_measures_with_measure_name(&measure);
    }
}

fn performance() -> Option<web_sys::Performance> {
    web_sys::window()?.performance()
}
