//! The question set of `benches/memory_eval.rs`, written for this project (not taken from a data
//! set): eight conversations of one user (Henrike), a day apart, in which she tells who she is,
//! her family, work, health and tastes, and later changes some of it (she moves, changes jobs, her
//! cat dies and a puppy comes, she switches from coffee to tea, runs more); then 65 questions in the
//! field's categories, each naming the conversation it is asked in and what its prompt must (or
//! must not) carry.

/// A scripted conversation: its id and what the user says, in order (the assistant's replies are
/// fixed). Conversation `n` (from 1) is held on day `n`.
pub struct Conversation {
    pub id: &'static str,
    pub turns: &'static [&'static str],
}

pub const CONVERSATIONS: [Conversation; 8] = [
    Conversation {
        id: "a",
        turns: &[
            "Hi! My name is Henrike Solberg, I'm new here.",
            "I live in Bergen, close to the fish market.",
            "I work as a marine biologist at the university.",
            "I'm vegetarian and I don't eat eggs either.",
            "Can you suggest a quick dinner with red lentils for tonight?",
            "What spices go well with roasted cauliflower?",
            "How long can cooked rice stay in the fridge?",
        ],
    },
    Conversation {
        id: "b",
        turns: &[
            "My daughter Sunniva turns seven next month.",
            "My husband Anders works as a carpenter.",
            "We have a grey cat called Mosel.",
            "Any ideas for a birthday party for a seven year old at home?",
            "What games work well indoors for a group of kids?",
            "How do I bake a simple chocolate cake without eggs?",
        ],
    },
    Conversation {
        id: "c",
        turns: &[
            "I'm training for the Bergen City Marathon in April.",
            "At the moment I run about 40 kilometres a week.",
            "My favourite running shoes are the Hoka Clifton.",
            "How should I taper in the last two weeks before a marathon?",
            "What should I eat the evening before a long race?",
            "Is it normal for my knees to ache after long runs?",
        ],
    },
    Conversation {
        id: "d",
        turns: &[
            "I'm writing a paper about cod migration in the North Sea.",
            "My colleague Dagny is my co-author.",
            "I prefer LaTeX to Word for anything with equations.",
            "How do I make a table span two columns in LaTeX?",
            "What is a good way to structure the discussion section of a paper?",
            "How do I cite a dataset properly?",
        ],
    },
    Conversation {
        id: "e",
        turns: &[
            "I'm allergic to penicillin.",
            "I drink my coffee black, without sugar.",
            "I play the cello in an amateur orchestra.",
            "My favourite composer is Sibelius.",
            "What are good stretches for the neck after a long rehearsal?",
            "Can you explain what a tempo marking like andante means?",
        ],
    },
    Conversation {
        id: "f",
        turns: &[
            "Big news: we moved to Stavanger last weekend, so now I live in Stavanger.",
            "I also changed jobs. I work as a data analyst at an energy company now.",
            "My sister Ingvild lives in Tromsø.",
            "What is a good way to meet people after moving to a new town?",
            "Any tips for unpacking a kitchen quickly?",
            "How do I register a new address in Norway?",
        ],
    },
    Conversation {
        id: "g",
        turns: &[
            "Sadly Mosel died last week.",
            "We adopted a puppy called Fenrik on Saturday.",
            "I love crime novels, especially Scandinavian ones.",
            "I hate cilantro.",
            "How do I stop a puppy from biting my hands?",
            "What should a puppy's first vet visit include?",
        ],
    },
    Conversation {
        id: "h",
        turns: &[
            "I switched from coffee to green tea in the mornings.",
            "These days I run about 60 kilometres a week.",
            "I prefer trains to flying when I travel.",
            "My favourite cuisine is Ethiopian.",
            "What is a good present for someone who lives in the Arctic?",
            "How do I brew green tea so it is not bitter?",
            "Can you recommend a short piece by Sibelius for an amateur orchestra?",
        ],
    },
];

/// Names in the set that hold an old value and say nothing of it: the race is still the Bergen City
/// Marathon after the user moved away from Bergen. A knowledge update's check of the old value reads
/// the memory without them (any other sentence naming Bergen, not marked past, still counts).
pub const NAMES_WITH_OLD_VALUES: [&str; 1] = ["Bergen City Marathon"];

