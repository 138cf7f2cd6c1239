//! The evaluation beyond English of `benches/memory_eval.rs` (issue 42, item 5), written for this
//! project apart from the rules' own tests (`tests/engine_lang.rs` checks that no sentence of
//! `tests/engine_lang.rs` or `tests/engine_user_memory.rs` is in it): one user per set, three
//! conversations a day apart in German, French, Spanish and English (the same kinds of facts in
//! each, said each language's way), and an English paraphrase set in phrasings the rules' tests
//! never use; then questions, each asked as the first message of a new conversation.
//!
//! And one set in a language the rules do not know (Polish, [`PROPOSED`]) with what a scripted
//! proposer names after each conversation ([`PROPOSALS`]), for the facts the model proposes.
//!
//! Categories: `cross` (a fact of another conversation is in the new one's prompt), `update` (a
//! changed fact's new value is there and the old one is not carried as current), `preference` (a
//! like or a dislike), `abstention` (something never said: the prompt's memory names none of its
//! words), and `not_a_fact` (said only as a question, a request, a hypothetical or of someone else:
//! the prompt's memory names none of its words).

/// One language's set.
pub struct Set {
    /// The figure's suffix: `en`, `de`, `fr`, `es`, or `paraphrase`.
    pub name: &'static str,
    /// The user's messages, per conversation (conversation `n` on day `n`).
    pub conversations: &'static [&'static [&'static str]],
    pub questions: &'static [Q],
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Cross,
    Update,
    Preference,
    Abstention,
    NotAFact,
}

impl Kind {
    pub const ALL: [Kind; 5] = [
        Kind::Cross,
        Kind::Update,
        Kind::Preference,
        Kind::Abstention,
        Kind::NotAFact,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Cross => "cross",
            Kind::Update => "update",
            Kind::Preference => "preference",
            Kind::Abstention => "abstention",
            Kind::NotAFact => "not_a_fact",
        }
    }
}

/// A question asked in a new conversation and what its prompt's memory must (or must not) name.
pub struct Q {
    pub kind: Kind,
    pub text: &'static str,
    /// Words the memory must name (abstention, not a fact: words it must NOT name).
    pub expect: &'static [&'static str],
    /// Update: the old value, which no line of the memory may name without the new one.
    pub old: &'static str,
}

