//! A small CouchDB in Rust for the replicator's native tests: databases, revision trees (winner =
//! non-deleted leaf, then highest generation, then greatest rev id, as CouchDB and PouchDB choose),
//! `_changes` (opaque string seqs, `limit`, `style=all_docs`, `include_docs`, `conflicts`),
//! `_bulk_docs` with `new_edits` true (a `_rev` must name a leaf, else 409; no `_rev` on a live
//! document is a 409; on a deleted one it extends the deleted branch) and false (revision paths
//! inserted as given, used here to plant conflicts as another replicator would), `_all_docs` with
//! `keys`, `open_revs`, and `_local/` documents. Also the two devices' local stores, which apply
//! merged pages the way the driver does (`sync::batch::plan`).

#![allow(dead_code)] // each test crate uses a part of it

use std::collections::{BTreeMap, BTreeSet};

use memoire::engine::model::Millis;
use memoire::engine::sync::batch::{plan, wanted_docs, Held};
use memoire::engine::sync::*;
use serde_json::{json, Map, Value};

#[derive(Debug, Clone)]
struct Rev {
    parent: Option<String>,
    deleted: bool,
    body: Value,
}

#[derive(Debug, Clone, Default)]
pub struct Tree {
    revs: BTreeMap<String, Rev>,
    seq: u64,
}

fn pos(rev: &str) -> u64 {
    rev.split('-')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or(0)
}

impl Tree {
    pub fn leaves(&self) -> Vec<String> {
        let parents: BTreeSet<&String> = self
            .revs
            .values()
            .filter_map(|r| r.parent.as_ref())
            .collect();
        self.revs
            .keys()
            .filter(|r| !parents.contains(r))
            .cloned()
            .collect()
    }
    pub fn winner(&self) -> String {
        self.leaves()
            .into_iter()
            .max_by_key(|r| {
                (
                    !self.revs[r].deleted,
                    pos(r),
                    r.split('-').nth(1).unwrap_or("").to_string(),
                )
            })
            .unwrap()
    }
    pub fn is_deleted(&self) -> bool {
        self.revs[&self.winner()].deleted
    }
    /// Live leaves other than the winner.
    pub fn conflicts(&self) -> Vec<String> {
        let w = self.winner();
        self.leaves()
            .into_iter()
            .filter(|r| *r != w && !self.revs[r].deleted)
            .collect()
    }
    fn doc_json(&self, id: &str, rev: &str, conflicts: bool) -> Value {
        let r = &self.revs[rev];
        let mut m = match &r.body {
            Value::Object(m) => m.clone(),
            _ => Map::new(),
        };
        m.insert("_id".into(), json!(id));
        m.insert("_rev".into(), json!(rev));
        if r.deleted {
            m.insert("_deleted".into(), json!(true));
        }
        let c = self.conflicts();
        if conflicts && !c.is_empty() {
            m.insert("_conflicts".into(), json!(c));
        }
        Value::Object(m)
    }
    /// The winning document's content (no `_` fields).
    pub fn body(&self) -> Value {
        self.revs[&self.winner()].body.clone()
    }
}

#[derive(Debug, Clone, Default)]
pub struct Db {
    pub docs: BTreeMap<String, Tree>,
    seq: u64,
    locals: BTreeMap<String, (u64, Value)>,
}

/// The simulated server. `log` holds `METHOD path` of every request it answered.
#[derive(Debug, Clone, Default)]
pub struct Couch {
    pub dbs: BTreeMap<String, Db>,
    pub log: Vec<String>,
    /// Every request body it received.
    pub bodies: Vec<String>,
    /// A `_bulk_docs` body another client writes just before the next `_bulk_docs` arrives.
    pub before_bulk: Option<Value>,
}

fn hash(parent: Option<&str>, body: &Value, deleted: bool) -> String {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in format!("{parent:?}{body}{deleted}").bytes() {
        h = (h ^ b as u64).wrapping_mul(0x100000001b3);
    }
    format!("{h:016x}")
}

fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 3 <= b.len() {
            out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

fn content(v: &Value) -> Value {
    let mut m = v.as_object().cloned().unwrap_or_default();
    m.retain(|k, _| !k.starts_with('_'));
    Value::Object(m)
}

fn err(status: u16, error: &str) -> (u16, String) {
    (status, json!({"error": error, "reason": error}).to_string())
}

/// Anything that answers requests: the simulation, or a real server over HTTP.
pub trait Server {
    fn handle(&mut self, req: &Request) -> (u16, String);
}

impl Server for Couch {
    fn handle(&mut self, req: &Request) -> (u16, String) {
        Couch::handle(self, req)
    }
}

impl Couch {
    pub fn handle(&mut self, req: &Request) -> (u16, String) {
        self.log
            .push(format!("{} {}", req.method.as_str(), req.path));
        self.bodies.extend(req.body.clone());
        let parts: Vec<String> = req
            .path
            .trim_start_matches('/')
            .split('/')
            .map(decode)
            .collect();
        let q: BTreeMap<&str, &str> = req
            .query
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let body: Value = req
            .body
            .as_deref()
            .map(|b| serde_json::from_str(b).unwrap())
            .unwrap_or(Value::Null);
        let name = parts[0].clone();
        if parts.len() == 1 {
            return match (req.method, self.dbs.contains_key(&name)) {
                (Method::Get, true) => (200, json!({"db_name": name}).to_string()),
                (Method::Get, false) => err(404, "not_found"),
                (Method::Put, false) => {
                    self.dbs.insert(name, Db::default());
                    (201, json!({"ok": true}).to_string())
                }
                (Method::Put, true) => err(412, "file_exists"),
                _ => err(405, "method_not_allowed"),
            };
        }
        let Some(db) = self.dbs.get_mut(&name) else {
            return err(404, "not_found");
        };
        match (req.method, parts[1].as_str()) {
            (Method::Get, "_changes") => db.changes(&q),
            (Method::Post, "_bulk_docs") => {
                if let Some(other) = self.before_bulk.take() {
                    db.bulk(&other);
                }
                db.bulk(&body)
            }
            (Method::Post, "_all_docs") => db.all_docs(&body),
            (Method::Get, "_local") => match db.locals.get(&parts[2]) {
                Some((n, v)) => {
                    let mut v = v.clone();
                    v["_rev"] = json!(format!("0-{n}"));
                    (200, v.to_string())
                }
                None => err(404, "not_found"),
            },
            (Method::Put, "_local") => {
                let cur = db.locals.get(&parts[2]).map(|(n, _)| format!("0-{n}"));
                if body.get("_rev").and_then(Value::as_str).map(str::to_string) != cur {
                    return err(409, "conflict");
                }
                let n = db.locals.get(&parts[2]).map_or(1, |(n, _)| n + 1);
                db.locals.insert(parts[2].clone(), (n, content(&body)));
                (201, json!({"ok": true, "id": format!("_local/{}", parts[2]), "rev": format!("0-{n}")}).to_string())
            }
            (Method::Get, id) if q.contains_key("open_revs") => {
                let Some(t) = db.docs.get(id) else {
                    return err(404, "not_found");
                };
                let revs: Vec<String> = serde_json::from_str(q["open_revs"]).unwrap();
                let out: Vec<Value> = revs
                    .iter()
                    .map(|r| match t.revs.contains_key(r) {
                        true => json!({"ok": t.doc_json(id, r, false)}),
                        false => json!({"missing": r}),
                    })
                    .collect();
                (200, Value::Array(out).to_string())
            }
            _ => err(400, "bad_request"),
        }
    }
}

impl Db {
    fn touch(&mut self, id: &str) {
        self.seq += 1;
        self.docs.get_mut(id).unwrap().seq = self.seq;
    }

    fn changes(&self, q: &BTreeMap<&str, &str>) -> (u16, String) {
        let since: u64 = q
            .get("since")
            .map_or(0, |s| s.split('-').next().unwrap().parse().unwrap());
        let limit: usize = q.get("limit").map_or(usize::MAX, |l| l.parse().unwrap());
        let mut rows: Vec<(&String, &Tree)> =
            self.docs.iter().filter(|(_, t)| t.seq > since).collect();
        rows.sort_by_key(|(_, t)| t.seq);
        rows.truncate(limit);
        let results: Vec<Value> = rows
            .iter()
            .map(|(id, t)| {
                let w = t.winner();
                let mut r = json!({
                    "seq": format!("{}-g1AAAA{}", t.seq, id.len()),
                    "id": id,
                    "changes": t.leaves().iter().map(|l| json!({"rev": l})).collect::<Vec<_>>(),
                    "doc": t.doc_json(id, &w, q.get("conflicts") == Some(&"true")),
                });
                if t.is_deleted() {
                    r["deleted"] = json!(true);
                }
                r
            })
            .collect();
        let last = rows.last().map_or(self.seq.max(since), |(_, t)| t.seq);
        (
            200,
            json!({"results": results, "last_seq": format!("{last}-g1AAAA"), "pending": 0})
                .to_string(),
        )
    }

    fn bulk(&mut self, body: &Value) -> (u16, String) {
        let new_edits = body
            .get("new_edits")
            .and_then(Value::as_bool)
            .unwrap_or(true);
        let mut out = Vec::new();
        for d in body["docs"].as_array().unwrap() {
            let id = d["_id"].as_str().unwrap().to_string();
            let deleted = d.get("_deleted") == Some(&json!(true));
            let body = content(d);
            if !new_edits {
                // Insert the given revision path as it is (what a replicator does).
                let start = d["_revisions"]["start"].as_u64().unwrap();
                let ids: Vec<&str> = d["_revisions"]["ids"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_str().unwrap())
                    .collect();
                let t = self.docs.entry(id.clone()).or_default();
                for (i, h) in ids.iter().enumerate().rev() {
                    let rev = format!("{}-{h}", start - i as u64);
                    let parent = ids
                        .get(i + 1)
                        .map(|p| format!("{}-{p}", start - i as u64 - 1));
                    let leaf = i == 0;
                    t.revs.entry(rev).or_insert(Rev {
                        parent,
                        deleted: leaf && deleted,
                        body: if leaf { body.clone() } else { json!({}) },
                    });
                }
                self.touch(&id);
                continue;
            }
            let given = d.get("_rev").and_then(Value::as_str).map(str::to_string);
            let parent = match (self.docs.get(&id), given) {
                (None, None) => None,
                (None, Some(_)) => {
                    out.push(json!({"id": id, "error": "conflict", "reason": "Document update conflict."}));
                    continue;
                }
                (Some(t), None) if t.is_deleted() => Some(t.winner()),
                (Some(_), None) => {
                    out.push(json!({"id": id, "error": "conflict", "reason": "Document update conflict."}));
                    continue;
                }
                (Some(t), Some(r)) if t.leaves().contains(&r) => Some(r),
                (Some(_), Some(_)) => {
                    out.push(json!({"id": id, "error": "conflict", "reason": "Document update conflict."}));
                    continue;
                }
            };
            let n = parent.as_deref().map_or(0, pos) + 1;
            let rev = format!("{n}-{}", hash(parent.as_deref(), &body, deleted));
            let t = self.docs.entry(id.clone()).or_default();
            if t.revs.contains_key(&rev) {
                out.push(
                    json!({"id": id, "error": "conflict", "reason": "Document update conflict."}),
                );
                continue;
            }
            t.revs.insert(
                rev.clone(),
                Rev {
                    parent,
                    deleted,
                    body,
                },
            );
            self.touch(&id);
            out.push(json!({"ok": true, "id": id, "rev": rev}));
        }
        (201, Value::Array(out).to_string())
    }

    fn all_docs(&self, body: &Value) -> (u16, String) {
        let rows: Vec<Value> = body["keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| {
                let id = k.as_str().unwrap();
                match self.docs.get(id) {
                    None => json!({"key": id, "error": "not_found"}),
                    Some(t) if t.is_deleted() => {
                        json!({"id": id, "key": id, "value": {"rev": t.winner(), "deleted": true}, "doc": null})
                    }
                    Some(t) => json!({"id": id, "key": id, "value": {"rev": t.winner()}, "doc": t.doc_json(id, &t.winner(), true)}),
                }
            })
            .collect();
        (200, json!({"rows": rows}).to_string())
    }

    /// Writes a conflicting leaf for `id` next to its winner, as a replication from another server
    /// would (`new_edits: false`).
    pub fn plant_conflict(&mut self, id: &str, body: Value) {
        let t = &self.docs[id];
        let w = t.winner();
        let parent = t.revs[&w].parent.clone();
        let (start, ids) = match parent {
            Some(p) => (
                pos(&p) + 1,
                vec!["zzzz".to_string(), p.split('-').nth(1).unwrap().to_string()],
            ),
            None => (1, vec!["zzzz".to_string()]),
        };
        let mut d = body;
        d["_id"] = json!(id);
        d["_revisions"] = json!({"start": start, "ids": ids});
        self.bulk(&json!({"new_edits": false, "docs": [d]}));
    }
}