/// The field's categories (LongMemEval's, with preference apart).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Category {
    /// A fact said earlier in the same conversation.
    Single,
    /// A fact said in another conversation, asked in a new one.
    Cross,
    /// A fact that changed: the new value carried, the old one not as current.
    Update,
    /// A fact carried with the day it was said.
    Temporal,
    /// A taste said in another conversation.
    Preference,
    /// Something never said: the memory carries nothing about it.
    Abstention,
}

impl Category {
    pub const ALL: [Category; 6] = [
        Category::Single,
        Category::Cross,
        Category::Update,
        Category::Temporal,
        Category::Preference,
        Category::Abstention,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Category::Single => "single",
            Category::Cross => "cross_conversation",
            Category::Update => "update",
            Category::Temporal => "temporal",
            Category::Preference => "preference",
            Category::Abstention => "abstention",
        }
    }
}

/// Where a question is asked.
#[derive(Debug, Clone, Copy)]
pub enum Where {
    /// As the next message of this conversation.
    In(&'static str),
    /// As the first message of a new conversation.
    New,
}

impl Where {
    pub fn name(self) -> &'static str {
        match self {
            Where::In(id) => id,
            Where::New => "a new conversation",
        }
    }
}

/// A question and what its prompt must carry.
pub struct Question {
    pub category: Category,
    pub asked_in: Where,
    pub text: &'static str,
    /// Words the prompt's memory or history must carry (temporal: the fact, in the same sentence as
    /// its day; abstention: words the memory must NOT name).
    pub expect: &'static [&'static str],
    /// Update: the old value, which the memory must not carry as current.
    pub old: &'static str,
    /// Temporal: the day the fact was said (1: the first conversation's).
    pub day: i64,
}

const fn q(
    category: Category,
    asked_in: Where,
    text: &'static str,
    expect: &'static [&'static str],
) -> Question {
    Question {
        category,
        asked_in,
        text,
        expect,
        old: "",
        day: 0,
    }
}

const fn single(
    conv: &'static str,
    text: &'static str,
    expect: &'static [&'static str],
) -> Question {
    q(Category::Single, Where::In(conv), text, expect)
}

const fn cross(text: &'static str, expect: &'static [&'static str]) -> Question {
    q(Category::Cross, Where::New, text, expect)
}

const fn update(
    asked_in: Where,
    text: &'static str,
    new: &'static [&'static str],
    old: &'static str,
) -> Question {
    Question {
        old,
        ..q(Category::Update, asked_in, text, new)
    }
}

const fn temporal(
    asked_in: Where,
    text: &'static str,
    fact: &'static [&'static str],
    day: i64,
) -> Question {
    Question {
        day,
        ..q(Category::Temporal, asked_in, text, fact)
    }
}

