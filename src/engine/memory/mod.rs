//! TODO(memory): owned by a work package in progress.
