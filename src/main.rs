//! Entry point: installs the panic hook, mounts the app (`ui::mount`: the session's opening begins
//! first) and lets it take over index.html's static first screen in the same task
//! (`ui::first_screen`). Nothing else lives here.

#[cfg(target_arch = "wasm32")]
fn main() {
    console_error_panic_hook::set_once();
    memoire::ui::mount();
    memoire::ui::first_screen::hand_over();
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!("Memoire runs in the browser: build it with `make serve`.");
}