const fn preference(text: &'static str, expect: &'static [&'static str]) -> Question {
    q(Category::Preference, Where::New, text, expect)
}

const fn abstain(asked_in: Where, text: &'static str, words: &'static [&'static str]) -> Question {
    q(Category::Abstention, asked_in, text, words)
}

const NEW: Where = Where::New;

pub const QUESTIONS: [Question; 65] = [
    single(
        "a",
        "What did I want to cook for dinner that night?",
        &["lentil"],
    ),
    single("a", "Remind me of my surname.", &["Solberg"]),
    single("b", "How old is my daughter turning?", &["seven"]),
    single("b", "What does my husband do for a living?", &["carpenter"]),
    single("c", "Which race am I training for?", &["City Marathon"]),
    single("c", "Which running shoes do I like?", &["Hoka"]),
    single("d", "What is my paper about?", &["cod"]),
    single("d", "Who is writing it with me?", &["Dagny"]),
    single("e", "Which antibiotic must I avoid?", &["penicillin"]),
    single("e", "Which instrument do I play?", &["cello"]),
    single("f", "What kind of company do I work for now?", &["energy"]),
    single("g", "What is the puppy called?", &["Fenrik"]),
    cross("What is my name?", &["Henrike"]),
    cross("What is my daughter called?", &["Sunniva"]),
    cross("What's my husband's name?", &["Anders"]),
    cross("What does my husband do?", &["carpenter"]),
    cross("Which race am I preparing for?", &["City Marathon"]),
    cross("What is the topic of my paper?", &["cod"]),
    cross("Who is my co-author?", &["Dagny"]),
    cross("Am I allergic to any medicine?", &["penicillin"]),
    cross("Which instrument do I play?", &["cello"]),
    cross("Where does my sister live?", &["Tromsø"]),
    cross("What's my sister's name?", &["Ingvild"]),
    cross("What is our puppy's name?", &["Fenrik"]),
    cross("What kind of orchestra do I play in?", &["amateur"]),
    update(NEW, "Where do I live?", &["Stavanger"], "Bergen"),
    update(NEW, "What is my job?", &["data analyst"], "biologist"),
    update(NEW, "Do I have a pet?", &["Fenrik"], "Mosel"),
    update(
        NEW,
        "What do I drink in the morning?",
        &["green tea"],
        "coffee",
    ),
    update(
        NEW,
        "How much do I run each week?",
        &["60"],
        "40 kilometres",
    ),
    update(
        Where::In("a"),
        "Where do I live these days?",
        &["Stavanger"],
        "Bergen",
    ),
    update(
        Where::In("a"),
        "What do I do for work now?",
        &["analyst"],
        "biologist",
    ),
    update(
        Where::In("b"),
        "Which pet do we have now?",
        &["Fenrik"],
        "Mosel",
    ),
    update(
        Where::In("c"),
        "How many kilometres a week am I running now?",
        &["60"],
        "40 kilometres",
    ),
    update(
        Where::In("e"),
        "How do I take my morning drink?",
        &["green tea"],
        "coffee",
    ),
    update(
        Where::In("f"),
        "Remind me where I live.",
        &["Stavanger"],
        "Bergen",
    ),
    temporal(
        NEW,
        "When did I tell you I was training for a marathon?",
        &["Marathon"],
        3,
    ),
    temporal(NEW, "When did we move to our new city?", &["Stavanger"], 6),
    temporal(NEW, "When did I start my new job?", &["analyst"], 6),
    temporal(NEW, "When did we get our puppy?", &["Fenrik"], 7),
    temporal(
        NEW,
        "When did I tell you about my allergy?",
        &["penicillin"],
        5,
    ),
    temporal(NEW, "When did I mention my paper?", &["cod"], 4),
    temporal(NEW, "When did I tell you about my sister?", &["Ingvild"], 6),
    temporal(NEW, "When did I switch to tea?", &["green tea"], 8),
    temporal(
        Where::In("c"),
        "When did I first mention the marathon?",
        &["Marathon"],
        3,
    ),
    preference(
        "Can you suggest a dinner I would enjoy tonight?",
        &["vegetarian"],
    ),
    preference("Recommend a dessert for me.", &["eggs"]),
    preference("Which composer should I listen to tonight?", &["Sibelius"]),
    preference("What should I write my next paper in?", &["LaTeX"]),
    preference("Which running shoes should I buy again?", &["Hoka"]),
    preference("Where should we eat out on Friday?", &["Ethiopian"]),
    preference("How should I travel to Oslo next month?", &["train"]),
    preference("Recommend a book for my holiday.", &["crime"]),
    preference(
        "Which herb should you leave out of my salsa?",
        &["cilantro"],
    ),
    abstain(NEW, "What is my blood type?", &["blood"]),
    abstain(
        NEW,
        "What car do I drive?",
        &["car", "cars", "drive", "drives"],
    ),
    abstain(NEW, "What is my brother's name?", &["brother"]),
    abstain(
        NEW,
        "How much do I earn?",
        &["salary", "earn", "earns", "income"],
    ),
    abstain(
        NEW,
        "Which football team do I support?",
        &["football", "soccer"],
    ),
    abstain(
        NEW,
        "When is our wedding anniversary?",
        &["anniversary", "wedding"],
    ),
    abstain(
        Where::In("a"),
        "What is my mother's name?",
        &["mother", "mom", "mum"],
    ),
    abstain(Where::In("c"), "Which gym do I go to?", &["gym"]),
    abstain(
        Where::In("d"),
        "Which university did I graduate from?",
        &["graduate", "graduated", "degree"],
    ),
    abstain(
        Where::In("e"),
        "Which languages do I speak?",
        &["language", "languages", "speak", "speaks", "fluent"],
    ),
    abstain(
        Where::In("h"),
        "Do I have any tattoos?",
        &["tattoo", "tattoos"],
    ),
];
