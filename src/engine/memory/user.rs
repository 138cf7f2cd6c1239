//! Memory about the user across conversations (issue 26, item 1): the durable facts a user says
//! about themself ([`crate::engine::model::UserFact`]), kept in a scope every conversation shares,
//! with the user's controls over them and the choice of those a prompt carries.
//!
//! - Extraction ([`facts_said`]), deterministic and without a model: the sentences of a user's
//!   message (`super::sentence`) that tell something about the user: their name, where they live,
//!   work, their people and pets, preferences, allergies and health, ongoing projects. Never a
//!   question or a request (`super::summary::is_request`), a hypothetical ("if", "would", "I want
//!   to…"), small talk ("I think…", "I agree"), nor a sentence about others only ("Ingrid lives in
//!   Trondheim"); the one exception is a sentence saying a thing a known fact names is gone
//!   ("Biscuit died"). The English rules are this module's; German, French, Spanish, Portuguese,
//!   Italian and Dutch are tables read by `super::lang` (a clause the English rules find nothing
//!   in is read there), with the same refusals and the same claims, so supersession treats their
//!   facts alike. In another language the rules extract nothing; what the memory model proposes
//!   and the user's words hold is taken in by `super::proposed`, through [`refuses`] and
//!   [`place_said`].
//! - Supersession ([`handle_said`], [`add`], [`edit`]) follows the memory's rules
//!   (`super::supersede`): a newer claim (lives in, works as, is called, has a, likes) of the same
//!   subject makes the older fact past (`valid_to`), and so does a fact naming a thing said to be
//!   gone ("Biscuit died", "I sold the Fiat") or only a place or job that no longer holds. One
//!   addition: a negated fact ("I don't have a dog") is past once the user says the opposite.
//!   A message said before a current fact that supersedes it (a late catch-up, another device) is
//!   added as past already, never as current.
//! - Forgetting ([`forget`]) is a tombstone: the fact leaves every prompt, and the same sentence from
//!   the same message is never added again (said again in a new message, it is a new fact).
//! - Two copies of one fact (a backup's, another device's) join ([`join_fact`]): the words changed
//!   last win, a tombstone wins over a live copy and a past one over a current one, whatever
//!   their order.
//! - What the user said elsewhere after a conversation's memory was made ([`said_after`]): the
//!   assembly makes the summary sentences these facts supersede past (`super::pending`).
//! - The prompt ([`facts_for_prompt`]): current, unforgotten facts in scope only; a small core
//!   (name, home, work, people: [`CORE_MAX_FACTS`] within two thirds of the budget) first, then
//!   those sharing terms with the recent messages, then the rest of the core, then the rest, newest
//!   first; each line with the day it was said ([`fact_line`]).
//! - What the memory pane leads with ([`facts_for_pane`]) and the Memory page lists
//!   ([`facts_for_page`]).
//!
//! Uses the memory's sentence, claim and request rules; must not import `super::read` or
//! `super::catchup`. Must not import anything outside `crate::engine`.

use super::ground::{stem, support_terms};
use super::lang;
use super::normalize::{truncate_chars, words};
use super::sentence::sentences;
use super::summary::is_request;
use super::supersede::{claims, ended_values, gone_values, mentions_ended, mentions_gone, Claim};
use crate::engine::format::{date, one_line};
use crate::engine::model::{FactKind, FactSource, Message, MessageStatus, Millis, Role, UserFact};
use crate::engine::sort::{sort_by, sort_by_key};
use crate::engine::tokens::TokenEstimator;

/// A fact [`facts_said`] found in a message, before it is placed among the facts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The sentence in the user's words, lead-in ("By the way, ") left out, closed with a full stop.
    pub text: String,
    pub kind: FactKind,
    /// [`claim_key`] of `text`.
    pub claim_key: String,
}

/// The most facts one message yields (a pasted document is material, not facts about the user).
pub const MAX_FACTS_PER_MESSAGE: usize = 8;
/// A longer sentence is not one fact.
pub const MAX_FACT_CHARS: usize = 240;
/// The longest line a fact takes in a prompt (an edited or hand-added fact may be long).
pub const MAX_FACT_LINE_CHARS: usize = 300;
/// The always-on core a prompt carries first: at most this many facts (name, home, work, people),
/// within two thirds of the budget, so the facts the conversation speaks of still get in.
pub const CORE_MAX_FACTS: usize = 8;
/// Heading of the facts' section in the prompt.
pub const USER_FACTS_HEADING: &str =
    "## About the user (in their own words, remembered across conversations)";

