//! TODO(backup): owned by a work package in progress.
