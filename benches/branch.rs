//! Benchmark: the branch on screen of a 10,000-message conversation in which every fifth reply was
//! regenerated once and every hundredth message deleted (what a conversation with alternatives
//! computes on each page, prompt and send). Prints `bench branch_10k_ms <median> ms` (median of 21
//! runs).
use memoire::engine::branch::shown_branch;
use memoire::engine::model::*;
use std::hint::black_box;
use std::time::Instant;

fn message(seq: u64, id: String, role: Role, meta: MessageMeta) -> Message {
    Message {
        id,
        conversation_id: "c".into(),
        seq,
        role,
        content: format!("message {seq}"),
        status: MessageStatus::Complete,
        created_at: seq as i64,
        meta,
    }
}

fn main() {
    let mut all = Vec::new();
    let mut last: Option<String> = None;
    for turn in 0..4_000u64 {
        let seq = all.len() as u64 + 1;
        let user = format!("u{turn}");
        all.push(message(
            seq,
            user.clone(),
            Role::User,
            MessageMeta {
                after: last.clone(),
                deleted: seq % 100 == 0,
                ..Default::default()
            },
        ));
        let first = format!("a{turn}");
        all.push(message(
            seq + 1,
            first.clone(),
            Role::Assistant,
            MessageMeta {
                after: Some(user),
                ..Default::default()
            },
        ));
        last = Some(first.clone());
        if turn % 5 == 0 {
            let again = format!("b{turn}");
            all.push(message(
                seq + 2,
                again.clone(),
                Role::Assistant,
                MessageMeta {
                    replaces: Some(first),
                    ..Default::default()
                },
            ));
            last = Some(again);
        }
    }
    all.truncate(10_000);
    let mut times: Vec<f64> = (0..21)
        .map(|_| {
            let t = Instant::now();
            black_box(shown_branch(black_box(&all), Some("a40")));
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    times.sort_by(f64::total_cmp);
    println!("bench branch_10k_ms {:.3} ms", times[times.len() / 2]);
}