/// Lead-ins left out of a fact ("By the way, I moved to Oslo." is "I moved to Oslo.").
const LEADS: &[&str] = &[
    "hello there",
    "hi there",
    "hey there",
    "update",
    "by the way",
    "btw",
    "fyi",
    "just so you know",
    "fun fact",
    "for the record",
    "oh",
    "ok",
    "okay",
    "so",
    "well",
    "also",
    "and",
    "but",
    "actually",
    "anyway",
    "hi",
    "hey",
    "hello",
    "yes",
    "yeah",
    "no",
    "thanks",
    "thank you",
];
/// Lead-ins left out only before a comma or the like (followed by a space they may be the sentence's
/// own words).
const PUNCTUATED: &[&str] = &[
    "no",
    "yes",
    "yeah",
    "ok",
    "okay",
    "hi",
    "hey",
    "hello",
    "thanks",
    "thank you",
    "oh",
    "well",
];
/// Lead-ins of a fact the user adds by hand ("Remember that I …").
const ADD_LEADS: &[&str] = &[
    "please remember that",
    "please remember",
    "remember that",
    "remember",
    "don't forget that",
    "don't forget",
    "keep in mind that",
    "keep in mind",
    "note that",
    "for the record",
];
/// Words that make a sentence hypothetical, wished or planned: not a fact.
const HYPOTHETICAL: &[&str] = &[
    "if",
    "would",
    "could",
    "might",
    "wish",
    "suppose",
    "imagine",
    "pretend",
    "hypothetically",
    "maybe",
    "perhaps",
    "hope",
    "someday",
    "unless",
    "should",
    "d",
    "ll",
    "will",
    "wanna",
    "gonna",
    "dream",
];
/// Verbs after "I" that make small talk, not a fact ("I think so", "I agree", "I need help").
const CHATTER: &[&str] = &[
    "think",
    "guess",
    "believe",
    "feel",
    "agree",
    "disagree",
    "see",
    "know",
    "understand",
    "mean",
    "wonder",
    "bet",
    "want",
    "need",
    "asked",
    "said",
    "told",
    "forgot",
    "remember",
    "tried",
    "meant",
    "doubt",
    "can",
    "cannot",
    "hate",
    "love",
    "like",
];
/// What follows "I'm" in small talk ("I'm sure…", "I'm not sure", "I'm glad…").
const FEELINGS: &[&str] = &[
    "sure",
    "glad",
    "happy",
    "sorry",
    "afraid",
    "curious",
    "confused",
    "wondering",
    "trying",
    "looking",
    "asking",
    "thinking",
    "tired",
    "bored",
    "back",
    "here",
    "ok",
    "okay",
    "fine",
    "good",
    "excited",
    "worried",
    "interested",
    "going",
];
/// Words between "I" and its verb that do not change it.
const ADVERBS: &[&str] = &[
    "don",
    "t",
    "do",
    "really",
    "also",
    "just",
    "still",
    "actually",
    "now",
    "currently",
    "not",
];
/// The people of a user's life.
const PEOPLE: &[&str] = &[
    "wife",
    "husband",
    "partner",
    "girlfriend",
    "boyfriend",
    "spouse",
    "fiance",
    "fiancee",
    "daughter",
    "daughters",
    "son",
    "sons",
    "kid",
    "kids",
    "child",
    "children",
    "baby",
    "twins",
    "mother",
    "mom",
    "mum",
    "father",
    "dad",
    "parents",
    "sister",
    "sisters",
    "brother",
    "brothers",
    "grandmother",
    "grandma",
    "grandfather",
    "grandpa",
    "granddaughter",
    "grandson",
    "aunt",
    "uncle",
    "cousin",
    "niece",
    "nephew",
    "friend",
    "friends",
    "family",
    "roommate",
    "flatmate",
    "neighbour",
    "neighbor",
];
/// States that speak of the user's people ("I'm married").
const PEOPLE_STATES: &[&str] = &["married", "divorced", "engaged", "widowed", "pregnant"];
/// Pets.
const PETS: &[&str] = &[
    "dog",
    "dogs",
    "puppy",
    "cat",
    "cats",
    "kitten",
    "pet",
    "pets",
    "parrot",
    "bird",
    "hamster",
    "rabbit",
    "bunny",
    "horse",
    "pony",
    "turtle",
    "tortoise",
    "goldfish",
    "fish",
    "snake",
    "lizard",
    "gecko",
    "ferret",
    "chinchilla",
    "tabby",
    "budgie",
    "canary",
];
/// Health and diet the user lives with.
const HEALTH: &[&str] = &[
    "allergic",
    "allergy",
    "allergies",
    "intolerant",
    "intolerance",
    "celiac",
    "coeliac",
    "gluten",
    "lactose",
    "diabetes",
    "diabetic",
    "asthma",
    "epilepsy",
    "migraine",
    "migraines",
    "medication",
    "adhd",
    "autistic",
    "dyslexic",
    "dyslexia",
    "blind",
    "deaf",
    "wheelchair",
    "pregnant",
    "insulin",
    "hives",
];
/// What speaks of where the user lives or comes from.
const HOME: &[&str] = &[
    "live",
    "lives",
    "lived",
    "living",
    "moved",
    "home",
    "house",
    "apartment",
    "flat",
    "born",
    "grew",
    "hometown",
    "neighbourhood",
    "neighborhood",
];
/// What speaks of the user's work or studies.
const WORK: &[&str] = &[
    "work",
    "works",
    "job",
    "company",
    "employer",
    "boss",
    "colleague",
    "colleagues",
    "office",
    "career",
    "retired",
    "student",
    "study",
    "studying",
    "university",
    "college",
    "shift",
    "shifts",
];
/// What speaks of an ongoing project.
const PROJECT: &[&str] = &[
    "project",
    "thesis",
    "novel",
    "startup",
    "building",
    "writing",
    "learning",
    "training",
    "renovating",
    "course",
    "dissertation",
    "podcast",
    "garden",
];
/// What speaks of a taste or a way of living.
const PREFERENCE: &[&str] = &[
    "favorite",
    "favourite",
    "prefer",
    "prefers",
    "vegetarian",
    "vegan",
    "fan",
    "hobby",
    "hobbies",
    "eat",
    "drink",
    "smoke",
];
/// How a thing tastes or feels to the user ([`taste_said`]).
const TASTES: &[&str] = &[
    "disgusting",
    "revolting",
    "gross",
    "vile",
    "nasty",
    "delicious",
    "irresistible",
    "addictive",
];
/// Other lasting facts about the user ("My birthday is on 3 March", "I'm 34 years old").
const OTHER_WORDS: &[&str] = &["birthday", "native", "religion", "nationality", "citizen"];
/// Verbs of a lasting fact about the user that no other rule names ("I drive a Volvo").
const OTHER_VERBS: &[&str] = &[
    "own", "drive", "speak", "play", "collect", "ride", "run", "cycle", "swim", "cook", "bake",
    "knit", "paint", "climb", "sing",
];
/// Words left out when two sentences are compared ("I live in Oslo now." restates "I live in Oslo.").
const FILLER: &[&str] = &[
    "now",
    "still",
    "currently",
    "really",
    "actually",
    "also",
    "too",
    "just",
];
/// Endings of a nationality, language or faith after "I'm" ("I'm Norwegian" is no name).
const NOT_NAME_ENDS: &[&str] = &["ian", "ese", "ish", "ch", "ean", "ist"];
/// Words after "I'm" that are no name and end otherwise.
const NOT_NAMES: &[&str] = &[
    "american",
    "german",
    "mexican",
    "african",
    "cuban",
    "moroccan",
    "thai",
    "israeli",
    "pakistani",
    "iraqi",
    "kenyan",
    "greek",
    "swiss",
    "muslim",
    "catholic",
    "hindu",
    "jewish",
    "sikh",
    "vegan",
    "vegetarian",
    "ok",
    "okay",
    "fine",
    "sorry",
    "back",
    "here",
    "new",
    "not",
];

// ---------- extraction ----------

/// The facts about the user in `text` (a message the user wrote), in its order, at most
/// [`MAX_FACTS_PER_MESSAGE`] (module rules). `known`: the facts held already, so a sentence that
/// only says a thing one of them names is gone ("Biscuit died") counts, with that fact's kind.
pub fn facts_said(text: &str, known: &[UserFact]) -> Vec<Candidate> {
    let prose = without_code(text);
    let mut out: Vec<Candidate> = Vec::new();
    for s in all_clauses(&prose) {
        if out.len() >= MAX_FACTS_PER_MESSAGE {
            break;
        }
        let Some(c) = fact_of(s, known) else {
            continue;
        };
        if !out
            .iter()
            .any(|o| sentence_key(&o.text) == sentence_key(&c.text))
        {
            out.push(c);
        }
    }
    out
}

/// Words that open a clause leaning on the next one ("Since I moved, I live in Oslo"): the
/// sentence is not cut after it.
const SUBORDINATE: &[&str] = &[
    "since", "because", "when", "after", "before", "although", "though", "while", "as", "if",
    "once", "until", "whenever",
];

/// The clauses of `sentence` that each tell a fact of their own: cut at a comma, a semicolon, "and"
/// or "but" before a new first-person subject ("I'm Marta, I live in Lisbon and I work as a nurse"
/// is three), never after a subordinate clause nor after fewer than three words ("My wife and I
/// live in Oslo" is one). A fact that changes then leaves the others current.
fn clauses(sentence: &str) -> Vec<&str> {
    let starts_mine = |rest: &str| {
        let w = words(rest.get(..rest.len().min(12)).unwrap_or(rest));
        matches!(
            w.first().map(String::as_str),
            Some("i" | "my" | "we" | "our")
        )
    };
    let mut out = Vec::new();
    let mut start = 0;
    for (i, c) in sentence.char_indices() {
        if !matches!(c, ',' | ';') {
            continue;
        }
        let after = sentence[i + 1..].trim_start();
        let after = ["and ", "but ", "And ", "But "]
            .iter()
            .find_map(|j| after.strip_prefix(j))
            .unwrap_or(after);
        let head = &sentence[start..i];
        let leaning = words(head)
            .first()
            .is_some_and(|w| SUBORDINATE.contains(&w.as_str()));
        if starts_mine(after) && !leaning && words(head).len() >= 3 {
            out.push(head);
            start = sentence.len() - after.len();
        }
    }
    let rest = &sentence[start..];
    // "… and I work as a nurse": the last cut, at "and" or "but" without a comma.
    for joint in [" and ", " but "] {
        if let Some(k) = rest.find(joint) {
            let (head, tail) = (&rest[..k], &rest[k + joint.len()..]);
            let leaning = words(head)
                .first()
                .is_some_and(|w| SUBORDINATE.contains(&w.as_str()));
            if starts_mine(tail) && !leaning && words(head).len() >= 3 {
                out.push(head);
                out.push(tail);
                return out;
            }
        }
    }
    out.push(rest);
    out
}

