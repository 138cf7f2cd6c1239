//! The session's opening, started before the first view is built: [`begin`] runs the opening's first
//! step at once, in the same task (the lock that lets one tab migrate, `config.json`, the database's
//! open request), so the browser does that work while the app's view mounts instead of after it; the
//! app then [`Opening::attach`]es its event sink and what to do with the session. Events the session
//! reports before that wait, in order, and are delivered on attach. Must not import `crate::store` or
//! `crate::transport`.

use crate::session::{EventSink, Session, SessionError, SessionEvent};
use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

type Opened = Result<Rc<Session>, SessionError>;
type Then = Box<dyn FnOnce(Opened)>;

/// Where the opening stands, shared by its task and the app.
#[derive(Default)]
struct State {
    /// The app's sink, once attached.
    sink: Option<EventSink>,
    /// Events reported before the app attached, in order.
    early: Vec<SessionEvent>,
    /// What the app does with the session, once attached.
    then: Option<Then>,
    /// The outcome, when it came before the app attached.
    outcome: Option<Opened>,
}

/// An opening under way; the app takes it over with [`Opening::attach`].
#[derive(Clone)]
pub struct Opening(Rc<RefCell<State>>);

/// Starts opening the session `db_name` now: its first step runs before this returns.
pub fn begin(db_name: &'static str) -> Opening {
    let opening = Opening(Rc::default());
    let state = opening.0.clone();
    let sink: EventSink = Rc::new(move |e| {
        let target = state.borrow().sink.clone();
        match target {
            Some(sink) => sink(e),
            None => state.borrow_mut().early.push(e),
        }
    });
    let done = opening.clone();
    let mut task: Pin<Box<dyn Future<Output = ()>>> = Box::pin(async move {
        let opened = Session::open(db_name, sink).await;
        done.finish(opened);
    });
    // The first poll here issues the opening's requests; whatever it waits on resolves in a later
    // task, by which time the spawned task below is the one polling (the no-op waker is never used).
    let mut cx = Context::from_waker(Waker::noop());
    if task.as_mut().poll(&mut cx) == Poll::Pending {
        // Not leptos's spawn_local: its executor is set up by the mount, which comes after this.
        wasm_bindgen_futures::spawn_local(task);
    }
    opening
}

impl Opening {
    /// The app's sink (the events reported so far are delivered to it first, in order) and what to
    /// do with the opened session (at once, when it is open already).
    pub fn attach(&self, sink: EventSink, then: impl FnOnce(Opened) + 'static) {
        let early = std::mem::take(&mut self.0.borrow_mut().early);
        for e in early {
            sink(e);
        }
        let outcome = {
            let mut s = self.0.borrow_mut();
            s.sink = Some(sink);
            match s.outcome.take() {
                Some(o) => Some(o),
                None => {
                    s.then = Some(Box::new(then));
                    return;
                }
            }
        };
        if let Some(o) = outcome {
            then(o);
        }
    }

    fn finish(&self, opened: Opened) {
        let then = self.0.borrow_mut().then.take();
        match then {
            Some(then) => then(opened),
            None => self.0.borrow_mut().outcome = Some(opened),
        }
    }
}
