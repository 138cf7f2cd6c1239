//! TODO(history): owned by a work package in progress.
