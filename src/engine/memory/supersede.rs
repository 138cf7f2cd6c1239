//! Changed facts in the summary: which sentence a newer one supersedes, and how a sentence carries the
//! day it was said and, once superseded, the day it stopped holding.
//!
//! A summary sentence may end with a note the engine writes and reads back ([`note_of`]):
//! `User: I live in Oslo now (said 2026-11-20).` for a current statement of the user, and
//! `User: I live in Lisbon (said 2026-03-01; until 2026-11-20).` (or `… (until 2026-11-20).`) for a
//! past one. A past sentence is kept (the memory pane shows it struck through) and carried into a
//! prompt only with its note, never as current.
//!
//! Claims ([`claims`]): the engine's own rule for the common cases, per clause:
//! - lives in X, moved to X, moved (from W) to X, has lived in X, home (for me) is X -> (subject,
//!   `lives_in`, X), one value at a time;
//! - works as X, earns a living as X, I am / is / have been a <job> -> (subject, `job`, X), one
//!   value at a time;
//! - my name is X, is called X -> (subject, `name`, X), one value at a time;
//! - has a N -> (subject, `has` N): superseded only by its negation ("no longer has a N");
//! - likes / loves / enjoys / adores O -> (subject, `likes` O): superseded by its negation ("doesn't like O",
//!   "dislikes O", "hates O", "loathes O", "can't stand O") and the other way round;
//! - does N <unit> a <period> ("I run about 40 kilometres a week") -> (subject, `amount run
//!   kilometr per week`, N), one value at a time;
//! - N died / passed away, sold / lost / crashed N, switched from N to … -> (subject, `ended`, N):
//!   every other sentence that names N holds no longer ([`mentions_ended`]: "I have a dog called
//!   Biscuit" once "Biscuit died"), and so does an entity's alias or property of that value
//!   ([`forget_gone`]).
//!
//! The subject is "user" for I / my / the user (and for the user's own name once a sentence says it;
//! for "we" in the user's own statement, their household)
//! when that is the pronoun nearest the verb (not "I'm glad you're living in…"), else the last word
//! before the verb. A newer claim, from a sentence a message of the update says, about the same subject
//! and attribute with another value (or the opposite sense) makes the older sentence past
//! ([`supersede`]). Also past: an older sentence the model lists in the update's `no_longer_true`, when
//! a user message of the update speaks of a change and of what the sentence is about (a word they share
//! beyond the change words). A new sentence that restates a past fact no message of the update says
//! again is dropped, so nothing superseded comes back. A sentence that makes no claim but names a place
//! or job that no longer holds ("Lisbon is a beautiful city" once the user lives in Oslo) is past with
//! it ([`mentions_gone`]).
//! The sentence note itself is `super::sentence`'s (re-exported here). Uses grounding's stems and
//! terms (`super::ground`); must not import `super::summary` or `super::read`, which use it.
//! Must not import anything outside `crate::engine`.

use super::normalize::words;
use super::prompt::ReadMessage;
use super::sentence::{sentences, USER_SAYS};
use crate::engine::model::{Millis, Role};

pub use super::sentence::{is_past, note_of, past_since, said_on, with_note, Note};

/// What one clause claims.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub subject: String,
    /// `lives_in`, `job`, `name`, `has <noun>`, `likes <object>`.
    pub attribute: String,
    pub value: String,
    /// "no longer", "doesn't", "dislikes": the claim says the fact does not hold.
    pub negated: bool,
}

impl Claim {
    fn functional(&self) -> bool {
        matches!(self.attribute.as_str(), "lives_in" | "job" | "name")
            || self.attribute.starts_with("amount ")
    }

    /// Whether `self`, said later, makes `older` no longer true.
    pub fn supersedes(&self, older: &Claim) -> bool {
        if self.subject != older.subject || self.attribute != older.attribute || older.negated {
            return false;
        }
        if self.functional() {
            self.negated == (self.value == older.value)
        } else {
            self.negated
        }
    }
}

