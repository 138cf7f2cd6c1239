//! Facts about the user and recall cues beyond English, as data: one [`Table`] per language
//! (German `de.rs`, French `fr.rs`, Spanish `es.rs`, Portuguese `pt.rs`, Italian `it.rs`, Dutch
//! `nl.rs`) and one reader over all of them. A new language is a new table; no code per language.
//!
//! What the reader takes from a clause of a user's message ([`read`]):
//! - nothing when it is a question (`?`, `¿`, a question word first), a request (an imperative
//!   first), a hypothetical or a wish (a table's `hypothetical` word anywhere, an `if` word first),
//!   or when nothing in it speaks as the user (a table's `first_person` or `my` word: pronouns,
//!   possessives, and the verb forms only the speaker uses, so "Vivo en Sevilla" speaks as the user
//!   and "Ingrid vive en Sevilla" does not);
//! - its claims, in the shape of the English rules' (`super::supersede::Claim`, subject "user"; "we"
//!   is the user's household): `name` after a `name` phrase, `lives_in` after a `lives` phrase and
//!   the place after a `to` word when a `moved` word says a move (so "from X to Y" ends X), `job`
//!   after a `works_as` phrase or an `am` phrase followed by a `jobs` word, `has <noun>` after a
//!   `has` phrase, `likes <object>` after a `likes` phrase (negated with a `negations` word) or a
//!   `dislikes` one; each value its first words, cut at the table's other words;
//! - its kind: health, then by its claims, then a `my` word before a person or a pet, then the home,
//!   work and taste words.
//!
//! Phrases are words separated by spaces, each with alternatives separated by `/`; the table's
//! `adverbs`, `negations` and numbers may stand between them ("ich wohne seit 2015 in Köln").
//! Words are compared lowercase and accent-folded ([`fold`]: `ß` as `ss`), so a table is written
//! folded (its lead-ins aside, compared as written; `tests/engine_lang.rs` checks it).
//! [`clauses`] cuts a sentence at an `and` word or a comma before a new clause that speaks as the
//! user ("Me llamo Lucía y vivo en Sevilla" is two facts), [`refers_back`] says whether a message
//! refers to something said before, and [`is_stop`] names the words recall never looks up.
//!
//! Uses the memory's words (`super::normalize`), stems (`super::ground`) and claims
//! (`super::supersede`); must not import `super::user`, which uses it. Must not import anything
//! outside `crate::engine`.

mod de;
mod es;
mod fr;
mod it;
mod nl;
mod persons;
mod pt;

pub use persons::{Persons, PERSONS};

use super::ground::stem;
use super::normalize::words;
use super::supersede::Claim;
use crate::engine::model::FactKind;

type Words = &'static [&'static str];

