//! End-to-end encrypted sync, the browser half (issue 28, item 6): WebCrypto's PBKDF2, AES-GCM and
//! HMAC moving the bytes that `engine::sync::seal` says to move. [`unlock`] turns a passphrase and
//! the database's marker into keys (or makes the marker, for the first device), [`Sealer::send`]
//! seals a replicator request, sends it, and opens the answer; [`Link`] is where the loop's
//! requests go, through the sealer when encrypting (requests go out through `browser.rs`).
//!
//! Key derivation (`engine::sync::keys`, by the marker's version): v2, for every new marker, the
//! passphrase in NFC (the browser's own `String.prototype.normalize`, no table shipped),
//! PBKDF2-SHA-256 with [`ITERATIONS`] rounds to 256 bits, then HKDF-SHA-256 to an AES-256-GCM key and
//! an HMAC-SHA-256 key for document ids; v1 (databases made before it), 512 PBKDF2 bits split in
//! two. Both keys are made non-extractable. PBKDF2 rather than
//! Argon2id because WebCrypto runs it natively and off the main thread (the promise resolves when
//! the browser's crypto thread is done; the page keeps answering), at a cost the window
//! asks for (`e2ee_unlock_ms`, see benches/figures.txt); Argon2id is not in WebCrypto, and a wasm
//! Argon2id at a memory-hard setting would hold the main thread for seconds (or need a worker and
//! its own chunk). The salt is random per database, kept in the plaintext marker with the key
//! check, so a wrong passphrase is told before anything is written.
//!
//! One key per database: with no marker, a database that holds sealed documents is an error
//! ([`SealError::MarkerMissing`]), never a new key; only an empty one gets a new marker, and only
//! for a passphrase the strength floor takes (`keys::new_key_check`).
//!
//! The keys are kept in IndexedDB as non-extractable `CryptoKey`s (`store::SyncKeys`): a reload
//! does not ask again, and no script, even one running in the page, can read their bytes. The
//! passphrase is never stored.
//!
//! Changing the passphrase (`engine::sync::rotate` decides, `rotate.rs` here seals again):
//! [`change_passphrase`] checks the current passphrase against the marker, derives the new keys
//! (v2, a new salt), writes the marker's `next` and keeps both key sets; [`unlock`] then tells by
//! `rotate::standing` what the kept keys may do: sync, go on sealing again (old keys kept), or
//! nothing (only the old key: the passphrase changed, or is changing, elsewhere). A normal unlock
//! derives once, as before (`e2ee_unlock_ms`); only a typed passphrase while a change is under way
//! may derive twice (the new key first, then the old, to say which it is). Must not import `ui`.

use std::collections::HashMap;

use js_sys::{Array, ArrayBuffer, Object, Promise, Reflect, Uint8Array};
use serde_json::Value;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{CryptoKey, SubtleCrypto};

use super::browser::fetch;
use crate::engine::sync::blob;
use crate::engine::sync::keys::{self, Kdf};
use crate::engine::sync::rotate::{self, Standing};
use crate::engine::sync::seal::Unsealable::{NotEncrypted, Unnamed};
use crate::engine::sync::seal::{
    self, aad, outgoing, seal_request, Marker, MarkerError, Names, Opening, Route, CHECK,
    ITERATIONS, IV_LEN, MARKER_ID, SALT_LEN,
};
use crate::engine::sync::wire::encode;
use crate::engine::sync::{Reply, Request};
use crate::session::shared::held::Held;
use crate::store::{OldKeys, Span, Store, StoreError, SyncKeys};
use crate::transport::{TextLimits, Timeouts, TransportError};