/// Common jobs, for "I am a <job>" (any value counts after "works as").
const JOBS: &[&str] = &[
    "nurse",
    "pilot",
    "teacher",
    "doctor",
    "engineer",
    "developer",
    "programmer",
    "student",
    "lawyer",
    "chef",
    "cook",
    "driver",
    "designer",
    "manager",
    "writer",
    "artist",
    "farmer",
    "accountant",
    "architect",
    "scientist",
    "researcher",
    "dentist",
    "pharmacist",
    "mechanic",
    "electrician",
    "plumber",
    "baker",
    "waiter",
    "waitress",
    "cashier",
    "firefighter",
    "soldier",
    "journalist",
    "musician",
    "photographer",
    "consultant",
    "translator",
    "librarian",
    "carpenter",
    "vet",
    "veterinarian",
    "surgeon",
    "professor",
    "secretary",
    "receptionist",
    "banker",
    "glassblower",
    "barista",
    "janitor",
    "paramedic",
    "midwife",
    "therapist",
    "police",
    "officer",
    "retired",
    "unemployed",
    "freelancer",
    "entrepreneur",
    "analyst",
    "economist",
    "historian",
];
/// Words that end a value ("Oslo now", "a nurse in Lisbon").
const VALUE_ENDS: &[&str] = &[
    "now",
    "anymore",
    "any",
    "today",
    "currently",
    "these",
    "since",
    "for",
    "last",
    "with",
    "in",
    "at",
    "because",
    "who",
    "which",
    "that",
    "named",
    "called",
    "too",
    "again",
    "still",
];
/// Words before "died" that name no thing of the user's ("he died", "nobody died").
const ENDED_NOT_THINGS: &[&str] = &[
    "he", "she", "it", "they", "who", "that", "which", "nobody", "everyone", "someone", "i", "you",
    "we", "almost", "nearly", "had", "has", "have",
];
const NEGATIONS: &[&str] = &["not", "no", "never", "don", "doesn", "didn", "t", "longer"];
/// Words before the verb that are not the subject.
const NOT_SUBJECT: &[&str] = &[
    "not",
    "no",
    "never",
    "don",
    "doesn",
    "didn",
    "t",
    "longer",
    "do",
    "does",
    "now",
    "also",
    "still",
    "currently",
    "really",
    "then",
    "so",
    "and",
    "but",
    "the",
    "a",
    "an",
    "just",
    "user",
];

