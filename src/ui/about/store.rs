//! The about-you store: the facts about the user the Memory page lists (current and past; the
//! forgotten ones are tombstones it does not show) and the memory pane leads with, whether the
//! page is open, and its search. Its
//! signals are private: views read them and call its actions, each making its session calls
//! through the backend. Which facts the page lists, and in what order, is the engine's. Must not
//! import `crate::store` or `crate::transport`.

use crate::engine::memory::user::{facts_for_page, facts_for_pane};
use crate::engine::model::UserFact;
use crate::ui::backend::Backend;
use leptos::prelude::*;

/// The Memory page's facts, search and visibility. `Copy`, provided as context.
#[derive(Clone, Copy)]
pub struct AboutStore {
    backend: Backend,
    open: RwSignal<bool>,
    /// The memory pane shows facts: they are read, and read again on a change, while the page is
    /// closed too.
    followed: RwSignal<bool>,
    facts: RwSignal<Vec<UserFact>>,
    query: RwSignal<String>,
    /// How many of the matching facts the page mounts (a page at a time: a thousand rows at once
    /// would take a tenth of a second to open).
    limit: RwSignal<usize>,
}

/// Facts the page mounts at first, and per "Show more".
pub const FACTS_PAGE: usize = 200;

impl AboutStore {
    /// The page closed, no facts read yet.
    pub fn new(backend: Backend) -> Self {
        AboutStore {
            backend,
            open: RwSignal::new(false),
            followed: RwSignal::new(false),
            facts: RwSignal::new(Vec::new()),
            query: RwSignal::new(String::new()),
            limit: RwSignal::new(FACTS_PAGE),
        }
    }

    /// True while the Memory page is open (tracked: read it inside a reactive closure).
    pub fn is_open(&self) -> bool {
        self.open.get()
    }

    /// The search typed on the page.
    pub fn query(&self) -> String {
        self.query.get()
    }

    /// Reads the facts the page lists (up to its limit) and how many match in all
    /// (`engine::memory::user::facts_for_page` decides).
    pub fn with_shown<R>(&self, f: impl FnOnce(&[&UserFact], usize) -> R) -> R {
        let limit = self.limit.get();
        self.query.with(|q| {
            self.facts.with(|fs| {
                let (page, matching) = facts_for_page(fs, q, limit);
                f(&page, matching)
            })
        })
    }

    /// The facts the memory pane leads with for a conversation whose prompts read facts in
    /// `scope`, up to `limit`, and how many there are in all (`engine::memory::user::facts_for_pane`
    /// decides). Tracked.
    pub fn with_pane_facts<R>(
        &self,
        scope: Option<&str>,
        limit: usize,
        f: impl FnOnce(&[&UserFact], usize) -> R,
    ) -> R {
        self.facts.with(|fs| {
            let (shown, all) = facts_for_pane(fs, scope, limit);
            f(&shown, all)
        })
    }

    /// The memory pane shows the facts: read them now and after every change.
    pub fn follow(&self) {
        if !self.followed.get_untracked() {
            self.followed.set(true);
            self.reload();
        }
    }

    /// Mounts the next page of facts.
    pub fn show_more(&self) {
        self.limit.update(|l| *l += FACTS_PAGE);
    }

    /// Opens the Memory page (its first page of facts) and reads the facts.
    pub fn open_page(&self) {
        self.limit.set(FACTS_PAGE);
        self.open.set(true);
        self.reload();
    }

    /// Closes the Memory page.
    pub fn close_page(&self) {
        self.open.set(false);
    }

    /// Sets the page's search.
    pub fn search(&self, q: String) {
        self.query.set(q);
    }

    /// Reads the facts again (while the page is open or the memory pane shows them: else nothing
    /// shows them).
    pub fn reload(&self) {
        if !self.open.get_untracked() && !self.followed.get_untracked() {
            return;
        }
        let facts = self.facts;
        self.backend.run(move |s| async move {
            facts.set(s.memory().user_facts().await?);
            Ok(())
        });
    }

    /// Forgets a fact everywhere.
    pub fn forget(&self, id: String) {
        self.backend
            .run(move |s| async move { Ok(s.memory().forget_fact(&id).await?) });
    }

    /// Saves the user's words for a fact.
    pub fn edit(&self, id: String, text: String) {
        self.backend
            .run(move |s| async move { Ok(s.memory().edit_fact(&id, &text).await?) });
    }

    /// Makes a project's fact one about the user (every conversation may carry it).
    pub fn move_to_about_you(&self, id: String) {
        self.backend
            .run(move |s| async move { Ok(s.memory().move_fact_to_about_you(&id).await?) });
    }

    /// Adds a fact the user wrote.
    pub fn add(&self, text: String) {
        self.backend
            .run(move |s| async move { Ok(s.memory().add_fact(&text).await?) });
    }
}