/// What can go wrong with encryption, in words a user can act on.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SealError {
    #[error("Enter the encryption passphrase (Settings → Sync) to sync with encryption on.")]
    NoPassphrase,
    #[error("That passphrase does not open this sync database's encryption: nothing was synced or written. Type the passphrase used on your other devices (it cannot be recovered if lost).")]
    WrongPassphrase,
    #[error("This sync database is encrypted: turn on \"Encrypt end to end\" in Settings → Sync and enter its passphrase. Nothing was synced.")]
    EncryptedDatabase,
    #[error("The sync database's encryption was set up again with another passphrase (its marker changed): enter the new passphrase in Settings → Sync. Nothing was synced.")]
    Rekeyed,
    #[error("The encryption passphrase was changed on another device: enter the new one in Settings → Sync. Nothing was synced or written.")]
    PassphraseChanged,
    #[error("The encryption passphrase is being changed on another device: enter the new one in Settings → Sync to go on syncing. Nothing was synced or written.")]
    PassphraseChanging,
    #[error("A change of the encryption passphrase is already under way (begun on another device or before a reload): to take it over here, type the current passphrase and the one it changes to.")]
    ChangeUnderWay,
    #[error("Changing the encryption passphrase could not finish: some documents under the old one could not be deleted on the server (it refuses, or a device still writes under the old passphrase). It tries again on the next connection.")]
    RotationStuck,
    #[error("The sync database is not encrypted yet: turn on \"Encrypt end to end\" and save first; the passphrase can be changed after.")]
    NotEncrypted,
    #[error("{0}")]
    Marker(#[from] MarkerError),
    #[error("The sync database holds encrypted documents but its encryption marker is missing (deleted on the server?): nothing was synced, and no new key was made, which would split your history. Restore the database's `memoire-e2ee` document from a backup, or sync to a new database.")]
    MarkerMissing,
    #[error("{0}")]
    Weak(String),
    #[error("This browser cannot encrypt here ({0}); encrypted sync needs a secure page (https or localhost).")]
    Crypto(String),
    #[error("The sync server could not be asked about encryption ({0}); try again when it can be reached.")]
    Unreachable(String),
    #[error("The sync server answered HTTP {0} when asked about encryption: check the address and the credentials.")]
    Server(u16),
    /// A redirect, never followed with the password (`engine::failure::SYNC_REDIRECT_REFUSED`).
    #[error("Sync error: {}.", crate::engine::failure::SYNC_REDIRECT_REFUSED)]
    Redirected,
    /// Something to seal was missing: the request is not sent (never in plaintext instead).
    #[error("Sync did not send a request rather than send it unencrypted ({0}); it tries again.")]
    Unsealable(#[from] seal::Unsealable),
    #[error("{0}")]
    Store(#[from] StoreError),
}

impl From<keys::NoMarker> for SealError {
    fn from(e: keys::NoMarker) -> SealError {
        match e {
            keys::NoMarker::Missing => SealError::MarkerMissing,
            keys::NoMarker::NeedPassphrase => SealError::NoPassphrase,
            keys::NoMarker::Weak(why) => SealError::Weak(why),
        }
    }
}

/// A request about encryption that got no usable answer: a redirect (not followed) is the user's
/// to fix; anything else can pass.
pub(super) fn unreachable(e: TransportError) -> SealError {
    match e {
        TransportError::Redirected => SealError::Redirected,
        e => SealError::Unreachable(e.to_string()),
    }
}

fn crypto_err(e: JsValue) -> SealError {
    SealError::Crypto(crate::transport::js_text(e))
}

fn subtle() -> Result<SubtleCrypto, SealError> {
    let c = web_sys::window()
        .ok_or_else(|| SealError::Crypto("no window".into()))?
        .crypto()
        .map_err(crypto_err)?;
    Ok(c.subtle())
}

pub(super) fn random(n: usize) -> Result<Vec<u8>, SealError> {
    let mut b = vec![0u8; n];
    web_sys::window()
        .ok_or_else(|| SealError::Crypto("no window".into()))?
        .crypto()
        .map_err(crypto_err)?
        .get_random_values_with_u8_array(&mut b)
        .map_err(crypto_err)?;
    Ok(b)
}

fn obj(pairs: &[(&str, JsValue)]) -> Object {
    let o = Object::new();
    for (k, v) in pairs {
        let _ = Reflect::set(&o, &JsValue::from_str(k), v);
    }
    o
}

fn bytes(b: &[u8]) -> JsValue {
    Uint8Array::from(b).into()
}

fn usages(u: &[&str]) -> JsValue {
    u.iter()
        .map(|s| JsValue::from_str(s))
        .collect::<Array>()
        .into()
}

async fn wait(p: Result<Promise, JsValue>) -> Result<JsValue, SealError> {
    JsFuture::from(p.map_err(crypto_err)?)
        .await
        .map_err(crypto_err)
}

/// The two keys of a passphrase and salt, by the marker's derivation (`engine::sync::keys`).
pub(super) async fn derive(
    passphrase: &str,
    salt: &[u8],
    iterations: u32,
    kdf: Kdf,
) -> Result<(CryptoKey, CryptoKey), SealError> {
    let _span = Span::new("e2ee-unlock");
    let s = subtle()?;
    let pbkdf2 = obj(&[("name", "PBKDF2".into())]);
    let typed = match kdf.nfc() {
        true => String::from(js_sys::JsString::from(passphrase).normalize("NFC")),
        false => passphrase.to_string(),
    };
    let raw: Object = Uint8Array::from(typed.as_bytes()).into();
    let base = s.import_key_with_object("raw", &raw, &pbkdf2, false, &usages(&["deriveBits"]));
    let base: CryptoKey = wait(base).await?.unchecked_into();
    let params = obj(&[
        ("name", "PBKDF2".into()),
        ("hash", "SHA-256".into()),
        ("salt", bytes(salt)),
        ("iterations", iterations.into()),
    ]);
    let n = kdf.pbkdf2_bits();
    let bits = wait(s.derive_bits_with_object(&params, &base, n)).await?;
    let bits = Uint8Array::new(&bits.unchecked_into::<ArrayBuffer>());
    let keys = match kdf.hkdf() {
        None => split(&s, &bits).await,
        Some((aes, ids)) => expand(&s, &bits, aes, ids).await,
    };
    bits.fill(0, 0, n / 8);
    keys
}

fn aes_alg() -> Object {
    obj(&[("name", "AES-GCM".into()), ("length", 256.into())])
}

fn hmac_alg() -> Object {
    obj(&[
        ("name", "HMAC".into()),
        ("hash", "SHA-256".into()),
        ("length", 256.into()),
    ])
}

/// v1: 512 bits, the first half the AES key, the second the id key.
async fn split(s: &SubtleCrypto, bits: &Uint8Array) -> Result<(CryptoKey, CryptoKey), SealError> {
    let import = |part: Uint8Array, alg: Object, use_: &[&str]| {
        s.import_key_with_object("raw", &part, &alg, false, &usages(use_))
    };
    let aes = import(bits.subarray(0, 32), aes_alg(), &["encrypt", "decrypt"]);
    let aes: CryptoKey = wait(aes).await?.unchecked_into();
    let mac = import(bits.subarray(32, 64), hmac_alg(), &["sign"]);
    let mac: CryptoKey = wait(mac).await?.unchecked_into();
    Ok((aes, mac))
}

/// v2: 256 bits expanded by HKDF-SHA-256 into the AES key and the id key.
async fn expand(
    s: &SubtleCrypto,
    bits: &Uint8Array,
    aes_info: &[u8],
    ids_info: &[u8],
) -> Result<(CryptoKey, CryptoKey), SealError> {
    let hkdf = obj(&[("name", "HKDF".into())]);
    let base = s.import_key_with_object("raw", bits, &hkdf, false, &usages(&["deriveKey"]));
    let base: CryptoKey = wait(base).await?.unchecked_into();
    let key = |info: &[u8], alg: Object, use_: &[&str]| {
        let params = obj(&[
            ("name", "HKDF".into()),
            ("hash", "SHA-256".into()),
            ("salt", bytes(&[])),
            ("info", bytes(info)),
        ]);
        s.derive_key_with_object_and_object(&params, &base, &alg, false, &usages(use_))
    };
    let aes = key(aes_info, aes_alg(), &["encrypt", "decrypt"]);
    let aes: CryptoKey = wait(aes).await?.unchecked_into();
    let mac: CryptoKey = wait(key(ids_info, hmac_alg(), &["sign"]))
        .await?
        .unchecked_into();
    Ok((aes, mac))
}

/// Starts AES-GCM encryptions of `items` (additional data, plaintext): each `iv ‖ ciphertext`.
pub(super) async fn encrypt_all(
    key: &CryptoKey,
    items: &[(Vec<u8>, &[u8])],
) -> Result<Vec<Vec<u8>>, SealError> {
    let s = subtle()?;
    let mut ivs = Vec::with_capacity(items.len());
    let promises = Array::new();
    for (ad, plain) in items {
        let iv = random(IV_LEN)?;
        let alg = obj(&[
            ("name", "AES-GCM".into()),
            ("iv", bytes(&iv)),
            ("additionalData", bytes(ad)),
        ]);
        promises.push(&JsValue::from(
            s.encrypt_with_object_and_u8_array(&alg, key, plain)
                .map_err(crypto_err)?,
        ));
        ivs.push(iv);
    }
    let done = Array::from(&wait(Ok(Promise::all(&promises))).await?);
    Ok(ivs
        .into_iter()
        .zip(done.iter())
        .map(|(mut iv, ct)| {
            iv.extend(Uint8Array::new(&ct).to_vec());
            iv
        })
        .collect())
}

/// Decrypts `items` (additional data, `iv ‖ ciphertext`); `None` for each that does not open.
pub(super) async fn decrypt_all(
    key: &CryptoKey,
    items: &[(String, Vec<u8>)],
) -> Result<Vec<Option<Vec<u8>>>, SealError> {
    let s = subtle()?;
    let promises = Array::new();
    for (ad, blob) in items {
        let (iv, ct) = blob.split_at(IV_LEN.min(blob.len()));
        let alg = obj(&[
            ("name", "AES-GCM".into()),
            ("iv", bytes(iv)),
            ("additionalData", bytes(&aad(ad))),
        ]);
        promises.push(&JsValue::from(
            s.decrypt_with_object_and_u8_array(&alg, key, ct)
                .map_err(crypto_err)?,
        ));
    }
    let settled = Array::from(&wait(Ok(Promise::all_settled(&promises))).await?);
    Ok(settled
        .iter()
        .map(|r| {
            let ok = Reflect::get(&r, &"status".into()).ok()?.as_string()? == "fulfilled";
            let v = Reflect::get(&r, &"value".into()).ok()?;
            ok.then(|| Uint8Array::new(&v).to_vec())
        })
        .collect())
}

/// HMAC-SHA-256 of each plain id: its sealed id.
pub(super) async fn name_all(key: &CryptoKey, ids: &[String]) -> Result<Vec<String>, SealError> {
    let s = subtle()?;
    let alg = obj(&[("name", "HMAC".into())]);
    let promises = Array::new();
    for id in ids {
        let p = s
            .sign_with_object_and_u8_array(&alg, key, id.as_bytes())
            .map_err(crypto_err)?;
        promises.push(&p);
    }
    let done = Array::from(&wait(Ok(Promise::all(&promises))).await?);
    Ok(done
        .iter()
        .map(|m| seal::sealed_id(&Uint8Array::new(&m).to_vec()))
        .collect())
}

/// The limits of the marker's and the purge's requests (as "Test connection"'s: an answer within
/// 20 s, at most 1 MiB).
pub(super) const LIMITS: TextLimits = TextLimits {
    max_bytes: 1 << 20,
    timeouts: Timeouts {
        first_byte_ms: 10_000,
        idle_ms: 10_000,
    },
    total_ms: 20_000,
};

/// The marker's URL.
fn marker_url(base: &str, db: &str) -> String {
    format!("{base}/{}/{MARKER_ID}", encode(db))
}

/// Reads the database's marker: `Some((marker, rev))`, or `None` when there is none.
pub(super) async fn read_marker(
    base: &str,
    db: &str,
    auth: Option<&str>,
) -> Result<Option<(Marker, String)>, SealError> {
    let url = marker_url(base, db);
    let (status, body) = fetch(&url, "GET", None, auth, None, LIMITS)
        .await
        .map_err(unreachable)?;
    match status {
        200 => {
            let v: Value = serde_json::from_str(&body).map_err(|_| MarkerError::Unreadable)?;
            let rev = v.get("_rev").and_then(Value::as_str).unwrap_or_default();
            Ok(Some((Marker::from_json(&v)?, rev.to_string())))
        }
        404 => Ok(None),
        s => Err(SealError::Server(s)),
    }
}

/// Writes a marker for `salt` under `aes` (the database is created first when it is missing).
async fn write_marker(
    base: &str,
    db: &str,
    auth: Option<&str>,
    salt: &[u8],
    aes: &CryptoKey,
) -> Result<(), SealError> {
    let _ = fetch(
        &format!("{base}/{}", encode(db)),
        "PUT",
        None,
        auth,
        None,
        LIMITS,
    )
    .await;
    let marker = Marker {
        kdf: Kdf::NEW,
        salt: salt.to_vec(),
        iterations: ITERATIONS,
        check: key_check(aes).await?,
        next: None,
        rotated_from: None,
    };
    put_marker(base, db, auth, &marker, None).await
}

/// The key check of `aes`: [`CHECK`] sealed under it.
async fn key_check(aes: &CryptoKey) -> Result<Vec<u8>, SealError> {
    let check = encrypt_all(aes, &[(MARKER_ID.as_bytes().to_vec(), CHECK)]).await?;
    Ok(check.into_iter().next().unwrap_or_default())
}

/// Writes marker `m` over revision `rev` (`None`: a new one). A `409`: another device wrote it
/// meanwhile ([`SealError::Rekeyed`]; the caller reads it again).
pub(super) async fn put_marker(
    base: &str,
    db: &str,
    auth: Option<&str>,
    m: &Marker,
    rev: Option<&str>,
) -> Result<(), SealError> {
    let body = m.to_json(rev).to_string();
    let (status, _) = fetch(
        &marker_url(base, db),
        "PUT",
        Some(&body),
        auth,
        None,
        LIMITS,
    )
    .await
    .map_err(unreachable)?;
    match status {
        200..=202 => Ok(()),
        409 => Err(SealError::Rekeyed),
        s => Err(SealError::Server(s)),
    }
}

/// Whether `aes` opens the marker's key check.
pub(super) async fn opens(aes: &CryptoKey, m: &Marker) -> Result<bool, SealError> {
    let got = decrypt_all(aes, &[(MARKER_ID.to_string(), m.check.clone())]).await?;
    Ok(got.into_iter().next().flatten().as_deref() == Some(CHECK))
}

pub(super) fn b64(salt: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(salt)
}

/// The keys `passphrase` derives with marker `m`'s salt and rounds, if they open its key check.
async fn from_marker(
    database: String,
    passphrase: &str,
    m: &Marker,
) -> Result<SyncKeys, SealError> {
    let (aes, mac) = derive(passphrase, &m.salt, m.iterations, m.kdf).await?;
    if !opens(&aes, m).await? {
        return Err(SealError::WrongPassphrase);
    }
    Ok(SyncKeys {
        database,
        salt: b64(&m.salt),
        aes,
        mac,
        old: None,
    })
}

pub(super) fn unb64(salt: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(salt)
        .unwrap_or_default()
}

/// Whether the database holds a sealed document (an `x:` id): then it has a key, and a missing
/// marker must not make another.
async fn holds_sealed(base: &str, db: &str, auth: Option<&str>) -> Result<bool, SealError> {
    let url = format!(
        "{base}/{}/_all_docs?startkey=%22x%3A%22&endkey=%22x%3B%22&limit=1",
        encode(db)
    );
    let (status, body) = fetch(&url, "GET", None, auth, None, LIMITS)
        .await
        .map_err(unreachable)?;
    match status {
        200 => {}
        // No database yet: nothing sealed in it.
        404 => return Ok(false),
        s => return Err(SealError::Server(s)),
    }
    let v: Value = serde_json::from_str(&body).unwrap_or_default();
    Ok(v.get("rows")
        .and_then(Value::as_array)
        .is_some_and(|r| !r.is_empty()))
}

/// The keys for database `database` (`{base}/{db}`): the kept ones when they still open its marker,
/// else derived from `passphrase` and checked against the marker. With no marker: an error when
/// the database holds sealed documents (one key per database), else a new salt and marker for a
/// passphrase the strength floor takes (this device turns encryption on; kept keys alone do not
/// make a marker again). A wrong passphrase writes nothing. While the passphrase changes, the keys
/// carry the old ones (`SyncKeys::old`) only on the device that changes it: its next connection
/// seals again (`rotate.rs`) before it syncs.
pub async fn unlock(
    store: &Store,
    base: &str,
    db: &str,
    auth: Option<&str>,
    passphrase: Option<&str>,
) -> Result<SyncKeys, SealError> {
    let database = format!("{base}/{db}");
    let kept = store.sync_keys().await?.filter(|k| k.database == database);
    let marker = read_marker(base, db, auth).await?;
    if marker.is_none() {
        let sealed = holds_sealed(base, db, auth).await?;
        keys::without_marker(sealed, passphrase).map_err(SealError::from)?;
    }
    if let Some(k) = kept.clone().filter(|_| passphrase.is_none()) {
        return match &marker {
            Some((m, _)) => kept_keys(store, m, k).await,
            None => Err(SealError::NoPassphrase),
        };
    }
    let passphrase = passphrase
        .filter(|p| !p.is_empty())
        .ok_or(SealError::NoPassphrase)?;
    let keys = match marker {
        Some((m, _)) => typed_keys(database, passphrase, &m, kept).await?,
        None => new_marker(database, base, db, auth, passphrase).await?,
    };
    store.set_sync_keys(&keys).await?;
    Ok(keys)
}

/// Kept keys against marker `m` (`rotate::standing`): the ones to sync with (the old ones kept only
/// while this device changes the passphrase, dropped once the change is done), or why not.
async fn kept_keys(store: &Store, m: &Marker, k: SyncKeys) -> Result<SyncKeys, SealError> {
    let old = k.old.as_ref().map(|o| unb64(&o.salt));
    let standing = rotate::standing(m, &unb64(&k.salt), old.as_deref());
    let against = match standing {
        Standing::Current => m,
        Standing::Rotating | Standing::NextOnly => m.next.as_deref().unwrap_or(m),
        Standing::Leaving => return Err(SealError::PassphraseChanging),
        Standing::Changed => return Err(SealError::PassphraseChanged),
        Standing::Other => return Err(SealError::Rekeyed),
    };
    if !opens(&k.aes, against).await? {
        return Err(SealError::Rekeyed);
    }
    let keep_old = match (&k.old, standing) {
        (Some(o), Standing::Rotating) => opens(&o.aes, m).await?,
        _ => false,
    };
    if keep_old || k.old.is_none() {
        return Ok(k);
    }
    let k = SyncKeys { old: None, ..k };
    store.set_sync_keys(&k).await?;
    Ok(k)
}

/// The keys a typed passphrase opens in marker `m`. While a change of passphrase is under way: the
/// new one's (with the old keys this device kept, when it is the one changing it), and the old
/// one is refused ([`SealError::PassphraseChanging`]: nothing is written under it any more).
async fn typed_keys(
    database: String,
    passphrase: &str,
    m: &Marker,
    kept: Option<SyncKeys>,
) -> Result<SyncKeys, SealError> {
    let Some(next) = m.next.as_deref() else {
        return from_marker(database, passphrase, m).await;
    };
    match from_marker(database.clone(), passphrase, next).await {
        Ok(mut k) => {
            k.old = kept
                .filter(|c| c.database == database && c.salt == k.salt)
                .and_then(|c| c.old)
                .filter(|o| unb64(&o.salt) == m.salt);
            Ok(k)
        }
        Err(SealError::WrongPassphrase) => match from_marker(database, passphrase, m).await {
            Ok(_) => Err(SealError::PassphraseChanging),
            Err(e) => Err(e),
        },
        Err(e) => Err(e),
    }
}

/// Begins changing the passphrase of database `{base}/{db}` from `current` to `new`
/// (`engine::sync::rotate`): `current` must open the marker (a wrong one writes nothing), `new`
/// must pass the strength floor; the new keys (v2, a new salt) go into the marker's `next` and are
/// kept with the old ones, so the next connection seals every document again, and a reload goes
/// on without asking. A change already under way is taken over when `new` opens its `next` (the
/// device that began it lost its keys, or this one reloaded before keeping them).
pub async fn change_passphrase(
    store: &Store,
    base: &str,
    db: &str,
    auth: Option<&str>,
    current: &str,
    new: &str,
) -> Result<(), SealError> {
    keys::new_key_check(new).map_err(SealError::Weak)?;
    let database = format!("{base}/{db}");
    let (m, rev) = match read_marker(base, db, auth).await? {
        Some(m) => m,
        None if holds_sealed(base, db, auth).await? => return Err(SealError::MarkerMissing),
        None => return Err(SealError::NotEncrypted),
    };
    let old = from_marker(database.clone(), current, &m).await?;
    let old = OldKeys {
        salt: old.salt,
        aes: old.aes,
        mac: old.mac,
    };
    let keys = match m.next.as_deref() {
        Some(next) => {
            let k = from_marker(database, new, next)
                .await
                .map_err(|e| match e {
                    SealError::WrongPassphrase => SealError::ChangeUnderWay,
                    e => e,
                })?;
            SyncKeys {
                old: Some(old),
                ..k
            }
        }
        None => {
            let salt = random(SALT_LEN)?;
            let (aes, mac) = derive(new, &salt, ITERATIONS, Kdf::NEW).await?;
            let check = key_check(&aes).await?;
            let next = rotate::begin(&m, salt.clone(), ITERATIONS, check)
                .ok_or(SealError::ChangeUnderWay)?;
            put_marker(base, db, auth, &next, Some(&rev)).await?;
            SyncKeys {
                database,
                salt: b64(&salt),
                aes,
                mac,
                old: Some(old),
            }
        }
    };
    store.set_sync_keys(&keys).await?;
    Ok(())
}

/// A new salt, key and marker for an empty database (`keys::without_marker` said it may have one;
/// or, when another device made the marker meanwhile, the keys of that one).
async fn new_marker(
    database: String,
    base: &str,
    db: &str,
    auth: Option<&str>,
    passphrase: &str,
) -> Result<SyncKeys, SealError> {
    let salt = random(SALT_LEN)?;
    let (aes, mac) = derive(passphrase, &salt, ITERATIONS, Kdf::NEW).await?;
    match write_marker(base, db, auth, &salt, &aes).await {
        Ok(()) => Ok(SyncKeys {
            database,
            salt: b64(&salt),
            aes,
            mac,
            old: None,
        }),
        // Another device made the marker meanwhile: this passphrase must open that one.
        Err(SealError::Rekeyed) => match read_marker(base, db, auth).await? {
            Some((m, _)) => from_marker(database, passphrase, &m).await,
            None => Err(SealError::Rekeyed),
        },
        Err(e) => Err(e),
    }
}

/// With encryption off: refuses a database another device encrypted, and a server that redirects
/// (a network failure is left to the replicator, which reports and retries it).
pub async fn guard_plain(base: &str, db: &str, auth: Option<&str>) -> Result<(), SealError> {
    match read_marker(base, db, auth).await {
        Ok(Some(_)) | Err(SealError::Marker(_)) => Err(SealError::EncryptedDatabase),
        Err(SealError::Redirected) => Err(SealError::Redirected),
        _ => Ok(()),
    }
}

/// Whether the database holds an encryption marker yet (asked before a device turns encryption
/// on: the first to do so keeps the plain copies it finds while it encrypts, `check::plain_copies`).
pub async fn has_marker(base: &str, db: &str, auth: Option<&str>) -> Result<bool, SealError> {
    Ok(read_marker(base, db, auth).await?.is_some())
}

/// A request sent through the seal: the answer (as the replicator reads it), the plain copies
/// of our documents the server still held, and why documents in it could not be opened.
pub struct Sent {
    pub out: Result<(u16, Reply), TransportError>,
    pub plain: Vec<Value>,
    pub unopened: Vec<String>,
}

/// Seals and opens one connection's requests and answers.
pub struct Sealer {
    keys: SyncKeys,
    db: String,
    store: Store,
    naming: Held<Naming>,
}

/// What a [`Sealer`] learns while its connection runs: the sealed ids named so far.
#[derive(Default)]
struct Naming {
    names: Names,
    /// Every stored id was named (once, for a deletion of an id not met yet).
    named_all: bool,
}

impl Sealer {
    pub fn new(keys: SyncKeys, db: &str, store: Store) -> Sealer {
        Sealer {
            keys,
            db: db.to_string(),
            store,
            naming: Held::default(),
        }
    }

    /// Names the plain ids not named yet.
    async fn name(&self, ids: Vec<String>) -> Result<(), SealError> {
        let new: Vec<String> = self.naming.with(|n| {
            ids.into_iter()
                .filter(|id| n.names.sealed(id).is_none())
                .collect()
        });
        if new.is_empty() {
            return Ok(());
        }
        let sealed = name_all(&self.keys.mac, &new).await?;
        self.naming.with(|n| {
            for (p, s) in new.iter().zip(&sealed) {
                n.names.learn(p, s);
            }
        });
        Ok(())
    }

    async fn seal(&self, req: &Request) -> Result<(Route, Request), SealError> {
        let route = seal::route(req, &self.db);
        let out = outgoing(req, &route);
        self.name(out.ids).await?;
        let items = self.naming.with(|n| {
            let bound =
                |id: &String| (n.names.sealed(id).map(aad)).ok_or_else(|| Unnamed(id.clone()));
            out.docs
                .iter()
                .map(|(_, id, bytes)| Ok((bound(id)?, bytes.as_slice())))
                .collect::<Result<Vec<(Vec<u8>, &[u8])>, seal::Unsealable>>()
        })?;
        let blobs = encrypt_all(&self.keys.aes, &items).await?;
        let blobs: HashMap<usize, Vec<u8>> =
            out.docs.iter().map(|(i, _, _)| *i).zip(blobs).collect();
        let sealed = self
            .naming
            .with(|n| seal_request(req, &route, &n.names, &blobs))?;
        Ok((route, sealed))
    }

    async fn open(&self, route: &Route, status: u16, body: String) -> Result<Sent, SealError> {
        let name_all = matches!(route, Route::Changes { .. })
            && self.naming.with(|n| {
                let go = !n.named_all && n.names.misses_deleted(&body);
                n.named_all |= go;
                go
            });
        if name_all {
            let ids: Vec<String> = self.store.sync_doc_ids().await?.into_iter().collect();
            self.name(ids).await?;
        }
        let (opening, sealed) = {
            let _span = Span::new("open.read");
            // Cut to the rows asked for before anything is decrypted.
            let mut o = Opening::new(route, status, body);
            let sealed = o.sealed();
            (o, sealed)
        };
        let plains = {
            let _span = Span::new("open.decrypt");
            decrypt_all(&self.keys.aes, &sealed).await?
        };
        let _span = Span::new("open.write");
        let o = self.naming.with(|n| opening.finish(&mut n.names, plains));
        Ok(Sent {
            out: Ok((status, o.body)),
            plain: o.plain,
            unopened: o.refused,
        })
    }

    /// Seals `req`, sends it, opens the answer. A failure to encrypt is reported as the request's
    /// failure (the replicator retries it after a backoff).
    pub async fn send(
        &self,
        req: Request,
        base: &str,
        auth: Option<&str>,
        abort: Option<&web_sys::AbortController>,
        limits: TextLimits,
    ) -> Sent {
        // A failure to encrypt or decrypt is reported as the request's failure: retried later.
        let failed = |e: SealError| Sent {
            out: Err(TransportError::Network(e.to_string())),
            plain: Vec::new(),
            unopened: Vec::new(),
        };
        let (route, req) = match self.seal(&req).await {
            Ok(r) => r,
            Err(e) => return failed(e),
        };
        let url = req.url(base);
        let method = req.method.as_str();
        let out = fetch(&url, method, req.body.as_deref(), auth, abort, limits).await;
        match out {
            Ok((status, body)) => self.open(&route, status, body).await.unwrap_or_else(failed),
            Err(e) => Sent {
                out: Err(e),
                plain: Vec::new(),
                unopened: Vec::new(),
            },
        }
    }

    /// The server id of the plain id `plain` (its HMAC, named once).
    pub async fn server_id(&self, plain: &str) -> Result<String, SealError> {
        self.name(vec![plain.to_string()]).await?;
        let sealed = self
            .naming
            .with(|n| n.names.sealed(plain).map(str::to_string));
        Ok(sealed.ok_or_else(|| Unnamed(plain.to_string()))?)
    }

    /// An image's blob document sealed (`engine::sync::blob`): its envelope under `server_id`, and
    /// its bytes as `iv ‖ ciphertext` bound to `blob::sealed_aad(server_id)`.
    pub async fn seal_blob(
        &self,
        server_id: &str,
        doc: &Value,
        bytes: &[u8],
    ) -> Result<(Value, Vec<u8>), SealError> {
        let plain = seal::plaintext(doc)
            .map(|(_, p)| p)
            .ok_or_else(|| NotEncrypted(server_id.to_string()))?;
        let items: Vec<(Vec<u8>, &[u8])> = vec![
            (aad(server_id), plain.as_slice()),
            (aad(&blob::sealed_aad(server_id)), bytes),
        ];
        let mut out = encrypt_all(&self.keys.aes, &items).await?.into_iter();
        let missing = || NotEncrypted(server_id.to_string());
        let (envelope, sealed) = (
            out.next().ok_or_else(missing)?,
            out.next().ok_or_else(missing)?,
        );
        Ok((seal::envelope(server_id, None, &envelope), sealed))
    }

    /// A fetched blob's bytes opened; `None` when they do not open with this key.
    pub async fn open_blob(
        &self,
        server_id: &str,
        sealed: Vec<u8>,
    ) -> Result<Option<Vec<u8>>, SealError> {
        let items = vec![(blob::sealed_aad(server_id), sealed)];
        Ok(decrypt_all(&self.keys.aes, &items).await?.pop().flatten())
    }

    /// Deletes plain copies on the server (their content was kept locally first).
    pub async fn purge(&self, plain: &[Value], base: &str, auth: Option<&str>) {
        let Some(body) = seal::purge_body(plain) else {
            return;
        };
        let url = format!("{base}/{}/_bulk_docs", encode(&self.db));
        if let Err(e) = fetch(&url, "POST", Some(&body), auth, None, LIMITS).await {
            web_sys::console::warn_1(&JsValue::from_str(&format!(
                "memoire sync: plain copies were not deleted on the server yet ({e}); next time"
            )));
        }
    }
}

/// Where the loop's requests go: the server, its database, its credentials, and the seal when
/// encrypting.
pub(super) struct Link<'a> {
    pub(super) base: &'a str,
    pub(super) db: &'a str,
    pub(super) auth: Option<&'a str>,
    pub(super) sealer: Option<&'a Sealer>,
}

impl Link<'_> {
    /// Sends one replicator request (sealed and opened when encrypting).
    pub(super) async fn send(
        &self,
        req: Request,
        abort: Option<&web_sys::AbortController>,
        limits: TextLimits,
    ) -> Sent {
        match self.sealer {
            Some(s) => s.send(req, self.base, self.auth, abort, limits).await,
            None => {
                let url = req.url(self.base);
                let (method, body) = (req.method.as_str(), req.body.as_deref());
                Sent {
                    out: fetch(&url, method, body, self.auth, abort, limits)
                        .await
                        .map(|(status, text)| (status, Reply::Text(text))),
                    plain: Vec::new(),
                    unopened: Vec::new(),
                }
            }
        }
    }
}
