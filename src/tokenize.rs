//! The tokenizer shared by indexed records and queries.
//!
//! Text is cut into *chunks*: maximal runs of word characters, `_` and `-`. Each chunk is cut
//! into *pieces* at `_`/`-`, and each piece into tokens:
//!
//! * Latin-like text (any script without CJK handling) splits at camelCase and acronym
//!   boundaries (`getHTTPResponse` -> `get`, `http`, `response`); letters and digits stay
//!   together (`v1`, `sha256`), except that an upper-case letter after a digit starts a new
//!   token (`HTTP2Client` -> `http2`, `client`).
//! * Han, Hiragana, Katakana and Hangul runs emit overlapping character bigrams (a lone
//!   character emits itself), so a query word found inside an unsegmented sentence matches.
//!
//! Tokens are case-folded with Unicode rules (lower case, plus `ß` -> `ss`, final sigma -> sigma,
//! `İ` -> `i`, the Latin ligatures, fullwidth digits and letters -> ASCII) and put in Unicode
//! normalization form C; diacritics are kept.
//! A Latin-like run split at case boundaries also yields itself whole (`GitHub` -> `git`,
//! `hub`, `github`), and a chunk of two or more pieces without CJK yields a *compound* token:
//! its lower-cased pieces joined with `_` (`github-get-me` -> ..., `github_get_me`), so a full
//! identifier matches strongly.
//!
//! Matching is whole-token only: `me` never matches inside `comment`.

use unicode_normalization::{is_nfc_quick, IsNormalized, UnicodeNormalization};
use unicode_properties::{GeneralCategoryGroup, UnicodeGeneralCategory};

/// Tokens longer than this many bytes are dropped (they are never useful search terms, and
/// dropping them bounds the dictionary). Queries and records are treated alike.
pub const MAX_TOKEN_BYTES: usize = 128;

/// Returns the tokens of `text`, in order, duplicates included.
pub fn tokenize(text: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    for_each_token(text, |token| tokens.push(token.to_owned()));
    tokens
}

thread_local! {
    /// Buffers reused by every tokenizer run on this thread: an index build tokenizes millions of
    /// short texts, which then allocate nothing of their own.
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
}

/// `text` case-folded as every token is (see `push_lowercase`: Unicode lower case, full case
/// foldings such as `ß` -> `ss`, fullwidth letters and digits -> ASCII, NFC), whole: what
/// exact-name matching compares.
pub fn fold(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    push_lowercase(&mut out, text);
    out
}

/// Calls `emit` with each token of `text`, in order, duplicates included.
pub fn for_each_token(text: &str, mut emit: impl FnMut(&str)) {
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut scratch) => scratch.text(text, &mut emit),
        // Re-entered from `emit` (never done by this crate): use private buffers.
        Err(_) => Scratch::default().text(text, &mut emit),
    });
}

/// Reused buffers for one tokenizer run.
#[derive(Default)]
struct Scratch {
    token: String,
    compound: String,
    chars: Vec<(usize, char)>,
    pieces: usize,
    chunk_has_cjk: bool,
}

impl Scratch {
    fn text(&mut self, text: &str, emit: &mut impl FnMut(&str)) {
        if text.is_ascii() {
            // The same chunks, found byte by byte (most tool text is ASCII).
            let bytes = text.as_bytes();
            let is_chunk_byte = |b: &u8| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-';
            let mut at = 0;
            while let Some(start) = bytes[at..].iter().position(is_chunk_byte) {
                let start = at + start;
                let end = bytes[start..]
                    .iter()
                    .position(|b| !is_chunk_byte(b))
                    .map_or(bytes.len(), |len| start + len);
                self.chunk(&text[start..end], emit);
                at = end;
            }
            return;
        }
        let mut rest = text;
        while let Some(start) = rest.find(is_chunk_char) {
            let tail = &rest[start..];
            let end = tail.find(|c: char| !is_chunk_char(c)).unwrap_or(tail.len());
            self.chunk(&tail[..end], emit);
            rest = &tail[end..];
        }
    }

    fn chunk(&mut self, chunk: &str, emit: &mut impl FnMut(&str)) {
        self.compound.clear();
        self.pieces = 0;
        self.chunk_has_cjk = false;
        for piece in chunk.split(is_separator).filter(|p| !p.is_empty()) {
            self.piece(piece, emit);
        }
        if self.pieces >= 2 && !self.chunk_has_cjk && self.compound.len() <= MAX_TOKEN_BYTES {
            emit(&self.compound);
        }
    }