/// The clauses of `prose` (a message without code): its sentences, cut by the English rules
/// ([`clauses`]) then by the tables' (`super::lang::clauses`).
fn all_clauses(prose: &str) -> Vec<&str> {
    sentences(prose)
        .into_iter()
        .flat_map(clauses)
        .flat_map(lang::clauses)
        .collect()
}

/// `text` without fenced code blocks and quoted lines (`> …`): what the user wrote themself.
fn without_code(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut fenced = false;
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            fenced = !fenced;
            out.push('\n');
            continue;
        }
        if !fenced && !t.starts_with('>') {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

/// The fact `sentence` tells about the user, if it tells one (module rules): by the English rules,
/// else by the tables of the other languages (`super::lang`).
fn fact_of(sentence: &str, known: &[UserFact]) -> Option<Candidate> {
    english_fact(sentence, known).or_else(|| table_fact(sentence))
}

/// The fact `sentence` tells in a language of `super::lang`'s tables, the user's words as said.
fn table_fact(sentence: &str) -> Option<Candidate> {
    let s = strip_leads(lang::strip_leads(sentence), LEADS);
    if s.len() > MAX_FACT_CHARS || s.len() < 4 {
        return None;
    }
    let kind = lang::read(&s)?.kind?;
    Some(with_kind(&s, kind))
}

/// The fact of statement `s` (lead-ins left out) with kind `kind`: closed with a full stop, with
/// its claim key.
fn with_kind(s: &str, kind: FactKind) -> Candidate {
    let text = closed(s);
    Candidate {
        claim_key: claim_key(&text),
        text,
        kind,
    }
}

/// The fact `sentence` tells by the English rules.
fn english_fact(sentence: &str, known: &[UserFact]) -> Option<Candidate> {
    let (s, w, own) = statement(sentence)?;
    let kind = if first_person(&w) {
        kind_of(&s, &w, &own)?
    } else {
        ended_kind(&own, known)?
    };
    if own.is_empty() && kind != FactKind::Health && kind != FactKind::Name && chatter(&w) {
        return None;
    }
    Some(with_kind(&s, kind))
}

/// `sentence` as a statement (lead-ins left out), with its words and claims, unless it is a
/// question, a request, a hypothetical, too long to be one fact, or said to the assistant.
fn statement(sentence: &str) -> Option<(String, Vec<String>, Vec<Claim>)> {
    let s = strip_leads(sentence.trim(), LEADS);
    if s.len() > MAX_FACT_CHARS || s.len() < 4 || is_request(&s) {
        return None;
    }
    let w = words(&s);
    let wished = |x: &String| HYPOTHETICAL.contains(&x.as_str()) && !(x == "could" && all_day(&w));
    if w.iter().any(wished) || has_pair(&w, &[("want", "to"), ("going", "to"), ("plan", "to")]) {
        return None;
    }
    let own = english_claims(&s);
    // Said to the assistant ("My friend says you are great"), unless it claims something of the user.
    let to_you = w
        .iter()
        .any(|x| matches!(x.as_str(), "you" | "your" | "yours"));
    if to_you && !own.iter().any(|c| c.subject == "user") {
        return None;
    }
    Some((s, w, own))
}

/// The claims of the user's statements in `text` (a message), as [`facts_said`] reads them: of
/// first-person statements, and of those that say a thing is gone ("Biscuit died"); never of a
/// question, a request or a hypothetical ("Do I still live in Oslo?" claims nothing).
pub fn claims_said(text: &str) -> Vec<Claim> {
    let prose = without_code(text);
    let mut out: Vec<Claim> = Vec::new();
    for clause in all_clauses(&prose) {
        match statement(clause) {
            Some((_, w, own)) if first_person(&w) || own.iter().any(|c| c.attribute == "ended") => {
                out.extend(own)
            }
            _ => out.extend(lang::read(clause).map(|r| r.claims).unwrap_or_default()),
        }
    }
    out
}

// ---------- what a model proposes (`super::proposed`) ----------

/// The clauses of `text` (a user's message, code and quoted lines left out) as the rules cut them,
/// then its whole sentences that were cut: where a fact the model proposes may be grounded.
pub fn said_units(text: &str) -> Vec<String> {
    let prose = without_code(text);
    let mut out: Vec<String> = all_clauses(&prose)
        .into_iter()
        .map(|c| c.trim().to_string())
        .collect();
    for s in sentences(&prose) {
        let s = s.trim().to_string();
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out.retain(|u| !u.is_empty());
    out
}

/// Whether the rules refuse the user's clause `sentence` as a fact of kind `kind` about them, on
/// their own grounds: a question (in any script, `lang::asks`), a request, a hypothetical or a
/// wish in a table's language (`lang::judge`) or in English, small talk or a sentence about
/// someone else in English, and elsewhere a sentence with a pronoun or verb form said of someone
/// else and none of the speaker's (`lang::about_others`) or a word of a condition or a wish
/// (`lang::wished`). `known`: the facts held already (a
/// sentence saying a thing one of them names is gone is about the user).
pub fn refuses(sentence: &str, kind: FactKind, known: &[UserFact]) -> bool {
    let s = strip_leads(lang::strip_leads(sentence), LEADS);
    if lang::asks(&s) {
        return true;
    }
    match lang::judge(&s) {
        lang::Verdict::Refused => return true,
        lang::Verdict::Statement => return false,
        lang::Verdict::Unknown => {}
    }
    if lang::about_others(&s) || lang::wished(&s) {
        return true;
    }
    if !english(&words(&s)) {
        // A language the rules do not know: the model's kind and the grounding decide.
        return false;
    }
    let Some((_, w, own)) = statement(&s) else {
        return true;
    };
    let ended = own.iter().any(|c| c.attribute == "ended") && ended_kind(&own, known).is_some();
    let small_talk =
        own.is_empty() && !matches!(kind, FactKind::Health | FactKind::Name) && chatter(&w);
    (!first_person(&w) && !ended) || small_talk
}

/// Whether words `w` are English as far as the rules can tell: one word only English has among
/// these, or two that other languages share ("i" is Polish "and", "my" Polish "we").
fn english(w: &[String]) -> bool {
    const ONLY: &[&str] = &[
        "me", "we", "our", "you", "your", "he", "she", "they", "the", "is", "am", "are", "was",
        "m", "ve",
    ];
    const SHARED: &[&str] = &["i", "my", "in", "to", "and", "a", "of", "at", "on", "for"];
    let shared = w.iter().filter(|x| SHARED.contains(&x.as_str())).count();
    w.iter().any(|x| ONLY.contains(&x.as_str())) || shared >= 2
}

/// Whether the rules read the language of the user's clause `sentence`: a table speaks as the user
/// in it, or it is English ([`english`]). There, what it makes past is what its claims supersede.
pub fn rules_read(sentence: &str) -> bool {
    lang::judge(sentence) != lang::Verdict::Unknown || english(&words(sentence))
}

/// Makes past, from `at`, the current facts of `scope` said no later than the user's clause
/// `sentence` supersedes by its claims (the rules' supersession, as a new fact does). Whether any
/// changed.
pub fn supersede_said(
    facts: &mut [UserFact],
    sentence: &str,
    at: Millis,
    scope: Option<&str>,
) -> bool {
    let own = fact_claims(sentence);
    !own.is_empty() && make_past(facts, sentence, &own, at, scope, None)
}

/// The fact the user's clause `sentence` makes with kind `kind`: lead-ins left out, closed with a
/// full stop; `None` when it is too long or too short to be one fact.
pub fn candidate(sentence: &str, kind: FactKind) -> Option<Candidate> {
    let s = strip_leads(lang::strip_leads(sentence), LEADS);
    (s.len() <= MAX_FACT_CHARS && s.len() >= 4).then(|| with_kind(&s, kind))
}

/// Places `c`, said in `source`, among `facts` of `scope` as the rules' facts are placed: skipped
/// when said already, the facts it supersedes made past. Whether anything changed.
pub fn place_said(
    facts: &mut Vec<UserFact>,
    c: Candidate,
    source: FactSource,
    scope: Option<&str>,
    new_id: &mut dyn FnMut() -> String,
) -> bool {
    let at = source.said_at;
    place(facts, c, Some(source), at, scope, new_id)
}

/// Whether `w` says a taste as "I could eat it every day" does: "could" and a span of time that is
/// no condition ("every day", "every single day", "all day", "forever", "for hours"), and no other
/// hypothetical word.
fn all_day(w: &[String]) -> bool {
    let others = w
        .iter()
        .any(|x| x != "could" && HYPOTHETICAL.contains(&x.as_str()));
    let every_day = w
        .windows(3)
        .any(|p| p[0] == "every" && (p[1] == "day" || p[2] == "day"));
    !others
        && (every_day
            || has_pair(w, &[("all", "day"), ("for", "hours")])
            || w.iter().any(|x| x == "forever"))
}

/// Whether `w` holds a word of `list`, or its plural ("budgies", "cats").
fn holds_noun(list: &[&str], x: &str) -> bool {
    list.contains(&x) || x.strip_suffix('s').is_some_and(|one| list.contains(&one))
}

/// Whether `w` says a taste by how a thing is to the user: a word of [`TASTES`] with "to me" or
/// "for me" ("Liquorice is disgusting to me"), or after "I find" ("I find olives revolting").
fn taste_said(w: &[String]) -> bool {
    w.iter().any(|x| TASTES.contains(&x.as_str()))
        && (has_pair(w, &[("to", "me"), ("for", "me")]) || first_verb(w) == Some("find"))
}

/// Whether `w` holds the pair `a b` for one of `pairs`.
fn has_pair(w: &[String], pairs: &[(&str, &str)]) -> bool {
    w.windows(2)
        .any(|p| pairs.iter().any(|(a, b)| p[0] == *a && p[1] == *b))
}

/// `s` without the lead-ins of `leads` (each followed by a comma, colon or space, or the whole of
/// `s`; again while one is left), its first letter made a capital.
fn strip_leads(s: &str, leads: &[&str]) -> String {
    const SEPARATORS: [char; 6] = [',', ':', ' ', '!', '-', '—'];
    let mut s = s.trim();
    'again: loop {
        for lead in leads {
            let head = s.get(..lead.len()).filter(|h| h.eq_ignore_ascii_case(lead));
            let rest = &s[head.map_or(0, str::len)..];
            // "No, I don't" loses its "No,"; "No pets are allowed in my flat" keeps it.
            let spaced = rest.starts_with(' ') && PUNCTUATED.contains(lead);
            if head.is_some() && (rest.is_empty() || rest.starts_with(SEPARATORS)) && !spaced {
                s = rest.trim_start_matches(SEPARATORS);
                continue 'again;
            }
        }
        break;
    }
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// `s` closed with a full stop unless it ends with one (`.`, `。`, `।`), `!` (`！`) or `…`.
fn closed(s: &str) -> String {
    let s = s.trim();
    match s.chars().last() {
        Some('.' | '!' | '…' | '。' | '！' | '।') => s.to_string(),
        _ => format!("{s}."),
    }
}

/// Whether the sentence speaks as the user: its first pronoun is "I", "my", "we" or "our" (or it
/// says "call me").
fn first_person(w: &[String]) -> bool {
    if has_pair(w, &[("call", "me")]) || name_intro(w).is_some() {
        return true;
    }
    const PRONOUNS: &[&str] = &[
        "i", "my", "me", "mine", "we", "our", "you", "your", "he", "she", "they", "his", "her",
        "their", "it", "this", "that", "there", "someone", "people",
    ];
    w.iter()
        .find(|x| PRONOUNS.contains(&x.as_str()))
        .is_some_and(|x| matches!(x.as_str(), "i" | "my" | "me" | "mine" | "we" | "our"))
}

/// Whether the verb after the first "I" makes small talk ("I think…", "I'm sure…").
fn chatter(w: &[String]) -> bool {
    let Some(i) = w.iter().position(|x| x == "i") else {
        return false;
    };
    let mut rest = w[i + 1..]
        .iter()
        .map(String::as_str)
        .filter(|x| !ADVERBS.contains(x));
    match rest.next() {
        Some("m" | "am") => rest.next().is_some_and(|x| FEELINGS.contains(&x)),
        Some(verb) => CHATTER.contains(&verb),
        None => false,
    }
}

/// The kind of a sentence without first person that says a thing a current fact of `known` names is
/// gone ("Biscuit died"): that fact's kind.
fn ended_kind(own: &[Claim], known: &[UserFact]) -> Option<FactKind> {
    let ended = ended_values(own.iter());
    known
        .iter()
        .filter(|f| f.is_current())
        .find(|f| mentions_ended(&f.text, &ended))
        .map(|f| f.kind)
}

/// The kind of a first-person sentence: by its claims, then by its words; `None` when it tells
/// nothing the rules know.
fn kind_of(s: &str, w: &[String], own: &[Claim]) -> Option<FactKind> {
    let any = |list: &[&str]| w.iter().any(|x| list.contains(&x.as_str()));
    let after_my = |list: &[&str]| {
        w.windows(2).any(|p| {
            matches!(p[0].as_str(), "my" | "our" | "a" | "two" | "three") && holds_noun(list, &p[1])
        }) || w
            .windows(3)
            .any(|p| matches!(p[0].as_str(), "my" | "our") && holds_noun(list, &p[2]))
    };
    if any(HEALTH) {
        return Some(FactKind::Health);
    }
    if let Some(kind) = own.iter().find_map(|c| kind_of_claim(c, w)) {
        return Some(kind);
    }
    if name_said(s, w).is_some() || has_pair(w, &[("my", "name")]) {
        return Some(FactKind::Name);
    }
    let working_on = has_pair(w, &[("working", "on")]);
    let kind = if after_my(PETS) {
        FactKind::Pets
    } else if after_my(PEOPLE) || any(PEOPLE_STATES) {
        FactKind::People
    } else if any(PROJECT) || working_on {
        FactKind::Project
    } else if any(HOME) || has_pair(w, &[("m", "from"), ("am", "from"), ("come", "from")]) {
        FactKind::Home
    } else if any(WORK)
        || w.windows(2)
            .any(|p| matches!(p[0].as_str(), "a" | "an") && is_job(&p[1]))
    {
        FactKind::Work
    } else if any(PREFERENCE)
        || has_pair(w, &[("nothing", "beats")])
        || taste_said(w)
        || (all_day(w) && w.iter().any(|x| x == "could"))
    {
        FactKind::Preference
    } else if first_verb(w).is_some_and(|v| OTHER_VERBS.contains(&v))
        || any(OTHER_WORDS)
        || has_pair(w, &[("years", "old")])
    {
        FactKind::Other
    } else {
        return None;
    };
    Some(kind)
}

/// The kind a claim gives its sentence.
fn kind_of_claim(c: &Claim, w: &[String]) -> Option<FactKind> {
    let about = |list: &[&str]| c.subject.split([' ', '\'']).any(|x| list.contains(&x));
    if about(PETS) {
        return Some(FactKind::Pets);
    }
    if c.subject != "user" {
        return about(PEOPLE).then_some(FactKind::People);
    }
    let noun = c.attribute.strip_prefix("has ").unwrap_or("");
    Some(match c.attribute.as_str() {
        "name" => FactKind::Name,
        "lives_in" => FactKind::Home,
        "job" => FactKind::Work,
        _ if PETS.iter().any(|p| stem(p) == noun) => FactKind::Pets,
        _ if PEOPLE.iter().any(|p| stem(p) == noun) => FactKind::People,
        a if a.starts_with("likes ") => FactKind::Preference,
        a if a.starts_with("ended ") && w.iter().any(|x| PETS.contains(&x.as_str())) => {
            FactKind::Pets
        }
        _ => FactKind::Other,
    })
}

/// The verb after the first "I" (adverbs skipped).
fn first_verb(w: &[String]) -> Option<&str> {
    let i = w.iter().position(|x| x == "i")?;
    w[i + 1..]
        .iter()
        .map(String::as_str)
        .find(|x| !ADVERBS.contains(x))
}

/// Whether `word` names a job (the claim rule's list, via a claim of "I am a <word>").
fn is_job(word: &str) -> bool {
    claims(&format!("I am a {word}"))
        .iter()
        .any(|c| c.attribute == "job")
}

/// Where the name follows in a sentence that opens as a self-introduction, "The name's Malik" or
/// "Name's Malik": the index of the word after "name's" ("The name is misleading" is none).
fn name_intro(w: &[String]) -> Option<usize> {
    let at = |i: usize| w.get(i).map(String::as_str);
    let name = if at(0) == Some("the") { 1 } else { 0 };
    (at(name) == Some("name") && at(name + 1) == Some("s")).then_some(name + 2)
}

/// The name `s` gives the user beyond the claim rule's "my name is" and "I'm called": "call me X",
/// "the name's X", "I'm X" / "I am X" (a capitalised word that is not a nationality, as the
/// sentence's last words).
fn name_said(s: &str, w: &[String]) -> Option<String> {
    if let Some(p) = w.windows(2).position(|p| p[0] == "call" && p[1] == "me") {
        return w.get(p + 2).map(|n| stem(n).to_string());
    }
    let raw: Vec<&str> = s
        .split(|c: char| !c.is_alphanumeric())
        .filter(|x| !x.is_empty())
        .collect();
    if let Some(at) = name_intro(w) {
        let name = raw.get(at)?;
        let lower = name.to_lowercase();
        let capital = name.chars().next().is_some_and(char::is_uppercase);
        return (capital && !NOT_NAMES.contains(&lower.as_str())).then(|| stem(&lower).to_string());
    }
    let at = raw
        .windows(2)
        .position(|p| p[0] == "I" && matches!(p[1], "m" | "am"))?;
    let name = raw.get(at + 2)?;
    let lower = name.to_lowercase();
    let capital = name.chars().next().is_some_and(char::is_uppercase);
    let tail = raw.len() - at - 3;
    (capital
        && tail <= 1
        && !NOT_NAME_ENDS.iter().any(|e| lower.ends_with(e))
        && !NOT_NAMES.contains(&lower.as_str())
        && !is_job(&lower))
    .then(|| stem(&lower).to_string())
}

/// The claims of a fact: the memory's claims ([`claims`]; "we" is the user too), and the name it
/// gives the user by [`name_said`].
pub fn fact_claims(text: &str) -> Vec<Claim> {
    let out = english_claims(text);
    if !out.is_empty() {
        return out;
    }
    // Said in another language: the claims of its table.
    lang::read(text).map(|r| r.claims).unwrap_or_default()
}

/// [`fact_claims`] by the English rules alone.
fn english_claims(text: &str) -> Vec<Claim> {
    // "My name is now Maria" claims as "My name is Maria".
    let plain = text.replace(" now ", " ");
    let mut out: Vec<Claim> = claims(&plain)
        .into_iter()
        .map(|mut c| {
            // "My daughter is called Sofia", "My sister's name is Ana": the daughter, the sister.
            let subject: Vec<&str> = c
                .subject
                .split(' ')
                .filter(|w| !matches!(*w, "s" | "is" | "am" | "are" | "was"))
                .collect();
            c.subject = match subject.join(" ").as_str() {
                "we" | "user's" => "user".to_string(),
                s => s.to_string(),
            };
            c
        })
        .collect();
    let w = words(text);
    if !out.iter().any(|c| c.attribute == "name") {
        if let Some(name) = name_said(text, &w) {
            out.push(Claim {
                subject: "user".into(),
                attribute: "name".into(),
                value: name,
                negated: false,
            });
        }
    }
    out
}

/// What `text` claims, as [`UserFact::claim_key`] holds it: each claim's attribute (with its
/// subject when that is not the user: `user's sister/lives_in`), joined by `+`.
pub fn claim_key(text: &str) -> String {
    let mut keys: Vec<String> = Vec::new();
    for c in fact_claims(text) {
        let attribute = if c.attribute == "ended" {
            format!("ended {}", c.value)
        } else {
            c.attribute
        };
        let k = if c.subject == "user" {
            attribute
        } else {
            format!("{}/{attribute}", c.subject)
        };
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.join("+")
}

/// A sentence as two are compared: its words, [`FILLER`] left out.
fn sentence_key(text: &str) -> String {
    words(text)
        .into_iter()
        .filter(|w| !FILLER.contains(&w.as_str()))
        .collect::<Vec<_>>()
        .join(" ")
}

// ---------- placing facts ----------

/// Whether `newer` (said later) makes the fact `older` (its text and claims) no longer true: a claim
/// supersedes one of its claims, or says the opposite of a negated one, or it names a thing `newer`
/// says is gone.
fn supersedes(newer: &[Claim], older_text: &str, older: &[Claim]) -> bool {
    let reverses = |n: &Claim, o: &Claim| {
        o.negated
            && !n.negated
            && n.subject == o.subject
            && n.attribute == o.attribute
            && (!matches!(n.attribute.as_str(), "lives_in" | "job" | "name") || n.value == o.value)
    };
    let ended = ended_values(newer.iter());
    newer
        .iter()
        .any(|n| older.iter().any(|o| n.supersedes(o) || reverses(n, o)))
        || mentions_ended(older_text, &ended)
}

/// Whether the current fact `f` says already what `text` (with `own` claims) says: the same sentence,
/// or the same claims and no term `f` lacks.
fn restates(f: &UserFact, text: &str, own: &[Claim]) -> bool {
    if sentence_key(&f.text) == sentence_key(text) {
        return true;
    }
    if own.is_empty() {
        return false;
    }
    let theirs = fact_claims(&f.text);
    let same = |a: &Claim, b: &Claim| {
        a.subject == b.subject
            && a.attribute == b.attribute
            && a.value == b.value
            && a.negated == b.negated
    };
    let terms = support_terms(&f.text);
    own.iter().all(|c| theirs.iter().any(|t| same(c, t)))
        && support_terms(text)
            .iter()
            .all(|t| terms.contains(t) || FILLER.contains(&t.as_str()))
}

/// Makes past, from `at`, the current facts of `scope` said no later than `at` (but `except`) that
/// `text` (with `own` claims) supersedes, then the home and work facts that only name a place or job
/// that no longer holds. Whether any changed.
fn make_past(
    facts: &mut [UserFact],
    text: &str,
    own: &[Claim],
    at: Millis,
    scope: Option<&str>,
    except: Option<usize>,
) -> bool {
    let open = |f: &UserFact, i: usize| {
        f.is_current() && f.scope.as_deref() == scope && f.valid_from <= at && Some(i) != except
    };
    let mut ended_now: Vec<Claim> = Vec::new();
    for (i, f) in facts.iter_mut().enumerate() {
        if !open(f, i) {
            continue;
        }
        let old = fact_claims(&f.text);
        if sentence_key(&f.text) != sentence_key(text) && supersedes(own, &f.text, &old) {
            f.valid_to = Some(at);
            f.updated_at = f.updated_at.max(at);
            ended_now.extend(old);
        }
    }
    if ended_now.is_empty() {
        return false;
    }
    let current: Vec<Claim> = facts
        .iter()
        .filter(|f| f.is_current() && f.scope.as_deref() == scope)
        .flat_map(|f| fact_claims(&f.text))
        .chain(own.iter().cloned())
        .collect();
    let gone = gone_values(ended_now.iter(), current.iter());
    for (i, f) in facts.iter_mut().enumerate() {
        // Said of the old home or job ("My flat in Lisbon is near the river"); a fact of another kind
        // that names the place tells something else ("I'm training for the Lisbon Marathon").
        if open(f, i)
            && matches!(f.kind, FactKind::Home | FactKind::Work)
            && sentence_key(&f.text) != sentence_key(text)
            && mentions_gone(&f.text, &gone)
        {
            f.valid_to = Some(at);
            f.updated_at = f.updated_at.max(at);
        }
    }
    true
}

/// Places `c` among `facts` in `scope` (a project id; `None`: about the user), said at `at` from
/// `source`: skipped when the
/// same sentence from the same source is there in any state (a tombstone above all) or a fact
/// says it already (a current one, or a past one that held at `at`); else the facts it supersedes are made past and it is added (as past
/// already when a current fact said later supersedes it). Whether anything changed.
fn place(
    facts: &mut Vec<UserFact>,
    c: Candidate,
    source: Option<FactSource>,
    at: Millis,
    scope: Option<&str>,
    new_id: &mut dyn FnMut() -> String,
) -> bool {
    let key = sentence_key(&c.text);
    let same_source = |f: &UserFact| match (&f.source, &source) {
        (Some(a), Some(b)) => {
            a.conversation_id == b.conversation_id
                && a.message_id == b.message_id
                && sentence_key(&f.text) == key
        }
        _ => false,
    };
    let own = fact_claims(&c.text);
    // Said already: by a current fact, or by a past one that held when `c` was said (taking the
    // same messages in again then changes nothing), about the user or of this scope.
    let held = |f: &UserFact| {
        f.forgotten.is_none()
            && (f.scope.is_none() || f.scope.as_deref() == scope)
            && f.valid_to.is_none_or(|to| f.valid_from <= at && to >= at)
    };
    if facts.iter().any(same_source) || facts.iter().any(|f| held(f) && restates(f, &c.text, &own))
    {
        return false;
    }
    let later = facts
        .iter()
        .filter(|f| f.is_current() && f.scope.as_deref() == scope && f.valid_from > at)
        .filter(|f| supersedes(&fact_claims(&f.text), &c.text, &own))
        .map(|f| f.valid_from)
        .min();
    if later.is_none() {
        make_past(facts, &c.text, &own, at, scope, None);
    }
    facts.push(UserFact {
        id: new_id(),
        text: c.text,
        kind: c.kind,
        claim_key: c.claim_key,
        source,
        valid_from: at,
        valid_to: later,
        forgotten: None,
        scope: scope.map(str::to_string),
        updated_at: at,
    });
    true
}

/// Takes in what the user said in message `message_id` of `conversation_id` at `said_at`: each fact
/// of [`facts_said`] is added (with a new id from `new_id`) unless a current fact says it already
/// or it came from this very message before (forgotten or not), and the facts it supersedes are
/// made past from `said_at` (module rules). Whether `facts` changed.
pub fn handle_said(
    facts: &mut Vec<UserFact>,
    conversation_id: &str,
    message_id: &str,
    text: &str,
    said_at: Millis,
    new_id: impl FnMut() -> String,
) -> bool {
    handle_said_in(
        facts,
        None,
        conversation_id,
        message_id,
        text,
        said_at,
        new_id,
    )
}

/// [`handle_said`] in a conversation of project `scope` (`None`: of none): the facts taken in are
/// of that project (`engine::project`), and they supersede only the project's own facts; one a
/// fact about the user says already is not taken in again.
pub fn handle_said_in(
    facts: &mut Vec<UserFact>,
    scope: Option<&str>,
    conversation_id: &str,
    message_id: &str,
    text: &str,
    said_at: Millis,
    mut new_id: impl FnMut() -> String,
) -> bool {
    let mut changed = false;
    for c in facts_said(text, facts) {
        let source = FactSource {
            conversation_id: conversation_id.to_string(),
            message_id: message_id.to_string(),
            said_at,
        };
        changed |= place(facts, c, Some(source), said_at, scope, &mut new_id);
    }
    changed
}

/// [`handle_said`] for each message of `messages` the user wrote (in the order given, oldest first:
/// a memory update's span, a catch-up's chunk), but deleted ones, errors and those still
/// streaming. Whether `facts` changed.
pub fn handle_messages(
    facts: &mut Vec<UserFact>,
    messages: &[Message],
    new_id: impl FnMut() -> String,
) -> bool {
    handle_messages_in(facts, None, messages, new_id)
}

/// [`handle_messages`] for messages of a conversation of project `scope` ([`handle_said_in`]).
pub fn handle_messages_in(
    facts: &mut Vec<UserFact>,
    scope: Option<&str>,
    messages: &[Message],
    mut new_id: impl FnMut() -> String,
) -> bool {
    let mut changed = false;
    for m in messages.iter().filter(|m| {
        m.role == Role::User
            && !m.meta.deleted
            && !m.meta.hidden
            && matches!(
                m.status,
                MessageStatus::Complete | MessageStatus::Interrupted
            )
    }) {
        changed |= handle_said_in(
            facts,
            scope,
            &m.conversation_id,
            &m.id,
            &m.content,
            m.created_at,
            &mut new_id,
        );
    }
    changed
}

// ---------- the user's controls ----------

/// Forgets the fact `id`: a tombstone from `now` (module rules). Whether it was there and not
/// forgotten already.
pub fn forget(facts: &mut [UserFact], id: &str, now: Millis) -> bool {
    match facts
        .iter_mut()
        .find(|f| f.id == id && f.forgotten.is_none())
    {
        Some(f) => {
            f.forgotten = Some(now);
            f.updated_at = now;
            true
        }
        None => false,
    }
}

/// The user's edit of fact `id`: `new_text` replaces its text (the source is kept), its kind and
/// claim key follow the new text (the kind is kept when the new text tells none the rules know),
/// and, the fact current, the other facts the new text supersedes are past from `now`. A forgotten
/// fact cannot be edited. Whether it changed.
pub fn edit(facts: &mut [UserFact], id: &str, new_text: &str, now: Millis) -> bool {
    let text = closed(&one_line(new_text));
    let Some(i) = facts
        .iter()
        .position(|f| f.id == id && f.forgotten.is_none())
    else {
        return false;
    };
    if text.len() < 2 || facts[i].text == text {
        return false;
    }
    let own = fact_claims(&text);
    let w = words(&text);
    let f = &mut facts[i];
    f.kind = kind_of(&text, &w, &own).unwrap_or(f.kind);
    f.claim_key = claim_key(&text);
    f.text = text.clone();
    f.updated_at = now;
    if f.is_current() {
        let scope = f.scope.clone();
        make_past(facts, &text, &own, now, scope.as_deref(), Some(i));
    }
    true
}

/// Adds a fact the user gives by hand ("Remember that I …": the lead-in left out), without a
/// source, as said at `now`, with the id `id`; it supersedes like any other. Whether it was added
/// (not when empty, or when a current fact says it already).
pub fn add(facts: &mut Vec<UserFact>, text: &str, now: Millis, id: String) -> bool {
    let text = strip_leads(&one_line(text), ADD_LEADS);
    let text = strip_leads(&text, &["that"]);
    if text.trim_end_matches(['.', '!', '…']).trim().is_empty() {
        return false;
    }
    let text = closed(&text);
    let own = fact_claims(&text);
    let kind = kind_of(&text, &words(&text), &own).unwrap_or(FactKind::Other);
    let c = Candidate {
        claim_key: claim_key(&text),
        text,
        kind,
    };
    let mut id = Some(id);
    place(facts, c, None, now, None, &mut || {
        id.take().unwrap_or_default()
    })
}

// ---------- two copies of one fact (a backup, another device) ----------

/// The earlier of two optional times; a time wins over none (a fact once past, or forgotten,
/// stays so whichever copy said it).
fn earliest(a: Option<Millis>, b: Option<Millis>) -> Option<Millis> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}

/// Two copies of one fact (the same id: a backup's and the stored one, or two devices') joined
/// into one. The words (text, kind, claim key) and the scope are those of the copy changed last (`updated_at`;
/// equal: the greater text, so the result never depends on the order of the arguments); a
/// tombstone wins over a live copy whatever their order (forgetting is never undone, the
/// earliest `forgotten` kept), and so does a past copy over a current one (the earliest
/// `valid_to`); `valid_from` keeps the earliest, `updated_at` the latest. It is a join:
/// commutative, associative and idempotent.
pub fn join_fact(a: &UserFact, b: &UserFact) -> UserFact {
    // The scope is the user's to change (a project's fact moved to "about you"): it goes with the
    // words, the copy changed last.
    let words = |f: &UserFact| {
        (
            f.updated_at,
            f.text.clone(),
            f.kind,
            f.claim_key.clone(),
            f.scope.clone(),
        )
    };
    let newer = if words(a) >= words(b) { a } else { b };
    UserFact {
        id: a.id.clone().max(b.id.clone()),
        text: newer.text.clone(),
        kind: newer.kind,
        claim_key: newer.claim_key.clone(),
        source: source_of(a, b),
        valid_from: a.valid_from.min(b.valid_from),
        valid_to: earliest(a.valid_to, b.valid_to),
        forgotten: earliest(a.forgotten, b.forgotten),
        scope: newer.scope.clone(),
        updated_at: a.updated_at.max(b.updated_at),
    }
}

/// Where the fact was said: it never changes, so both copies say the same; a copy without one (a
/// hand-added fact) loses to one with it, and two different ones keep the greater.
fn source_of(a: &UserFact, b: &UserFact) -> Option<FactSource> {
    let key = |s: &FactSource| (s.said_at, s.conversation_id.clone(), s.message_id.clone());
    match (&a.source, &b.source) {
        (Some(x), Some(y)) => Some(if key(x) >= key(y) { x } else { y }.clone()),
        (x, y) => x.clone().or_else(|| y.clone()),
    }
}

// ---------- the prompt ----------

/// Whether fact `f` may go into a prompt of `scope` (a project id; `None`: outside any project):
/// current, not forgotten, about the user or of that project.
pub fn in_scope(f: &UserFact, scope: Option<&str>) -> bool {
    f.is_current() && (f.scope.is_none() || f.scope.as_deref() == scope)
}

/// The most facts [`said_after`] gives (the newest): each is read against a summary on every send.
pub const MAX_FACTS_SAID_AFTER: usize = 100;

/// What the user said elsewhere after `since` that a conversation's memory made by then does not
/// know: the text and day of each current, unforgotten fact about the user (scope none) said after
/// `since` that claims something (a claim key: only a claim makes anything past), but those from
/// the messages `here` (the conversation's own); the newest [`MAX_FACTS_SAID_AFTER`], oldest first.
pub fn said_after<'a>(
    facts: &'a [UserFact],
    since: Millis,
    here: &std::collections::HashSet<&str>,
) -> Vec<(&'a str, Millis)> {
    let mut out: Vec<(&str, Millis)> = facts
        .iter()
        .filter(|f| in_scope(f, None) && !f.claim_key.is_empty())
        .filter(|f| {
            f.source
                .as_ref()
                .is_none_or(|s| !here.contains(s.message_id.as_str()))
        })
        .map(|f| {
            (
                f.text.as_str(),
                f.source.as_ref().map_or(f.valid_from, |s| s.said_at),
            )
        })
        .filter(|(_, at)| *at > since)
        .collect();
    sort_by_key(&mut out, |(_, at)| *at);
    out.drain(..out.len().saturating_sub(MAX_FACTS_SAID_AFTER));
    out
}

/// A fact's line in a prompt: its text on one line (at most [`MAX_FACT_LINE_CHARS`]) and the day it
/// was said: `- I live in Oslo now. (said 2026-11-20)`.
pub fn fact_line(f: &UserFact) -> String {
    let at = f.source.as_ref().map_or(f.valid_from, |s| s.said_at);
    let text = one_line(&f.text);
    let text = truncate_chars(&text, MAX_FACT_LINE_CHARS);
    format!("- {} (said {})", closed(text), date(at))
}

/// What a line of the section costs, in tokens (its line break included).
fn line_tokens<E: TokenEstimator + ?Sized>(line: &str, est: &E) -> u32 {
    est.estimate(line).saturating_add(1)
}

/// What the section's heading costs, in tokens.
pub fn heading_tokens<E: TokenEstimator + ?Sized>(est: &E) -> u32 {
    est.estimate(USER_FACTS_HEADING).saturating_add(2)
}

/// The facts a prompt of `scope` carries within `budget_tokens` (the heading and each
/// [`fact_line`] counted by `est`), in order: the core (name, home, work, people: at most
/// [`CORE_MAX_FACTS`], within two thirds of the budget), then those sharing terms with
/// `recent_texts` (most shared first), then the rest of the core, then the rest; newest first among
/// equals. Only current, unforgotten facts in scope ([`in_scope`]).
pub fn facts_for_prompt<'a, E: TokenEstimator + ?Sized>(
    facts: &'a [UserFact],
    scope: Option<&str>,
    recent_texts: &[&str],
    budget_tokens: u32,
    est: &E,
) -> Vec<&'a UserFact> {
    pick_for_prompt(facts, scope, recent_texts, &[], budget_tokens, est).chosen
}

