//! TODO(tokens): owned by a work package in progress.
