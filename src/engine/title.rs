//! TODO(title): owned by a work package in progress.
