//! A document's key and tool name, kept in one shared allocation.
//!
//! Every document needs its key (results, updates) and its tool name (exact-name matches, browse
//! order). Storing both in one `Arc<str>` (the key, then the tool name) instead of one each saves
//! an allocation and its header per document; the browse order shares it.

use std::cmp::Ordering;
use std::sync::Arc;

/// `key` followed by `tool`, in one `Arc<str>`.
#[derive(Debug, Clone)]
pub(super) struct DocName {
    text: Arc<str>,
    key_len: usize,
}

impl DocName {
    pub(super) fn new(key: &str, tool: &str) -> Self {
        let mut text = String::with_capacity(key.len() + tool.len());
        text.push_str(key);
        text.push_str(tool);
        Self {
            text: Arc::from(text),
            key_len: key.len(),
        }
    }

    pub(super) fn key(&self) -> &str {
        &self.text[..self.key_len]
    }

    pub(super) fn tool(&self) -> &str {
        &self.text[self.key_len..]
    }
}

/// A [`DocName`] ordered by `(tool, key)`: a group's browse order.
#[derive(Debug, Clone)]
pub(super) struct ByTool(pub(super) DocName);

impl Ord for ByTool {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.0.tool(), self.0.key()).cmp(&(other.0.tool(), other.0.key()))
    }
}

impl PartialOrd for ByTool {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for ByTool {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for ByTool {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn key_and_tool_share_one_allocation() {
        let name = DocName::new("crm__find_ü", "find_ü");
        assert_eq!((name.key(), name.tool()), ("crm__find_ü", "find_ü"));
        let order: BTreeSet<ByTool> = [
            DocName::new("b__x", "x"),
            DocName::new("a__y", "y"),
            DocName::new("a__x", "x"),
        ]
        .into_iter()
        .map(ByTool)
        .collect();
        let keys: Vec<&str> = order.iter().map(|name| name.0.key()).collect();
        assert_eq!(keys, ["a__x", "b__x", "a__y"]);
    }
}
