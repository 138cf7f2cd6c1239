#![cfg(not(target_arch = "wasm32"))]
//! Facts about the user beyond English (`engine::memory::lang`, issue 42 item 2): each language's
//! table read by one reader, a line per case: what a user's message yields (fact and kind), what
//! a later message makes past, what is no fact (questions, requests, hypotheticals, other people),
//! and the recall cues.

#[allow(dead_code)]
#[path = "../benches/memory_eval/languages.rs"]
mod languages;

use memoire::engine::memory::lang::{fold, refers_back, PERSONS, TABLES};
use memoire::engine::memory::user::*;
use memoire::engine::model::*;
use FactKind::*;

const DAY: i64 = 86_400_000;
const NOV_20: i64 = 1_795_132_800_000;

/// The facts `text` yields, as (sentence, kind).
fn check(text: &str, want: &[(&str, FactKind)]) {
    let got: Vec<(String, FactKind)> = facts_said(text, &[])
        .into_iter()
        .map(|c| (c.text, c.kind))
        .collect();
    let want: Vec<(String, FactKind)> = want.iter().map(|(t, k)| (t.to_string(), *k)).collect();
    assert_eq!(got, want, "facts said in {text:?}");
}

/// After each message of `said` (a day apart), the facts still current and those made past.
fn check_change(said: &[&str], now: &[&str], was: &[&str]) {
    let mut facts = Vec::new();
    let mut n = 0;
    for (k, text) in said.iter().enumerate() {
        handle_said(
            &mut facts,
            "c",
            &format!("m{k}"),
            text,
            NOV_20 + k as i64 * DAY,
            || {
                n += 1;
                format!("f{n}")
            },
        );
    }
    let current: Vec<&str> = facts
        .iter()
        .filter(|f| f.is_current())
        .map(|f| f.text.as_str())
        .collect();
    let past: Vec<&str> = facts
        .iter()
        .filter(|f| !f.is_current())
        .map(|f| f.text.as_str())
        .collect();
    assert_eq!(
        (current.as_slice(), past.as_slice()),
        (now, was),
        "after {said:?}"
    );
}

#[test]
fn german() {
    check("Ich heiße Lukas.", &[("Ich heiße Lukas.", Name)]);
    check("Ich wohne in Köln.", &[("Ich wohne in Köln.", Home)]);
    check(
        "Ich arbeite als Tischler.",
        &[("Ich arbeite als Tischler.", Work)],
    );
    check(
        "Ich bin Krankenschwester.",
        &[("Ich bin Krankenschwester.", Work)],
    );
    check(
        "Meine Tochter heißt Emma.",
        &[("Meine Tochter heißt Emma.", People)],
    );
    check(
        "Wir haben einen Hund namens Bello.",
        &[("Wir haben einen Hund namens Bello.", Pets)],
    );
    check("Ich mag Jazz.", &[("Ich mag Jazz.", Preference)]);
    check(
        "Koriander kann ich nicht ausstehen.",
        &[("Koriander kann ich nicht ausstehen.", Preference)],
    );
    check(
        "Ich bin allergisch gegen Nüsse.",
        &[("Ich bin allergisch gegen Nüsse.", Health)],
    );
    check(
        "Ich heiße Lukas und wohne in Köln.",
        &[("Ich heiße Lukas.", Name), ("Wohne in Köln.", Home)],
    );
    check("Wo wohne ich?", &[]);
    check("Sag mir, wo ich wohne.", &[]);
    check("Wenn ich in Berlin wohnen würde, wäre alles anders.", &[]);
    check("Ich möchte nach Berlin ziehen.", &[]);
    check("Anna wohnt in Hamburg.", &[]);
    check_change(
        &[
            "Ich wohne in Köln.",
            "Wir sind von Köln nach München gezogen.",
        ],
        &["Wir sind von Köln nach München gezogen."],
        &["Ich wohne in Köln."],
    );
    check_change(
        &["Ich mag Kaffee.", "Ich mag keinen Kaffee mehr."],
        &["Ich mag keinen Kaffee mehr."],
        &["Ich mag Kaffee."],
    );
}

