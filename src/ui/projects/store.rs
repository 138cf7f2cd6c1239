//! The projects store: the projects (deleted ones are tombstones the sidebar does not list), the
//! one open in the sidebar (its panel, and the list filtered to its conversations). Its signals
//! are private: views read them and call its actions, each making its session calls through the
//! backend. Which projects are listed, and in what order, is the engine's
//! (`engine::project::listed`). Must not import `crate::store` or `crate::transport`.

use crate::engine::model::Project;
use crate::engine::project::listed;
use crate::ui::backend::Backend;
use leptos::prelude::*;

/// Projects and the open one. `Copy`, one of the app's stores (`ui/stores.rs`).
#[derive(Clone, Copy)]
pub struct ProjectsStore {
    backend: Backend,
    all: RwSignal<Vec<Project>>,
    open: RwSignal<Option<String>>,
}

impl ProjectsStore {
    /// No project read yet, none open.
    pub fn new(backend: Backend) -> Self {
        ProjectsStore {
            backend,
            all: RwSignal::new(Vec::new()),
            open: RwSignal::new(None),
        }
    }

    /// Runs `f` on every project, deleted ones included (for the Memory page's labels).
    pub fn with_all<R>(&self, f: impl FnOnce(&[Project]) -> R) -> R {
        self.all.with(|a| f(a))
    }

    /// The projects the sidebar lists (`engine::project::listed`).
    pub fn listed(&self) -> Vec<Project> {
        self.all.with(|a| listed(a).into_iter().cloned().collect())
    }

    /// True when there is a project to list.
    pub fn any_listed(&self) -> bool {
        self.all.with(|a| !listed(a).is_empty())
    }

    /// The id of the project open in the sidebar.
    pub fn open_id(&self) -> Option<String> {
        self.open.get()
    }

    /// The project open in the sidebar, while it exists.
    pub fn opened(&self) -> Option<Project> {
        let id = self.open.get()?;
        self.all.with(|a| {
            a.iter()
                .find(|p| p.id == id && p.deleted.is_none())
                .cloned()
        })
    }

    /// Reads the projects again (at start, and when they changed here or in another tab).
    pub fn reload(&self) {
        let all = self.all;
        self.backend.run(move |s| async move {
            all.set(s.projects().all().await?);
            Ok(())
        });
    }

    /// Opens project `id` in the sidebar (`None`: closes it).
    pub fn open(&self, id: Option<String>) {
        self.open.set(id);
    }

    /// Creates a project named `name` and opens it.
    pub fn create(&self, name: String) {
        let open = self.open;
        self.backend.run(move |s| async move {
            let p = s.projects().create(&name).await?;
            open.set(Some(p.id));
            Ok(())
        });
    }

    /// Renames project `id`.
    pub fn rename(&self, id: String, name: String) {
        self.backend
            .run(move |s| async move { Ok(s.projects().rename(&id, &name).await?) });
    }

    /// Saves project `id`'s instructions.
    pub fn set_instructions(&self, id: String, text: String) {
        self.backend
            .run(move |s| async move { Ok(s.projects().set_instructions(&id, &text).await?) });
    }

    /// Deletes project `id` (its conversations leave it; nothing else is deleted) and closes it.
    pub fn delete(&self, id: String) {
        self.open.set(None);
        self.backend
            .run(move |s| async move { Ok(s.projects().delete(&id).await?) });
    }

    /// Moves conversation `conversation` into project `project` (`None`: out of any).
    pub fn move_conversation(&self, conversation: String, project: Option<String>) {
        self.backend.run(move |s| async move {
            Ok(s.projects()
                .move_conversation(&conversation, project)
                .await?)
        });
    }
}