// ---------------------------------------------------------------- a device's local store

/// A device: its documents (with the server revision each is based on and whether it must be
/// pushed), its checkpoint and its clock.
#[derive(Debug, Clone)]
pub struct Device {
    pub name: String,
    pub docs: BTreeMap<String, (LocalDoc, bool)>,
    pub since: Option<String>,
    pub clock: Clock,
    pub log: Vec<String>,
    /// The device's wall time, passed to its replicator and clock (2033: after every test's
    /// stamps, so none is refused as from the future).
    pub now: Millis,
}

/// What can go wrong with one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Delivered and answered.
    None,
    /// Lost before the server saw it.
    Lost,
    /// The server handled it; the answer was lost.
    AnswerLost,
    /// The server handled it; the answer was cut after this share (in 1/8ths) of its bytes.
    Cut(u8),
}

impl Device {
    pub fn new(name: &str) -> Device {
        Device {
            name: name.into(),
            docs: BTreeMap::new(),
            since: None,
            clock: Clock::new(name, None),
            log: Vec::new(),
            now: 2_000_000_000_000,
        }
    }

    /// A local edit: merged into the local copy (as the store's writes are) and marked for pushing.
    pub fn write(&mut self, doc: Doc) {
        let (local, _) = self.docs.remove(&doc.id).unwrap_or((
            LocalDoc {
                doc: doc.clone(),
                rev: None,
            },
            true,
        ));
        let merged = merge(&local.doc, &doc);
        self.docs.insert(
            doc.id.clone(),
            (
                LocalDoc {
                    doc: merged,
                    rev: local.rev,
                },
                true,
            ),
        );
    }

