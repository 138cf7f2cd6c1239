//! The Leptos interface: sidebar (`library`), chat pane (`chat`, about 60%), memory pane (`memory`,
//! about 40%), settings dialog (`settings`, with `sync`), backup menu (`transfer`), and the banner
//! (`shell`). Each domain folder holds its views and its store (`store.rs`): a `Copy` struct whose
//! signals are private, read by views through its reader methods (tracked inside a reactive
//! closure; no signal handle is handed out) and changed only by its own actions and event handlers (`events` dispatches the session's events to them). Only the stores call the
//! session, through `backend`, its one holder. This module builds the stores, provides each as its
//! one context (`stores`), opens the session and lays the app out. Reusable browser behaviours are in
//! `behaviour`, the badge that explains itself on a tap in `badge`, the address in `route`, the layout this browser remembers in `prefs`, the takeover of index.html's static first screen in `first_screen`, views loaded on first use (behind a split point) in `lazy`. Must not import `crate::store` or `crate::transport`.

pub mod about;
pub mod backend;
pub mod badge;
pub mod behaviour;
pub mod chat;
pub mod events;
pub mod first_screen;
pub mod flow;
pub mod highlight;
pub mod lazy;
pub mod library;
pub mod math;
pub mod memory;
pub mod opening;
pub mod prefs;
pub mod projects;
pub mod route;
pub mod settings;
pub mod shell;
pub mod stores;
pub mod sync;
pub mod time;
pub mod transfer;

use crate::engine::keys::{action_for, KeyAction, KeyPress, KeyScene};
use crate::session::{Session, SessionEvent, DB_NAME};
use about::store::AboutStore;
use backend::Backend;
use behaviour::{focus_testid, in_open_popup, in_text_field, when_idle};
use chat::store::composer::ComposerStore;
use chat::store::messages::MessagesStore;
use chat::store::turn::TurnStore;
use chat::store::ChatStore;
use events::Events;
use leptos::prelude::*;
use library::store::{FirstScreen, LibraryStore};
use memory::store::MemoryStore;
use opening::Opening;
use projects::store::ProjectsStore;
use settings::store::SettingsStore;
use shell::store::ShellStore;
use std::rc::Rc;
use stores::Stores;
use sync::store::SyncStore;
use transfer::store::TransferStore;

/// Builds every store and provides them as the one context views take theirs from
/// (`stores::use_chat()`, …).
fn provide_stores() -> (Stores, Backend) {
    let shell = ShellStore::new();
    let backend = Backend::new(shell);
    let settings = SettingsStore::new(backend);
    let library = LibraryStore::new(backend);
    let memory = MemoryStore::new(backend);
    let chat = ChatStore::new(backend);
    let composer = ComposerStore::new(backend);
    let messages = MessagesStore::new(backend);
    let turn = TurnStore::new(backend);
    let sync = SyncStore::new(backend);
    let transfer = TransferStore::new(backend);
    let about = AboutStore::new(backend);
    let projects = ProjectsStore::new(backend);
    let stores = Stores {
        shell,
        library,
        chat,
        composer,
        messages,
        turn,
        memory,
        settings,
        sync,
        transfer,
        about,
        projects,
    };
    provide_context(stores);
    (stores, backend)
}

/// The database is open: the settings in force, then the conversation list, then the
/// conversation to show (`engine::format::conversation_to_reopen`).
fn start(stores: Stores, backend: Backend, session: Rc<Session>, pending_send: bool) {
    let Stores {
        shell,
        library,
        composer,
        settings,
        transfer,
        projects,
        ..
    } = stores;
    backend.set_session(session);
    settings.load();
    shell.set_ready();
    library.first_screen(move |shown| {
        match shown {
            FirstScreen::Reopen(id) => stores.first_screen_shown(Some(id), pending_send),
            FirstScreen::NewChat => stores.first_screen_shown(None, pending_send),
            FirstScreen::Failed => {}
        }
        route::announce_first_screen();
        // The projects (a few records) are read once the list is shown, not before it.
        projects.reload();
        // What the first screen does not need waits until the page is idle after it (shown or not:
        // the memory pane must not stay empty after a failed read).
        when_idle(move |_| shell.settle(), 500, 0);
    });
    // The storage figure (Settings) waits until the page is idle too, and so does the sweep of
    // stored images no message uses.
    when_idle(move |_| transfer.refresh_storage(), 500, 0);
    when_idle(move |_| composer.sweep_unused_images(), 2000, 0);
}

/// Starts opening the session, then builds and mounts the app: the database's locks and open run
/// while the view is built (`opening`), not after it.
pub fn mount() {
    let opening = opening::begin(DB_NAME);
    leptos::mount::mount_to_body(move || view! { <App opening/> });
}

