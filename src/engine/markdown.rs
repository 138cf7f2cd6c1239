//! TODO(markdown): owned by a work package in progress.