    /// Splits a piece (word characters only) into CJK and non-CJK runs.
    fn piece(&mut self, piece: &str, emit: &mut impl FnMut(&str)) {
        self.pieces += 1;
        if !self.compound.is_empty() {
            self.compound.push('_');
        }
        if self.compound.len() <= MAX_TOKEN_BYTES {
            push_lowercase(&mut self.compound, piece);
        }
        if piece.is_ascii() {
            // No CJK character: one word run.
            self.word_run(piece, emit);
            return;
        }
        let mut rest = piece;
        while let Some(first) = rest.chars().next() {
            let cjk = is_cjk(first);
            let end = rest.find(|c: char| is_cjk(c) != cjk).unwrap_or(rest.len());
            let (run, tail) = rest.split_at(end);
            if cjk {
                self.chunk_has_cjk = true;
                cjk_run(run, emit);
            } else {
                self.word_run(run, emit);
            }
            rest = tail;
        }
    }

    /// Splits a run of non-CJK word characters at case boundaries; a run that splits also
    /// emits itself whole (`GitHub` -> `git`, `hub`, `github`).
    fn word_run(&mut self, run: &str, emit: &mut impl FnMut(&str)) {
        if run.bytes().all(|b| b.is_ascii() && !b.is_ascii_uppercase()) {
            // No upper-case letter, so no case boundary: the run is one word (the common case).
            self.word(run, emit);
            return;
        }
        let mut chars = std::mem::take(&mut self.chars);
        chars.clear();
        chars.extend(run.char_indices());
        self.split_cases(run, &chars, emit);
        self.chars = chars;
    }

    fn split_cases(&mut self, run: &str, chars: &[(usize, char)], emit: &mut impl FnMut(&str)) {
        let mut start = 0;
        let mut segments = 0;
        for i in 1..chars.len() {
            let prev = chars[i - 1].1;
            let cur = chars[i].1;
            let next = chars.get(i + 1).map(|&(_, c)| c);
            let boundary = (cur.is_uppercase() && (prev.is_lowercase() || prev.is_numeric()))
                || (prev.is_uppercase()
                    && cur.is_uppercase()
                    && next.is_some_and(char::is_lowercase));
            if boundary {
                self.word(&run[chars[start].0..chars[i].0], emit);
                segments += 1;
                start = i;
            }
        }
        if let Some(&(offset, _)) = chars.get(start) {
            self.word(&run[offset..], emit);
            segments += 1;
        }
        if segments >= 2 {
            self.word(run, emit);
        }
    }

    fn word(&mut self, word: &str, emit: &mut impl FnMut(&str)) {
        self.token.clear();
        push_lowercase(&mut self.token, word);
        if self.token.len() <= MAX_TOKEN_BYTES {
            emit(&self.token);
        }
    }
}

/// Emits the overlapping character bigrams of a CJK run (a lone character emits itself).
fn cjk_run(run: &str, emit: &mut impl FnMut(&str)) {
    let mut bounds = run
        .char_indices()
        .map(|(i, _)| i)
        .chain(std::iter::once(run.len()));
    let (Some(mut a), Some(mut b)) = (bounds.next(), bounds.next()) else {
        return;
    };
    let mut emitted = false;
    for c in bounds {
        emit(&run[a..c]);
        emitted = true;
        (a, b) = (b, c);
    }
    if !emitted {
        emit(&run[a..b]);
    }
}