fn value_of(rest: &[String]) -> String {
    let rest = match rest.first().map(String::as_str) {
        Some("a" | "an" | "the") => &rest[1..],
        _ => rest,
    };
    rest.iter()
        .take_while(|w| !VALUE_ENDS.contains(&w.as_str()))
        .take(3)
        .map(|w| super::ground::stem(w).to_string())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The subject of a clause from the words before its verb.
fn subject_of(before: &[String], fallback: &str) -> String {
    if let Some(k) = before.iter().rposition(|w| w == "my") {
        let rest: Vec<&str> = before[k + 1..].iter().map(String::as_str).collect();
        // "My name is X": the verb is "name is", and the subject the user.
        if rest.is_empty() {
            return "user".into();
        }
        return format!("user's {}", rest.join(" "));
    }
    // The pronoun nearest the verb says whose clause it is: "I'm glad you're living in…" is not
    // the user's.
    for w in before.iter().rev() {
        match w.as_str() {
            "i" | "user" | "m" | "me" => return "user".into(),
            "you" | "he" | "she" | "they" | "we" | "it" | "people" | "everyone" => {
                return w.clone()
            }
            _ => {}
        }
    }
    before
        .iter()
        .rev()
        .find(|w| !NOT_SUBJECT.contains(&w.as_str()) && w.as_str() != "s")
        .cloned()
        .unwrap_or_else(|| fallback.to_string())
}

/// The claims of `sentence` (notes and the `User: ` mark left out), per the module rules.
pub fn claims(sentence: &str) -> Vec<Claim> {
    let (body, _) = note_of(sentence);
    let user_says = body.starts_with(USER_SAYS);
    let mut out = Vec::new();
    let mut subject = if user_says { "user" } else { "" }.to_string();
    for clause in body.split([',', ';', ':']) {
        let w = words(clause);
        // Conjunctions start a new clause.
        for part in w.split(|x| matches!(x.as_str(), "and" | "so" | "but" | "because" | "while")) {
            if let Some(mut c) = claim_of(part, &subject) {
                // In the user's own statement "we" is their household.
                if user_says && c.subject == "we" {
                    c.subject = "user".into();
                }
                subject = c.subject.clone();
                out.push(c);
            }
        }
    }
    out
}

fn claim_of(w: &[String], fallback: &str) -> Option<Claim> {
    let fallback = if fallback.is_empty() {
        "user"
    } else {
        fallback
    };
    for p in 0..w.len() {
        let before = &w[..p];
        if before.iter().any(|x| x == "used") {
            return None; // "used to live in": past already.
        }
        let Some(found) = verb_at(w, p) else {
            continue;
        };
        let (attribute, value, against) = found?;
        let negated = before
            .iter()
            .rev()
            .take(3)
            .any(|x| NEGATIONS.contains(&x.as_str()));
        return (!value.is_empty()).then(|| Claim {
            subject: subject_of(before, fallback),
            attribute,
            value,
            negated: negated != against,
        });
    }
    None
}

/// Words before an amount that leave it as it is ("about 40 kilometres a week").
const ROUGHLY: &[&str] = &[
    "about", "around", "roughly", "nearly", "almost", "over", "some",
];
/// What a regular amount is counted per ("a week", "per day", "every month").
const PERIODS: &[&str] = &["day", "night", "week", "weekend", "month", "year"];

/// The amount a verb at word `p` says the subject does regularly ("run about 40 kilometres a
/// week"): `amount <verb> <unit> per <period>` and the number.
fn amount_at(w: &[String], p: usize) -> Option<(String, String)> {
    let at = |i: usize| w.get(i).map(String::as_str).unwrap_or("");
    let verb = at(p);
    if verb.is_empty() || ROUGHLY.contains(&verb) || verb.chars().any(|c| c.is_ascii_digit()) {
        return None;
    }
    let n = p + 1 + ROUGHLY.contains(&at(p + 1)) as usize;
    let (number, unit, per, period) = (at(n), at(n + 1), at(n + 2), at(n + 3));
    let counted = !number.is_empty() && number.chars().all(|c| c.is_ascii_digit());
    (counted
        && !unit.is_empty()
        && matches!(per, "a" | "an" | "per" | "each" | "every")
        && PERIODS.contains(&period))
    .then(|| {
        let stem = super::ground::stem;
        let attribute = format!("amount {} {} per {period}", stem(verb), stem(unit));
        (attribute, number.to_string())
    })
}

/// What the verb at word `p` of a clause claims, per the module rules: `(attribute, value, whether
/// it says the opposite)`; `Some(None)` when the clause claims nothing after all, `None` when there
/// is no verb of the rules at `p`.
fn verb_at(w: &[String], p: usize) -> Option<Option<(String, String, bool)>> {
    let at = |i: usize| w.get(i).map(String::as_str).unwrap_or("");
    let found = |attribute: &str, value: String| Some(Some((attribute.to_string(), value, false)));
    if let Some((attribute, value)) = amount_at(w, p) {
        return found(&attribute, value);
    }
    if let Some(claimed) = phrasing_at(w, p) {
        return Some(claimed);
    }
    match (at(p), at(p + 1)) {
        ("live" | "lives" | "living", "in") | ("moved", "to") | ("based", "in") => {
            found("lives_in", value_of(&w[p + 2..]))
        }
        ("work" | "works" | "working", "as") => found("job", value_of(&w[p + 2..])),
        ("am" | "m" | "is" | "became", "a" | "an") => {
            let v = value_of(&w[p + 1..]);
            if v.split(' ').any(|x| JOBS.contains(&x)) {
                found("job", v)
            } else {
                None
            }
        }
        ("name", "is") | ("called", _) if p > 0 || at(p) == "name" => {
            let from = if at(p) == "name" { p + 2 } else { p + 1 };
            if at(p) == "called" && !matches!(at(p.wrapping_sub(1)), "is" | "am" | "m" | "are") {
                return None;
            }
            found("name", value_of(&w[from..]))
        }
        ("have" | "has", "a" | "an") => {
            let rest = &w[p + 2..];
            let end = rest
                .iter()
                .position(|x| VALUE_ENDS.contains(&x.as_str()))
                .unwrap_or(rest.len());
            let Some(noun) = rest[..end].last() else {
                return Some(None);
            };
            found(&format!("has {}", super::ground::stem(noun)), "yes".into())
        }
        // "Biscuit died", "my dog passed away": the thing before the verb is gone.
        ("died", _) | ("passed", "away") if p > 0 => {
            let thing = at(p - 1);
            if ENDED_NOT_THINGS.contains(&thing) || NOT_SUBJECT.contains(&thing) {
                return Some(None);
            }
            found("ended", super::ground::stem(thing).to_string())
        }
        // "I sold the Fiat", "we lost our house": the thing after the verb is gone.
        ("sold" | "lost" | "crashed" | "totaled" | "wrecked", _) => {
            let rest = &w[p + 1..];
            let rest = match rest.first().map(String::as_str) {
                Some("my" | "our" | "his" | "her" | "their") => &rest[1..],
                _ => rest,
            };
            found("ended", value_of(rest))
        }
        ("like" | "likes" | "love" | "loves" | "enjoy" | "enjoys" | "adore" | "adores", _)
        | ("dislike" | "dislikes" | "hate" | "hates", _)
        | ("loathe" | "loathes" | "detest" | "detests" | "despise" | "despises", _)
            if !matches!(
                at(p.wrapping_sub(1)),
                "would" | "d" | "is" | "are" | "look" | "looks"
            ) =>
        {
            let object = value_of(&w[p + 1..]);
            let against = !matches!(
                at(p),
                "like" | "likes" | "love" | "loves" | "enjoy" | "enjoys" | "adore" | "adores"
            );
            let object = object.split(' ').next().unwrap_or("").to_string();
            if object.is_empty() {
                return Some(None);
            }
            Some(Some((format!("likes {object}"), "yes".into(), against)))
        }
        _ => None,
    }
}

/// What [`verb_at`] claims at word `p` of the phrasings of issue 42 (moves "from … to …", perfects
/// that hold now, "can't stand") and of a habit given up ("switched from"); `None` when none.
fn phrasing_at(w: &[String], p: usize) -> Option<Option<(String, String, bool)>> {
    let at = |i: usize| w.get(i).map(String::as_str).unwrap_or("");
    let found = |attribute: &str, value: String| Some(Some((attribute.to_string(), value, false)));
    match (at(p), at(p + 1)) {
        // "we moved from Ghent to Utrecht", "I relocated back to Oslo": the place after "to".
        ("moved" | "relocated", _) => {
            let to = (p + 1..w.len().min(p + 7)).find(|&i| w[i] == "to")?;
            found("lives_in", value_of(&w[to + 1..]))
        }
        // "Home for me is Dundee", "my home is in Leeds": the place after "is".
        ("home", _) => {
            let is = [p + 1, p + 3].into_iter().find(|&i| at(i) == "is")?;
            let from = is + 1 + (at(is + 1) == "in") as usize;
            found("lives_in", value_of(&w[from..]))
        }
        // "I earn my living as a locksmith".
        ("living", "as") => found("job", value_of(&w[p + 2..])),
        // "I've lived in Ghent since 2015", "I have worked as a nurse": a perfect that holds now.
        ("lived", "in") if perfect(w, p) => found("lives_in", value_of(&w[p + 2..])),
        ("worked", "as") if perfect(w, p) => found("job", value_of(&w[p + 2..])),
        ("been", "a" | "an") if perfect(w, p) => {
            let v = value_of(&w[p + 1..]);
            if v.split(' ').any(|x| JOBS.contains(&x)) {
                found("job", v)
            } else {
                None
            }
        }
        // "I can't stand cilantro", "I cannot bear the cold": a dislike ("can't" is negated already).
        ("stand" | "bear", _) if matches!(at(p.wrapping_sub(1)), "t" | "cannot") => {
            let object = value_of(&w[p + 1..]);
            let mut object = object.split(' ').next().unwrap_or("").to_string();
            // "Mushrooms are the one food I can't stand": the thing the clause opens with.
            if object.is_empty() && !matches!(at(0), "i" | "we" | "you" | "he" | "she" | "they") {
                object = super::ground::stem(at(0)).to_string();
            }
            if object.is_empty() {
                return Some(None);
            }
            Some(Some((
                format!("likes {object}"),
                "yes".into(),
                at(p - 1) == "cannot",
            )))
        }
        // "I switched from coffee to green tea": what the user had before is over.
        ("switched" | "changed", "from") => {
            let rest = &w[p + 2..];
            let end = rest.iter().position(|x| x == "to").unwrap_or(rest.len());
            found("ended", value_of(&rest[..end]))
        }
        _ => None,
    }
}

/// Whether the verb at word `p` is a perfect's participle ("I've lived", "she has worked").
fn perfect(w: &[String], p: usize) -> bool {
    p > 0 && matches!(w[p - 1].as_str(), "ve" | "have" | "has")
}

/// Whether `subject` (a subject or an entity's name, in words) is one of the user's `names` (claim
/// values, stemmed: "Tomas" is `toma`).
fn is_user_name(names: &[String], subject: &str) -> bool {
    let stemmed = subject
        .split(' ')
        .map(super::ground::stem)
        .collect::<Vec<_>>()
        .join(" ");
    names.iter().any(|n| *n == subject || *n == stemmed)
}

/// The names the user gives themself in `sentences` ("my name is Marta").
fn user_names(all: &[Vec<Claim>]) -> Vec<String> {
    all.iter()
        .flatten()
        .filter(|c| c.subject == "user" && c.attribute == "name" && !c.negated)
        .map(|c| c.value.clone())
        .collect()
}

/// The index in `read` of the latest message that says `sentence`'s facts: its own message for a
/// user statement, else the latest whose words hold each claim's value; `None` when none does (the
/// model restating what it knew before).
fn said_in(sentence: &str, claims: &[Claim], read: &[ReadMessage]) -> Option<usize> {
    let (body, _) = note_of(sentence);
    if let Some(own) = body.strip_prefix(USER_SAYS) {
        let own = words(own).join(" ");
        if let Some(i) = read
            .iter()
            .rposition(|m| m.role == Role::User && words(&m.content).join(" ").contains(&own))
        {
            return Some(i);
        }
    }
    let stems = |t: &str| -> Vec<String> {
        words(t)
            .iter()
            .map(|w| super::ground::stem(w).to_string())
            .collect()
    };
    read.iter().rposition(|m| {
        let have = stems(&m.content);
        !claims.is_empty()
            && claims.iter().all(|c| {
                let v = if c.value == "yes" {
                    c.attribute.as_str()
                } else {
                    c.value.as_str()
                };
                v.split(' ')
                    .all(|x| x == "has" || x == "likes" || have.iter().any(|h| h == x))
            })
    })
}

/// Words of a user's message that speak of a change.
const CHANGE_WORDS: &[&str] = &[
    "no", "not", "longer", "anymore", "moved", "quit", "left", "now", "sold", "stopped", "changed",
    "used", "former", "ex", "divorced", "retired", "lost", "gave", "switched", "became", "new",
];

/// The words of `text` that say what it is about: [`super::ground::support_terms`] but the
/// [`CHANGE_WORDS`].
fn topic_terms(text: &str) -> std::collections::HashSet<String> {
    let mut t = super::ground::support_terms(text);
    t.retain(|w| !CHANGE_WORDS.contains(&w.as_str()));
    t
}

/// After every sentence of a previous summary.
const LATER: usize = 1 << 20;

/// One sentence on the update's time line.
struct Item {
    text: String,
    claims: Vec<Claim>,
    /// `(0, i)` for the previous summary's sentences, `(1 + message, i)` for the new ones that a
    /// message says, `(0, LATER + i)` for those none does (older than this update's messages).
    when: (usize, usize),
    /// The day it was said (for the new ones: its message's).
    at: Option<Millis>,
    from_previous: bool,
    dropped: bool,
}

/// Whether `statement` (one of the model's `no_longer_true`) is about the sentence `body`: most of
/// its words of three letters or more are in it.
fn names_sentence(statement: &str, body: &str) -> bool {
    let have: Vec<String> = words(body)
        .iter()
        .map(|w| super::ground::stem(w).to_string())
        .collect();
    let want: Vec<String> = words(statement)
        .iter()
        .filter(|w| w.chars().count() >= 3 && !matches!(w.as_str(), "the" | "user" | "and"))
        .map(|w| super::ground::stem(w).to_string())
        .collect();
    let found = want.iter().filter(|w| have.contains(w)).count();
    !want.is_empty() && found * 10 >= want.len() * 7
}

/// The new summary text of an update, with changed facts kept as past (module rules): the previous
/// summary's sentences that a newer claim of `new` (or the model's `no_longer_true`) supersedes, in
/// their past form, then `new`'s sentences, those superseded by a later one in the update made past,
/// and those that restate a past fact no message of `read` says again left out. The previous
/// summary's other sentences are not repeated here: `super::carry_forward` keeps them.
pub fn supersede(
    previous: Option<&str>,
    new: &str,
    read: &[ReadMessage],
    no_longer_true: &[String],
) -> String {
    let mut items = items_of(previous, new, read);
    drop_restated(&mut items, read);
    let mut made_past = superseded_by_later(&items, read);
    mark_no_longer_true(&items, read, no_longer_true, &mut made_past);
    mark_mentions_gone(&items, read, &mut made_past);
    let mut out: Vec<String> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        if item.dropped {
            continue;
        }
        match (item.from_previous, made_past[i]) {
            (true, Some(at)) | (false, Some(at)) => out.push(past_since(&item.text, at)),
            (false, None) => out.push(item.text.clone()),
            (true, None) => {}
        }
    }
    out.join(" ")
}

