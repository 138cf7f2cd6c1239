#![cfg(not(target_arch = "wasm32"))]
//! Sync, part 3: the replicator against a real CouchDB-compatible server, natively: pouchdb-server
//! (`tests/e2e/node_modules`, installed by `scripts/setup.sh test`) in memory on a free loopback
//! port, spoken to over a minimal HTTP/1.1 client. Checks that the simulation's answers are the ones
//! a real server gives: two devices converge, a 409 is repaired, a planted conflict is resolved, and
//! a restarted (emptied) server gets everything back. Fails, saying to run `scripts/setup.sh`, when
//! pouchdb-server is not installed.

mod engine_sync_sim;

use std::io::{Read, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use engine_sync_sim::{Device, Fault, Server};
use memoire::engine::model::*;
use memoire::engine::sync::convert::*;
use memoire::engine::sync::doc::*;
use memoire::engine::sync::*;
use serde_json::{json, Value};

struct Pouch {
    child: Child,
    port: u16,
    _dir: TempDir,
}

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Drop for Pouch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn binary() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/e2e/node_modules/.bin/pouchdb-server");
    p.exists().then_some(p)
}

impl Pouch {
    fn start(port: Option<u16>) -> Pouch {
        let port = port.unwrap_or_else(|| {
            TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port()
        });
        let dir = std::env::temp_dir().join(format!("memoire-pouch-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let child = Command::new(binary().unwrap())
            .args([
                "--in-memory",
                "--host",
                "127.0.0.1",
                "--port",
                &port.to_string(),
                "--no-stdout-logs",
            ])
            .arg("--config")
            .arg(dir.join("config.json"))
            .arg("--dir")
            .arg(&dir)
            .current_dir(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut p = Pouch {
            child,
            port,
            _dir: TempDir(dir),
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if let Ok((200, _)) = p.call("GET", "/", None) {
                return p;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("pouchdb-server did not start on port {port}");
    }

    /// One HTTP/1.1 request (`Connection: close`), chunked answers decoded.
    fn call(
        &mut self,
        method: &str,
        target: &str,
        body: Option<&str>,
    ) -> std::io::Result<(u16, String)> {
        let mut s = TcpStream::connect(("127.0.0.1", self.port))?;
        s.set_read_timeout(Some(Duration::from_secs(30)))?;
        let body = body.unwrap_or("");
        write!(
            s,
            "{method} {target} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAccept: application/json\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.port,
            body.len()
        )?;
        let mut raw = Vec::new();
        s.read_to_end(&mut raw)?;
        let text = String::from_utf8_lossy(&raw).to_string();
        let (head, rest) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let status: u16 = head
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let chunked = head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked");
        Ok((
            status,
            if chunked {
                dechunk(rest)
            } else {
                rest.to_string()
            },
        ))
    }
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].trim_start_matches("\r\n");
    }
    out
}

impl Server for Pouch {
    fn handle(&mut self, req: &Request) -> (u16, String) {
        let url = req.url("");
        self.call(req.method.as_str(), &url, req.body.as_deref())
            .unwrap_or((0, String::new()))
    }
}

fn ok(_: &Request) -> Fault {
    Fault::None
}

fn conversation(id: &str, title: &str) -> Conversation {
    Conversation {
        id: id.into(),
        title: title.into(),
        title_is_custom: false,
        created_at: 1,
        updated_at: 1,
        message_count: 0,
        endpoint_profile_id: None,
        remote_handle: None,
        last_path: None,
        memory_overrides: Default::default(),
    }
}

fn say(d: &mut Device, conv: &str, id: &str, t: Millis) {
    let at = d.clock.tick(t);
    let m = Message {
        id: id.into(),
        conversation_id: conv.into(),
        seq: t as u64,
        role: Role::User,
        content: format!("{id} from {}", d.name),
        status: MessageStatus::Complete,
        created_at: t,
        meta: Default::default(),
    };
    d.write(Doc::new(Body::Message(message_doc(&m, &at).unwrap())));
}

fn rename(d: &mut Device, id: &str, title: &str, t: Millis) {
    let at = d.clock.tick(t);
    let Some(Body::Conversation(prev)) = d.doc(&conversation_id(id)).map(|x| x.body.clone()) else {
        panic!("no conversation {id}")
    };
    let mut c = new_conversation(&prev);
    c.title = title.into();
    c.title_is_custom = true;
    d.write(Doc::new(Body::Conversation(edit_conversation(
        &prev, &c, &at,
    ))));
}

/// The server's winners (content only), asserting that none has a conflict left.
fn server_docs(p: &mut Pouch) -> Vec<(String, Value)> {
    let (_, body) = p
        .call(
            "GET",
            "/memoire/_all_docs?include_docs=true&conflicts=true",
            None,
        )
        .unwrap();
    let all: Value = serde_json::from_str(&body).unwrap();
    all["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let mut d = r["doc"].clone();
            assert!(d.get("_conflicts").is_none(), "conflict left: {d}");
            let o = d.as_object_mut().unwrap();
            o.retain(|k, _| !k.starts_with('_'));
            (r["id"].as_str().unwrap().to_string(), d)
        })
        .collect()
}

fn check_converged(p: &mut Pouch, devices: &[&Device]) -> Vec<(String, Value)> {
    let server = server_docs(p);
    for d in devices {
        let local: Vec<(String, Value)> = d
            .docs
            .iter()
            .map(|(id, (l, dirty))| {
                assert!(!dirty, "{} still has {id} to push", d.name);
                let mut v = l.doc.to_json(None);
                v.as_object_mut().unwrap().remove("_id");
                (id.clone(), v)
            })
            .collect();
        assert_eq!(local, server, "{} differs from the server", d.name);
    }
    server
}

#[test]
fn the_replicator_speaks_to_a_real_pouchdb_server() {
    assert!(
        binary().is_some(),
        "pouchdb-server is not installed in tests/e2e/node_modules: run scripts/setup.sh \
         (`make test` runs it first)"
    );
    let mut p = Pouch::start(None);
    let (mut a, mut b) = (Device::new("a"), Device::new("b"));
    let at = a.clock.tick(10);
    a.write(Doc::new(Body::Conversation(conversation_doc(
        &conversation("c1", "Trip"),
        &at,
    ))));
    for i in 0..7 {
        say(&mut a, "c1", &format!("m{i}"), 11 + i);
    }
    assert!(
        a.sync(&mut p, &mut ok),
        "first push creates the database: {:?}",
        a.log
    );
    assert!(b.sync(&mut p, &mut ok));
    check_converged(&mut p, &[&a, &b]);

    // Both offline: rename and add messages; then both sync.
    rename(&mut a, "c1", "Trip to Oslo", 30);
    say(&mut a, "c1", "ma", 31);
    rename(&mut b, "c1", "Oslo plans", 32);
    say(&mut b, "c1", "mb", 33);
    assert!(a.sync(&mut p, &mut ok));
    assert!(b.sync(&mut p, &mut ok));
    assert!(a.sync(&mut p, &mut ok));
    let docs = check_converged(&mut p, &[&a, &b]);
    let conv = &docs.iter().find(|(id, _)| id == "c:c1").unwrap().1;
    assert_eq!(conv["title"]["v"]["text"], "Oslo plans");
    assert_eq!(
        docs.iter().filter(|(id, _)| id.starts_with("m:")).count(),
        9
    );

    // A conflict planted as another replica would (new_edits=false) is merged and its leaf deleted.
    let (_, body) = p.call("GET", "/memoire/c%3Ac1?revs=true", None).unwrap();
    let cur: Value = serde_json::from_str(&body).unwrap();
    let start = cur["_revisions"]["start"].as_u64().unwrap();
    let parent = cur["_revisions"]["ids"][1].as_str().unwrap();
    let mut theirs = cur.clone();
    theirs["title"] =
        json!({"v": {"text": "Third replica", "custom": true}, "at": {"t": 90, "c": 0, "d": "z"}});
    theirs["_revisions"] =
        json!({"start": start, "ids": ["ffffffffffffffffffffffffffffffff", parent]});
    theirs.as_object_mut().unwrap().remove("_rev");
    let planted = json!({"new_edits": false, "docs": [theirs]}).to_string();
    assert_eq!(
        p.call("POST", "/memoire/_bulk_docs", Some(&planted))
            .unwrap()
            .0,
        201
    );
    assert!(b.sync(&mut p, &mut ok), "{:?}", b.log);
    assert!(
        b.log.iter().any(|l| l.contains("c%3Ac1")),
        "read the conflicting leaf: {:?}",
        b.log
    );
    assert!(a.sync(&mut p, &mut ok));
    let docs = check_converged(&mut p, &[&a, &b]);
    let conv = &docs.iter().find(|(id, _)| id == "c:c1").unwrap().1;
    assert_eq!(conv["title"]["v"]["text"], "Third replica");

    // A write between a device's pull and its push: 409, re-read, merge, retry.
    rename(&mut a, "c1", "A again", 100);
    let (_, body) = p.call("GET", "/memoire/c%3Ac1", None).unwrap();
    let mut other: Value = serde_json::from_str(&body).unwrap();
    other["fields"]["recent_messages"] = json!({"v": "4", "at": {"t": 99, "c": 0, "d": "z"}});
    let mut interposed = Some(other.to_string());
    let port = p.port;
    let mut faults = |r: &Request| {
        if r.path.ends_with("_bulk_docs") {
            if let Some(doc) = interposed.take() {
                let mut side = TcpStream::connect(("127.0.0.1", port)).unwrap();
                write!(side, "PUT /memoire/c%3Ac1 HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{doc}", doc.len()).unwrap();
                let mut sink = String::new();
                side.read_to_string(&mut sink).unwrap();
                assert!(sink.starts_with("HTTP/1.1 201"), "{sink}");
            }
        }
        Fault::None
    };
    assert!(a.sync(&mut p, &mut faults));
    assert!(
        a.log.iter().any(|l| l.ends_with("_all_docs")),
        "{:?}",
        a.log
    );
    assert!(b.sync(&mut p, &mut ok));
    let docs = check_converged(&mut p, &[&a, &b]);
    let conv = &docs.iter().find(|(id, _)| id == "c:c1").unwrap().1;
    assert_eq!(
        (
            conv["title"]["v"]["text"].clone(),
            conv["fields"]["recent_messages"]["v"].clone()
        ),
        (json!("A again"), json!("4"))
    );

    // The server restarts empty on the same port: both devices put everything back.
    let port = p.port;
    drop(p);
    let mut p = Pouch::start(Some(port));
    assert!(b.sync(&mut p, &mut ok));
    assert!(a.sync(&mut p, &mut ok));
    assert!(b.sync(&mut p, &mut ok));
    let docs = check_converged(&mut p, &[&a, &b]);
    assert_eq!(
        docs.iter().filter(|(id, _)| id.starts_with("m:")).count(),
        9
    );
}
