//! TODO(turn): owned by a work package in progress.