/// What [`pick_for_prompt`] chose.
#[derive(Debug, Clone, PartialEq)]
pub struct Picked<'a> {
    /// In prompt order.
    pub chosen: Vec<&'a UserFact>,
    /// How many facts could have gone in (current, in scope, not superseded by `said`).
    pub eligible: usize,
}

/// [`facts_for_prompt`], leaving out the facts that `said` (the conversation's user messages memory
/// has not taken in yet, with when each was written) supersedes: a fact is never carried as
/// current beside the message that changed it.
pub fn pick_for_prompt<'a, E: TokenEstimator + ?Sized>(
    facts: impl IntoIterator<Item = &'a UserFact>,
    scope: Option<&str>,
    recent_texts: &[&str],
    said: &[(&str, Millis)],
    budget_tokens: u32,
    est: &E,
) -> Picked<'a> {
    let said: Vec<(Vec<Claim>, Millis)> = said
        .iter()
        .map(|(t, at)| (claims_said(t), *at))
        .filter(|(c, _)| !c.is_empty())
        .collect();
    let live: Vec<&UserFact> = facts
        .into_iter()
        .filter(|f| in_scope(f, scope))
        .filter(|f| {
            let later: Vec<&Vec<Claim>> = said
                .iter()
                .filter(|(_, at)| *at >= f.valid_from)
                .map(|(c, _)| c)
                .collect();
            if later.is_empty() {
                return true;
            }
            let old = fact_claims(&f.text);
            !later.iter().any(|c| supersedes(c, &f.text, &old))
        })
        .collect();
    Picked {
        chosen: choose(&live, recent_texts, budget_tokens, est),
        eligible: live.len(),
    }
}

