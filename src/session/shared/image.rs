//! Images made ready to store, for the services that take them in (the composer's attach, an
//! import's ZIP): decoded and resized by the browser off the main thread (`createImageBitmap` with
//! resize options, an `OffscreenCanvas` whose `convertToBlob` encodes in the background). The size
//! is `engine::attach::resized`'s; this file moves the pixels. Before anything decodes an image its
//! pixel size is read from its header (`engine::attach::image_size`, its first bytes only) and a
//! huge one refused (`pixels_check`): a small file can decode to gigabytes. Must not import `ui`.

use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{Blob, ImageBitmap, ImageBitmapOptions, ImageEncodeOptions, OffscreenCanvas};

use super::digest::bytes_of;
use crate::engine::attach;

/// An image as it is stored: its Blob, type and pixels.
pub(crate) struct Ready {
    pub blob: Blob,
    pub mime: String,
    pub width: u32,
    pub height: u32,
}

fn js_err(what: &str) -> impl Fn(JsValue) -> String + '_ {
    move |e| format!("{what}: {}", crate::transport::js_text(e))
}

async fn wait<T: JsCast>(p: Result<js_sys::Promise, JsValue>, what: &str) -> Result<T, String> {
    let v = JsFuture::from(p.map_err(js_err(what))?)
        .await
        .map_err(js_err(what))?;
    v.dyn_into::<T>()
        .map_err(|_| format!("{what}: the browser gave no result"))
}

async fn bitmap(file: &Blob, size: Option<(u32, u32)>) -> Result<ImageBitmap, String> {
    let w = web_sys::window().ok_or("no window")?;
    let p = match size {
        None => w.create_image_bitmap_with_blob(file),
        Some((width, height)) => {
            let o = ImageBitmapOptions::new();
            o.set_resize_width(width);
            o.set_resize_height(height);
            o.set_resize_quality(web_sys::ResizeQuality::High);
            w.create_image_bitmap_with_blob_and_image_bitmap_options(file, &o)
        }
    };
    wait(
        p,
        "This image could not be read (is it a PNG, JPEG, WebP or GIF?)",
    )
    .await
}

/// Refuses an image whose header says it is too large to decode, or says no size: read from its
/// first [`attach::IMAGE_HEAD_BYTES`] (the whole file when the size is not in them).
async fn header_check(file: &Blob, name: &str) -> Result<(), String> {
    let head = file
        .slice_with_f64_and_f64(0.0, attach::IMAGE_HEAD_BYTES as f64)
        .map_err(js_err("reading the image"))?;
    let mut size = attach::image_size(&bytes_of(&head).await?);
    if size.is_none() && file.size() > attach::IMAGE_HEAD_BYTES as f64 {
        size = attach::image_size(&bytes_of(file).await?);
    }
    attach::pixels_check(name, size)
}

/// The image `file` (named `name`, of type `mime`) as stored: the file itself when it is small
/// enough and of a type every protocol takes as is (no GIF: an animation would reach a model as
/// its first frame at best), else the browser's resize, encoded as PNG (lossless; JPEG stays
/// JPEG). One whose header says it is too large, or says no size, is refused undecoded.
pub(crate) async fn stored_image(file: &Blob, name: &str, mime: &str) -> Result<Ready, String> {
    header_check(file, name).await?;
    let full = bitmap(file, None).await?;
    let (w0, h0) = (full.width(), full.height());
    full.close();
    let (w, h) = attach::resized(w0, h0);
    let mime = mime.to_ascii_lowercase();
    if (w, h) == (w0, h0) && mime != "image/gif" {
        return Ok(Ready {
            blob: file.clone(),
            mime,
            width: w,
            height: h,
        });
    }
    let out = if mime == "image/jpeg" {
        "image/jpeg"
    } else {
        "image/png"
    };
    let small = bitmap(file, Some((w, h))).await?;
    let canvas = OffscreenCanvas::new(w, h).map_err(js_err("resizing"))?;
    let ctx: web_sys::ImageBitmapRenderingContext = canvas
        .get_context("bitmaprenderer")
        .map_err(js_err("resizing"))?
        .ok_or("resizing: no canvas")?
        .unchecked_into();
    ctx.transfer_from_image_bitmap(&small);
    let opts = ImageEncodeOptions::new();
    opts.set_type(out);
    opts.set_quality(0.9);
    let blob: Blob = wait(canvas.convert_to_blob_with_options(&opts), "resizing").await?;
    Ok(Ready {
        blob,
        mime: out.to_string(),
        width: w,
        height: h,
    })
}
