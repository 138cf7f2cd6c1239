//! Entry point: installs the panic hook and mounts the app. Nothing else lives here.

#[cfg(target_arch = "wasm32")]
fn main() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(memoire::ui::App);
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!("Memoire runs in the browser: build it with `make serve`.");
}