/// One language's words and phrases (module doc): data only.
pub struct Table {
    /// ISO 639-1 code.
    pub code: &'static str,
    /// Pronouns and verb forms only the speaker uses ("ich", "wir", "vivo", "mudé").
    pub first_person: Words,
    /// The speaker's possessives ("mein", "unser", "mi", "nuestro").
    pub my: Words,
    /// Words said to the assistant ("du", "tu", "vous"): a clause with one claims nothing of the
    /// user unless a phrase says it.
    pub you: Words,
    /// Phrases the user's name follows.
    pub name: Words,
    /// Phrases the user's home follows.
    pub lives: Words,
    /// Words that say the user moved; the new home follows a `to` word.
    pub moved: Words,
    /// Words before the place moved to.
    pub to: Words,
    /// Phrases the user's job follows, whatever it is.
    pub works_as: Words,
    /// Phrases ("ich bin", "soy") a job of `jobs` may follow.
    pub am: Words,
    /// Jobs (a word ending with one counts: "Grundschullehrerin").
    pub jobs: Words,
    /// Phrases a thing the user has follows.
    pub has: Words,
    /// Phrases a thing the user likes follows (or, said last, precedes).
    pub likes: Words,
    /// Phrases a thing the user dislikes follows (or precedes: "Koriander kann ich nicht ausstehen").
    pub dislikes: Words,
    /// The people of a user's life.
    pub people: Words,
    pub pets: Words,
    /// Health and diet the user lives with.
    pub health: Words,
    /// Words of the user's home, work and tastes, when no claim says the kind.
    pub home_words: Words,
    pub work_words: Words,
    pub taste_words: Words,
    /// Words that negate a claim ("nicht", "kein", "pas", "no", "não", "non", "niet").
    pub negations: Words,
    /// Words of a hypothetical or a wish anywhere in a clause ("würde", "vielleicht").
    pub hypothetical: Words,
    /// Words that make a clause conditional when they open it ("wenn", "si", "als").
    pub if_words: Words,
    /// Words that open a question.
    pub question: Words,
    /// Words that open a request ("sag", "dime", "dimmi").
    pub imperative: Words,
    /// Words before a request that do not change it ("bitte", "por favor").
    pub openers: Words,
    /// Lead-ins left out of a fact ("übrigens", "por cierto").
    pub leads: Words,
    /// Words that join two clauses ("und", "et", "y").
    pub and: Words,
    /// Articles and the like, skipped before a value.
    pub articles: Words,
    /// Prepositions before a place ("in", "à", "en", "em").
    pub into: Words,
    /// Adverbs that may stand inside a phrase and end a value ("jetzt", "seit", "depuis").
    pub adverbs: Words,
    /// Other words that end a value ("und", "mit", "bei").
    pub ends: Words,
    /// Single words that say the user refers to something said before ("erinnerst").
    pub recall_words: Words,
    /// Pairs of words that say it ("letztes mal").
    pub recall_pairs: &'static [(&'static str, &'static str)],
}

/// Every language the rules know beyond English.
pub const TABLES: &[&Table] = &[&de::DE, &fr::FR, &es::ES, &pt::PT, &it::IT, &nl::NL];

/// What [`read`] found in a clause.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    /// The language's code.
    pub lang: &'static str,
    /// `None`: a statement of the user that tells nothing the rules know.
    pub kind: Option<FactKind>,
    pub claims: Vec<Claim>,
}

/// `w` lowercase and accent-folded (`ß` as `ss`, `œ` as `oe`; the Latin letters of Central
/// European and Turkish alphabets without their marks, Greek without its tonos, `ё` as `е`;
/// combining marks left out).
pub fn fold(w: &str) -> String {
    let mut out = String::with_capacity(w.len());
    for c in w.chars().flat_map(char::to_lowercase) {
        match c {
            'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' | 'ą' | 'ā' | 'ă' => out.push('a'),
            'ç' | 'ć' | 'č' => out.push('c'),
            'è' | 'é' | 'ê' | 'ë' | 'ę' | 'ě' | 'ē' => out.push('e'),
            'ì' | 'í' | 'î' | 'ï' | 'ı' | 'ī' => out.push('i'),
            'ñ' | 'ń' | 'ň' => out.push('n'),
            'ò' | 'ó' | 'ô' | 'õ' | 'ö' | 'ő' | 'ø' => out.push('o'),
            'ù' | 'ú' | 'û' | 'ü' | 'ů' | 'ű' | 'ū' => out.push('u'),
            'ý' | 'ÿ' => out.push('y'),
            'ł' => out.push('l'),
            'ś' | 'š' | 'ş' => out.push('s'),
            'ź' | 'ż' | 'ž' => out.push('z'),
            'ř' => out.push('r'),
            'ğ' => out.push('g'),
            'ď' => out.push('d'),
            'ť' => out.push('t'),
            'ά' => out.push('α'),
            'έ' => out.push('ε'),
            'ή' => out.push('η'),
            'ί' | 'ϊ' | 'ΐ' => out.push('ι'),
            'ό' => out.push('ο'),
            'ύ' | 'ϋ' | 'ΰ' => out.push('υ'),
            'ώ' => out.push('ω'),
            'ё' => out.push('е'),
            '\u{0300}'..='\u{036F}' => {}
            'ß' => out.push_str("ss"),
            'œ' => out.push_str("oe"),
            'æ' => out.push_str("ae"),
            c => out.push(c),
        }
    }
    out
}

