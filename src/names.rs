//! Canonical names and validation of group names, group descriptions, tool names and the
//! proxy configuration.
//!
//! A grouped tool stays registered under its canonical name `group__tool`. Group names may not
//! contain the separator, so the first `__` of a canonical name always ends the group part.

use std::fmt::Write as _;

use crate::{Error, Result};

/// The pattern every group name must match (and, in addition, contain no `__`).
pub const GROUP_NAME_PATTERN: &str = "^[A-Za-z][A-Za-z0-9_-]{0,31}$";
/// Separator between the group and the local tool name in a canonical name.
pub const CANONICAL_SEPARATOR: &str = "__";
/// Longest group description, in Unicode scalar values (Python `len()`).
pub const MAX_DESCRIPTION_CHARS: usize = 512;
/// Smallest accepted `max_search_bytes`.
pub const MIN_SEARCH_BYTES: i64 = 1024;
/// Largest accepted `max_search_bytes`.
pub const MAX_SEARCH_BYTES: i64 = 32768;
/// Largest accepted `max_results`.
pub const MAX_RESULTS_LIMIT: i64 = 100;
/// Longest group name, in characters.
pub const MAX_GROUP_NAME_CHARS: usize = 32;
/// Longest tool name model providers accept, in characters.
pub const MAX_TOOL_NAME_CHARS: usize = 64;

/// Longest value quoted verbatim in an error message; longer values are cut and marked.
const MAX_QUOTED_CHARS: usize = 80;

/// Quotes `value` the way Python's `repr()` quotes a `str` (single quotes unless the value holds
/// a single quote and no double quote; backslash escapes for quotes, backslashes and invisible
/// characters). Values longer than 80 characters are cut and followed by `...`.
pub fn quote(value: &str) -> String {
    let quote_char = if value.contains('\'') && !value.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(value.len().min(MAX_QUOTED_CHARS * 4) + 2);
    out.push(quote_char);
    let mut chars = value.chars();
    for c in chars.by_ref().take(MAX_QUOTED_CHARS) {
        push_escaped(&mut out, c, quote_char);
    }
    out.push(quote_char);
    if chars.next().is_some() {
        out.push_str("...");
    }
    out
}

