//! The keys of end-to-end encrypted sync, the pure half: how a passphrase becomes the two keys in
//! each version of the marker (the derivation the session runs in WebCrypto,
//! `session/sync/seal.rs`), and how strong a passphrase looks (the hint under the passphrase field,
//! and the floor a new key is held to).
//!
//! Derivations ([`Kdf`]):
//! - **v1** (databases encrypted before issue 43): PBKDF2-SHA-256 to 512 bits, the first 256 the
//!   AES-256-GCM key, the last 256 the HMAC-SHA-256 key for ids; the passphrase as typed. An
//!   attacker testing a guess needs only the first half (the key check is sealed under it), so
//!   the second half costs the defender rounds that buy nothing.
//! - **v2** (every new marker): the passphrase in Unicode NFC (the same words typed on a Mac, a
//!   phone or Windows give the same bytes), PBKDF2-SHA-256 to 256 bits, then HKDF-SHA-256 (an
//!   empty salt: the PBKDF2 output is already uniform) with one `info` per key ([`HKDF_AES`],
//!   [`HKDF_IDS`]).
//!
//! A database keeps the derivation of its marker: a v1 database stays v1 (its documents' ids are
//! HMACs under the v1 id key, so moving it to v2 means sealing every document again under new
//! ids, which is what rotating the passphrase does).
//!
//! Strength: an estimate from what the passphrase is made of, not a promise: each run of four or
//! more letters (digits and symbols that stand for letters, `Tr0ub4dor`, count as letters) counts
//! as a dictionary word (about 13 bits, as one of 7,776 Diceware words), any
//! other character as one of the pool its kinds of characters span (lower case, upper case,
//! digits, symbols and spaces, other scripts), a repeated or next-in-sequence character and a
//! space after a word as 1 bit;
//! a well-known password counts 10 bits. Under [`MIN_BITS`] a passphrase is refused for a new
//! key (it can still open a database made with it); under [`GOOD_BITS`] the hint says how to make
//! it stronger.
//!
//! One key per database ([`without_marker`]): a database without a marker gets a new key only
//! when it holds no sealed document (one that does has a key whose marker is gone: a new one would
//! split the history), from a typed passphrase (kept keys alone never make a marker again) over
//! the floor.
//! Must not import anything outside `crate::engine`.

/// How a marker's keys come from the passphrase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kdf {
    V1,
    V2,
}

/// HKDF `info` of v2's AES-256-GCM key (documents, images, the key check).
pub const HKDF_AES: &[u8] = b"memoire e2ee v2: AES-256-GCM documents";
/// HKDF `info` of v2's HMAC-SHA-256 key (sealed ids).
pub const HKDF_IDS: &[u8] = b"memoire e2ee v2: HMAC-SHA-256 ids";

impl Kdf {
    /// The derivation of a new marker.
    pub const NEW: Kdf = Kdf::V2;

    /// The marker's `v`.
    pub fn version(self) -> u64 {
        match self {
            Kdf::V1 => 1,
            Kdf::V2 => 2,
        }
    }

    /// The marker's `kdf`.
    pub fn name(self) -> &'static str {
        match self {
            Kdf::V1 => "PBKDF2-SHA-256",
            Kdf::V2 => "PBKDF2-SHA-256+HKDF-SHA-256",
        }
    }

    /// The derivation a marker's `v` and `kdf` name (`None`: not one Memoire writes).
    pub fn of(version: u64, name: &str) -> Option<Kdf> {
        [Kdf::V1, Kdf::V2]
            .into_iter()
            .find(|k| k.version() == version && k.name() == name)
    }

    /// Bits PBKDF2 derives.
    pub fn pbkdf2_bits(self) -> u32 {
        match self {
            Kdf::V1 => 512,
            Kdf::V2 => 256,
        }
    }

    /// Whether the passphrase is put in Unicode NFC first.
    pub fn nfc(self) -> bool {
        self == Kdf::V2
    }

    /// HKDF's `info` for the AES key and the id key (`None`: v1 splits the PBKDF2 output).
    pub fn hkdf(self) -> Option<(&'static [u8], &'static [u8])> {
        match self {
            Kdf::V1 => None,
            Kdf::V2 => Some((HKDF_AES, HKDF_IDS)),
        }
    }
}

/// Under this many bits (estimated) a passphrase is refused for a new key.
pub const MIN_BITS: u32 = 40;
/// From this many bits the hint calls a passphrase strong.
pub const GOOD_BITS: u32 = 60;

/// How strong a passphrase looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Under [`MIN_BITS`]: refused for a new key.
    Weak,
    Fair,
    Strong,
}

/// A passphrase's estimate: bits, and what they make it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Strength {
    pub bits: u32,
    pub level: Level,
}

