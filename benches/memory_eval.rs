//! A memory evaluation in the field's categories (issue 26, item 6), on the real model
//! (`make bench` starts llama-cpp-python's server with SmolLM2-135M and passes its URL in
//! `MEMOIRE_LLAMA_URL`), scored at the prompt level: eight scripted conversations about one user, a
//! simulated day apart, then 65 questions (`memory_eval/set.rs`, written for this project), each
//! asked as the next message of a conversation (its own one, an older one, or a new one), and the
//! prompt the app would assemble for it checked:
//! - `memory_eval_single`: a fact said in this conversation is in the prompt (memory or history);
//! - `memory_eval_cross_conversation`: a fact said in another conversation is in a new one's prompt;
//! - `memory_eval_update`: the new value of a changed fact is in the prompt, and the prompt's memory
//!   (about you, summary, pending statements, entities) does not carry the old one as current (a
//!   sentence naming it, not marked past, as memory_recall's "changed" run checks; a name that holds
//!   it and says nothing of it, "Bergen City Marathon", is not read as naming it);
//! - `memory_eval_temporal`: a sentence of the prompt's memory carries the fact with the day it was
//!   said;
//! - `memory_eval_preference`: a taste said in another conversation is in a new one's prompt;
//! - `memory_eval_abstention`: for something never said, the prompt's memory names none of its words
//!   (no invented fact);
//! - `memory_eval_memory_tokens_median`: the median tokens of memory in the questions' prompts (the
//!   budget is 7,168 tokens: a quarter is 1,792).
//!
//! As the app runs, at the default settings (`MemoryConfig::default()`: an update every 5 pairs, an
//! 8,192-token context): after each user message its facts about the user are taken in
//! (`engine::memory::user::handle_said`, as `session/memory/user.rs` does), every memory update is
//! the model's and is waited for before the next message (the assistant's replies are fixed, as in
//! memory_recall's waiting run: fast and deterministic enough), a landed update takes in its span's
//! facts again (`handle_messages`) after the facts its model proposed (`user_facts`, held to the
//! user's words by `engine::memory::proposed`, as `session/memory/update.rs` takes them in), and
//! each prompt is `assemble` with every fact as stored (as
//! `session/chat/turn.rs` passes them). The client, the update and the driver are
//! `benches/common/mod.rs`.
//!
//! A second mode: with `MEMOIRE_EVAL_URL` (an OpenAI-compatible base URL, e.g.
//! `https://api.openai.com/v1`; `MEMOIRE_EVAL_MODEL`, `MEMOIRE_EVAL_KEY` optional), each assembled
//! prompt is also sent there (through `curl`, so https works) and the answer scored, no LLM judge:
//! it contains the expected value (temporal: the day; abstention: none of the words, or it says it
//! does not know), printed as `memory_eval_answer_<category>`.
//! `MEMOIRE_EVAL_VERBOSE=1` prints every miss with the prompt's memory.
//!
//! Beyond English (issue 42, item 5; `memory_eval/languages.rs`): sets in English, German, French
//! and Spanish and an English paraphrase set, their facts taken in by the rules, each question in a
//! new conversation, scored per set and category (on stderr): `memory_eval_language_<en|de|fr|es>`
//! and `memory_eval_paraphrase` (every category together), `memory_eval_abstention_languages` (the
//! abstention questions of every set; `memory_eval_abstention` stays #26's) and
//! `memory_eval_not_a_fact_carried` (what was said only as a question, a request, a hypothetical or
//! of someone else, carried by a prompt: a count). The facts the model proposes
//! (`engine::memory::proposed`), in a language the rules do not know (Polish), from a scripted
//! proposer that quotes the user's facts and adds what a careless model would (its own wording, an
//! invention, a hypothetical, someone else's fact, a question): `memory_eval_proposed` (every
//! category; the rules alone are printed beside it) and `memory_eval_proposed_not_a_fact_carried`.
//! They need no model and run first; `MEMOIRE_EVAL_LANGUAGES_ONLY=1` runs only them.

