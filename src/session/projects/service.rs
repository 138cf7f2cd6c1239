//! The projects service and its error enum. Every change reads the projects from the store under
//! one Web Lock for every tab (`tabs::lock_projects`), so two tabs never write over each other's
//! change, writes what changed and reports `Change::Projects` (this tab's UI, the other tabs, sync).
//! Creating a project and moving a conversation are behind split point `edits`. Must not import
//! `ui`.

use crate::engine::model::{MemoryOverrides, Project};
use crate::engine::project::{self, ProjectError};
use crate::engine::tabs::Change;
use crate::session::shared::error::{from_read_error, Boxed};
use crate::session::shared::{new_id, now, tabs, Core};
use crate::store::{ConversationPatch, StoreError};
use std::rc::Rc;

/// What can go wrong in a projects call. Every message says what to do.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ProjectsError {
    #[error("{0}")]
    Store(#[from] StoreError),
    /// A name or instructions the engine refused; the text says what to change.
    #[error("{0}")]
    Invalid(#[from] ProjectError),
    #[error("{}", crate::session::shared::error::NO_CONVERSATION)]
    NoConversation,
    /// A chunk of the app it needs (the project panel's, or `edits`) could not be fetched; the next
    /// try fetches it again.
    #[error("{}", crate::session::shared::error::UNAVAILABLE)]
    Unavailable,
}

impl From<wasm_split_helpers::SplitLoaderError> for ProjectsError {
    fn from(_: wasm_split_helpers::SplitLoaderError) -> Self {
        ProjectsError::Unavailable
    }
}

from_read_error!(ProjectsError);

/// Projects: conversations grouped with their own instructions and facts.
#[derive(Clone)]
pub struct Projects {
    core: Rc<Core>,
}

impl Projects {
    pub(crate) fn new(core: Rc<Core>) -> Projects {
        Projects { core }
    }

    /// Every project, deleted ones included (`engine::project::listed` says which are shown).
    pub async fn all(&self) -> Result<Vec<Project>, ProjectsError> {
        Ok(self.core.store.load_projects().await?)
    }

    /// A new project named `name` (behind split point `edits`).
    pub async fn create(&self, name: &str) -> Result<Project, ProjectsError> {
        create_split(self, name).await
    }

    async fn create_now(&self, name: &str) -> Result<Project, ProjectsError> {
        let p = project::new_project(new_id("p"), name, now())?;
        self.core.store.save_projects(&[&p]).await?;
        self.core.emit(Change::Projects);
        Ok(p)
    }

    /// Renames project `id`.
    pub async fn rename(&self, id: &str, name: &str) -> Result<(), ProjectsError> {
        self.change(id, |p| project::rename(p, name, now())).await
    }

    /// Sets project `id`'s instructions (added after the system prompt of its conversations).
    pub async fn set_instructions(&self, id: &str, text: &str) -> Result<(), ProjectsError> {
        self.change(id, |p| project::set_instructions(p, text, now()))
            .await
    }

    /// Deletes project `id`: a tombstone; its conversations leave it (nothing is deleted) and its
    /// facts stay, scoped to the deleted project (`engine::project`).
    pub async fn delete(&self, id: &str) -> Result<(), ProjectsError> {
        {
            let _lock = tabs::lock_projects(self.core.store.name()).await;
            let mut all = self.core.store.load_projects().await?;
            if !project::delete(&mut all, id, now()) {
                return Ok(());
            }
            let gone: Vec<&Project> = all.iter().filter(|p| p.id == id).collect();
            self.core.store.save_projects(&gone).await?;
        }
        self.core.emit(Change::Projects);
        let conversations = self.core.store.list_conversations(usize::MAX).await?;
        for c in project::leaving(&conversations, id) {
            self.set_overrides(&c.id, c.memory_overrides).await?;
        }
        Ok(())
    }

    /// Moves conversation `conversation` into project `project` (`None`: out of any; behind split
    /// point `edits`).
    pub async fn move_conversation(
        &self,
        conversation: &str,
        project: Option<String>,
    ) -> Result<(), ProjectsError> {
        move_split(self, conversation, project).await
    }

    async fn move_now(
        &self,
        conversation: &str,
        project: Option<String>,
    ) -> Result<(), ProjectsError> {
        let mut o = self.core.conversation(conversation).await?.memory_overrides;
        if o.project == project {
            return Ok(());
        }
        o.project = project;
        self.set_overrides(conversation, o).await
    }

    async fn set_overrides(&self, id: &str, o: MemoryOverrides) -> Result<(), ProjectsError> {
        let patch = ConversationPatch {
            memory_overrides: Some(o),
            ..Default::default()
        };
        Ok(self.core.patch_conversation(id, &patch).await?)
    }

    /// Applies `change` to project `id` as stored (under the lock), writes it if it changed and
    /// reports it.
    async fn change(
        &self,
        id: &str,
        change: impl FnOnce(&mut Project) -> Result<bool, ProjectError>,
    ) -> Result<(), ProjectsError> {
        let changed = {
            let _lock = tabs::lock_projects(self.core.store.name()).await;
            let mut all = self.core.store.load_projects().await?;
            let p = all
                .iter_mut()
                .find(|p| p.id == id)
                .ok_or(ProjectError::Gone)?;
            if change(p)? {
                self.core.store.save_projects(&[p]).await?;
                true
            } else {
                false
            }
        };
        if changed {
            self.core.emit(Change::Projects);
        }
        Ok(())
    }
}

/// Split point `edits` (`library/mod.rs`): creating a project.
#[cfg_attr(feature = "split", wasm_split_helpers::wasm_split(edits, fallible, return_wrapper(let future = _; { future.await } -> Result<Project, ProjectsError>)))]
fn create_split<'a>(projects: &'a Projects, name: &'a str) -> Boxed<'a, Project, ProjectsError> {
    Box::pin(projects.create_now(name))
}

/// Split point `edits`: moving a conversation into (or out of) a project.
#[cfg_attr(feature = "split", wasm_split_helpers::wasm_split(edits, fallible, return_wrapper(let future = _; { future.await } -> Result<(), ProjectsError>)))]
fn move_split<'a>(
    projects: &'a Projects,
    conversation: &'a str,
    project: Option<String>,
) -> Boxed<'a, (), ProjectsError> {
    Box::pin(projects.move_now(conversation, project))
}
