//! store: being written.
