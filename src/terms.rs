//! From tokens to index terms: English stemming and the query-side weight of function words.
//!
//! Every token of a record or a query (see [`crate::tokenize`]) is looked up by its *term*:
//! [`term`] maps a token made only of ASCII letters to its Snowball (Porter2) English stem, so
//! `restaurants`, `restaurant`, `calculating` and `calculate` meet (`restaur`, `calcul`);
//! any other token (non-Latin scripts, words with diacritics, identifiers with digits or `_`) is
//! its own term. Matching stays whole-word: a stem never matches inside another word.
//!
//! [`Dictionary`] interns tokens to term ids and keeps the terms of each stem class together.
//!
//! [`is_stopword`] names English function words (`me`, `the`, `for`, ...), [`is_number`] numbers
//! (`2023`), and [`is_optional_word`] both. They are still indexed and matched, but a query gives
//! them a small weight, so a query like `Find something for me` is ranked by its content words
//! while `get me` still finds `github_get_me`.

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::BuildHasher;

use hashbrown::hash_table::{Entry, HashTable};
use rust_stemmers::{Algorithm, Stemmer};

/// Shortest token, in bytes, that is stemmed (shorter ones are their own term).
const MIN_STEM_BYTES: usize = 3;
/// Longest token, in bytes, that is stemmed (longer ones are identifiers, not words).
const MAX_STEM_BYTES: usize = 40;

/// `class_of` entry of a term without a stem class.
const NO_CLASS: u32 = u32::MAX;

/// `true` for a token that may share a stem class: ASCII lower-case letters only.
fn has_class(token: &str) -> bool {
    !token.is_empty() && token.bytes().all(|b| b.is_ascii_lowercase())
}

/// Returns the index term of a tokenizer token: its English stem when the token is 3 to 40
/// ASCII letters, otherwise the token itself.
pub fn term(token: &str) -> Cow<'_, str> {
    if token.len() < MIN_STEM_BYTES
        || token.len() > MAX_STEM_BYTES
        || !token.bytes().all(|b| b.is_ascii_lowercase())
    {
        return Cow::Borrowed(token);
    }
    thread_local! {
        static ENGLISH: Stemmer = Stemmer::create(Algorithm::English);
    }
    ENGLISH.with(|stemmer| match stemmer.stem(token) {
        Cow::Borrowed(stem) if stem.len() == token.len() => Cow::Borrowed(token),
        stem => Cow::Owned(stem.into_owned()),
    })
}

/// English function words: pronouns, articles, auxiliaries, prepositions and conjunctions (NLTK's
/// English list, plus `could`, `would`, `let` and `please`), with the pieces the tokenizer leaves of
/// contractions (`don't` -> `don` + `t`, `you're` -> `you` + `re`), in byte order. A query weighs
/// them at `STOPWORD_WEIGHT` (see `crate::index`).
const STOPWORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "ain",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "aren",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "couldn",
    "d",
    "did",
    "didn",
    "do",
    "does",
    "doesn",
    "doing",
    "don",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "hadn",
    "has",
    "hasn",
    "have",
    "haven",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "isn",
    "it",
    "its",
    "itself",
    "just",
    "let",
    "ll",
    "m",
    "me",
    "mightn",
    "more",
    "most",
    "mustn",
    "my",
    "myself",
    "needn",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "please",
    "re",
    "s",
    "same",
    "shan",
    "she",
    "should",
    "shouldn",
    "so",
    "some",
    "such",
    "t",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "ve",
    "very",
    "was",
    "wasn",
    "we",
    "were",
    "weren",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "wouldn",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// `true` for an English function word (the token as the tokenizer emits it: lower case).
pub fn is_stopword(token: &str) -> bool {
    STOPWORDS.binary_search(&token).is_ok()
}

/// `true` for a number: a token that starts with a numeric character and holds nothing but
/// numeric characters and the `_` or `-` the tokenizer keeps inside an identifier (`2023`, `52`,
/// `٣`, and `2025_01_01`, the whole of `2025-01-01`; not `mp3` or `3d`).
pub fn is_number(token: &str) -> bool {
    token.chars().next().is_some_and(char::is_numeric)
        && token
            .chars()
            .all(|c| c.is_numeric() || c == '_' || c == '-')
}

/// `true` for a query word that only orders the documents the other words find: an English
/// function word ([`is_stopword`]) or a number ([`is_number`]). A number in a query is almost
/// always an argument value (a date, an amount, an id: "average of 12, 20 and 21"), which a
/// tool's text holds only by chance, in an example or a default.
pub fn is_optional_word(token: &str) -> bool {
    is_stopword(token) || is_number(token)
}

