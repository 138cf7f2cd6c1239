//! ui: being written.