/// The sentences of `previous` and of `new` as items with their claims and when they were said
/// (by the message of `read` that says them); the user's own name in a claim is the user.
fn items_of(previous: Option<&str>, new: &str, read: &[ReadMessage]) -> Vec<Item> {
    let mut items: Vec<Item> = Vec::new();
    for (i, s) in sentences(previous.unwrap_or("")).into_iter().enumerate() {
        items.push(Item {
            text: s.to_string(),
            claims: claims(s),
            when: (0, i),
            at: None,
            from_previous: true,
            dropped: false,
        });
    }
    for (i, s) in sentences(new).into_iter().enumerate() {
        let c = claims(s);
        let m = said_in(s, &c, read);
        items.push(Item {
            text: s.to_string(),
            claims: c,
            when: m.map_or((0, LATER + i), |m| (1 + m, i)),
            at: m.map(|m| read[m].created_at),
            from_previous: false,
            dropped: false,
        });
    }
    // The user's own name is the user.
    let names = user_names(&items.iter().map(|i| i.claims.clone()).collect::<Vec<_>>());
    for item in &mut items {
        for c in &mut item.claims {
            if is_user_name(&names, &c.subject) && c.attribute != "name" {
                c.subject = "user".into();
            }
        }
    }
    items
}

/// Marks dropped each new sentence that restates a past fact of the previous summary, unless a user
/// message of `read` says it again.
fn drop_restated(items: &mut [Item], read: &[ReadMessage]) {
    let said_now = |c: &Claim| {
        read.iter().filter(|m| m.role == Role::User).any(|m| {
            claims(&m.content)
                .iter()
                .any(|x| x.attribute == c.attribute && x.value == c.value && x.negated == c.negated)
        })
    };
    let past: Vec<Claim> = items
        .iter()
        .filter(|i| i.from_previous && is_past(&i.text))
        .flat_map(|i| i.claims.clone())
        .collect();
    for item in items
        .iter_mut()
        .filter(|i| !i.from_previous && !is_past(&i.text))
    {
        let restated = !item.claims.is_empty()
            && item.claims.iter().all(|c| {
                past.iter().any(|p| {
                    p.subject == c.subject
                        && p.attribute == c.attribute
                        && p.value == c.value
                        && p.negated == c.negated
                }) && !said_now(c)
            });
        item.dropped = restated;
    }
}

