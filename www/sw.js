// Service worker: filled in with the offline issue.
