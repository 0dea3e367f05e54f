//! The hybrid-search tool text and its fingerprint, byte-identical to the Python reference
//! (`pydantic_ai_toolproxy._embedding_text`: `embedding_text` and `text_hash`), for a restart that
//! fingerprints 100,000 tools at once (a few microseconds a tool in Python, a fraction here).
//!
//! * The text: the tool name with `_` and `-` as spaces, `": "` and the description (left out with
//!   the `": "` when the description is empty), then `" "` and the group's part (computed by the
//!   Python side, `group_text`; left out when empty). Whitespace runs fold to one space and the
//!   ends are trimmed, exactly as Python's `' '.join(s.split())`: Python's whitespace is
//!   [`is_python_space`], which is not Unicode's `White_Space` (it adds U+001C..U+001F).
//! * The fingerprint: `BLAKE2b` (RFC 7693) with a 16-byte digest, no key, of the text's UTF-8:
//!   `hashlib.blake2b(text.encode(), digest_size=16).digest()`, the key of every cached vector, so
//!   existing cache files stay valid.

/// The characters Python's `str.split()` splits at (`str.isspace()`: bidirectional class WS, B
/// or S, or category Zs), the same in `CPython` 3.11 and 3.13.
pub const fn is_python_space(c: char) -> bool {
    matches!(
        c,
        '\t'..='\r'
            | '\u{1c}'..='\u{1f}'
            | ' '
            | '\u{85}'
            | '\u{a0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200a}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202f}'
            | '\u{205f}'
            | '\u{3000}'
    )
}

/// ASCII bytes Python splits a string at (`is_python_space`), and for names also `_` and `-`.
const fn ascii_separators(name: bool) -> [bool; 128] {
    let mut table = [false; 128];
    let mut b = 0;
    while b < 128 {
        table[b] = is_python_space(b as u8 as char)
            || (name && (b == b'_' as usize || b == b'-' as usize));
        b += 1;
    }
    table
}

const TEXT_SEPARATORS: [bool; 128] = ascii_separators(false);
const NAME_SEPARATORS: [bool; 128] = ascii_separators(true);

/// Appends `text` to `out` with its whitespace runs (and, for a `name`, `_` and `-`) folded to
/// one space and the ends trimmed: Python's `' '.join(text.split())` (after
/// `.replace('_', ' ').replace('-', ' ')` for a name). Tokens are copied whole (ASCII text is
/// split by bytes).
fn push_folded(out: &mut String, text: &str, name: bool) {
    let start = out.len();
    let mut push = |token: &str| {
        if !token.is_empty() {
            if out.len() > start {
                out.push(' ');
            }
            out.push_str(token);
        }
    };
    if text.is_ascii() {
        let table = if name {
            &NAME_SEPARATORS
        } else {
            &TEXT_SEPARATORS
        };
        let bytes = text.as_bytes();
        let mut from = 0;
        for (at, &b) in bytes.iter().enumerate() {
            if table[b as usize] {
                push(&text[from..at]); // ASCII: every byte is a char boundary
                from = at + 1;
            }
        }
        push(&text[from..]);
    } else {
        for token in text.split(|c: char| is_python_space(c) || (name && (c == '_' || c == '-'))) {
            push(token);
        }
    }
}

/// The embedding text of tool `tool` with `description`, followed by the group's part `tail`
/// (`group_text(group, group_description)`, already folded; `""` for none).
pub fn embedding_text(tool: &str, description: &str, tail: &str) -> String {
    let mut out = String::with_capacity(tool.len() + description.len() + tail.len() + 3);
    push_folded(&mut out, tool, true);
    let head = out.len();
    out.push_str(": ");
    let before = out.len();
    push_folded(&mut out, description, false);
    if out.len() == before {
        out.truncate(head);
    }
    if !tail.is_empty() {
        out.push(' ');
        out.push_str(tail);
    }
    out
}

const IV: [u64; 8] = [
    0x6a09_e667_f3bc_c908,
    0xbb67_ae85_84ca_a73b,
    0x3c6e_f372_fe94_f82b,
    0xa54f_f53a_5f1d_36f1,
    0x510e_527f_ade6_82d1,
    0x9b05_688c_2b3e_6c1f,
    0x1f83_d9ab_fb41_bd6b,
    0x5be0_cd19_137e_2179,
];

const SIGMA: [[usize; 16]; 10] = [
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
    [14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3],
    [11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4],
    [7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8],
    [9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13],
    [2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9],
    [12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11],
    [13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10],
    [6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5],
    [10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0],
];

const BLOCK: usize = 128;

#[inline(always)]
#[allow(clippy::many_single_char_names, clippy::inline_always)]
fn mix(v: &mut [u64; 16], a: usize, b: usize, c: usize, d: usize, x: u64, y: u64) {
    v[a] = v[a].wrapping_add(v[b]).wrapping_add(x);
    v[d] = (v[d] ^ v[a]).rotate_right(32);
    v[c] = v[c].wrapping_add(v[d]);
    v[b] = (v[b] ^ v[c]).rotate_right(24);
    v[a] = v[a].wrapping_add(v[b]).wrapping_add(y);
    v[d] = (v[d] ^ v[a]).rotate_right(16);
    v[c] = v[c].wrapping_add(v[d]);
    v[b] = (v[b] ^ v[c]).rotate_right(63);
}