/// For each item, the day a later claim (of a new sentence a message of `read` says) made it past,
/// if one did.
fn superseded_by_later(items: &[Item], read: &[ReadMessage]) -> Vec<Option<Millis>> {
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by_key(|&i| items[i].when);
    let last_day = read.last().map(|m| m.created_at);
    let mut made_past: Vec<Option<Millis>> = vec![None; items.len()];
    for (k, &later) in order.iter().enumerate() {
        // A new sentence no message says is the model restating or inventing: no evidence that
        // it is newer than anything ("I'm glad you're living in a beautiful place").
        if items[later].dropped
            || is_past(&items[later].text)
            || items[later].from_previous
            || items[later].at.is_none()
        {
            continue;
        }
        for &earlier in &order[..k] {
            let e = &items[earlier];
            if e.dropped || is_past(&e.text) || made_past[earlier].is_some() {
                continue;
            }
            let superseded = items[later]
                .claims
                .iter()
                .any(|c| e.claims.iter().any(|o| c.supersedes(o)));
            if superseded {
                made_past[earlier] = items[later].at.or(last_day).or(Some(0));
            }
        }
    }
    made_past
}

/// Makes past the previous summary's sentences the model lists in `no_longer_true`, when a user
/// message of `read` speaks of a change and of what the sentence is about.
fn mark_no_longer_true(
    items: &[Item],
    read: &[ReadMessage],
    no_longer_true: &[String],
    made_past: &mut [Option<Millis>],
) {
    // What the model says no longer holds: only sentences of the previous summary, and only when the
    // user's messages speak of a change (a small model fills the field with current facts too).
    // And only a sentence such a message speaks of: they share a word beyond the change words
    // (SmolLM2-135M listed "I live in Oslo now" when the user said "I am a pilot now; I changed
    // careers").
    let last_day = read.last().map(|m| m.created_at);
    let changes: Vec<std::collections::HashSet<String>> = read
        .iter()
        .filter(|m| m.role == Role::User)
        .filter(|m| {
            words(&m.content)
                .iter()
                .any(|x| CHANGE_WORDS.contains(&x.as_str()))
        })
        .map(|m| topic_terms(&m.content))
        .collect();
    let spoken_of = |body: &str| {
        let mine = topic_terms(body);
        changes.iter().any(|c| mine.iter().any(|t| c.contains(t)))
    };
    for (i, item) in items.iter().enumerate() {
        if spoken_of(note_of(&item.text).0)
            && item.from_previous
            && made_past[i].is_none()
            && !is_past(&item.text)
            && no_longer_true
                .iter()
                .any(|s| names_sentence(s, note_of(&item.text).0))
        {
            made_past[i] = last_day.or(Some(0));
        }
    }
}

