//! session: being written.