fn compress(h: &mut [u64; 8], block: &[u8], counted: u128, last: bool) {
    let mut m = [0u64; 16];
    for (word, bytes) in m.iter_mut().zip(block.chunks_exact(8)) {
        *word = u64::from_le_bytes(bytes.try_into().expect("8 bytes"));
    }
    let mut v = [0u64; 16];
    v[..8].copy_from_slice(h);
    v[8..].copy_from_slice(&IV);
    v[12] ^= counted as u64;
    v[13] ^= (counted >> 64) as u64;
    if last {
        v[14] = !v[14];
    }
    // The rounds written out, so every message index is a constant (no table lookups).
    macro_rules! round {
        ($r:expr) => {{
            const S: [usize; 16] = SIGMA[$r % 10];
            mix(&mut v, 0, 4, 8, 12, m[S[0]], m[S[1]]);
            mix(&mut v, 1, 5, 9, 13, m[S[2]], m[S[3]]);
            mix(&mut v, 2, 6, 10, 14, m[S[4]], m[S[5]]);
            mix(&mut v, 3, 7, 11, 15, m[S[6]], m[S[7]]);
            mix(&mut v, 0, 5, 10, 15, m[S[8]], m[S[9]]);
            mix(&mut v, 1, 6, 11, 12, m[S[10]], m[S[11]]);
            mix(&mut v, 2, 7, 8, 13, m[S[12]], m[S[13]]);
            mix(&mut v, 3, 4, 9, 14, m[S[14]], m[S[15]]);
        }};
    }
    round!(0);
    round!(1);
    round!(2);
    round!(3);
    round!(4);
    round!(5);
    round!(6);
    round!(7);
    round!(8);
    round!(9);
    round!(10);
    round!(11);
    for (i, word) in h.iter_mut().enumerate() {
        *word ^= v[i] ^ v[i + 8];
    }
}

/// `BLAKE2b` with a 16-byte digest and no key (RFC 7693): Python's
/// `hashlib.blake2b(data, digest_size=16).digest()`.
pub fn blake2b_128(data: &[u8]) -> [u8; 16] {
    let mut h = IV;
    h[0] ^= 0x0101_0000 ^ 16; // depth 1, fanout 1, no key, 16-byte digest
    let mut rest = data;
    let mut counted: u128 = 0;
    while rest.len() > BLOCK {
        counted += BLOCK as u128;
        compress(&mut h, &rest[..BLOCK], counted, false);
        rest = &rest[BLOCK..];
    }
    let mut last = [0u8; BLOCK];
    last[..rest.len()].copy_from_slice(rest);
    counted += rest.len() as u128;
    compress(&mut h, &last, counted, true);
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&h[0].to_le_bytes());
    out[8..].copy_from_slice(&h[1].to_le_bytes());
    out
}

#[cfg(test)]
mod tests {
    use std::fmt::Write;

    use super::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().fold(String::new(), |mut out, b| {
            write!(out, "{b:02x}").expect("writing to a String");
            out
        })
    }

    #[test]
    fn blake2b_128_matches_python_hashlib() {
        // `hashlib.blake2b(data, digest_size=16).hexdigest()` on CPython 3.11.
        let a = |n: usize| "a".repeat(n);
        let cases = [
            (String::new(), "cae66941d9efbd404e4d88758ea67670"),
            ("abc".to_owned(), "cf4ab791c62b8d2b2109c90275287816"),
            (a(127), "2228006d5107a5239e500da574466288"),
            (a(128), "1271d28e731afb57bdfba6bdaf3501be"),
            (a(129), "68b7bafbad5055c4ebe6eb170a0f8524"),
            (a(256), "2dbe331c95d600bb74dcd669f0618bd7"),
            (a(257), "29e452ed1a672b027a1cd3f5ac4849c6"),
            (
                "get forecast: Forecast for a city. weather: Weather data".to_owned(),
                "aa49164bf5ffdbd2ab37dfd98e847c22",
            ),
        ];
        for (data, expected) in cases {
            assert_eq!(
                hex(&blake2b_128(data.as_bytes())),
                expected,
                "{} bytes",
                data.len()
            );
        }
    }

    #[test]
    fn text_follows_the_python_recipe() {
        assert_eq!(
            embedding_text(
                "get_forecast",
                "Forecast for a city.",
                "weather: Weather data"
            ),
            "get forecast: Forecast for a city. weather: Weather data"
        );
        assert_eq!(
            embedding_text("__a--b__", "  x \n\t y\u{1f} ", ""),
            "a b: x y"
        );
        assert_eq!(embedding_text("tool", " \u{3000} ", "g"), "tool g");
        assert_eq!(embedding_text("___", "d", ""), ": d");
        assert_eq!(embedding_text("", "", ""), "");
        assert_eq!(
            embedding_text("a\u{a0}b", "c\u{200b}d", ""),
            "a b: c\u{200b}d"
        );
    }
}