/// The folded words of `text` (folded first, so a combining mark never cuts a word).
pub fn folded(text: &str) -> Vec<String> {
    words(&fold(text))
}

/// Whether `list` holds `w` (folded).
fn holds(list: Words, w: &str) -> bool {
    list.contains(&w)
}

fn is_number(w: &str) -> bool {
    !w.is_empty() && w.chars().all(|c| c.is_ascii_digit())
}

/// Where `phrase` (module doc) matches `w`, first: the index of its first word and the index after
/// its last.
fn find(w: &[String], phrase: &str, t: &Table) -> Option<(usize, usize)> {
    let parts: Vec<Vec<&str>> = phrase.split(' ').map(|p| p.split('/').collect()).collect();
    (0..w.len()).find_map(|start| {
        let mut i = start;
        for (k, alts) in parts.iter().enumerate() {
            if k > 0 {
                while i < w.len()
                    && (holds(t.adverbs, &w[i]) || holds(t.negations, &w[i]) || is_number(&w[i]))
                {
                    i += 1;
                }
            }
            if !alts.iter().any(|a| w.get(i).is_some_and(|x| x == a)) {
                return None;
            }
            i += 1;
        }
        Some((start, i))
    })
}

/// The first match of any of `phrases`.
fn find_any(w: &[String], phrases: Words, t: &Table) -> Option<(usize, usize)> {
    phrases
        .iter()
        .filter_map(|p| find(w, p, t))
        .min_by_key(|m| m.0)
}

/// Words that end a value.
fn ends_value(w: &str, t: &Table) -> bool {
    holds(t.adverbs, w)
        || holds(t.ends, w)
        || holds(t.into, w)
        || holds(t.and, w)
        || holds(t.negations, w)
}

/// Words that are no content: what [`object`] skips.
fn no_content(w: &str, t: &Table) -> bool {
    ends_value(w, t)
        || holds(t.articles, w)
        || holds(t.first_person, w)
        || holds(t.my, w)
        || holds(t.to, w)
        || is_number(w)
        || w.chars().count() < 2
}