/// Passwords every guesser tries first (lower case, digits and symbols left out).
const COMMON: &[&str] = &[
    "password",
    "passphrase",
    "passwort",
    "motdepasse",
    "contraseña",
    "qwerty",
    "azerty",
    "letmein",
    "welcome",
    "admin",
    "iloveyou",
    "monkey",
    "dragon",
    "secret",
    "memoire",
];

/// Bits of one Diceware word (log2 7,776).
const WORD_BITS: f64 = 12.9;

/// The size of the pool the characters of `p` are drawn from, by the kinds it holds.
fn pool(p: &str) -> f64 {
    let has = |f: fn(&char) -> bool| p.chars().any(|c| f(&c));
    let mut n = 0.0;
    n += if has(char::is_ascii_lowercase) {
        26.0
    } else {
        0.0
    };
    n += if has(char::is_ascii_uppercase) {
        26.0
    } else {
        0.0
    };
    n += if has(char::is_ascii_digit) { 10.0 } else { 0.0 };
    n += if has(|c| c.is_ascii_punctuation() || *c == ' ') {
        33.0
    } else {
        0.0
    };
    n += if has(|c| !c.is_ascii()) { 100.0 } else { 0.0 };
    f64::max(n, 2.0)
}

/// A letter, or a digit or symbol written for one (`0` for o, `4` and `@` for a, …).
fn wordish(c: char) -> bool {
    c.is_alphabetic() || "013457@$!".contains(c)
}

/// The estimate for `p` (module header, "Strength").
pub fn strength(p: &str) -> Strength {
    let letters: String = p
        .chars()
        .filter(|c| c.is_alphabetic())
        .flat_map(char::to_lowercase)
        .collect();
    let per = pool(p).log2();
    let chars: Vec<char> = p.chars().collect();
    let (mut bits, mut i) = (0.0, 0);
    while i < chars.len() {
        let run = chars[i..].iter().take_while(|c| wordish(**c)).count();
        let alpha = chars[i..i + run]
            .iter()
            .filter(|c| c.is_alphabetic())
            .count();
        if run >= 4 && alpha >= 2 {
            bits += f64::min(run as f64 * per, WORD_BITS);
            i += run;
            continue;
        }
        let c = chars[i] as i64;
        let prev = i.checked_sub(1).map(|j| chars[j]);
        bits += match prev {
            Some(q) if (c - q as i64).abs() <= 1 => 1.0,
            // The space after a word separates it: it adds next to nothing.
            Some(q) if chars[i] == ' ' && wordish(q) => 1.0,
            _ => per,
        };
        i += 1;
    }
    if COMMON.contains(&letters.as_str()) {
        bits = bits.min(10.0);
    }
    let bits = bits as u32;
    let level = match bits {
        b if b < MIN_BITS => Level::Weak,
        b if b < GOOD_BITS => Level::Fair,
        _ => Level::Strong,
    };
    Strength { bits, level }
}

/// The hint shown under the passphrase field for a new key.
pub fn hint(s: Strength) -> String {
    let advice = "several unrelated words, or 12 or more mixed characters";
    match s.level {
        Level::Weak => format!(
            "Too easy to guess (about {} bits): a new encrypted database needs {MIN_BITS} (one already made with it still opens). Use {advice}.",
            s.bits
        ),
        Level::Fair => format!(
            "Fair (about {} bits). Longer is stronger: {advice}.",
            s.bits
        ),
        Level::Strong => format!("Strong (about {} bits).", s.bits),
    }
}

/// Whether `p` may make a new key (turning encryption on for a new database, or a new
/// passphrase); the words of the refusal when not. Opening a database made with a weaker one is
/// never refused for it.
pub fn new_key_check(p: &str) -> Result<(), String> {
    let s = strength(p);
    match s.level {
        Level::Weak => Err(format!(
            "This passphrase is too easy to guess (about {} bits, {MIN_BITS} needed) to protect a new encrypted database: use several unrelated words, or 12 or more mixed characters.",
            s.bits
        )),
        _ => Ok(()),
    }
}

/// Why a database without a marker gets no new key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoMarker {
    /// It holds sealed documents: it has a key, whose marker is gone.
    Missing,
    /// No passphrase was typed.
    NeedPassphrase,
    /// The passphrase is under the floor ([`new_key_check`]'s words).
    Weak(String),
}

/// Whether a database without a marker, which holds sealed documents or not, may get a new key
/// from `passphrase` (`None` or empty: none typed).
pub fn without_marker(holds_sealed: bool, passphrase: Option<&str>) -> Result<(), NoMarker> {
    if holds_sealed {
        return Err(NoMarker::Missing);
    }
    let p = passphrase
        .filter(|p| !p.is_empty())
        .ok_or(NoMarker::NeedPassphrase)?;
    new_key_check(p).map_err(NoMarker::Weak)
}