/// Makes past each live sentence that makes no claim but names a place or job that no longer holds.
fn mark_mentions_gone(items: &[Item], read: &[ReadMessage], made_past: &mut [Option<Millis>]) {
    // A sentence that makes no claim but names a place or job that no longer holds ("Lisbon is a
    // beautiful city" after "I moved to Oslo") was about the old fact: past with it.
    let last_day = read.last().map(|m| m.created_at);
    let is_gone: Vec<bool> = (0..items.len())
        .map(|i| is_past(&items[i].text) || made_past[i].is_some())
        .collect();
    let live = |i: usize| !items[i].dropped && !is_gone[i];
    let gone = gone_values(
        (0..items.len())
            .filter(|&i| is_gone[i])
            .flat_map(|i| items[i].claims.iter()),
        (0..items.len())
            .filter(|&i| live(i))
            .flat_map(|i| items[i].claims.iter()),
    );
    let since = made_past.iter().flatten().min().copied().or(last_day);
    // A thing a message of the update says is gone ("Biscuit died") holds no longer in any
    // sentence that names it.
    let ended = ended_values(
        (0..items.len())
            .filter(|&i| live(i) && items[i].at.is_some())
            .flat_map(|i| items[i].claims.iter()),
    );
    let ended_on = (0..items.len())
        .filter(|&i| items[i].claims.iter().any(|c| c.attribute == "ended"))
        .filter_map(|i| items[i].at)
        .min()
        .or(last_day);
    for (i, past) in made_past.iter_mut().enumerate() {
        if live(i) && mentions_gone(&items[i].text, &gone) {
            *past = since.or(Some(0));
        } else if live(i) && mentions_ended(&items[i].text, &ended) {
            *past = ended_on.or(Some(0));
        }
    }
}

/// The values of the place and job claims of `past` that no claim of `current` still holds (stemmed
/// words, as claims hold them).
pub fn gone_values<'a>(
    past: impl Iterator<Item = &'a Claim>,
    current: impl Iterator<Item = &'a Claim>,
) -> Vec<String> {
    let current: Vec<&Claim> = current.collect();
    let mut out: Vec<String> = Vec::new();
    for c in past.filter(|c| matches!(c.attribute.as_str(), "lives_in" | "job") && !c.negated) {
        let held = current
            .iter()
            .any(|n| n.attribute == c.attribute && n.value == c.value && !n.negated);
        if !held && !out.contains(&c.value) {
            out.push(c.value.clone());
        }
    }
    out
}

/// The things `current` says are gone ("Biscuit died", "I sold the Fiat"): the values of its
/// `ended` claims.
pub fn ended_values<'a>(current: impl Iterator<Item = &'a Claim>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in current.filter(|c| c.attribute == "ended" && !c.negated) {
        if !out.contains(&c.value) {
            out.push(c.value.clone());
        }
    }
    out
}