/// The whole app.
#[component]
pub fn App(
    /// The session's opening, begun before the view (`opening::begin`).
    opening: Opening,
) -> impl IntoView {
    let (stores, backend) = provide_stores();
    let (shell, chat, composer) = (stores.shell, stores.chat, stores.composer);
    let events = Events::new(stores);
    // What was typed in index.html's static first screen is the composer's from the start (its
    // caret, its focus and the static screen's removal follow the mount: `first_screen::hand_over`).
    let typed = first_screen::typed();
    if let Some(t) = &typed {
        composer.set_draft(t.text.clone());
    }
    let pending_send = typed.is_some_and(|t| t.send);
    let sink: Rc<dyn Fn(SessionEvent)> = Rc::new(move |e| events.apply(e));
    opening.attach(sink, move |opened| match opened {
        Ok(session) => start(stores, backend, session, pending_send),
        Err(e) => shell.fail(e.to_string(), e.kind()),
    });
    let sheet = RwSignal::new(false);
    use_app_keys(stores, sheet);
    use_page_lifecycle(stores);
    // A conversation closed (deleted here or in another tab, or the address cleared): the address
    // must stop naming it, or a reload would try to open what is gone.
    Effect::new(move |was_open: Option<bool>| {
        let open = chat.has_current();
        if was_open == Some(true) && !open {
            route::set_route(None);
        }
        open
    });

    view! {
        <a class="skip-link" href="#composer" data-testid="skip-to-composer"
            on:click=move |ev| { ev.prevent_default(); focus_testid("composer-input"); }>
            "Skip to the message box"
        </a>
        <div class="app" class:memory-open=move || shell.memory_overlay()
            class:memory-closed=move || !shell.memory_open()
            class:sidebar-open=move || shell.drawer_open()>
            <library::Sidebar/>
            <div class="drawer-backdrop" data-testid="drawer-backdrop" aria-hidden="true"
                on:click=move |_| shell.close_drawer()></div>
            <chat::ChatPane/>
            <memory::MemoryPane/>
            <settings::SettingsDialog/>
            <about::MemoryPage/>
            <shell::shortcuts::ShortcutsSheet open=sheet/>
        </div>
    }
}

/// Back/forward (`hashchange`), online/offline, saving the draft when the page is hidden, and a new
/// version of the app waiting; removed when the app goes.
fn use_page_lifecycle(stores: Stores) {
    let Stores {
        shell,
        chat,
        composer,
        ..
    } = stores;
    if let Some(w) = web_sys::window() {
        shell.set_online(w.navigator().on_line());
    }
    let on_hash = window_event_listener(leptos::ev::hashchange, move |_| match route::route() {
        Some(id) if !chat.is_current(&id) => stores.open(id, None),
        Some(_) => {}
        None => stores.close(),
    });
    let on_online = window_event_listener(leptos::ev::online, move |_| shell.went_online());
    let on_resize = window_event_listener(leptos::ev::resize, move |_| {
        shell.set_wide(prefs::wide_window())
    });
    let on_offline = window_event_listener(leptos::ev::offline, move |_| shell.went_offline());
    let on_hide = window_event_listener(leptos::ev::pagehide, move |_| composer.save_draft());
    shell::update::use_update_ready(shell);
    on_cleanup(move || {
        on_hash.remove();
        on_online.remove();
        on_resize.remove();
        on_offline.remove();
        on_hide.remove();
    });
}

/// The keyboard shortcuts: what each key does is `engine::keys::action_for` (the table the
/// shortcuts sheet lists); this only reads the page's state and carries the action out.
fn use_app_keys(stores: Stores, sheet: RwSignal<bool>) {
    let Stores {
        shell,
        settings,
        about,
        ..
    } = stores;
    let on_key = window_event_listener(leptos::ev::keydown, move |e| {
        let press = KeyPress {
            key: e.key(),
            ctrl: e.ctrl_key(),
            meta: e.meta_key(),
            shift: e.shift_key(),
            alt: e.alt_key(),
        };
        let scene = KeyScene {
            in_text_field: in_text_field(),
            sheet_open: sheet.get_untracked(),
            dialog_open: untrack(|| settings.dialog_open()),
            page_open: untrack(|| about.is_open()),
            drawer_open: untrack(|| shell.drawer_open()),
            streaming: untrack(|| stores.streaming()),
            popup_open: in_open_popup(),
            handled: e.default_prevented(),
        };
        for action in action_for(&press, &scene) {
            e.prevent_default();
            match action {
                KeyAction::NewChat => {
                    stores.new_chat(None);
                    focus_testid("composer-input");
                }
                KeyAction::FocusComposer => {
                    shell.close_drawer();
                    focus_testid("composer-input");
                }
                KeyAction::Search => {
                    shell.open_drawer();
                    focus_testid("conversation-search");
                }
                KeyAction::Stop => stores.stop(),
                KeyAction::ShowShortcuts => sheet.set(true),
                KeyAction::CloseShortcuts => sheet.set(false),
                // Focus may have left the dialog (a click on the backdrop): Esc still closes it.
                KeyAction::CloseSettings => settings.close_dialog(),
                KeyAction::ClosePage => about.close_page(),
                KeyAction::CloseDrawer => shell.close_drawer(),
            }
        }
    });
    on_cleanup(move || on_key.remove());
}