/// The value from word `from`: articles, prepositions of place and numbers skipped, then at most
/// `max` words up to one that ends a value, stemmed.
fn value_at(w: &[String], from: usize, max: usize, t: &Table) -> String {
    let skip = |x: &String| {
        holds(t.articles, x) || holds(t.into, x) || holds(t.to, x) || holds(t.adverbs, x)
    };
    let rest = w.get(from..).unwrap_or(&[]);
    rest.iter()
        .skip_while(|x| skip(x) || holds(t.negations, x) || is_number(x))
        .take_while(|x| !ends_value(x, t) && !holds(t.articles, x))
        .take(max)
        .map(|x| stem(x).to_string())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The object of a like or dislike matched at `m`: the first content word after it, else the last
/// one before it.
fn object(w: &[String], m: (usize, usize), t: &Table) -> Option<String> {
    let content = |x: &&String| !no_content(x, t) && !holds(t.you, x);
    w[m.1..]
        .iter()
        .find(content)
        .or_else(|| w[..m.0].iter().rev().find(content))
        .map(|x| stem(x).to_string())
}

fn claim(attribute: String, value: String, negated: bool) -> Option<Claim> {
    (!value.is_empty()).then(|| Claim {
        subject: "user".into(),
        attribute,
        value,
        negated,
    })
}

/// The claims of clause words `w` in table `t` (module doc), the user's.
fn claims_in(w: &[String], t: &Table) -> Vec<Claim> {
    let negated = w.iter().any(|x| holds(t.negations, x));
    let mut out = Vec::new();
    if let Some(m) = find_any(w, t.name, t) {
        out.extend(claim("name".into(), value_at(w, m.1, 1, t), false));
    }
    if let Some(m) = find_any(w, t.lives, t) {
        out.extend(claim("lives_in".into(), value_at(w, m.1, 2, t), negated));
    } else if w.iter().any(|x| holds(t.moved, x)) {
        if let Some(k) = w.iter().rposition(|x| holds(t.to, x)) {
            out.extend(claim("lives_in".into(), value_at(w, k + 1, 2, t), false));
        }
    }
    if let Some(m) = find_any(w, t.works_as, t) {
        out.extend(claim("job".into(), value_at(w, m.1, 3, t), negated));
    } else if let Some(m) = find_any(w, t.am, t) {
        let job = w[m.1..]
            .iter()
            .find(|x| !holds(t.articles, x) && !holds(t.adverbs, x) && !is_number(x))
            .filter(|x| t.jobs.iter().any(|j| x.ends_with(j)));
        if let Some(job) = job {
            out.extend(claim("job".into(), stem(job).to_string(), negated));
        }
    }
    if let Some(m) = find_any(w, t.has, t) {
        if let Some(noun) = object(w, (m.1, m.1), t) {
            out.extend(claim(format!("has {noun}"), "yes".into(), negated));
        }
    }
    if let Some(m) = find_any(w, t.dislikes, t) {
        if let Some(o) = object(w, m, t) {
            out.extend(claim(format!("likes {o}"), "yes".into(), true));
        }
    } else if let Some(m) = find_any(w, t.likes, t) {
        if let Some(o) = object(w, m, t) {
            out.extend(claim(format!("likes {o}"), "yes".into(), negated));
        }
    }
    out
}

/// Whether clause words `w` (with `raw`, the clause as written) are a statement in `t`: no
/// question, request, hypothetical or wish.
fn statement(raw: &str, w: &[String], t: &Table) -> bool {
    let raw = raw.trim();
    if raw.ends_with('?') || raw.starts_with('¿') {
        return false;
    }
    let first = w.iter().find(|x| !holds(t.openers, x));
    let opens = |list: Words| first.is_some_and(|x| holds(list, x));
    !(opens(t.question) || opens(t.imperative) || opens(t.if_words))
        && !w.iter().any(|x| holds(t.hypothetical, x))
}

/// Whether `noun` follows one of the speaker's possessives in `w` (one word between at most:
/// "meine kleine Tochter").
fn after_my(w: &[String], list: Words, t: &Table) -> bool {
    (0..w.len()).any(|i| {
        holds(t.my, &w[i])
            && (w.get(i + 1).is_some_and(|x| holds(list, x))
                || w.get(i + 2).is_some_and(|x| holds(list, x)))
    })
}

/// The kind of a clause that speaks as the user, from its claims and words.
fn kind_of(w: &[String], claims: &[Claim], t: &Table) -> Option<FactKind> {
    let any = |list: Words| w.iter().any(|x| holds(list, x));
    if any(t.health) {
        return Some(FactKind::Health);
    }
    for c in claims {
        let noun = c.attribute.strip_prefix("has ").unwrap_or("");
        let is = |list: Words| list.iter().any(|x| stem(x) == noun);
        let kind = match c.attribute.as_str() {
            "name" => FactKind::Name,
            "lives_in" => FactKind::Home,
            "job" => FactKind::Work,
            _ if is(t.pets) => FactKind::Pets,
            _ if is(t.people) => FactKind::People,
            a if a.starts_with("likes ") => FactKind::Preference,
            _ => continue,
        };
        return Some(kind);
    }
    if after_my(w, t.pets, t) {
        return Some(FactKind::Pets);
    }
    if after_my(w, t.people, t) {
        return Some(FactKind::People);
    }
    if any(t.home_words) {
        return Some(FactKind::Home);
    }
    if any(t.work_words) {
        return Some(FactKind::Work);
    }
    // "Lieblingsessen", "lievelingseten": a taste word of six letters or more opens a compound.
    let taste = |x: &String| {
        t.taste_words
            .iter()
            .any(|k| x == k || (k.len() >= 6 && x.starts_with(k)))
    };
    if w.iter().any(taste) {
        return Some(FactKind::Preference);
    }
    claims
        .iter()
        .any(|c| c.attribute.starts_with("has "))
        .then_some(FactKind::Other)
}

/// The readings of clause `raw` in every table that speaks as the user in it (said to the
/// assistant, only one with a claim); `None` when one of them finds it a question, a request, a
/// hypothetical or a wish.
fn readings(raw: &str) -> Option<Vec<Reading>> {
    let w = folded(raw);
    let mut readings = Vec::new();
    for t in TABLES {
        let claims = claims_in(&w, t);
        let speaks =
            !claims.is_empty() || w.iter().any(|x| holds(t.first_person, x) || holds(t.my, x));
        if !speaks {
            continue;
        }
        if !statement(raw, &w, t) {
            return None;
        }
        let to_you = w.iter().any(|x| holds(t.you, x));
        if to_you && claims.is_empty() {
            continue;
        }
        readings.push(Reading {
            lang: t.code,
            kind: kind_of(&w, &claims, t),
            claims,
        });
    }
    Some(readings)
}

/// What the clause `raw` (lead-ins left out) says of the user (module doc): read in every table
/// whose words speak as the user in it, the first that finds a kind, else the first; `None` when
/// none does, or when it is a question, a request, a hypothetical or a wish in any of them.
pub fn read(raw: &str) -> Option<Reading> {
    let mut readings = readings(raw)?;
    let first_kind = readings.iter().position(|r| r.kind.is_some()).unwrap_or(0);
    (!readings.is_empty()).then(|| readings.swap_remove(first_kind))
}

/// How the tables judge a clause a model proposes as a fact about the user ([`judge`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// A table speaks as the user in it and it is a statement.
    Statement,
    /// A table speaks as the user in it and it is a question, a request, a hypothetical or a wish.
    Refused,
    /// No table speaks as the user in it.
    Unknown,
}