fn push_escaped(out: &mut String, c: char, quote_char: char) {
    match c {
        '\\' => out.push_str("\\\\"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if c == quote_char => {
            out.push('\\');
            out.push(c);
        }
        c if is_invisible(c) => {
            let code = u32::from(c);
            if code <= 0xff {
                let _ = write!(out, "\\x{code:02x}");
            } else if code <= 0xffff {
                let _ = write!(out, "\\u{code:04x}");
            } else {
                let _ = write!(out, "\\U{code:08x}");
            }
        }
        c => out.push(c),
    }
}

/// Characters Python's `repr()` escapes: controls, separators other than the ASCII space and
/// the common format characters.
fn is_invisible(c: char) -> bool {
    c.is_control()
        || (c.is_whitespace() && c != ' ')
        || matches!(
            c,
            '\u{ad}'
                | '\u{600}'..='\u{605}'
                | '\u{61c}'
                | '\u{6dd}'
                | '\u{70f}'
                | '\u{180e}'
                | '\u{200b}'..='\u{200f}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2060}'..='\u{206f}'
                | '\u{feff}'
                | '\u{fff9}'..='\u{fffb}'
                | '\u{e000}'..='\u{f8ff}'
        )
}

/// Python's `str.isspace()`: Unicode white space plus the ASCII information separators.
fn is_python_space(c: char) -> bool {
    c.is_whitespace() || matches!(c, '\u{1c}'..='\u{1f}')
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// Checks a group name: `^[A-Za-z][A-Za-z0-9_-]{0,31}$` and no `__`.
pub fn validate_group_name(name: &str) -> Result<()> {
    let mut chars = name.chars();
    let first_is_letter = chars.next().is_some_and(|c| c.is_ascii_alphabetic());
    let well_formed =
        first_is_letter && name.len() <= MAX_GROUP_NAME_CHARS && name.chars().all(is_name_char);
    if !well_formed {
        return Err(Error::new(format!(
            "invalid ToolProxy group name {}: it must start with a letter and hold at most \
             {MAX_GROUP_NAME_CHARS} letters, digits, '-' or '_'",
            quote(name)
        )));
    }
    if name.contains(CANONICAL_SEPARATOR) {
        return Err(Error::new(format!(
            "invalid ToolProxy group name {}: a group name must not contain '__' (the \
             canonical-name separator)",
            quote(name)
        )));
    }
    Ok(())
}

/// Checks a group description: not blank, at most [`MAX_DESCRIPTION_CHARS`] characters.
pub fn validate_group_description(group: &str, description: &str) -> Result<()> {
    let length = description.chars().count();
    if description.chars().all(is_python_space) {
        return Err(Error::new(format!(
            "invalid description for ToolProxy group {}: it is blank (length {length}); \
             describe the group's domain in 1 to {MAX_DESCRIPTION_CHARS} characters",
            quote(group)
        )));
    }
    if length > MAX_DESCRIPTION_CHARS {
        return Err(Error::new(format!(
            "invalid description for ToolProxy group {}: it has {length} characters; at most \
             {MAX_DESCRIPTION_CHARS} are allowed",
            quote(group)
        )));
    }
    Ok(())
}

/// The error for a group description that is not valid Unicode text (a Python `str` holding a lone
/// surrogate, U+D800 to U+DFFF): it cannot be encoded as UTF-8, so no request carrying it could be sent.
pub fn description_not_unicode(group: &str) -> Error {
    Error::new(format!(
        "invalid description for ToolProxy group {}: it contains a lone surrogate (U+D800 to U+DFFF), \
         which is not valid Unicode text and cannot be sent to a model; remove it",
        quote(group)
    ))
}

/// `true` when `name` matches `^[A-Za-z0-9_-]{1,64}$`, the function-name rule of model providers.
pub fn validate_tool_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= MAX_TOOL_NAME_CHARS && name.chars().all(is_name_char)
}

/// Checks the proxy configuration: two distinct valid tool names, `max_results` in `1..=100`
/// and `max_search_bytes` in `1024..=32768`.
pub fn validate_config(
    search_name: &str,
    call_name: &str,
    max_results: i64,
    max_search_bytes: i64,
) -> Result<()> {
    for (field, value) in [("search_name", search_name), ("call_name", call_name)] {
        if !validate_tool_name(value) {
            return Err(Error::new(format!(
                "invalid ToolProxy config: {field} {} must be 1 to {MAX_TOOL_NAME_CHARS} \
                 letters, digits, '_' or '-'",
                quote(value)
            )));
        }
    }
    if search_name == call_name {
        return Err(Error::new(format!(
            "invalid ToolProxy config: search_name and call_name must differ (both are {})",
            quote(search_name)
        )));
    }
    if !(1..=MAX_RESULTS_LIMIT).contains(&max_results) {
        return Err(int_out_of_range("max_results", &max_results.to_string()));
    }
    if !(MIN_SEARCH_BYTES..=MAX_SEARCH_BYTES).contains(&max_search_bytes) {
        return Err(int_out_of_range(
            "max_search_bytes",
            &max_search_bytes.to_string(),
        ));
    }
    Ok(())
}

/// The error for a configuration integer outside its range. `value` is the decimal text of the
/// offending value, so integers too large for `i64` are reported exactly.
pub fn int_out_of_range(field: &str, value: &str) -> Error {
    let (low, high) = match field {
        "max_search_bytes" => (MIN_SEARCH_BYTES, MAX_SEARCH_BYTES),
        _ => (1, MAX_RESULTS_LIMIT),
    };
    let shown: String = if value.len() > MAX_QUOTED_CHARS {
        let head: String = value.chars().take(MAX_QUOTED_CHARS).collect();
        format!("{head}...")
    } else {
        value.to_owned()
    };
    Error::new(format!(
        "invalid ToolProxy config: {field} must be between {low} and {high}, got {shown}"
    ))
}

/// The canonical name `group__tool`.
pub fn canonical_name(group: &str, tool: &str) -> String {
    let mut name = String::with_capacity(group.len() + CANONICAL_SEPARATOR.len() + tool.len());
    name.push_str(group);
    name.push_str(CANONICAL_SEPARATOR);
    name.push_str(tool);
    name
}

/// Splits a canonical name at its first `__`. `None` without a separator or when either side
/// is empty.
pub fn split_canonical_name(name: &str) -> Option<(&str, &str)> {
    let (group, tool) = name.split_once(CANONICAL_SEPARATOR)?;
    if group.is_empty() || tool.is_empty() {
        None
    } else {
        Some((group, tool))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group_err(name: &str) -> String {
        validate_group_name(name).unwrap_err().message().to_owned()
    }

    #[test]
    fn valid_group_names() {
        for name in [
            "crm",
            "a",
            "A-b_c9",
            "x-",
            "y_",
            &"a".repeat(32),
            "kNowledge-2",
        ] {
            assert_eq!(validate_group_name(name), Ok(()), "{name}");
        }
    }

    #[test]
    fn group_name_with_separator() {
        assert_eq!(
            group_err("a__b"),
            "invalid ToolProxy group name 'a__b': a group name must not contain '__' \
             (the canonical-name separator)"
        );
        assert!(group_err("ab__").contains("'__'"));
    }

    #[test]
    fn malformed_group_names() {
        assert_eq!(
            group_err("9x"),
            "invalid ToolProxy group name '9x': it must start with a letter and hold at most \
             32 letters, digits, '-' or '_'"
        );
        for name in [
            "",
            "_a",
            "-a",
            "a b",
            "a.b",
            "é",
            "aé",
            "café",
            "組",
            &"a".repeat(33),
            "a\n",
        ] {
            assert!(
                group_err(name).contains("must start with a letter"),
                "{name:?}"
            );
        }
    }

    #[test]
    fn quoting_is_repr_like() {
        assert_eq!(quote("a'b"), "\"a'b\"");
        assert_eq!(quote("a'b\""), "'a\\'b\"'");
        assert_eq!(quote("a\nb\\"), "'a\\nb\\\\'");
        assert_eq!(quote("\u{0}\u{7f}\u{200b}"), "'\\x00\\x7f\\u200b'");
        assert_eq!(quote("Łódź 組"), "'Łódź 組'");
        let long = "x".repeat(200);
        assert_eq!(quote(&long), format!("'{}'...", "x".repeat(80)));
        assert!(group_err(&long).len() < 300);
    }

    #[test]
    fn descriptions() {
        assert_eq!(
            validate_group_description("crm", "Customer records"),
            Ok(())
        );
        assert_eq!(validate_group_description("crm", &"é".repeat(512)), Ok(()));
        for blank in ["", " ", "\t\n \u{3000}\u{1f}"] {
            let err = validate_group_description("crm", blank).unwrap_err();
            assert!(err.message().contains("'crm'"), "{err}");
            assert!(err.message().contains("blank"), "{err}");
            assert!(
                err.message()
                    .contains(&format!("length {}", blank.chars().count())),
                "{err}"
            );
        }
        let err = validate_group_description("crm", &"é".repeat(513)).unwrap_err();
        assert_eq!(
            err.message(),
            "invalid description for ToolProxy group 'crm': it has 513 characters; at most \
             512 are allowed"
        );
    }

    #[test]
    fn tool_names() {
        assert!(validate_tool_name("search_proxy_tools"));
        assert!(validate_tool_name("a"));
        assert!(validate_tool_name("9-x_Y"));
        assert!(validate_tool_name(&"a".repeat(64)));
        assert!(!validate_tool_name(&"a".repeat(65)));
        assert!(!validate_tool_name(""));
        assert!(!validate_tool_name("a b"));
        assert!(!validate_tool_name("a.b"));
        assert!(!validate_tool_name("é"));
    }

    #[test]
    fn config_bounds() {
        let ok = |r, b| validate_config("search_proxy_tools", "call_proxy_tool", r, b);
        assert_eq!(ok(1, 1024), Ok(()));
        assert_eq!(ok(100, 32768), Ok(()));
        assert_eq!(
            ok(0, 2048).unwrap_err().message(),
            "invalid ToolProxy config: max_results must be between 1 and 100, got 0"
        );
        assert!(ok(101, 2048).unwrap_err().message().contains("got 101"));
        assert!(ok(-5, 2048).unwrap_err().message().contains("got -5"));
        assert_eq!(
            ok(5, 1023).unwrap_err().message(),
            "invalid ToolProxy config: max_search_bytes must be between 1024 and 32768, got 1023"
        );
        assert!(ok(5, 32769)
            .unwrap_err()
            .message()
            .contains("max_search_bytes"));
        assert!(ok(5, i64::MIN)
            .unwrap_err()
            .message()
            .contains("max_search_bytes"));
        let same = validate_config("x", "x", 5, 2048).unwrap_err();
        assert_eq!(
            same.message(),
            "invalid ToolProxy config: search_name and call_name must differ (both are 'x')"
        );
        let bad = validate_config("find ops", "x", 5, 2048).unwrap_err();
        assert!(bad.message().contains("search_name 'find ops'"), "{bad}");
        let bad = validate_config("x", "", 5, 2048).unwrap_err();
        assert!(bad.message().contains("call_name ''"), "{bad}");
        let huge = int_out_of_range("max_search_bytes", "123456789012345678901234567890");
        assert!(huge
            .message()
            .contains("got 123456789012345678901234567890"));
    }

    #[test]
    fn canonical_names() {
        assert_eq!(canonical_name("crm", "customer_name"), "crm__customer_name");
        assert_eq!(
            split_canonical_name("crm__customer_name"),
            Some(("crm", "customer_name"))
        );
        assert_eq!(split_canonical_name("a__b__c"), Some(("a", "b__c")));
        assert_eq!(split_canonical_name("a___b"), Some(("a", "_b")));
        assert_eq!(split_canonical_name("plain"), None);
        assert_eq!(split_canonical_name("a_b"), None);
        assert_eq!(split_canonical_name("__b"), None);
        assert_eq!(split_canonical_name("a__"), None);
        assert_eq!(split_canonical_name("__"), None);
        assert_eq!(split_canonical_name(""), None);
    }
}
