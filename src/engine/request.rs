//! TODO(request): owned by a work package in progress.
