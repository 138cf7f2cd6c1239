//! [`Held`]: the one value a driver keeps between its awaits (sync's `State`, …), borrowed only
//! inside a closure, so no borrow lives across an await and a driver holds one state value
//! instead of a cell per field. A call back into the driver from inside the closure (an event
//! emitted while it borrows) would panic: take what is needed out, then call. Must not import
//! `ui`.

use std::cell::RefCell;

/// One value changed in place, a closure at a time.
#[derive(Debug, Default)]
pub(crate) struct Held<T>(RefCell<T>);

impl<T> Held<T> {
    pub(crate) fn new(v: T) -> Held<T> {
        Held(RefCell::new(v))
    }

    /// Runs `f` on the value; what it returns leaves the borrow.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        f(&mut self.0.borrow_mut())
    }
}
