#![cfg(not(target_arch = "wasm32"))]
//! Sync's "Test connection" verdicts (src/engine/sync/probe.rs): each failure names what to fix.

use memoire::engine::sync::probe::{check_form, diagnose, DbProbe, Problem};

const URL: &str = "http://127.0.0.1:5984";
const ORIGIN: &str = "http://localhost:8080";

fn answer(status: u16, body: &str) -> DbProbe {
    DbProbe::Answer {
        status,
        body: body.into(),
    }
}

fn run(p: &DbProbe, reachable: Option<bool>) -> Result<(), Problem> {
    diagnose(URL, "memoire", "ann", ORIGIN, p, reachable)
}

#[test]
fn the_form_is_checked_before_anything_is_sent() {
    assert_eq!(
        check_form(" http://h:5984/ ", "db").unwrap(),
        "http://h:5984"
    );
    assert!(matches!(
        check_form("h:5984", "db"),
        Err(Problem::BadUrl { .. })
    ));
    assert!(matches!(
        check_form("https://", "db"),
        Err(Problem::BadUrl { .. })
    ));
    assert_eq!(check_form("https://h", " "), Err(Problem::NoDatabase));
}

#[test]
fn a_database_that_answers_is_fine() {
    assert_eq!(
        run(&answer(200, r#"{"db_name":"memoire","doc_count":0}"#), None),
        Ok(())
    );
}

#[test]
fn no_answer_is_cors_when_the_server_is_reachable_and_unreachable_otherwise() {
    let failed = DbProbe::Failed {
        reason: "Failed to fetch".into(),
    };
    let cors = run(&failed, Some(true)).unwrap_err();
    assert_eq!(
        cors,
        Problem::Cors {
            url: URL.into(),
            origin: ORIGIN.into()
        }
    );
    let text = cors.to_string();
    assert!(text.contains("enable_cors = true"), "{text}");
    assert!(text.contains(&format!("origins = {ORIGIN}")), "{text}");
    assert!(text.contains("credentials = true"), "{text}");
    for r in [Some(false), None] {
        let e = run(&failed, r).unwrap_err();
        assert!(matches!(e, Problem::Unreachable { .. }), "{e:?}");
        assert!(e.to_string().contains(URL));
    }
}

#[test]
fn statuses_name_credentials_access_and_a_missing_database() {
    assert_eq!(
        run(&answer(401, r#"{"error":"unauthorized"}"#), None),
        Err(Problem::WrongCredentials)
    );
    assert_eq!(
        run(&answer(403, r#"{"error":"forbidden"}"#), None),
        Err(Problem::Forbidden {
            user: "ann".into(),
            db: "memoire".into()
        })
    );
    let missing = run(
        &answer(
            404,
            r#"{"error":"not_found","reason":"Database does not exist."}"#,
        ),
        None,
    )
    .unwrap_err();
    assert_eq!(
        missing,
        Problem::DatabaseMissing {
            db: "memoire".into()
        }
    );
    assert!(missing.to_string().contains("'memoire' does not exist"));
}

#[test]
fn something_that_is_not_couchdb_says_so() {
    // A web server's 404 page, a proxy's 502, a 200 that is not a database.
    for (s, b) in [
        (404, "<html>Not Found</html>"),
        (502, "bad gateway"),
        (200, "<html>hi</html>"),
    ] {
        assert_eq!(
            run(&answer(s, b), None),
            Err(Problem::NotCouch {
                url: URL.into(),
                status: s
            })
        );
    }
}

#[test]
fn a_redirect_is_refused_and_says_why() {
    let e = run(&DbProbe::Redirected, None).unwrap_err();
    assert_eq!(e, Problem::Redirected);
    let text = e.to_string();
    for needle in [
        "redirect",
        "does not follow it with your password",
        "Settings",
    ] {
        assert!(text.contains(needle), "{needle:?} not in {text:?}");
    }
}