/// The term dictionary of an index: tokens interned to dense `u32` term ids, and the stem class
/// (see [`term`]) of every term, so a query token can reach all the terms sharing its stem.
///
/// Only tokens made of ASCII lower-case letters get a class: a stem is always such a token, so
/// no other token can share one, and identifiers, numbers and non-Latin words (most of the
/// distinct tokens of a large collection) cost no class bookkeeping.
///
/// `S` is the map hasher (the index uses a fast non-cryptographic one).
#[derive(Debug, Default)]
pub struct Dictionary<S> {
    /// `(token, term id)`, hashed by `state`: [`Self::intern_hashed`] takes a hash computed
    /// before (on another thread).
    ids: HashTable<(Box<str>, u32)>,
    state: S,
    classes: HashMap<Box<str>, u32, S>,
    class_of: Vec<u32>,
    members: Vec<Vec<u32>>,
}

impl<S: BuildHasher + Default> Dictionary<S> {
    /// Number of terms (ids are `0..len()`).
    pub fn len(&self) -> usize {
        self.class_of.len()
    }

    /// `true` without terms.
    pub fn is_empty(&self) -> bool {
        self.class_of.is_empty()
    }

    /// The hash of `token` in this dictionary (see [`Self::intern_hashed`]).
    pub fn hash(&self, token: &str) -> u64 {
        self.state.hash_one(token)
    }

    /// The id of `token`, adding it as the next id (`len()` before the call) if it is new.
    pub fn intern(&mut self, token: &str) -> u32 {
        self.intern_hashed(token, self.hash(token))
    }

    /// [`Self::intern`] for a token whose [`Self::hash`] is known (it must be that hash: a
    /// hasher `S` whose instances all hash alike, such as a fixed-seed one, lets another thread
    /// compute it).
    pub fn intern_hashed(&mut self, token: &str, hash: u64) -> u32 {
        debug_assert_eq!(hash, self.hash(token));
        let id = self.class_of.len() as u32;
        let state = &self.state;
        match self.ids.entry(
            hash,
            |(key, _)| **key == *token,
            |(key, _)| state.hash_one(&**key),
        ) {
            Entry::Occupied(entry) => return entry.get().1,
            Entry::Vacant(entry) => {
                entry.insert((Box::from(token), id));
            }
        }
        if !has_class(token) {
            self.class_of.push(NO_CLASS);
            return id;
        }
        let stem = term(token);
        let class = if let Some(&class) = self.classes.get(stem.as_ref()) {
            class
        } else {
            let class = self.members.len() as u32;
            self.members.push(Vec::new());
            self.classes.insert(Box::from(stem.as_ref()), class);
            class
        };
        self.members[class as usize].push(id);
        self.class_of.push(class);
        id
    }

    /// The id of `token`, if interned.
    pub fn get(&self, token: &str) -> Option<u32> {
        self.ids
            .find(self.hash(token), |(key, _)| **key == *token)
            .map(|&(_, id)| id)
    }

    /// The terms sharing the stem of `token` (`term`, its id if interned, saves a stemming).
    /// Empty when no interned term has that stem.
    pub fn stem_class(&self, token: &str, term_id: Option<u32>) -> &[u32] {
        let class = match term_id {
            Some(id) => Some(self.class_of[id as usize]).filter(|&class| class != NO_CLASS),
            None if has_class(token) => self.classes.get(term(token).as_ref()).copied(),
            None => None,
        };
        class.map_or(&[], |class| &self.members[class as usize])
    }

    /// The terms whose stem is `stem` (empty if none).
    pub fn stem_members(&self, stem: &str) -> &[u32] {
        self.classes
            .get(stem)
            .map_or(&[], |&class| &self.members[class as usize])
    }