#[test]
fn french() {
    check("Je m'appelle Chloé.", &[("Je m'appelle Chloé.", Name)]);
    check("J'habite à Lyon.", &[("J'habite à Lyon.", Home)]);
    check("Je suis architecte.", &[("Je suis architecte.", Work)]);
    check("Je suis sage-femme.", &[("Je suis sage-femme.", Work)]);
    check(
        "Je travaille comme infirmière.",
        &[("Je travaille comme infirmière.", Work)],
    );
    check(
        "Mon fils s'appelle Hugo.",
        &[("Mon fils s'appelle Hugo.", People)],
    );
    check("J'ai un chat.", &[("J'ai un chat.", Pets)]);
    check(
        "Je déteste la coriandre.",
        &[("Je déteste la coriandre.", Preference)],
    );
    check(
        "Je suis allergique aux arachides.",
        &[("Je suis allergique aux arachides.", Health)],
    );
    check(
        "Je m'appelle Chloé et j'habite à Lyon.",
        &[("Je m'appelle Chloé.", Name), ("J'habite à Lyon.", Home)],
    );
    check("Où est-ce que j'habite ?", &[]);
    check("Dis-moi où j'habite.", &[]);
    check("Si j'habitais à Paris, je serais heureuse.", &[]);
    check("Je voudrais un chien.", &[]);
    check("Marie habite à Nantes.", &[]);
    check_change(
        &[
            "J'habite à Lyon.",
            "Nous avons déménagé de Lyon à Bordeaux.",
        ],
        &["Nous avons déménagé de Lyon à Bordeaux."],
        &["J'habite à Lyon."],
    );
}

#[test]
fn spanish() {
    check("Me llamo Lucía.", &[("Me llamo Lucía.", Name)]);
    check("Vivo en Sevilla.", &[("Vivo en Sevilla.", Home)]);
    check(
        "Trabajo como enfermera.",
        &[("Trabajo como enfermera.", Work)],
    );
    check("Soy profesora.", &[("Soy profesora.", Work)]);
    check(
        "Mi hermano vive en Madrid.",
        &[("Mi hermano vive en Madrid.", People)],
    );
    check("Tengo dos gatos.", &[("Tengo dos gatos.", Pets)]);
    check(
        "No me gusta el cilantro.",
        &[("No me gusta el cilantro.", Preference)],
    );
    check("Soy celíaca.", &[("Soy celíaca.", Health)]);
    check(
        "Me llamo Lucía y vivo en Sevilla.",
        &[("Me llamo Lucía.", Name), ("Vivo en Sevilla.", Home)],
    );
    check("¿Dónde vivo?", &[]);
    check("Dime dónde vivo.", &[]);
    check("Si viviera en Madrid, iría al Prado.", &[]);
    check("Quiero mudarme a Valencia.", &[]);
    check("Carmen vive en Bilbao.", &[]);
    check_change(
        &["Vivo en Sevilla.", "Me mudé a Granada."],
        &["Me mudé a Granada."],
        &["Vivo en Sevilla."],
    );
}

#[test]
fn portuguese() {
    check("Chamo-me Inês.", &[("Chamo-me Inês.", Name)]);
    check("Moro em Lisboa.", &[("Moro em Lisboa.", Home)]);
    check(
        "Trabalho como enfermeira.",
        &[("Trabalho como enfermeira.", Work)],
    );
    check(
        "Minha filha tem cinco anos.",
        &[("Minha filha tem cinco anos.", People)],
    );
    check("Tenho um cão.", &[("Tenho um cão.", Pets)]);
    check(
        "Sou alérgico a camarão.",
        &[("Sou alérgico a camarão.", Health)],
    );
    check("Onde moro?", &[]);
    check("Talvez eu more no Porto.", &[]);
    check("O João mora em Braga.", &[]);
    check_change(
        &["Moro em Lisboa.", "Mudei-me de Lisboa para o Porto."],
        &["Mudei-me de Lisboa para o Porto."],
        &["Moro em Lisboa."],
    );
}

#[test]
fn italian() {
    check("Mi chiamo Giulia.", &[("Mi chiamo Giulia.", Name)]);
    check("Abito a Torino.", &[("Abito a Torino.", Home)]);
    check(
        "Lavoro come infermiera.",
        &[("Lavoro come infermiera.", Work)],
    );
    check(
        "Mia sorella vive a Roma.",
        &[("Mia sorella vive a Roma.", People)],
    );
    check("Ho un gatto.", &[("Ho un gatto.", Pets)]);
    check(
        "Odio il coriandolo.",
        &[("Odio il coriandolo.", Preference)],
    );
    check("Dove abito?", &[]);
    check("Vorrei vivere a Milano.", &[]);
    check("Marco abita a Napoli.", &[]);
    check_change(
        &["Abito a Torino.", "Mi sono trasferita da Torino a Milano."],
        &["Mi sono trasferita da Torino a Milano."],
        &["Abito a Torino."],
    );
}