/// What the tables say of clause `raw` on [`read`]'s grounds, whatever its kind: refused when a
/// table that speaks as the user in it finds no statement, a statement when one speaks and finds
/// one; refused too when none speaks and it opens as a condition in a table's language.
pub fn judge(raw: &str) -> Verdict {
    match readings(raw) {
        None => Verdict::Refused,
        Some(r) if !r.is_empty() => Verdict::Statement,
        Some(_) if TABLES.iter().any(|t| conditional(&folded(raw), t)) => Verdict::Refused,
        Some(_) => Verdict::Unknown,
    }
}

/// Whether clause words `w` open with an `if` word of `t` and hold another word of its language
/// (an article, a preposition, an `and`): "Si viviera en Roma" speaks of no one yet is a wish.
fn conditional(w: &[String], t: &Table) -> bool {
    let mut rest = w.iter().skip_while(|x| holds(t.openers, x));
    rest.next().is_some_and(|x| holds(t.if_words, x))
        && rest.any(|x| holds(t.articles, x) || holds(t.into, x) || holds(t.and, x))
}

/// Whether clause `raw` asks, in any script: it ends with a question mark (`?`, the full-width
/// `？`, the Arabic `؟`, or in Greek text `;` and `;`, Greek's own) or opens with `¿`.
pub fn asks(raw: &str) -> bool {
    let s = raw.trim().trim_end_matches(['"', '\'', '»', '”', ')', ' ']);
    let greek = s.chars().any(|c| ('\u{0370}'..='\u{03FF}').contains(&c));
    s.starts_with('¿') || s.ends_with(['?', '？', '؟', '\u{037E}']) || (greek && s.ends_with(';'))
}