    /// Renumbers the terms: `remap[old]` is the new id, or `u32::MAX` to drop the term. New ids
    /// must be dense (`0..kept`) and keep the old order.
    pub fn remap(&mut self, remap: &[u32]) {
        self.ids.retain(|(_, id)| {
            *id = remap[*id as usize];
            *id != u32::MAX
        });
        let mut class_remap = vec![u32::MAX; self.members.len()];
        let mut members: Vec<Vec<u32>> = Vec::new();
        let mut class_of = vec![0u32; self.ids.len()];
        for (old, &class) in self.class_of.iter().enumerate() {
            let new = remap[old];
            if new == u32::MAX {
                continue;
            }
            if class == NO_CLASS {
                class_of[new as usize] = NO_CLASS;
                continue;
            }
            let slot = &mut class_remap[class as usize];
            if *slot == u32::MAX {
                *slot = members.len() as u32;
                members.push(Vec::new());
            }
            members[*slot as usize].push(new);
            class_of[new as usize] = *slot;
        }
        self.classes.retain(|_, class| {
            *class = class_remap[*class as usize];
            *class != u32::MAX
        });
        self.members = members;
        self.class_of = class_of;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Dict = Dictionary<std::collections::hash_map::RandomState>;

    #[test]
    fn dictionary_groups_terms_by_stem() {
        let mut dict = Dict::default();
        assert_eq!(dict.intern("restaurants"), 0);
        assert_eq!(dict.intern("weather"), 1);
        assert_eq!(dict.intern("restaurant"), 2);
        assert_eq!(dict.intern("restaurants"), 0);
        assert_eq!(dict.len(), 3);
        assert_eq!(dict.get("restaurant"), Some(2));
        assert_eq!(dict.get("restaurantz"), None);
        assert_eq!(dict.stem_class("restaurant", Some(2)), [0, 2]);
        assert_eq!(dict.stem_class("zebras", None), [] as [u32; 0]);
        assert_eq!(dict.stem_class("restauranting", None), [0, 2]);
        assert_eq!(dict.stem_class("weather", None), [1]);
        // Drop "restaurants" (0); "weather" becomes 0, "restaurant" 1.
        dict.remap(&[u32::MAX, 0, 1]);
        assert_eq!(dict.len(), 2);
        assert_eq!(dict.get("restaurants"), None);
        assert_eq!(dict.get("weather"), Some(0));
        assert_eq!(dict.stem_class("restaurants", None), [1]);
        assert_eq!(dict.stem_class("weather", Some(0)), [0]);
        assert_eq!(dict.intern("restaurants"), 2);
        assert_eq!(dict.stem_class("restaurant", Some(1)), [1, 2]);
        dict.remap(&[u32::MAX, u32::MAX, u32::MAX]);
        assert!(dict.is_empty());
        assert_eq!(dict.stem_class("restaurant", None), [] as [u32; 0]);
        assert_eq!(dict.intern("weather"), 0);
        // Identifiers, numbers and other scripts are classes of their own, and survive remaps.
        assert_eq!(dict.intern("get_me"), 1);
        assert_eq!(dict.intern("用户"), 2);
        assert_eq!(dict.intern("weathers"), 3);
        assert_eq!(dict.stem_class("get_me", Some(1)), [] as [u32; 0]);
        assert_eq!(dict.stem_class("用户", None), [] as [u32; 0]);
        dict.remap(&[0, u32::MAX, 1, 2]);
        assert_eq!(dict.get("用户"), Some(1));
        assert_eq!(dict.stem_class("用户", Some(1)), [] as [u32; 0]);
        assert_eq!(dict.stem_class("weather", Some(0)), [0, 2]);
    }

    #[test]
    fn stopwords_are_sorted_and_unique() {
        assert!(STOPWORDS.windows(2).all(|pair| pair[0] < pair[1]));
        assert!(is_stopword("me") && is_stopword("the") && is_stopword("would"));
        assert!(
            is_stopword("you") && is_stopword("your") && is_stopword("s") && is_stopword("don")
        );
        assert!(!is_stopword("comment") && !is_stopword("github") && !is_stopword("Me"));
        assert!(is_number("2023") && is_number("52") && is_number("\u{663}"));
        assert!(is_number("2025_01_01") && is_number("555-1234"));
        assert!(!is_number("mp3") && !is_number("3d") && !is_number("") && !is_number("1.5"));
        assert!(!is_number("_1") && !is_number("1_a"));
        assert!(is_optional_word("the") && is_optional_word("12") && !is_optional_word("v2"));
    }

    #[test]
    fn english_words_meet_at_their_stem() {
        for (a, b) in [
            ("restaurants", "restaurant"),
            ("calculates", "calculating"),
            ("calculate", "calculated"),
            ("searches", "search"),
            ("cities", "city"),
            ("running", "run"),
        ] {
            assert_eq!(term(a), term(b), "{a} / {b}");
        }
        assert_eq!(term("restaurants"), "restaur");
        assert_ne!(term("comment"), term("me"));
        assert_ne!(term("new"), term("news"));
    }

    #[test]
    fn other_tokens_are_their_own_term() {
        for token in [
            "me",
            "id",
            "v1",
            "sha256",
            "github_get_me",
            "straße",
            "việt",
            "данные",
            "用户",
            "Upper",
        ] {
            assert_eq!(term(token), token);
            assert!(matches!(term(token), Cow::Borrowed(_)));
        }
        let long = "a".repeat(MAX_STEM_BYTES + 1) + "ing";
        assert_eq!(term(&long), long);
        // A word the stemmer leaves alone is borrowed, not copied.
        assert!(matches!(term("github"), Cow::Borrowed("github")));
    }
}
