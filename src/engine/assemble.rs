//! TODO(assemble): owned by a work package in progress.