/// Whether clause `raw` speaks of someone else ([`PERSONS`]): it holds a word said of others and
/// no word the speaker says of themself (in [`PERSONS`] or a table's `first_person` and `my`).
pub fn about_others(raw: &str) -> bool {
    let w = folded(raw);
    let me = |x: &String| {
        PERSONS.iter().any(|p| holds(p.me, x))
            || TABLES
                .iter()
                .any(|t| holds(t.first_person, x) || holds(t.my, x))
    };
    let other = |x: &String| PERSONS.iter().any(|p| holds(p.others, x));
    w.iter().any(other) && !w.iter().any(me)
}

/// Whether clause `raw` holds a word of a condition or a wish of [`PERSONS`] (the languages no
/// table covers: "Gdybym wygrała…", "Если бы…").
pub fn wished(raw: &str) -> bool {
    let w = folded(raw);
    w.iter().any(|x| PERSONS.iter().any(|p| holds(p.wish, x)))
}

/// `s` without the lead-ins of every table (each followed by a comma, colon or space).
pub fn strip_leads(s: &str) -> &str {
    let mut s = s.trim();
    'again: loop {
        for lead in TABLES.iter().flat_map(|t| t.leads.iter()) {
            let head = s.get(..lead.len()).filter(|h| h.to_lowercase() == *lead);
            let rest = head.map(|h| &s[h.len()..]);
            if let Some(rest) = rest.filter(|r| r.starts_with([',', ':', ' ', '!'])) {
                s = rest.trim_start_matches([',', ':', ' ', '!']);
                continue 'again;
            }
        }
        return s;
    }
}

/// The clauses of `sentence` that each speak as the user (module doc): cut before an `and` word or
/// a comma followed by a word that speaks as the user in the same table, after two words or more.
pub fn clauses(sentence: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, c) in sentence.char_indices() {
        if i <= start || !(c == ' ' || c == ',') {
            continue;
        }
        let after = sentence[i + 1..].trim_start();
        let w = folded(after.get(..after.len().min(40)).unwrap_or(after));
        let head = &sentence[start..i];
        if words(head).len() < 2 {
            continue;
        }
        let cut = TABLES.iter().find_map(|t| {
            let (j, next) = match (c, w.first()) {
                (',', _) => (0, w.first()),
                (_, Some(x)) if holds(t.and, x) => (1, w.get(1)),
                _ => return None,
            };
            let mine = next.is_some_and(|x| holds(t.first_person, x) || holds(t.my, x));
            mine.then_some(j)
        });
        if let Some(j) = cut {
            out.push(head.trim().trim_end_matches([',', ';']));
            let mut rest = after;
            if j == 1 {
                rest = rest.split_once(' ').map_or("", |(_, r)| r);
            }
            start = sentence.len() - rest.len();
        }
    }
    out.push(sentence[start..].trim());
    out.retain(|s| !s.is_empty());
    out
}

/// Whether `text` refers to something said before in one of the tables' languages (a recall word
/// or pair).
pub fn refers_back(text: &str) -> bool {
    let w = folded(text);
    TABLES.iter().any(|t| {
        w.iter().any(|x| holds(t.recall_words, x))
            || w.windows(2)
                .any(|p| t.recall_pairs.iter().any(|(a, b)| *a == p[0] && *b == p[1]))
    })
}

/// Whether recall never looks `word` up (lowercase): a word of a table that says nothing of what
/// was said (pronouns, articles, prepositions, recall words).
pub fn is_stop(word: &str) -> bool {
    let w = fold(word);
    TABLES.iter().any(|t| {
        [
            t.first_person,
            t.my,
            t.you,
            t.articles,
            t.into,
            t.to,
            t.adverbs,
            t.ends,
            t.and,
            t.negations,
            t.question,
            t.recall_words,
        ]
        .iter()
        .any(|list| holds(list, &w))
    })
}
