//! Images made ready to store, for the services that take them in (the composer's attach, an
//! import's ZIP): decoded and resized by the browser off the main thread (`createImageBitmap` with
//! resize options, an `OffscreenCanvas` whose `convertToBlob` encodes in the background). The size
//! is `engine::attach::resized`'s; this file moves the pixels. Must not import `ui`.

use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{Blob, ImageBitmap, ImageBitmapOptions, ImageEncodeOptions, OffscreenCanvas};

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

/// The image `file` (of type `mime`) as stored: the file itself when it is small enough and of a
/// type every protocol takes as is (no GIF: an animation would reach a model as its first frame
/// at best), else the browser's resize, encoded as PNG (lossless; JPEG stays JPEG).
pub(crate) async fn stored_image(file: &Blob, mime: &str) -> Result<Ready, String> {
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