/// Whether `text` names `value` (every word of it, crude stems).
fn names_value(text: &str, value: &str) -> bool {
    let have: Vec<String> = words(text)
        .iter()
        .map(|w| super::ground::stem(w).to_string())
        .collect();
    !value.is_empty() && value.split(' ').all(|x| have.iter().any(|h| h == x))
}

/// Whether `sentence` makes no claim of its own and names one of `gone` (every word of it): it was
/// said of a place or job that no longer holds.
pub fn mentions_gone(sentence: &str, gone: &[String]) -> bool {
    if gone.is_empty() || is_past(sentence) || !claims(sentence).is_empty() {
        return false;
    }
    gone.iter().any(|v| names_value(note_of(sentence).0, v))
}

/// Whether `sentence` names one of `ended` (things that are gone: "I have a dog called Biscuit"
/// once "Biscuit died") and is not itself a sentence saying so: it holds no longer.
pub fn mentions_ended(sentence: &str, ended: &[String]) -> bool {
    if ended.is_empty()
        || is_past(sentence)
        || claims(sentence).iter().any(|c| c.attribute == "ended")
    {
        return false;
    }
    ended.iter().any(|v| names_value(note_of(sentence).0, v))
}

/// Makes the entities' facts about what no longer holds past, by `summary`'s sentences: an alias that
/// is a place or job the user no longer has, or a thing that is gone ("Marta, aka Lisbon" once she
/// lives in Oslo), is dropped, and a property with such a value moves to `past_properties` (from
/// the day its sentence was made past, else `now`). Returns how many facts changed.
pub fn forget_gone(
    nodes: &mut [crate::engine::model::EntityNode],
    summary: &str,
    now: Millis,
) -> usize {
    let all: Vec<(Vec<Claim>, bool)> = sentences(summary)
        .into_iter()
        .map(|s| (claims(s), is_past(s)))
        .collect();
    let mut gone = gone_values(
        all.iter().filter(|a| a.1).flat_map(|a| a.0.iter()),
        all.iter().filter(|a| !a.1).flat_map(|a| a.0.iter()),
    );
    gone.extend(ended_values(
        all.iter().filter(|a| !a.1).flat_map(|a| a.0.iter()),
    ));
    if gone.is_empty() {
        return 0;
    }
    let is_gone = |text: &str| {
        let v = value_of(&words(text));
        !v.is_empty() && gone.contains(&v)
    };
    let mut made = 0;
    for node in nodes.iter_mut() {
        let before = node.aliases.len();
        node.aliases.retain(|a| !is_gone(a));
        made += before - node.aliases.len();
        let stale: Vec<String> = node
            .properties
            .iter()
            .filter(|(_, v)| is_gone(v))
            .map(|(k, _)| k.clone())
            .collect();
        for k in stale {
            made += usize::from(node.retire_property(&k, now));
        }
    }
    made
}

/// Whether a newer sentence of `newer` makes `sentence` no longer true (the claim rule only; used
/// where no dates are known, to leave a sentence out rather than carry it as current).
pub fn superseded_by(sentence: &str, newer: &[Vec<Claim>]) -> bool {
    let mine = claims(sentence);
    newer
        .iter()
        .flatten()
        .any(|c| mine.iter().any(|o| c.supersedes(o)))
}

/// The attribute of the claim rule an entity property's key speaks of, if any.
fn attribute_of_key(key: &str) -> Option<&'static str> {
    let k = key.to_lowercase();
    let has = |parts: &[&str]| parts.iter().any(|p| k.contains(p));
    if has(&[
        "city",
        "live",
        "location",
        "home",
        "residence",
        "address",
        "based",
    ]) {
        Some("lives_in")
    } else if has(&["job", "occupation", "profession", "work", "career"]) {
        Some("job")
    } else {
        None
    }
}

/// A day written `YYYY-MM-DD`, as the start of that day.
fn millis_of(day: &str) -> Option<Millis> {
    let mut p = day.split('-').map(|x| x.parse::<i64>().ok());
    match (p.next()?, p.next()?, p.next()?) {
        (Some(y), Some(m), Some(d)) => {
            Some(crate::engine::format::days_from_civil(y, m, d) * 86_400_000)
        }
        _ => None,
    }
}

