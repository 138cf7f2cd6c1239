//! The one holder of the session for the UI stores: the `Rc<Session>` once the database is open,
//! the actions asked for before that (they run, in order, once it is), and the one path that spawns
//! an action and puts its error in the banner. It owns no state a view reads and decides nothing;
//! each session call is made by one store action through [`Backend::run`]. Must not import
//! `crate::store` or `crate::transport`; of the stores it knows only the shell's (the banner: an action's error, a notice, taking
//! the error down when a new action starts).

use super::shell::store::ShellStore;
use crate::session::{Session, SessionError};
use leptos::prelude::*;
use leptos::task::spawn_local;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

/// An action's future, boxed: one non-generic spawn and error path shared by every action, instead of
/// a copy of both per call site of [`Backend::run`] (wasm bytes).
type Action = Pin<Box<dyn Future<Output = Result<(), SessionError>>>>;

/// An action asked for while the database was still opening.
type PendingAction = Box<dyn FnOnce(Rc<Session>)>;

fn spawn_action(shell: ShellStore, action: Action) {
    spawn_local(async move {
        if let Err(e) = action.await {
            shell.fail(e.to_string(), e.kind());
        }
    });
}

/// The session (once open) and the actions waiting for it. `Copy`; shared by the stores, never
/// provided to views.
#[derive(Clone, Copy)]
pub struct Backend {
    shell: ShellStore,
    session: StoredValue<Option<Rc<Session>>, LocalStorage>,
    /// Actions asked for while the database was still opening; they run as soon as it is open.
    pending: StoredValue<Vec<PendingAction>, LocalStorage>,
}

impl Backend {
    /// No session yet; errors of actions go to `shell`'s banner.
    pub fn new(shell: ShellStore) -> Self {
        Backend {
            shell,
            session: StoredValue::new_local(None),
            pending: StoredValue::new_local(Vec::new()),
        }
    }

    /// The database is open: actions asked for before now run, in order.
    pub fn set_session(&self, session: Rc<Session>) {
        self.session.set_value(Some(session.clone()));
        let pending = self
            .pending
            .try_update_value(std::mem::take)
            .unwrap_or_default();
        for action in pending {
            action(session.clone());
        }
    }

    /// Takes the banner's error down (a new action starts).
    pub fn dismiss_error(&self) {
        self.shell.dismiss_error();
    }

    /// Says `text` in the banner's notice.
    pub fn notify(&self, text: String) {
        self.shell.notify(text);
    }

    /// The session, once the database is open (for the few calls that are not spawned).
    pub fn session(&self) -> Option<Rc<Session>> {
        self.session.get_value()
    }

    /// Runs `f` with the session; an error goes to the banner. Asked for while the database is still
    /// opening (a click in the first moment after the page loads), it runs once the database is open.
    pub fn run<F, Fut>(&self, f: F)
    where
        F: FnOnce(Rc<Session>) -> Fut + 'static,
        Fut: Future<Output = Result<(), SessionError>> + 'static,
    {
        let shell = self.shell;
        match self.session() {
            Some(session) => spawn_action(shell, Box::pin(f(session))),
            None => self.pending.update_value(|p| {
                p.push(Box::new(move |session| {
                    spawn_action(shell, Box::pin(f(session)))
                }))
            }),
        }
    }
}