/// The order and budget of [`facts_for_prompt`] over `live` facts.
fn choose<'a, E: TokenEstimator + ?Sized>(
    live: &[&'a UserFact],
    recent_texts: &[&str],
    budget: u32,
    est: &E,
) -> Vec<&'a UserFact> {
    let heading = heading_tokens(est);
    if live.is_empty() || heading >= budget {
        return Vec::new();
    }
    let recent = support_terms(&recent_texts.join("\n"));
    let shared = |f: &UserFact| support_terms(&f.text).intersection(&recent).count();
    // Newest first, then by id: the same facts give the same prompt.
    let mut order: Vec<usize> = (0..live.len()).collect();
    sort_by(&mut order, |&a, &b| {
        let (x, y) = (live[a], live[b]);
        (y.valid_from, &x.id).cmp(&(x.valid_from, &y.id))
    });
    let core: Vec<usize> = FactKind::ALL
        .iter()
        .filter(|k| k.is_core())
        .flat_map(|k| order.iter().copied().filter(|&i| live[i].kind == *k))
        .collect();
    let small_core: Vec<usize> = core.iter().copied().take(CORE_MAX_FACTS).collect();
    let scores: Vec<usize> = live.iter().map(|f| shared(f)).collect();
    let mut relevant: Vec<usize> = order.iter().copied().filter(|&i| scores[i] > 0).collect();
    sort_by_key(&mut relevant, |&i| std::cmp::Reverse(scores[i]));
    let costs: Vec<u32> = live
        .iter()
        .map(|f| line_tokens(&fact_line(f), est))
        .collect();
    let mut taken = vec![false; live.len()];
    let mut used = heading;
    let mut chosen: Vec<usize> = Vec::new();
    let passes = [
        (small_core, budget / 3 * 2),
        (relevant, budget),
        (core, budget),
        (order, budget),
    ];
    for (pass, limit) in passes {
        for i in pass {
            // The first fact may use the whole budget: a tiny share still carries the name.
            let limit = if chosen.is_empty() { budget } else { limit };
            if !taken[i] && used.saturating_add(costs[i]) <= limit {
                taken[i] = true;
                used += costs[i];
                chosen.push(i);
            }
        }
    }
    chosen.into_iter().map(|i| live[i]).collect()
}