    pub fn doc(&self, id: &str) -> Option<&Doc> {
        self.docs.get(id).map(|(l, _)| &l.doc)
    }

    fn dirty(&self) -> Vec<LocalDoc> {
        self.docs
            .values()
            .filter(|(_, d)| *d)
            .map(|(l, _)| l.clone())
            .collect()
    }

    /// Applies consecutive merges as the driver does: one batch, planned by `sync::batch::plan`
    /// from the stored copies it needs, the plan's documents kept, its dirty ones handed back.
    fn apply_batch(&mut self, rep: &mut Replicator, batch: Vec<(Doc, String)>) {
        if batch.is_empty() {
            return;
        }
        for (remote, _) in &batch {
            if let Some(seen) = remote.body.latest_stamp() {
                self.clock.observe(seen, self.now, MAX_SKEW_MS);
            }
        }
        let held = Held {
            docs: wanted_docs(&batch)
                .into_iter()
                .filter_map(|id| self.docs.get(&id).map(|d| (id, d.clone())))
                .collect(),
            ..Held::default()
        };
        let p = plan(batch, &held);
        rep.handle_local_changes(p.requeue);
        for (l, dirty) in p.docs {
            self.docs.insert(l.doc.id.clone(), (l, dirty));
        }
    }

    fn apply(&mut self, rep: &mut Replicator) {
        let mut batch = Vec::new();
        while let Some(w) = rep.poll_write() {
            if let Write::Merge { remote, rev } = w {
                batch.push((remote, rev));
                continue;
            }
            self.apply_batch(rep, std::mem::take(&mut batch));
            match w {
                Write::Merge { .. } => {}
                Write::Checkpoint { since } => self.since = Some(since),
                Write::Repush { id } => {
                    if let Some((l, d)) = self.docs.get_mut(&id) {
                        l.rev = None;
                        *d = true;
                        rep.handle_local_changes([l.clone()]);
                    }
                }
                Write::PushAll => {
                    for (l, d) in self.docs.values_mut() {
                        l.rev = None;
                        *d = true;
                    }
                    rep.handle_local_changes(self.dirty());
                }
            }
        }
        self.apply_batch(rep, batch);
    }