#[test]
fn dutch() {
    check("Ik heet Daan.", &[("Ik heet Daan.", Name)]);
    check("Ik woon in Utrecht.", &[("Ik woon in Utrecht.", Home)]);
    check(
        "Ik werk als verpleegkundige.",
        &[("Ik werk als verpleegkundige.", Work)],
    );
    check("Mijn zoon heet Milo.", &[("Mijn zoon heet Milo.", People)]);
    check("We hebben een hond.", &[("We hebben een hond.", Pets)]);
    check(
        "Ik hou niet van koriander.",
        &[("Ik hou niet van koriander.", Preference)],
    );
    check("Waar woon ik?", &[]);
    check("Misschien verhuis ik naar Gent.", &[]);
    check("Sanne woont in Leiden.", &[]);
    check_change(
        &[
            "Ik woon in Gent.",
            "We zijn van Gent naar Utrecht verhuisd.",
        ],
        &["We zijn van Gent naar Utrecht verhuisd."],
        &["Ik woon in Gent."],
    );
}

#[test]
fn other_languages_and_english_are_left_to_their_rules() {
    check("Jeg bor i Oslo.", &[]);
    check("Give me a recipe for my dog.", &[]);
    check("Ben lives in Oslo.", &[]);
}

fn check_cue(text: &str, want: bool) {
    assert_eq!(refers_back(text), want, "{text:?}");
}

#[test]
fn recall_cues() {
    check_cue("Erinnerst du dich an mein Rezept?", true);
    check_cue("Was hatte ich letztes Mal gesagt?", true);
    check_cue("Tu te souviens de ma recette ?", true);
    check_cue("La dernière fois, on a parlé de Lyon.", true);
    check_cue("¿Recuerdas lo que te dije?", true);
    check_cue("¿Te acuerdas de mi receta?", true);
    check_cue("Lembras-te do que te disse?", true);
    check_cue("Ti ricordi la mia ricetta?", true);
    check_cue("Weet je nog wat ik zei?", true);
    check_cue("Wie spät ist es?", false);
    check_cue("Quelle heure est-il ?", false);
}

#[test]
fn tables_are_written_folded() {
    for t in TABLES {
        let lists = [
            t.first_person,
            t.my,
            t.you,
            t.name,
            t.lives,
            t.moved,
            t.to,
            t.works_as,
            t.am,
            t.jobs,
            t.has,
            t.likes,
            t.dislikes,
            t.people,
            t.pets,
            t.health,
            t.home_words,
            t.work_words,
            t.taste_words,
            t.negations,
            t.hypothetical,
            t.if_words,
            t.question,
            t.imperative,
            t.openers,
            t.and,
            t.articles,
            t.into,
            t.adverbs,
            t.ends,
            t.recall_words,
        ];
        for w in lists.iter().flat_map(|l| l.iter()) {
            assert_eq!(fold(w), *w, "{}: {w:?} is not folded", t.code);
        }
    }
}

#[test]
fn who_a_clause_speaks_of_is_written_folded() {
    for p in PERSONS {
        for w in [p.me, p.others, p.wish].iter().flat_map(|l| l.iter()) {
            assert_eq!(fold(w), *w, "{}: {w:?} is not folded", p.code);
        }
    }
}

/// The evaluation beyond English (`benches/memory_eval/languages.rs`) is written apart from the
/// rules' tests: none of its sentences is in them.
#[test]
fn the_evaluation_shares_no_sentence_with_the_rules_tests() {
    let tests = [
        include_str!("engine_lang.rs"),
        include_str!("engine_user_memory.rs"),
        include_str!("engine_memory_grounding.rs"),
    ];
    for set in languages::SETS.iter().chain([&languages::PROPOSED]) {
        for turn in set.conversations.iter().flat_map(|c| c.iter()) {
            for sentence in turn.split_inclusive(['.', '!', '?']) {
                let sentence = sentence.trim();
                assert!(
                    sentence.len() < 12 || tests.iter().all(|t| !t.contains(sentence)),
                    "{}: {sentence:?} is in a rule's test",
                    set.name
                );
            }
        }
    }
}
