//! TODO(failure): owned by a work package in progress.