    /// One connection: runs requests until the replicator is idle (not live) or `faults` says the
    /// connection failed. Returns false if it ended on a failure.
    pub fn sync(
        &mut self,
        server: &mut dyn Server,
        faults: &mut dyn FnMut(&Request) -> Fault,
    ) -> bool {
        self.sync_db(server, "memoire", faults)
    }

    /// [`Device::sync`] with database `db`.
    pub fn sync_db(
        &mut self,
        server: &mut dyn Server,
        db: &str,
        faults: &mut dyn FnMut(&Request) -> Fault,
    ) -> bool {
        let mut cfg = Config::new(db, &self.name);
        cfg.live = false;
        cfg.pull_batch = 3;
        cfg.push_batch = 4;
        let mut rep = Replicator::new(cfg, self.since.clone());
        rep.handle_local_changes(self.dirty());
        let now = self.now;
        for _ in 0..10_000 {
            self.apply(&mut rep);
            let Some(req) = rep.poll_request(now) else {
                self.apply(&mut rep);
                return rep.status() == Status::Synced;
            };
            self.log
                .push(format!("{} {}", req.method.as_str(), req.path));
            match faults(&req) {
                Fault::None => {
                    let (status, body) = server.handle(&req);
                    rep.handle_response(now, status, &body);
                }
                Fault::Lost => {
                    rep.handle_failure(now, "connection cut");
                    return false;
                }
                Fault::AnswerLost => {
                    server.handle(&req);
                    rep.handle_failure(now, "connection cut");
                    return false;
                }
                Fault::Cut(eighths) => {
                    let (status, body) = server.handle(&req);
                    let mut keep = body.len() * eighths as usize / 8;
                    while !body.is_char_boundary(keep) {
                        keep -= 1;
                    }
                    let cut = &body[..keep];
                    rep.handle_response(now, status, cut);
                    if cut.len() < body.len() {
                        self.apply(&mut rep);
                        return false;
                    }
                }
            }
        }
        panic!("{}: sync did not settle", self.name);
    }
}

/// A replicator with `cfg` past its database check and checkpoint (the database there, no
/// checkpoint yet), with the `_changes` request it sends next.
pub fn at_changes(cfg: Config, now: Millis) -> (Replicator, Request) {
    let mut rep = Replicator::new(cfg, None);
    for _ in 0..5 {
        let req = rep.poll_request(now).expect("a request");
        if req.path.ends_with("_changes") {
            return (rep, req);
        }
        let (status, body) = if req.path.contains("_local") {
            (404, r#"{"error":"not_found"}"#)
        } else {
            (200, r#"{"db_name":"memoire"}"#)
        };
        rep.handle_response(now, status, body);
    }
    panic!("no _changes request");
}