mod common;
#[path = "memory_eval/languages.rs"]
mod languages;
#[path = "memory_eval/set.rs"]
mod set;

use std::collections::HashMap;
use std::time::Instant;

use common::{carried_as_current, converse, endpoint, Memory, Step, REPLY};
use memoire::engine::assemble::{Assembly, SectionKind};
use memoire::engine::format::{date, day, days_from_civil};
use memoire::engine::memory::user;
use memoire::engine::memory::*;
use memoire::engine::model::*;
use memoire::engine::request::{self, RequestOptions};
use set::{Category, Question, Where, CONVERSATIONS, NAMES_WITH_OLD_VALUES, QUESTIONS};

/// The first conversation's day (a Monday); conversation `n` is `n - 1` days later.
const FIRST_DAY: (i64, i64, i64) = (2026, 3, 2);
/// The questions are asked this many days after the first conversation.
const QUESTION_DAY: i64 = 9;

/// 09:00 on day `n` (1: the first conversation's).
fn day_ms(n: i64) -> Millis {
    let (y, m, d) = FIRST_DAY;
    (days_from_civil(y, m, d) + n - 1) * 86_400_000 + 9 * 3_600_000
}

/// The sections of the prompt that are memory (not the system prompt, history or new message).
fn memory_text(a: &Assembly) -> String {
    a.sections
        .iter()
        .filter(|s| is_memory(s.kind))
        .map(|s| s.text.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_memory(kind: SectionKind) -> bool {
    matches!(
        kind,
        SectionKind::UserFacts
            | SectionKind::Summary
            | SectionKind::Pending
            | SectionKind::Entities
    )
}

/// The history messages the prompt carries (not the new message).
fn history_text(a: &Assembly, mem: &Memory) -> String {
    let ids: Vec<&String> = a.included_message_ids.iter().collect();
    mem.messages
        .iter()
        .filter(|m| ids.contains(&&m.id))
        .map(|m| m.content.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

fn has(hay: &str, needle: &str) -> bool {
    hay.to_lowercase().contains(&needle.to_lowercase())
}

/// Whether `text` has `word` as a whole word (any case).
fn has_word(text: &str, word: &str) -> bool {
    let word = word.to_lowercase();
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .any(|w| w == word)
}

/// The sentences of a text as `carried_as_current` cuts them, a note after a full stop kept with its
/// sentence (a fact's line ends `I moved to Oslo. (said 2026-11-20)`).
fn sentences(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in text.split('\n') {
        let start = out.len();
        for part in line.split(". ") {
            if out.len() > start && part.starts_with('(') {
                let last = out.last_mut().unwrap();
                last.push_str(". ");
                last.push_str(part);
            } else {
                out.push(part.to_string());
            }
        }
    }
    out
}

/// The ways a day is written: `2026-03-04` (the prompt's) and `4 Mar 2026`.
fn day_forms(n: i64) -> [String; 2] {
    [date(day_ms(n)), day(day_ms(n))]
}

/// `memory` without the names of [`NAMES_WITH_OLD_VALUES`] (any case).
fn without_names(memory: &str) -> String {
    let mut out = memory.to_string();
    for name in NAMES_WITH_OLD_VALUES {
        while let Some(i) = out.to_lowercase().find(&name.to_lowercase()) {
            out.replace_range(i..i + name.len(), "(a name)");
        }
    }
    out
}

/// Whether the prompt (its `memory` and `history`) passes question `q`, and why not.
fn score_prompt(q: &Question, memory: &str, history: &str) -> Result<(), String> {
    let both = format!("{memory}\n{history}");
    let missing: Vec<&&str> = q.expect.iter().filter(|e| !has(&both, e)).collect();
    match q.category {
        Category::Abstention => {
            let named: Vec<&&str> = q.expect.iter().filter(|w| has_word(memory, w)).collect();
            if named.is_empty() {
                Ok(())
            } else {
                Err(format!("the memory names {named:?}"))
            }
        }
        Category::Temporal => {
            let days = day_forms(q.day);
            let dated = sentences(memory)
                .iter()
                .any(|s| has(s, q.expect[0]) && days.iter().any(|d| s.contains(d.as_str())));
            if dated {
                Ok(())
            } else {
                Err(format!(
                    "no sentence carries {:?} with {}",
                    q.expect[0], days[0]
                ))
            }
        }
        _ if !missing.is_empty() => Err(format!("missing {missing:?}")),
        Category::Update if carried_as_current(&without_names(memory), q.old, q.expect[0]) => {
            Err(format!("{:?} carried as current", q.old))
        }
        _ => Ok(()),
    }
}

/// Words of an answer that say it does not know.
const NOT_KNOWN: [&str; 10] = [
    "don't know",
    "do not know",
    "not sure",
    "haven't told",
    "have not told",
    "didn't mention",
    "did not mention",
    "no information",
    "not mentioned",
    "don't have",
];

/// Whether an `answer` to question `q` passes: it contains the expected value (temporal: the day in
/// some form; abstention: none of the words, or it says it does not know).
fn score_answer(q: &Question, answer: &str) -> bool {
    match q.category {
        Category::Abstention => {
            NOT_KNOWN.iter().any(|n| has(answer, n))
                || !q.expect.iter().any(|w| has_word(answer, w))
        }
        Category::Temporal => {
            let ms = day_ms(q.day);
            let (d, month) = (date(ms), day(ms));
            let mut parts = month.split(' ');
            let (dd, mon) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
            let long = [
                "January",
                "February",
                "March",
                "April",
                "May",
                "June",
                "July",
                "August",
                "September",
                "October",
                "November",
                "December",
            ]
            .into_iter()
            .find(|m| m.starts_with(mon))
            .unwrap_or(mon);
            [
                d,
                month.clone(),
                format!("{long} {dd}"),
                format!("{dd} {long}"),
                format!("{mon} {dd}"),
            ]
            .iter()
            .any(|f| has(answer, f))
        }
        _ => q.expect.iter().all(|e| has(answer, e)),
    }
}

/// The second mode's endpoint, from the environment.
fn answer_endpoint() -> Option<EndpointProfile> {
    let url = std::env::var("MEMOIRE_EVAL_URL").ok()?;
    Some(EndpointProfile {
        id: "eval".into(),
        base_url: url,
        protocol: Protocol::OpenAiChat,
        model: std::env::var("MEMOIRE_EVAL_MODEL").unwrap_or_else(|_| "default".into()),
        api_key: std::env::var("MEMOIRE_EVAL_KEY").ok(),
        key_origin: String::new(),
        system_prompt: String::new(),
        no_user_memory: false,
    })
}

/// The answer of `endpoint` to `prompt` (the app's request, streamed, through `curl`).
fn answer(endpoint: &EndpointProfile, prompt: &Prompt) -> Result<String, String> {
    let options = RequestOptions {
        temperature: Some(0.0),
        max_tokens: Some(300),
        previous_response_id: None,
        stream: true,
        output: None,
        slot: None,
    };
    let http = request::build(endpoint, prompt, &options).expect("the key may go there");
    let mut cmd = std::process::Command::new("curl");
    cmd.args(["-sS", "--max-time", "600", "-X", &http.method, &http.url]);
    for (k, v) in &http.headers {
        cmd.args(["-H", &format!("{k}: {v}")]);
    }
    cmd.args(["--data-binary", "@-", "-w", "\n%{http_code}"]);
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| format!("curl: {e}"))?;
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().ok_or("curl: no stdin")?;
        stdin
            .write_all(http.body.as_bytes())
            .map_err(|e| e.to_string())?;
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let raw = String::from_utf8_lossy(&out.stdout).to_string();
    let (body, status) = raw.rsplit_once('\n').unwrap_or(("", raw.as_str()));
    if status.trim() != "200" {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!("HTTP {status}: {body}{err}"));
    }
    Ok(common::reply_text(endpoint.protocol, body.as_bytes()))
}

/// The conversations played out: each one's memory, and every fact about the user as stored.
fn play(
    endpoint: &EndpointProfile,
    verbose: bool,
) -> (HashMap<&'static str, Memory>, Vec<UserFact>) {
    let mut facts: Vec<UserFact> = Vec::new();
    let mut fact_ids = 0u64;
    let mut form = start_form(endpoint.protocol, None);
    let mut convs = HashMap::new();
    let (mut updates, mut landed_n) = (0u32, 0u32);
    let t0 = Instant::now();
    for (n, c) in CONVERSATIONS.iter().enumerate() {
        let mut mem = Memory::conversation(
            MemoryConfig::default(),
            c.id,
            &format!("{}-", c.id),
            day_ms(n as i64 + 1),
        );
        converse(&mut mem, endpoint, &mut form, c.turns, REPLY, |step| {
            let mut new_id = || {
                fact_ids += 1;
                format!("f{fact_ids}")
            };
            match step {
                Step::Said(m) => {
                    user::handle_said(&mut facts, c.id, &m.id, &m.content, m.created_at, new_id);
                }
                Step::Update {
                    req,
                    span,
                    reply,
                    landed,
                    took,
                    ..
                } => {
                    updates += 1;
                    landed_n += landed as u32;
                    if let (true, Ok((text, _))) = (landed, reply) {
                        // As the session does: the model's proposals, then the span's rules.
                        take_proposed(&mut facts, c.id, req, text, &mut new_id);
                        user::handle_messages(&mut facts, span, &mut new_id);
                    }
                    if verbose {
                        eprintln!(
                            "[eval] {} update ({} ms) landed {landed}: {reply:?}",
                            c.id,
                            took.as_millis()
                        );
                    }
                }
            }
        });
        convs.insert(c.id, mem);
    }
    eprintln!(
        "[eval] {} conversations, {updates} updates ({landed_n} landed) in {} s, form {}; {} facts \
         about the user ({} current)",
        CONVERSATIONS.len(),
        t0.elapsed().as_secs(),
        form.as_str(),
        facts.len(),
        facts.iter().filter(|f| f.is_current()).count()
    );
    (convs, facts)
}

/// One figure per category, in the categories' order.
fn print_ratios(prefix: &str, passed: &HashMap<Category, (u32, u32)>) {
    for cat in Category::ALL {
        let (ok, n) = passed.get(&cat).copied().unwrap_or((0, 0));
        let ratio = ok as f64 / n.max(1) as f64;
        eprintln!("[eval] {prefix} {}: {ok} of {n}", cat.name());
        print_figure(prefix, cat, ratio);
    }
}

/// Each figure's name written out (scripts/bench-check.mjs reads them from this source).
fn print_figure(prefix: &str, cat: Category, r: f64) {
    match (prefix, cat) {
        ("prompt", Category::Single) => println!("bench memory_eval_single {r:.2} ratio"),
        ("prompt", Category::Cross) => {
            println!("bench memory_eval_cross_conversation {r:.2} ratio")
        }
        ("prompt", Category::Update) => println!("bench memory_eval_update {r:.2} ratio"),
        ("prompt", Category::Temporal) => println!("bench memory_eval_temporal {r:.2} ratio"),
        ("prompt", Category::Preference) => {
            println!("bench memory_eval_preference {r:.2} ratio")
        }
        ("prompt", Category::Abstention) => {
            println!("bench memory_eval_abstention {r:.2} ratio")
        }
        (_, Category::Single) => println!("bench memory_eval_answer_single {r:.2} ratio"),
        (_, Category::Cross) => {
            println!("bench memory_eval_answer_cross_conversation {r:.2} ratio")
        }
        (_, Category::Update) => println!("bench memory_eval_answer_update {r:.2} ratio"),
        (_, Category::Temporal) => println!("bench memory_eval_answer_temporal {r:.2} ratio"),
        (_, Category::Preference) => {
            println!("bench memory_eval_answer_preference {r:.2} ratio")
        }
        (_, Category::Abstention) => {
            println!("bench memory_eval_answer_abstention {r:.2} ratio")
        }
    }
}

/// Takes in the facts about the user the model proposed in `reply` to `req` (an update of
/// conversation `conv` that landed), held to the user's words (`engine::memory::proposed`).
fn take_proposed(
    facts: &mut Vec<UserFact>,
    conv: &str,
    req: &UpdateRequest,
    reply: &str,
    new_id: &mut dyn FnMut() -> String,
) {
    let Ok(parsed) = req.read_reply(reply) else {
        return;
    };
    let said: Vec<proposed::Said> = req
        .read
        .iter()
        .filter(|m| m.role == Role::User)
        .map(|m| proposed::Said {
            message_id: &m.id,
            text: &m.content,
            at: m.created_at,
        })
        .collect();
    proposed::handle_proposed_in(facts, None, conv, &said, &parsed.user_facts, new_id);
}

/// The facts about the user after every user message of `set` (`user::handle_said`, as the app takes
/// them in; its conversations a day apart, its messages a minute apart).
fn set_facts(set: &languages::Set) -> Vec<UserFact> {
    let mut facts = Vec::new();
    let mut n = 0u64;
    for (c, turns) in set.conversations.iter().enumerate() {
        let conv = format!("{}-{c}", set.name);
        for (k, text) in turns.iter().enumerate() {
            let at = day_ms(c as i64 + 1) + k as i64 * 60_000;
            user::handle_said(&mut facts, &conv, &format!("{conv}-m{k}"), text, at, || {
                n += 1;
                format!("f{n}")
            });
        }
    }
    facts
}

/// Whether the `memory` of a new conversation's prompt passes `q` (the set's module doc).
fn score_language(q: &languages::Q, memory: &str) -> bool {
    use languages::Kind;
    match q.kind {
        Kind::Abstention | Kind::NotAFact => !q.expect.iter().any(|w| has_word(memory, w)),
        Kind::Update => {
            q.expect.iter().all(|e| has(memory, e))
                && !memory
                    .lines()
                    .any(|l| has(l, q.old) && !q.expect.iter().any(|e| has(l, e)))
        }
        _ => q.expect.iter().all(|e| has(memory, e)),
    }
}

/// The evaluation beyond English (`memory_eval/languages.rs`): each set's facts taken in by the rules
/// (no memory update: these are the facts a new conversation gets from any model, the 135M one
/// included), each question asked as the first message of a new conversation at the default
/// settings, its prompt's memory scored; a figure per set, the abstention over every set, and the
/// count of things said only as a question, request, hypothetical or of someone else that a prompt
/// carried.
fn languages_eval(endpoint: &EndpointProfile, verbose: bool) {
    use languages::Kind;
    let (mut abstained, mut carried) = ((0u32, 0u32), 0u32);
    // Per figure (the sets of one name together), in the sets' order.
    let mut figures: Vec<(&str, u32, u32)> = Vec::new();
    for set in &languages::SETS {
        let facts = set_facts(set);
        let per = ask_set(endpoint, set, &facts, verbose);
        let get = |k: Kind| per.get(&k).copied().unwrap_or((0, 0));
        abstained.0 += get(Kind::Abstention).0;
        abstained.1 += get(Kind::Abstention).1;
        carried += get(Kind::NotAFact).1 - get(Kind::NotAFact).0;
        let (ok, n) = set_total(set, &per, facts.len());
        match figures.iter_mut().find(|f| f.0 == set.name) {
            Some(f) => (f.1, f.2) = (f.1 + ok, f.2 + n),
            None => figures.push((set.name, ok, n)),
        }
    }
    for (name, ok, n) in figures {
        print_language(name, ok as f64 / n.max(1) as f64);
    }
    let r = abstained.0 as f64 / abstained.1.max(1) as f64;
    println!("bench memory_eval_abstention_languages {r:.2} ratio");
    println!("bench memory_eval_not_a_fact_carried {carried} facts");
}

/// Asks `set`'s questions, each as the first message of a new conversation whose prompts carry
/// `facts`: passed and asked per kind (each miss printed when `verbose`).
fn ask_set(
    endpoint: &EndpointProfile,
    set: &languages::Set,
    facts: &[UserFact],
    verbose: bool,
) -> HashMap<languages::Kind, (u32, u32)> {
    let mut per: HashMap<languages::Kind, (u32, u32)> = HashMap::new();
    for (i, q) in set.questions.iter().enumerate() {
        let at = day_ms(QUESTION_DAY + 1) + i as i64 * 60_000;
        let id = format!("{}-new{i}", set.name);
        let fresh = Memory::conversation(MemoryConfig::default(), &id, &format!("{id}-"), at);
        let (assembly, _) = fresh.prompt_at(endpoint, q.text, facts, at);
        let memory = memory_text(&assembly);
        let ok = score_language(q, &memory);
        let e = per.entry(q.kind).or_default();
        e.0 += ok as u32;
        e.1 += 1;
        if verbose && !ok {
            eprintln!(
                "[eval] {} miss ({}): {:?}\n--- memory ---\n{memory}\n---",
                set.name,
                q.kind.name(),
                q.text
            );
        }
    }
    per
}

/// The questions of `set` passed and asked in all, each kind's printed (stderr) with the number of
/// facts taken in.
fn set_total(
    set: &languages::Set,
    per: &HashMap<languages::Kind, (u32, u32)>,
    facts: usize,
) -> (u32, u32) {
    let (mut ok, mut n) = (0, 0);
    for kind in languages::Kind::ALL {
        let (k_ok, k_n) = per.get(&kind).copied().unwrap_or((0, 0));
        eprintln!("[eval] {} {}: {k_ok} of {k_n}", set.name, kind.name());
        ok += k_ok;
        n += k_n;
    }
    eprintln!("[eval] {}: {ok} of {n}; {facts} facts taken in", set.name);
    (ok, n)
}

/// The facts the model proposes, scored (`memory_eval/languages.rs`, [`languages::PROPOSED`]): the
/// set's facts as the rules take them in (none: Polish), then after each conversation the scripted
/// proposer's (`engine::memory::proposed`, as a landed update's are), the questions asked as the
/// other sets'. `memory_eval_proposed` (every category) and `memory_eval_proposed_not_a_fact_carried`.
fn proposed_eval(endpoint: &EndpointProfile, verbose: bool) {
    use languages::Kind;
    let set = &languages::PROPOSED;
    let mut facts = set_facts(set);
    let rules_only = set_total(set, &ask_set(endpoint, set, &facts, false), facts.len());
    eprintln!(
        "[eval] proposed, by the rules alone: {} of {}",
        rules_only.0, rules_only.1
    );
    let mut n = 0u64;
    for (c, (turns, named)) in set
        .conversations
        .iter()
        .zip(languages::PROPOSALS)
        .enumerate()
    {
        let conv = format!("{}-{c}", set.name);
        let ids: Vec<String> = (0..turns.len()).map(|k| format!("{conv}-m{k}")).collect();
        let said: Vec<proposed::Said> = turns
            .iter()
            .enumerate()
            .map(|(k, text)| proposed::Said {
                message_id: &ids[k],
                text,
                at: day_ms(c as i64 + 1) + k as i64 * 60_000,
            })
            .collect();
        let (ended, named): (Vec<_>, Vec<_>) = named.iter().partition(|p| p.ended);
        let to = |list: Vec<&languages::Proposal>| -> Vec<parse::ProposedFact> {
            list.into_iter()
                .filter_map(|p| {
                    let kind = parse::proposed_kind(p.kind)?;
                    let quote = p.quote.to_string();
                    Some(parse::ProposedFact { quote, kind })
                })
                .collect()
        };
        let proposals = parse::Proposals {
            said: to(named),
            ended: to(ended),
        };
        proposed::handle_proposed_in(&mut facts, None, &conv, &said, &proposals, || {
            n += 1;
            format!("p{n}")
        });
    }
    let per = ask_set(endpoint, set, &facts, verbose);
    let (ok, all) = set_total(set, &per, facts.len());
    let (k_ok, k_n) = per.get(&Kind::NotAFact).copied().unwrap_or((0, 0));
    println!(
        "bench memory_eval_proposed {:.2} ratio",
        ok as f64 / all.max(1) as f64
    );
    println!(
        "bench memory_eval_proposed_not_a_fact_carried {} facts",
        k_n - k_ok
    );
}

/// Each set's figure written out (scripts/bench-check.mjs reads them from this source).
fn print_language(name: &str, r: f64) {
    match name {
        "en" => println!("bench memory_eval_language_en {r:.2} ratio"),
        "de" => println!("bench memory_eval_language_de {r:.2} ratio"),
        "fr" => println!("bench memory_eval_language_fr {r:.2} ratio"),
        "es" => println!("bench memory_eval_language_es {r:.2} ratio"),
        _ => println!("bench memory_eval_paraphrase {r:.2} ratio"),
    }
}

fn main() {
    let verbose = std::env::var("MEMOIRE_EVAL_VERBOSE").is_ok();
    // Assembly only: the endpoint's URL is never asked.
    languages_eval(&endpoint("http://127.0.0.1:9/v1"), verbose);
    proposed_eval(&endpoint("http://127.0.0.1:9/v1"), verbose);
    if std::env::var("MEMOIRE_EVAL_LANGUAGES_ONLY").is_ok() {
        return;
    }
    let Ok(url) = std::env::var("MEMOIRE_LLAMA_URL") else {
        eprintln!("memory_eval: set MEMOIRE_LLAMA_URL (scripts/bench.sh starts the real server)");
        std::process::exit(2);
    };
    let endpoint = endpoint(&url);
    let answers = answer_endpoint();
    let (convs, facts) = play(&endpoint, verbose);
    let mut passed: HashMap<Category, (u32, u32)> = HashMap::new();
    let mut answered: HashMap<Category, (u32, u32)> = HashMap::new();
    let mut memory_tokens: Vec<u32> = Vec::new();
    let mut budget = 0;
    for (i, q) in QUESTIONS.iter().enumerate() {
        let at = day_ms(QUESTION_DAY + 1) + i as i64 * 60_000;
        let fresh;
        let mem = match q.asked_in {
            Where::In(id) => &convs[id],
            Where::New => {
                let id = format!("new{i}");
                fresh = Memory::conversation(MemoryConfig::default(), &id, &format!("{id}-"), at);
                &fresh
            }
        };
        let (assembly, _) = mem.prompt_at(&endpoint, q.text, &facts, at);
        budget = assembly.budget_tokens;
        let memory = memory_text(&assembly);
        memory_tokens.push(
            assembly
                .sections
                .iter()
                .filter(|s| is_memory(s.kind))
                .map(|s| s.tokens)
                .sum(),
        );
        let verdict = score_prompt(q, &memory, &history_text(&assembly, mem));
        let entry = passed.entry(q.category).or_default();
        entry.0 += verdict.is_ok() as u32;
        entry.1 += 1;
        if let Err(why) = &verdict {
            if verbose {
                eprintln!(
                    "[eval] miss ({}, in {}): {:?}: {why}\n--- memory ---\n{memory}\n---",
                    q.category.name(),
                    q.asked_in.name(),
                    q.text
                );
            }
        }
        if let Some(ep) = &answers {
            let reply = answer(ep, &assembly.prompt).unwrap_or_else(|e| {
                eprintln!("[eval] answer to {:?} failed: {e}", q.text);
                String::new()
            });
            let ok = score_answer(q, &reply);
            if verbose && !ok {
                eprintln!("[eval] answer miss: {:?}: {reply:?}", q.text);
            }
            let entry = answered.entry(q.category).or_default();
            entry.0 += ok as u32;
            entry.1 += 1;
        }
    }
    print_ratios("prompt", &passed);
    if answers.is_some() {
        print_ratios("answer", &answered);
    }
    memory_tokens.sort_unstable();
    let median = memory_tokens[memory_tokens.len() / 2];
    eprintln!(
        "[eval] {} questions; memory in the prompt: median {median} tokens, max {} (budget {budget}, \
         a quarter {})",
        QUESTIONS.len(),
        memory_tokens.last().copied().unwrap_or(0),
        budget / 4
    );
    println!("bench memory_eval_memory_tokens_median {median} tokens");
}
