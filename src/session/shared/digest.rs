//! Bytes and Blobs for the services that hold images: SHA-256 (WebCrypto) as the content key,
//! a Blob's bytes, and a Blob of bytes. Moves data; `engine::attach` decides.

use js_sys::{ArrayBuffer, Uint8Array};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::Blob;

async fn wait(p: Result<js_sys::Promise, JsValue>) -> Result<JsValue, String> {
    let p = p.map_err(crate::transport::js_text)?;
    JsFuture::from(p).await.map_err(crate::transport::js_text)
}

/// SHA-256 of `bytes`, lowercase hex.
pub(crate) async fn sha256_hex(bytes: &[u8]) -> Result<String, String> {
    let subtle = web_sys::window()
        .ok_or("no window")?
        .crypto()
        .map_err(crate::transport::js_text)?
        .subtle();
    let digest: ArrayBuffer = wait(subtle.digest_with_str_and_u8_array("SHA-256", bytes))
        .await?
        .unchecked_into();
    Ok(crate::engine::attach::hex(
        &Uint8Array::new(&digest).to_vec(),
    ))
}

/// A Blob's bytes.
pub(crate) async fn bytes_of(blob: &Blob) -> Result<Vec<u8>, String> {
    let buf: ArrayBuffer = wait(Ok(blob.array_buffer())).await?.unchecked_into();
    Ok(Uint8Array::new(&buf).to_vec())
}

/// A Blob of `bytes` with type `mime`.
pub(crate) fn blob_of(bytes: &[u8], mime: &str) -> Result<Blob, String> {
    let parts = js_sys::Array::of1(&Uint8Array::from(bytes));
    let opts = web_sys::BlobPropertyBag::new();
    opts.set_type(mime);
    Blob::new_with_u8_array_sequence_and_options(&parts, &opts).map_err(crate::transport::js_text)
}