/// Appends the case folding of `text` in Unicode normalization form C (NFC).
///
/// Folding is Unicode lower case plus the full case foldings that lower case misses: `ß`/`ẞ` ->
/// `ss`, final sigma -> `σ`, long s -> `s`, and the Latin ligatures `ﬀ`..`ﬆ` -> their letters;
/// and `İ` (capital I with dot above) -> `i`, its Turkic folding (`CaseFolding.txt` status `T`),
/// where lower case and full folding give `i` + U+0307, so `istanbul` finds `İstanbul`; and the
/// fullwidth digits and Latin letters (`１２`, `Ｗｅａｔｈｅｒ`) -> ASCII, their NFKC forms.
/// NFC makes precomposed and decomposed diacritics (`ệ` and `e` + U+0323 + U+0302) one token.
fn push_lowercase(out: &mut String, text: &str) {
    let start = out.len();
    if text.is_ascii() {
        out.push_str(text);
        out[start..].make_ascii_lowercase();
        return;
    }
    for c in text.chars() {
        match c {
            'ß' | 'ẞ' => out.push_str("ss"),
            'İ' => out.push('i'),
            'ς' => out.push('σ'),
            'ſ' => out.push('s'),
            'ﬀ' => out.push_str("ff"),
            'ﬁ' => out.push_str("fi"),
            'ﬂ' => out.push_str("fl"),
            'ﬃ' => out.push_str("ffi"),
            'ﬄ' => out.push_str("ffl"),
            'ﬅ' | 'ﬆ' => out.push_str("st"),
            // Fullwidth digits and Latin letters (CJK input methods type them): their ASCII forms.
            '\u{FF10}'..='\u{FF19}' | '\u{FF21}'..='\u{FF3A}' | '\u{FF41}'..='\u{FF5A}' => {
                let ascii = char::from_u32(u32::from(c) - 0xFEE0).unwrap_or(c);
                out.push(ascii.to_ascii_lowercase());
            }
            _ if c.is_ascii() => out.push(c.to_ascii_lowercase()),
            _ => out.extend(c.to_lowercase()),
        }
    }
    let folded = &out[start..];
    if !folded.is_ascii() && is_nfc_quick(folded.chars()) != IsNormalized::Yes {
        let composed: String = folded.nfc().collect();
        out.truncate(start);
        out.push_str(&composed);
    }
}

/// Characters that belong to a chunk: word characters and the identifier separators.
fn is_chunk_char(c: char) -> bool {
    is_word_char(c) || is_separator(c)
}

fn is_separator(c: char) -> bool {
    c == '_' || c == '-'
}

/// Letters, digits, and the characters that continue a word: combining marks (Unicode general
/// categories `Mn`, `Mc`, `Me`: decomposed diacritics, Indic, Khmer and Myanmar vowel signs and
/// viramas) and the zero-width (non-)joiners.
pub fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || continues_word(c)
}

fn continues_word(c: char) -> bool {
    if c.is_ascii() {
        return false;
    }
    c == '\u{200c}' || c == '\u{200d}' || c.general_category_group() == GeneralCategoryGroup::Mark
}