/// Applies the current claims of `summary` (an update's new summary, see [`supersede`]) to the
/// entities: a description sentence a newer claim supersedes is dropped (the summary keeps it as
/// past), a property whose key speaks of a superseded attribute (lives in, job) and whose value is
/// not the new one moves to `past_properties`, and a live `lives in` relationship to another place
/// is closed; each on the day the claim was said (its note's `said`, else `now`). The user is the
/// entity named as the user names themself ("my name is Marta"), or "User". Returns how many facts
/// were made past.
pub fn supersede_entities(
    nodes: &mut [crate::engine::model::EntityNode],
    summary: &str,
    now: Millis,
) -> usize {
    let (names, newer) = current_claims(summary, now);
    if newer.is_empty() {
        return 0;
    }
    let names_of: Vec<(String, String)> = nodes
        .iter()
        .map(|n| (n.id.clone(), words(&n.name).join(" ")))
        .collect();
    let mut made = 0;
    for node in nodes.iter_mut() {
        let key = words(&node.name).join(" ");
        let subject = if is_user_name(&names, &key) || key == "user" {
            "user".to_string()
        } else {
            key.clone()
        };
        let mine: Vec<&(Claim, Millis)> =
            newer.iter().filter(|(c, _)| c.subject == subject).collect();
        if mine.is_empty() {
            continue;
        }
        made += supersede_description(node, &names, &key, &subject, &mine);
        made += supersede_properties(node, &mine);
        made += supersede_lives_in(node, &names_of, &mine);
    }
    made
}

/// The names the user gives themself in `summary`, and its current functional claims (not past, not
/// negated), each with the day it was said (else `now`), the user's own name made the user.
fn current_claims(summary: &str, now: Millis) -> (Vec<String>, Vec<(Claim, Millis)>) {
    let all: Vec<(Vec<Claim>, Option<Millis>, bool)> = sentences(summary)
        .into_iter()
        .map(|s| {
            let note = note_of(s).1;
            let day = note.said.as_deref().and_then(millis_of);
            (claims(s), day, note.until.is_some())
        })
        .collect();
    let names = user_names(&all.iter().map(|a| a.0.clone()).collect::<Vec<_>>());
    let newer: Vec<(Claim, Millis)> = all
        .iter()
        .filter(|(_, _, past)| !past)
        .flat_map(|(c, day, _)| c.iter().map(move |c| (c.clone(), day.unwrap_or(now))))
        .map(|(mut c, day)| {
            if is_user_name(&names, &c.subject) && c.attribute != "name" {
                c.subject = "user".into();
            }
            (c, day)
        })
        .filter(|(c, _)| c.functional() && !c.negated)
        .collect();
    (names, newer)
}

/// Drops the description sentences of `node` (named `key`, the claims' `subject`) that a claim of
/// `mine` supersedes; 1 when the description changed, else 0.
fn supersede_description(
    node: &mut crate::engine::model::EntityNode,
    names: &[String],
    key: &str,
    subject: &str,
    mine: &[&(Claim, Millis)],
) -> usize {
    let kept: Vec<&str> = sentences(&node.description)
        .into_iter()
        .filter(|s| {
            let old: Vec<Claim> = claims(s)
                .into_iter()
                .map(|mut c| {
                    if c.subject == key || is_user_name(names, &c.subject) {
                        c.subject = subject.to_string();
                    }
                    c
                })
                .collect();
            !mine
                .iter()
                .any(|(c, _)| old.iter().any(|o| c.supersedes(o)))
        })
        .collect();
    let description = kept.join(" ");
    if description != node.description.trim() && !node.description.trim().is_empty() {
        node.description = description;
        return 1;
    }
    0
}

/// Moves to `past_properties` the properties of `node` whose key speaks of an attribute a claim of
/// `mine` gives another value (said no earlier than the property); how many moved.
fn supersede_properties(
    node: &mut crate::engine::model::EntityNode,
    mine: &[&(Claim, Millis)],
) -> usize {
    let stale: Vec<(String, Millis)> = node
        .properties
        .iter()
        .filter_map(|(k, v)| {
            let attr = attribute_of_key(k)?;
            let value = value_of(&words(v));
            mine.iter()
                .filter(|(c, _)| c.attribute == attr && c.value != value)
                .map(|(_, day)| *day)
                .max()
                .filter(|day| node.property_since.get(k).is_none_or(|since| since <= day))
                .map(|day| (k.clone(), day))
        })
        .collect();
    let mut made = 0;
    for (k, day) in stale {
        made += usize::from(node.retire_property(&k, day));
    }
    made
}

/// Closes the live `lives in` relationships of `node` to another place than a `lives_in` claim of
/// `mine` names (`names_of`: each node's id and name words); how many were closed.
fn supersede_lives_in(
    node: &mut crate::engine::model::EntityNode,
    names_of: &[(String, String)],
    mine: &[&(Claim, Millis)],
) -> usize {
    let mut made = 0;
    for r in node
        .relationships
        .iter_mut()
        .filter(|r| r.valid_to.is_none())
    {
        if !words(&r.relationship)
            .iter()
            .any(|w| w.starts_with("live") || w == "based")
        {
            continue;
        }
        let target = names_of
            .iter()
            .find(|(id, _)| *id == r.target_id)
            .map_or_else(|| words(&r.target_id).join(" "), |(_, n)| n.clone());
        let target = value_of(&words(&target));
        if let Some(day) = mine
            .iter()
            .filter(|(c, _)| c.attribute == "lives_in" && c.value != target)
            .map(|(_, day)| *day)
            .max()
            .filter(|day| r.valid_from <= *day)
        {
            r.valid_to = Some(day);
            made += 1;
        }
    }
    made
}