/// When a fact held, as the Memory page says it: "said 1 Mar 2026", "said 1 Mar 2026; until
/// 9 Apr 2026" for a past one, "added 1 Mar 2026" for one the user wrote.
pub fn fact_days(f: &UserFact) -> String {
    let from = crate::engine::format::day(f.valid_from);
    match (f.valid_to, &f.source) {
        (Some(to), _) => format!("said {from}; until {}", crate::engine::format::day(to)),
        (None, Some(_)) => format!("said {from}"),
        (None, None) => format!("added {from}"),
    }
}

/// The facts the memory pane leads with for a conversation whose prompts read facts in `scope`
/// (`project::prompt_scope`): the current ones [`in_scope`], who the user is first (name, home,
/// work, people, in that order), then the rest; newest first within each kind, then by id. The
/// first `limit` of them, and how many there are in all (the rest are on the Memory page).
pub fn facts_for_pane<'a>(
    facts: &'a [UserFact],
    scope: Option<&str>,
    limit: usize,
) -> (Vec<&'a UserFact>, usize) {
    let rank = |k: FactKind| {
        FactKind::ALL
            .iter()
            .position(|c| *c == k && k.is_core())
            .unwrap_or(FactKind::ALL.len())
    };
    let mut shown: Vec<&UserFact> = facts.iter().filter(|f| in_scope(f, scope)).collect();
    sort_by(&mut shown, |a, b| {
        (rank(a.kind), std::cmp::Reverse(a.valid_from), &a.id).cmp(&(
            rank(b.kind),
            std::cmp::Reverse(b.valid_from),
            &b.id,
        ))
    });
    let all = shown.len();
    shown.truncate(limit);
    (shown, all)
}

/// The facts the Memory page lists for the search `query`: not forgotten, holding every word of
/// it (in any case), current ones first, newest first within each; the first `limit` of them, and
/// how many match in all.
pub fn facts_for_page<'a>(
    facts: &'a [UserFact],
    query: &str,
    limit: usize,
) -> (Vec<&'a UserFact>, usize) {
    let words: Vec<String> = query.split_whitespace().map(str::to_lowercase).collect();
    let mut shown: Vec<&UserFact> = facts
        .iter()
        .filter(|f| f.forgotten.is_none())
        .filter(|f| {
            let text = f.text.to_lowercase();
            words.iter().all(|w| text.contains(w.as_str()))
        })
        .collect();
    shown.sort_by_key(|f| (!f.is_current(), std::cmp::Reverse(f.valid_from)));
    let matching = shown.len();
    shown.truncate(limit);
    (shown, matching)
}
