//! Projects (`projects` store, key path `id`): every project, deleted ones as tombstones (a
//! deletion syncs and wins over a live copy, see `engine::project`). Read whole: a user has tens,
//! not thousands. The record is the store's own shape, converted explicitly. Must not import
//! `session` or `ui`.

use js_sys::Array;
use serde::{Deserialize, Serialize};

use super::error::StoreError;
use super::idb::{from_js, js_error, request, to_js};
use super::schema::PROJECTS;
use super::Store;
use crate::engine::model::{Millis, Project};

/// A project as stored. Fields added later need `#[serde(default)]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProjectRecord {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub instructions: String,
    pub created_at: Millis,
    pub updated_at: Millis,
    #[serde(default)]
    pub deleted: Option<Millis>,
}

impl From<&Project> for ProjectRecord {
    fn from(p: &Project) -> Self {
        let Project {
            id,
            name,
            instructions,
            created_at,
            updated_at,
            deleted,
        } = p.clone();
        ProjectRecord {
            id,
            name,
            instructions,
            created_at,
            updated_at,
            deleted,
        }
    }
}

impl From<ProjectRecord> for Project {
    fn from(r: ProjectRecord) -> Self {
        let ProjectRecord {
            id,
            name,
            instructions,
            created_at,
            updated_at,
            deleted,
        } = r;
        Project {
            id,
            name,
            instructions,
            created_at,
            updated_at,
            deleted,
        }
    }
}

impl Store {
    /// Every project (deleted ones included).
    pub async fn load_projects(&self) -> Result<Vec<Project>, StoreError> {
        let tx = self.tx(&[PROJECTS], false)?;
        let req = tx.store(PROJECTS)?.get_all().map_err(js_error)?;
        let all: Array = request(&req).await?.into();
        all.iter()
            .map(|v| from_js::<ProjectRecord>(v, "project").map(Project::from))
            .collect()
    }

    /// Writes these projects (new or changed), all or none.
    pub async fn save_projects(&self, projects: &[&Project]) -> Result<(), StoreError> {
        if projects.is_empty() {
            return Ok(());
        }
        let tx = self.tx(&[PROJECTS], true)?;
        let s = tx.store(PROJECTS)?;
        for p in projects {
            s.put(&to_js(&ProjectRecord::from(*p))?).map_err(js_error)?;
        }
        tx.done().await
    }
}
