//! Projects (`projects` store, key path `id`): every project, deleted ones as tombstones (a
//! deletion syncs and wins over a live copy, see `engine::project`). Read whole: a user has tens,
//! not thousands. The record is the store's own shape (`records.rs`), converted explicitly. Must not import
//! `session` or `ui`.

use js_sys::Array;

use super::error::StoreError;
use super::idb::{from_js, js_error, request, to_js};
use super::records::{read, ProjectRecord};
use super::schema::PROJECTS;
use super::Store;
use crate::engine::model::Project;

impl Store {
    /// Every project (deleted ones included).
    pub async fn load_projects(&self) -> Result<Vec<Project>, StoreError> {
        let tx = self.tx(&[PROJECTS], false)?;
        let req = tx.store(PROJECTS)?.get_all().map_err(js_error)?;
        let all: Array = request(&req).await?.into();
        all.iter()
            .map(|v| read(from_js::<ProjectRecord>(v, "project")?, "project"))
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