const fn q(kind: Kind, text: &'static str, expect: &'static [&'static str]) -> Q {
    Q {
        kind,
        text,
        expect,
        old: "",
    }
}

const fn cross(text: &'static str, expect: &'static [&'static str]) -> Q {
    q(Kind::Cross, text, expect)
}

const fn pref(text: &'static str, expect: &'static [&'static str]) -> Q {
    q(Kind::Preference, text, expect)
}

const fn update(text: &'static str, new: &'static [&'static str], old: &'static str) -> Q {
    Q {
        old,
        ..q(Kind::Update, text, new)
    }
}

const fn abstain(text: &'static str, words: &'static [&'static str]) -> Q {
    q(Kind::Abstention, text, words)
}

/// Words said only in a question, a request, a hypothetical or of someone else.
const fn not_fact(text: &'static str, words: &'static [&'static str]) -> Q {
    q(Kind::NotAFact, text, words)
}

pub const SETS: [Set; 6] = [EN, DE, FR, ES, PARAPHRASE, HELD_OUT];

const EN: Set = Set {
    name: "en",
    conversations: &[
        &[
            "Hello there, my name is Nora Whitfield.",
            "I live in Leeds with my family.",
            "I work as an electrician for a small firm.",
            "Could you suggest a running route near the river?",
        ],
        &[
            "My son Oliver is nine.",
            "We have a dog named Pepper.",
            "I adore vegetable curry.",
            "I really dislike blue cheese.",
            "I'm allergic to shellfish.",
            "If I won the lottery I would buy a sailing boat.",
            "Martha lives in Bristol.",
            "What can I cook tonight with chickpeas?",
        ],
        &[
            "News: we moved from Leeds to York in July.",
            "I now work as a physics teacher.",
            "Where are the nicest beaches near York?",
            "Should I buy an electric scooter?",
        ],
    ],
    questions: &[
        cross("What's my name?", &["Nora"]),
        cross("How old is my son?", &["nine"]),
        cross("What is my dog called?", &["Pepper"]),
        cross("What am I allergic to?", &["shellfish"]),
        pref("Which dish do I adore?", &["curry"]),
        pref("Which cheese do I dislike?", &["blue cheese"]),
        update("Where do I live?", &["York"], "Leeds"),
        update("What is my job?", &["teacher"], "electrician"),
        abstain("What is my sister called?", &["sister"]),
        abstain(
            "Which instrument do I play?",
            &["instrument", "piano", "guitar"],
        ),
        not_fact("Do I own a boat?", &["boat", "lottery"]),
        not_fact("Who lives in Bristol?", &["Bristol"]),
        not_fact("Do I have a scooter?", &["scooter"]),
    ],
};

const DE: Set = Set {
    name: "de",
    conversations: &[
        &[
            "Hallo! Ich heiße Jonas Becker und bin neu hier.",
            "Ich wohne seit drei Jahren in Freiburg.",
            "Von Beruf bin ich Bäcker, ich stehe jeden Tag um vier Uhr auf.",
            "Kannst du mir ein Rezept für Roggenbrot geben?",
        ],
        &[
            "Meine Frau Katrin ist Grundschullehrerin.",
            "Wir haben eine Katze, sie heißt Minka.",
            "Ich esse gern scharfe Currys.",
            "Rosinen mag ich überhaupt nicht.",
            "Ich bin allergisch gegen Haselnüsse.",
            "Wenn ich mehr Zeit hätte, würde ich Japanisch lernen.",
            "Thomas wohnt in Basel.",
            "Was kann ich am Wochenende unternehmen?",
        ],
        &[
            "Große Neuigkeit: Wir sind von Freiburg nach Ulm gezogen.",
            "Ich arbeite jetzt als Konditor in einer Konditorei am Münsterplatz.",
            "Wo finde ich in Ulm einen guten Wochenmarkt?",
            "Soll ich mir ein Lastenrad kaufen?",
        ],
    ],
    questions: &[
        cross("Wie heiße ich?", &["Jonas"]),
        cross("Was macht meine Frau beruflich?", &["Grundschullehrerin"]),
        cross("Wie heißt unsere Katze?", &["Minka"]),
        cross("Wogegen bin ich allergisch?", &["Haselnüsse"]),
        pref("Was esse ich gern?", &["Currys"]),
        pref("Was mag ich nicht?", &["Rosinen"]),
        update("Wo wohne ich?", &["Ulm"], "Freiburg"),
        update("Was ist mein Beruf?", &["Konditor"], "Bäcker"),
        abstain("Wie heißt mein Bruder?", &["Bruder"]),
        abstain("Welches Auto fahre ich?", &["Auto"]),
        not_fact("Spreche ich Japanisch?", &["Japanisch"]),
        not_fact("Wer wohnt in Basel?", &["Basel"]),
        not_fact("Habe ich ein Lastenrad?", &["Lastenrad"]),
    ],
};

const FR: Set = Set {
    name: "fr",
    conversations: &[
        &[
            "Bonjour, je m'appelle Camille Roux.",
            "J'habite à Nantes depuis mes études.",
            "Je travaille comme infirmière dans un grand hôpital.",
            "Peux-tu me proposer un menu pour la semaine ?",
        ],
        &[
            "Mon mari Julien est pompier.",
            "Nous avons un vieux labrador qui s'appelle Gaston.",
            "J'adore le fromage de chèvre.",
            "Je déteste les huîtres.",
            "Je suis intolérante au lactose.",
            "Si j'avais le temps, j'apprendrais le violon.",
            "Sophie habite à Rennes.",
            "Quel parc est le plus agréable en automne ?",
        ],
        &[
            "Grande nouvelle : nous avons déménagé de Nantes à Bordeaux.",
            "Je suis maintenant sage-femme à la maternité.",
            "Est-ce que tu connais un bon marché à Bordeaux ?",
            "Dois-je acheter un vélo électrique ?",
        ],
    ],
    questions: &[
        cross("Comment je m'appelle ?", &["Camille"]),
        cross("Quel est le métier de mon mari ?", &["pompier"]),
        cross("Comment s'appelle notre chien ?", &["Gaston"]),
        cross("Qu'est-ce que je ne supporte pas bien ?", &["lactose"]),
        pref("Quel fromage est-ce que j'adore ?", &["chèvre"]),
        pref("Qu'est-ce que je déteste manger ?", &["huîtres"]),
        update("Où est-ce que j'habite ?", &["Bordeaux"], "Nantes"),
        update("Quel est mon métier ?", &["sage-femme"], "infirmière"),
        abstain("Comment s'appelle ma sœur ?", &["sœur"]),
        abstain("Quelle voiture est-ce que je conduis ?", &["voiture"]),
        not_fact("Est-ce que je joue du violon ?", &["violon"]),
        not_fact("Qui habite à Rennes ?", &["Rennes"]),
        not_fact("Ai-je un vélo électrique ?", &["vélo"]),
    ],
};

const ES: Set = Set {
    name: "es",
    conversations: &[
        &[
            "Hola, me llamo Diego Navarro.",
            "Vivo en Zaragoza con mi familia.",
            "Trabajo de electricista en una empresa pequeña.",
            "¿Me recomiendas una ruta para correr?",
        ],
        &[
            "Mi hija Valeria tiene nueve años.",
            "Tenemos un perro que se llama Toby.",
            "Me encanta la paella de verduras.",
            "No soporto el queso azul.",
            "Soy alérgico a las gambas.",
            "Si ganara la lotería, me compraría un barco.",
            "Marta vive en Bilbao.",
            "¿Qué puedo cocinar hoy con garbanzos?",
        ],
        &[
            "Novedades: nos mudamos de Zaragoza a Valencia en julio.",
            "Ahora trabajo como profesor de física.",
            "¿Dónde hay buenas playas cerca de Valencia?",
            "¿Debería comprar un patinete eléctrico?",
        ],
    ],
    questions: &[
        cross("¿Cómo me llamo?", &["Diego"]),
        cross("¿Cuántos años tiene mi hija?", &["nueve"]),
        cross("¿Cómo se llama nuestro perro?", &["Toby"]),
        cross("¿A qué soy alérgico?", &["gambas"]),
        pref("¿Qué plato me encanta?", &["paella"]),
        pref("¿Qué no soporto?", &["queso azul"]),
        update("¿Dónde vivo?", &["Valencia"], "Zaragoza"),
        update("¿En qué trabajo?", &["profesor"], "electricista"),
        abstain("¿Cómo se llama mi gato?", &["gato"]),
        abstain(
            "¿Qué instrumento toco?",
            &["instrumento", "guitarra", "piano"],
        ),
        not_fact("¿Tengo un barco?", &["barco", "lotería"]),
        not_fact("¿Quién vive en Bilbao?", &["Bilbao"]),
        not_fact("¿Tengo un patinete?", &["patinete"]),
    ],
};

const PARAPHRASE: Set = Set {
    name: "paraphrase",
    conversations: &[
        &[
            "Folks call me Priya.",
            "Home for me is Dundee these days.",
            "I earn my living as a locksmith.",
            "Could you help me plan a weekend away?",
        ],
        &[
            "My partner Sam and I got married last spring.",
            "Our tabby Clementine sleeps all day.",
            "Nothing beats a bowl of ramen for me.",
            "Mushrooms are the one food I truly can't stand.",
            "Peanuts give me hives, so I avoid them.",
            "If money were no object, I'd live in Lisbon.",
            "Hannah works as a dentist.",
            "Any tips for a rainy Sunday?",
        ],
        &[
            "We've since relocated from Dundee to Perth.",
            "I've swapped careers and I'm a paramedic now.",
            "Which cafés in Perth open early?",
            "Would a rowing machine be worth it?",
        ],
    ],
    questions: &[
        cross("What's my name?", &["Priya"]),
        cross("Who is my spouse?", &["Sam"]),
        cross("What's my cat called?", &["Clementine"]),
        cross("What gives me hives?", &["Peanuts"]),
        pref("What's my comfort food?", &["ramen"]),
        pref("Which food can't I stand?", &["Mushrooms"]),
        update("Where do I live?", &["Perth"], "Dundee"),
        update("What do I do for work?", &["paramedic"], "locksmith"),
        abstain("What's my brother's name?", &["brother"]),
        abstain("What car do I drive?", &["car"]),
        not_fact("Do I live in Lisbon?", &["Lisbon"]),
        not_fact("Who is a dentist?", &["dentist", "Hannah"]),
        not_fact("Do I own a rowing machine?", &["rowing"]),
    ],
};

/// More English paraphrases, written after the rules were fixed for [`PARAPHRASE`]'s misses and run
/// once before any rule saw them (counted in `memory_eval_paraphrase` with it).
const HELD_OUT: Set = Set {
    name: "paraphrase",
    conversations: &[
        &[
            "The name's Malik, by the way.",
            "I've been living in Cork for about six years.",
            "I'm a welder at the shipyard.",
            "Can you explain how compound interest works?",
        ],
        &[
            "My twin brother Idris runs a bakery.",
            "I keep two budgies called Salt and Pepper.",
            "Honestly, I could eat sushi every single day.",
            "Liquorice is disgusting to me.",
            "I'm lactose intolerant.",
            "Suppose I quit my job tomorrow, what then?",
            "Fatima is an architect in Galway.",
            "What should I read next?",
        ],
        &[
            "Quick update: I'm living in Limerick now.",
            "I switched jobs and work as a crane operator these days.",
            "Where can I go hiking near Limerick?",
            "Is a standing desk worth buying?",
        ],
    ],
    questions: &[
        cross("What's my name?", &["Malik"]),
        cross("What does my brother do?", &["bakery"]),
        cross("What are my birds called?", &["Salt"]),
        cross("Which food gives me trouble?", &["lactose"]),
        pref("What could I eat every day?", &["sushi"]),
        pref("Which sweet do I find disgusting?", &["Liquorice"]),
        update("Where do I live?", &["Limerick"], "Cork"),
        update("What's my job?", &["crane"], "welder"),
        abstain("Do I have a daughter?", &["daughter"]),
        abstain("Which football club do I support?", &["football", "club"]),
        not_fact("Did I quit my job?", &["quit"]),
        not_fact("Who lives in Galway?", &["Galway", "Fatima"]),
        not_fact("Do I have a standing desk?", &["standing"]),
    ],
};

/// A fact the scripted proposer (standing in for the memory model) names after a conversation:
/// its quote, its kind as the schema says it, and whether it is one the conversation says no
/// longer holds (`user_facts_ended`).
pub struct Proposal {
    pub quote: &'static str,
    pub kind: &'static str,
    pub ended: bool,
}

const fn said(quote: &'static str, kind: &'static str) -> Proposal {
    Proposal {
        quote,
        kind,
        ended: false,
    }
}

const fn ended(quote: &'static str, kind: &'static str) -> Proposal {
    Proposal {
        quote,
        kind,
        ended: true,
    }
}

/// A set in a language the rules do not know (Polish) for the facts the model proposes
/// (`memory_eval_proposed`): the rules take in nothing of it, so what its prompts carry is what the
/// scripted proposer named and the grounding kept.
pub const PROPOSED: Set = Set {
    name: "proposed",
    conversations: &[
        &[
            "Cześć, mam na imię Zofia.",
            "Mieszkam w Krakowie od dziesięciu lat.",
            "Pracuję jako piekarka w małej piekarni.",
            "Czy możesz polecić mi dobrą książkę?",
        ],
        &[
            "Mój mąż Tomasz jest strażakiem.",
            "Mamy kota, który wabi się Mruczek.",
            "Uwielbiam pierogi z kapustą.",
            "Nie znoszę brukselki.",
            "Mam alergię na orzechy.",
            "Gdybym wygrała na loterii, kupiłabym jacht.",
            "Marta mieszka w Poznaniu.",
            "Co mogę dziś ugotować?",
        ],
        &[
            "Wielka nowina: przeprowadziliśmy się z Krakowa do Gdańska.",
            "Zmieniłam pracę, teraz jestem ratowniczką medyczną.",
            "Gdzie w Gdańsku są dobre plaże?",
            "Czy powinnam kupić rower elektryczny?",
        ],
    ],
    questions: &[
        cross("Jak mam na imię?", &["Zofia"]),
        cross("Czym zajmuje się mój mąż?", &["strażakiem"]),
        cross("Jak wabi się nasz kot?", &["Mruczek"]),
        cross("Na co mam alergię?", &["orzechy"]),
        pref("Co uwielbiam jeść?", &["pierogi"]),
        pref("Czego nie znoszę?", &["brukselki"]),
        update("Gdzie mieszkam?", &["Gdańska"], "Krakowie"),
        update("Jaki mam zawód?", &["ratowniczką"], "piekarka"),
        abstain("Jak ma na imię mój brat?", &["brat"]),
        abstain("Ile mam dzieci?", &["dzieci", "dwoje"]),
        not_fact("Czy mam jacht?", &["jacht", "loterii"]),
        not_fact("Kto mieszka w Poznaniu?", &["Poznaniu", "Marta"]),
        not_fact("Czy mam rower elektryczny?", &["rower"]),
    ],
};

/// What the scripted proposer names after each conversation of [`PROPOSED`]: the user's facts,
/// quoted trimmed, reordered or without their accents, as a model may; and what a careless model
/// adds: its own wording, an invention, a hypothetical, someone else's fact, a question.
pub const PROPOSALS: &[&[Proposal]] = &[
    &[
        said("mam na imię Zofia", "name"),
        said("Mieszkam w Krakowie", "home"),
        said("Pracuje jako piekarka w malej piekarni", "work"),
        said("Użytkowniczka ma na imię Zofia", "name"),
        said("Czy możesz polecić mi dobrą książkę", "likes"),
    ],
    &[
        said("Mój mąż Tomasz jest strażakiem", "people"),
        said("Mamy kota Mruczek", "pets"),
        said("Uwielbiam pierogi z kapustą", "likes"),
        said("brukselki nie znoszę", "dislikes"),
        said("Mam alergię na orzechy", "health"),
        said("Mam dwoje dzieci", "people"),
        said("Gdybym wygrała na loterii, kupiłabym jacht", "likes"),
        said("Marta mieszka w Poznaniu", "people"),
    ],
    &[
        said("przeprowadziliśmy się z Krakowa do Gdańska", "home"),
        ended("przeprowadziliśmy się z Krakowa do Gdańska", "home"),
        said("teraz jestem ratowniczką medyczną", "work"),
        ended("Zmieniłam pracę", "work"),
        said("Użytkowniczka jest teraz ratowniczką medyczną", "work"),
        said("powinnam kupić rower elektryczny", "projects"),
    ],
];