/// Han, Hiragana, Katakana and Hangul characters (the scripts written without spaces, or,
/// for Hangul, commonly searched by syllable pairs).
pub fn is_cjk(c: char) -> bool {
    matches!(
        c,
        '\u{1100}'..='\u{11ff}'
            | '\u{3005}'..='\u{3007}'
            | '\u{3021}'..='\u{3029}'
            | '\u{3041}'..='\u{309f}'
            | '\u{30a0}'..='\u{30ff}'
            | '\u{3130}'..='\u{318f}'
            | '\u{31f0}'..='\u{31ff}'
            | '\u{3400}'..='\u{4dbf}'
            | '\u{4e00}'..='\u{9fff}'
            | '\u{a960}'..='\u{a97f}'
            | '\u{ac00}'..='\u{d7ff}'
            | '\u{f900}'..='\u{faff}'
            | '\u{ff66}'..='\u{ff9f}'
            | '\u{20000}'..='\u{3134f}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(text: &str) -> Vec<String> {
        tokenize(text)
    }

    #[test]
    fn splits_on_punctuation_and_space() {
        assert_eq!(
            toks("Get the profile, please!"),
            ["get", "the", "profile", "please"]
        );
        assert_eq!(toks("  \t "), Vec::<String>::new());
        assert_eq!(toks(""), Vec::<String>::new());
        assert_eq!(toks("a.b/c"), ["a", "b", "c"]);
    }

    #[test]
    fn camel_case_and_acronyms() {
        assert_eq!(
            toks("getHTTPResponse"),
            ["get", "http", "response", "gethttpresponse"]
        );
        assert_eq!(toks("XMLParser"), ["xml", "parser", "xmlparser"]);
        assert_eq!(toks("parseXML"), ["parse", "xml", "parsexml"]);
        assert_eq!(toks("HTTP"), ["http"]);
        assert_eq!(toks("v1 sha256"), ["v1", "sha256"]);
        assert_eq!(toks("HTTP2Client"), ["http2", "client", "http2client"]);
        assert_eq!(toks("iPhone"), ["i", "phone", "iphone"]);
    }

    #[test]
    fn identifiers_keep_a_compound_token() {
        assert_eq!(
            toks("github_get_me"),
            ["github", "get", "me", "github_get_me"]
        );
        assert_eq!(toks("github-get-me"), toks("github_get_me"));
        assert_eq!(toks("githubGetMe"), ["github", "get", "me", "githubgetme"]);
        assert_eq!(
            toks("get_HTTPResponse"),
            [
                "get",
                "http",
                "response",
                "httpresponse",
                "get_httpresponse"
            ]
        );
        assert_eq!(toks("__init__"), ["init"]);
        assert_eq!(toks("a--b"), ["a", "b", "a_b"]);
    }

    #[test]
    fn unicode_lowercase() {
        assert_eq!(toks("ПОЛУЧИТЬ Данные"), ["получить", "данные"]);
        assert_eq!(
            toks("ПолучитьДанные"),
            ["получить", "данные", "получитьданные"]
        );
        assert_eq!(toks("Straße GROẞ STRASSE"), ["strasse", "gross", "strasse"]);
        assert_eq!(toks("ﬁle"), ["file"]);
        assert_eq!(toks("Tiếng Việt ĐẸP"), ["tiếng", "việt", "đẹp"]);
        // Decomposed diacritics stay inside the word and compose, in any mark order.
        assert_eq!(toks("Vie\u{302}\u{323}t"), ["việt"]);
        assert_eq!(toks("VIE\u{323}\u{302}T"), ["việt"]);
        assert_eq!(toks("Cà phê SỮA đá"), ["cà", "phê", "sữa", "đá"]);
        assert_eq!(toks("ΟΔΟΣ οδος"), ["οδοσ", "οδοσ"]);
        assert_eq!(toks("हिन्दी भाषा"), ["हिन्दी", "भाषा"]);
        // The Turkic folding of dotted capital I, so that `istanbul` finds `İstanbul`.
        assert_eq!(toks("İstanbul İZMİR"), ["istanbul", "izmir"]);
        // Fullwidth digits and letters are their ASCII forms, case boundaries included.
        assert_eq!(toks("１２ Ｗｅａｔｈｅｒ"), ["12", "weather"]);
        assert_eq!(
            toks("ｇｅｔＷｅａｔｈｅｒ"),
            ["get", "weather", "getweather"]
        );
    }

    #[test]
    fn khmer_and_myanmar_marks_join_words() {
        // U+17CC KHMER SIGN ROBAT and U+17D2 KHMER SIGN COENG (both Mn) continue the word.
        assert_eq!(toks("ក៌ខ"), ["ក៌ខ"]);
        assert_eq!(toks("ស្វែងរក ពាក្យ"), ["ស្វែងរក", "ពាក្យ"]);
        // U+103A MYANMAR SIGN ASAT (Mn) and the vowel signs (Mc) too.
        assert_eq!(toks("မြန်မာ စကားလုံး"), ["မြန်မာ", "စကားလုံး"]);
        // Zero-width joiners stay inside a word; punctuation and symbols still split.
        assert_eq!(toks("क्\u{200d}ष"), ["क्\u{200d}ष"]);
        assert_eq!(toks("हिन्दी।भाषा"), ["हिन्दी", "भाषा"]);
    }

    #[test]
    fn cjk_bigrams() {
        assert_eq!(
            toks("获取用户信息"),
            ["获取", "取用", "用户", "户信", "信息"]
        );
        assert_eq!(toks("用"), ["用"]);
        assert_eq!(toks("用户"), ["用户"]);
        assert_eq!(
            toks("ユーザー情報"),
            ["ユー", "ーザ", "ザー", "ー情", "情報"]
        );
        assert_eq!(toks("사용자 정보"), ["사용", "용자", "정보"]);
        assert_eq!(
            toks("使用GitHub接口"),
            ["使用", "git", "hub", "github", "接口"]
        );
        assert_eq!(toks("get_用户"), ["get", "用户"]);
        // A query word occurring inside a sentence shares its bigram.
        assert!(toks("查询客户名称").contains(&"客户".to_owned()));
    }

    #[test]
    fn no_matching_inside_latin_words() {
        let comment = toks("Add a comment to the issue");
        assert!(!comment.contains(&"me".to_owned()));
        assert!(comment.contains(&"comment".to_owned()));
        assert!(toks("github_get_me").contains(&"me".to_owned()));
    }

    #[test]
    fn long_tokens_are_dropped() {
        let long = "a".repeat(MAX_TOKEN_BYTES + 1);
        assert_eq!(toks(&format!("x {long} y")), ["x", "y"]);
        assert_eq!(toks(&format!("x_{long}")), ["x"]);
        let fits = "b".repeat(MAX_TOKEN_BYTES);
        assert_eq!(toks(&fits), vec![fits]);
    }
}
