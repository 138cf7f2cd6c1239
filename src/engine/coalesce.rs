//! TODO(coalesce): owned by a work package in progress.
