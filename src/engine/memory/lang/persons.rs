//! Who a clause speaks of, as data: for each language (those of the tables and others the tables
//! do not cover: Polish, Russian, Ukrainian, Greek, Turkish, Chinese, Japanese, Korean), the words
//! only the speaker uses of themself or their household (`me`) and the pronouns and verb forms
//! said of someone else (`others`), and in the languages no table covers the words of a condition
//! or a wish (`wish`). A fact the memory model proposes that holds an `others` word and no `me`
//! word (here or in a table) is about someone else (`super::about_others`); one with a `wish` word
//! is no fact (`super::wished`).
//!
//! Written folded (`super::fold`: no accent, no Greek tonos, `ё` as `е`; `tests/engine_lang.rs`
//! checks it). Words only: what a language's verb endings say (Polish "mieszkam", Greek
//! "μένω" speak as the user without a pronoun) is not read here, so such a clause counts as the
//! user's unless an `others` word says otherwise. A word two languages share is listed only where
//! it cannot mislead: English "i" (Polish and Italian "and", "the") is no `me` word here, and
//! German "sie", Dutch "ze", Polish "on" and "one" no `others` word (Polish "się" and "ze",
//! English "on" and "one").
//! Must not import anything (data only).

/// One language's words (module doc).
pub struct Persons {
    /// ISO 639-1 code.
    pub code: &'static str,
    pub me: &'static [&'static str],
    pub others: &'static [&'static str],
    /// Words of a condition or a wish ("gdyby", "если"), in the languages no table covers (the
    /// tables' own are theirs).
    pub wish: &'static [&'static str],
}

/// Every language's words.
pub const PERSONS: &[Persons] = &[
    Persons {
        code: "en",
        me: &["me", "my", "mine", "myself", "we", "our", "ours", "us"],
        others: &[
            "he", "she", "they", "his", "her", "their", "him", "them", "lives", "works",
        ],
        wish: &[],
    },
    Persons {
        code: "de",
        me: &[
            "ich", "mich", "mir", "mein", "meine", "wir", "uns", "unser", "unsere",
        ],
        others: &["er", "wohnt", "arbeitet", "heisst", "seine"],
        wish: &[],
    },
    Persons {
        code: "fr",
        me: &["je", "j", "moi", "mon", "ma", "mes", "nous", "notre", "nos"],
        others: &[
            "il",
            "elle",
            "ils",
            "elles",
            "habite",
            "habitent",
            "travaille",
            "vit",
        ],
        wish: &[],
    },
    Persons {
        code: "es",
        me: &[
            "yo", "mi", "mis", "nosotros", "nosotras", "nuestro", "nuestra",
        ],
        others: &[
            "ella", "ellos", "ellas", "vive", "viven", "trabaja", "trabajan", "tiene",
        ],
        wish: &[],
    },
    Persons {
        code: "pt",
        me: &[
            "eu", "meu", "minha", "meus", "minhas", "nos", "nosso", "nossa",
        ],
        others: &[
            "ele", "ela", "eles", "elas", "mora", "moram", "trabalha", "chama",
        ],
        wish: &[],
    },
    Persons {
        code: "it",
        me: &["io", "mio", "mia", "miei", "mie", "noi", "nostro", "nostra"],
        others: &[
            "lui", "lei", "loro", "abita", "abitano", "lavora", "lavorano", "chiama",
        ],
        wish: &[],
    },
    Persons {
        code: "nl",
        me: &["ik", "mij", "mijn", "wij", "we", "ons", "onze"],
        others: &["hij", "zij", "woont", "werkt"],
        wish: &[],
    },
    Persons {
        code: "pl",
        me: &[
            "ja", "mnie", "mi", "mna", "moj", "moja", "moje", "moi", "mojego", "mojej", "my",
            "nas", "nam", "nasz", "nasza", "nasze",
        ],
        others: &["ona", "ono", "oni", "jego", "jej", "mieszka"],
        wish: &[
            "gdyby",
            "gdybym",
            "gdybys",
            "gdybysmy",
            "jesli",
            "jezeli",
            "chcialbym",
            "chcialabym",
            "moze",
        ],
    },
    Persons {
        code: "ru",
        me: &[
            "я",
            "меня",
            "мне",
            "мной",
            "мои",
            "мой",
            "моя",
            "мое",
            "моего",
            "моей",
            "мы",
            "нас",
            "нам",
            "наш",
            "наша",
            "наше",
            "наши",
        ],
        others: &[
            "он",
            "она",
            "оно",
            "они",
            "его",
            "ее",
            "их",
            "живет",
            "работает",
        ],
        wish: &["если", "бы", "хотел", "хотела", "может"],
    },
    Persons {
        code: "uk",
        me: &[
            "я", "мене", "мені", "мій", "моя", "моє", "мої", "ми", "нас", "наш", "наша",
        ],
        others: &[
            "він",
            "вона",
            "воно",
            "вони",
            "його",
            "її",
            "живе",
            "працює",
        ],
        wish: &["якби", "якщо", "би", "хотів", "хотіла"],
    },
    Persons {
        code: "el",
        me: &["εγω", "μου", "με", "μας", "εμεις", "εμενα"],
        others: &[
            "αυτος",
            "αυτη",
            "αυτοι",
            "αυτες",
            "εκεινος",
            "εκεινη",
            "μενει",
            "δουλευει",
        ],
        wish: &["αν", "θα", "ισως"],
    },
    Persons {
        code: "tr",
        me: &["ben", "beni", "bana", "benim", "biz", "bizim", "bize"],
        others: &["onun", "onlar", "ona"],
        wish: &["eger", "keske", "belki"],
    },
    // Chinese and Japanese are read one character a word (`super::super::normalize`).
    Persons {
        code: "zh",
        me: &["我"],
        others: &["他", "她"],
        wish: &[],
    },
    Persons {
        code: "ja",
        me: &["私", "僕", "俺"],
        others: &["彼"],
        wish: &[],
    },
    Persons {
        code: "ko",
        me: &[
            "나는",
            "내가",
            "저는",
            "제가",
            "나의",
            "저의",
            "내",
            "제",
            "우리",
            "우리는",
            "우리의",
        ],
        others: &[
            "그는",
            "그가",
            "그녀는",
            "그녀가",
            "그의",
            "그녀의",
            "그들은",
        ],
        wish: &[],
    },
];
