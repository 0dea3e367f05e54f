//! Schema text extraction: the searchable text of a parameters JSON schema of unknown shape,
//! read through [`SchemaNode`] (the binding implements it for Python objects) by
//! [`collect_parameter_text`] into a [`ParameterText`].

/// Deepest schema nesting the parameter walk descends into.
pub const MAX_SCHEMA_DEPTH: usize = 32;
/// Most schema nodes (mapping entries and sequence items) visited per tool.
pub const MAX_SCHEMA_NODES: usize = 2000;
/// Longest single string taken from a schema, in bytes (longer ones are cut).
pub const MAX_SCHEMA_STRING_BYTES: usize = 1024;
/// Most parameter text indexed per tool, in bytes.
pub const MAX_PARAMETER_TEXT_BYTES: usize = 16 * 1024;

/// The searchable text of a parameters JSON schema (see [`collect_parameter_text`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParameterText {
    /// Parameter names: the keys of every `properties` mapping, at any depth.
    pub names: Vec<String>,
    /// Descriptions, titles and string `enum` values inside the parameter schemas.
    pub texts: Vec<String>,
}

impl ParameterText {
    /// `true` without names and texts.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty() && self.texts.is_empty()
    }

    /// Number of names and texts.
    pub fn len(&self) -> usize {
        self.names.len() + self.texts.len()
    }

    /// The names, then the texts.
    pub fn iter(&self) -> impl Iterator<Item = &String> {
        self.names.iter().chain(&self.texts)
    }
}

/// Read access to one node of a parameters JSON schema of unknown shape.
///
/// Implemented for Python objects by the binding; the walk itself is [`collect_parameter_text`].
/// Every method must return `None` rather than fail when the node is not of the asked kind or
/// cannot be read.
pub trait SchemaNode: Sized {
    /// The entries of a mapping node, at most `limit` of them, in iteration order. Keys that
    /// are not strings are `None`.
    fn mapping_entries(&self, limit: usize) -> Option<Vec<(Option<String>, Self)>>;
    /// The items of a sequence node, at most `limit` of them.
    fn sequence_items(&self, limit: usize) -> Option<Vec<Self>>;
    /// The text of a string node, cut to at most `max_bytes` bytes (see [`truncate_str`]).
    fn string(&self, max_bytes: usize) -> Option<String>;
}

/// Cuts `text` to at most `max_bytes` bytes at a character boundary.
pub fn truncate_str(text: &str, max_bytes: usize) -> &str {
    if text.len() <= max_bytes {
        return text;
    }
    let mut end = max_bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Collects the searchable parameter text of a parameters JSON schema: the keys of every
/// `properties` mapping (parameter names, into [`ParameterText::names`]) and, inside the schemas
/// of those properties at any depth, the string values of `description` and `title` keys and the
/// string items of `enum` lists (into [`ParameterText::texts`]).
///
/// The walk is iterative (explicit stack), stops descending at [`MAX_SCHEMA_DEPTH`] and after
/// [`MAX_SCHEMA_NODES`] visited nodes, keeps at most [`MAX_PARAMETER_TEXT_BYTES`] of text in
/// all, and skips anything unreadable, so recursive, very deep or huge objects are safe.
pub fn collect_parameter_text<N: SchemaNode>(root: N) -> ParameterText {
    let mut out = ParameterText::default();
    let mut text_bytes = 0usize;
    let mut budget = MAX_SCHEMA_NODES;
    let mut push_text = |out: &mut Vec<String>, text: String| {
        if text_bytes < MAX_PARAMETER_TEXT_BYTES && !text.is_empty() {
            text_bytes += text.len();
            out.push(text);
        }
    };
    // (node, depth, inside a property schema)
    let mut stack: Vec<(N, usize, bool)> = vec![(root, 0, false)];
    while let Some((node, depth, in_property)) = stack.pop() {
        if budget == 0 {
            break;
        }
        if depth >= MAX_SCHEMA_DEPTH {
            continue;
        }
        if let Some(entries) = node.mapping_entries(budget) {
            budget = budget.saturating_sub(entries.len());
            for (key, value) in entries {
                let Some(key) = key else { continue };
                match key.as_str() {
                    "properties" => {
                        let Some(properties) = value.mapping_entries(budget) else {
                            stack.push((value, depth + 1, in_property));
                            continue;
                        };
                        budget = budget.saturating_sub(properties.len());
                        for (name, schema) in properties {
                            if let Some(name) = name {
                                push_text(&mut out.names, name);
                            }
                            stack.push((schema, depth + 2, true));
                        }
                    }
                    "description" | "title" if in_property => {
                        if let Some(text) = value.string(MAX_SCHEMA_STRING_BYTES) {
                            push_text(&mut out.texts, text);
                        }
                    }
                    "enum" if in_property => {
                        let Some(items) = value.sequence_items(budget) else {
                            continue;
                        };
                        budget = budget.saturating_sub(items.len());
                        for item in items {
                            if let Some(text) = item.string(MAX_SCHEMA_STRING_BYTES) {
                                push_text(&mut out.texts, text);
                            }
                        }
                    }
                    _ => stack.push((value, depth + 1, in_property)),
                }
            }
        } else if let Some(items) = node.sequence_items(budget) {
            budget = budget.saturating_sub(items.len());
            stack.extend(items.into_iter().map(|item| (item, depth + 1, in_property)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    /// A tree standing in for Python objects in walk tests (shared like Python references).
    #[derive(Debug, Clone)]
    enum Value {
        Map(Rc<Vec<(Option<String>, Value)>>),
        List(Rc<Vec<Value>>),
        Str(String),
        Int,
        /// A mapping `{"properties": <itself>, "items": <itself>}`.
        Loop,
    }

    impl SchemaNode for Value {
        fn mapping_entries(&self, limit: usize) -> Option<Vec<(Option<String>, Self)>> {
            match self {
                Value::Map(entries) => Some(entries.iter().take(limit).cloned().collect()),
                Value::Loop => Some(
                    [("properties", Value::Loop), ("items", Value::Loop)]
                        .into_iter()
                        .take(limit)
                        .map(|(key, value)| (Some(key.to_owned()), value))
                        .collect(),
                ),
                _ => None,
            }
        }
        fn sequence_items(&self, limit: usize) -> Option<Vec<Self>> {
            match self {
                Value::List(items) => Some(items.iter().take(limit).cloned().collect()),
                _ => None,
            }
        }
        fn string(&self, max_bytes: usize) -> Option<String> {
            match self {
                Value::Str(text) => Some(truncate_str(text, max_bytes).to_owned()),
                _ => None,
            }
        }
    }

    fn map(entries: &[(&str, Value)]) -> Value {
        Value::Map(Rc::new(
            entries
                .iter()
                .map(|(key, value)| (Some((*key).to_owned()), value.clone()))
                .collect(),
        ))
    }

    fn list(items: Vec<Value>) -> Value {
        Value::List(Rc::new(items))
    }

    fn text(value: &str) -> Value {
        Value::Str(value.to_owned())
    }

    #[test]
    fn walk_collects_parameter_names_and_descriptions() {
        let schema = map(&[
            ("type", text("object")),
            ("description", text("top-level text is not parameter text")),
            (
                "properties",
                map(&[
                    (
                        "customer_id",
                        map(&[
                            ("type", text("integer")),
                            ("description", text("Numeric customer ID")),
                        ]),
                    ),
                    ("description", map(&[("title", text("Free Text"))])),
                    (
                        "unit",
                        map(&[
                            (
                                "enum",
                                list(vec![text("celsius"), Value::Int, text("kelvin")]),
                            ),
                            ("items", map(&[("enum", list(vec![text("deep")]))])),
                        ]),
                    ),
                    (
                        "address",
                        map(&[(
                            "anyOf",
                            list(vec![
                                map(&[("properties", map(&[("zip_code", map(&[]))]))]),
                                Value::Int,
                            ]),
                        )]),
                    ),
                ]),
            ),
            (
                "$defs",
                map(&[("Item", map(&[("properties", map(&[("sku", map(&[]))]))]))]),
            ),
        ]);
        let mut collected = collect_parameter_text(schema);
        collected.names.sort();
        collected.texts.sort();
        assert_eq!(
            collected.names,
            [
                "address",
                "customer_id",
                "description",
                "sku",
                "unit",
                "zip_code"
            ]
        );
        assert_eq!(
            collected.texts,
            [
                "Free Text",
                "Numeric customer ID",
                "celsius",
                "deep",
                "kelvin"
            ]
        );
        // An `enum` outside a property schema is not parameter text.
        let top = map(&[("enum", list(vec![text("x")]))]);
        assert!(collect_parameter_text(top).is_empty());
    }

    #[test]
    fn walk_survives_odd_shapes() {
        assert!(collect_parameter_text(Value::Int).is_empty());
        assert!(collect_parameter_text(text("x")).is_empty());
        assert!(collect_parameter_text(list(vec![Value::Int; 10])).is_empty());
        // Non-string keys and non-mapping properties are skipped.
        let odd = Value::Map(Rc::new(vec![
            (None, map(&[("properties", map(&[("hidden", Value::Int)]))])),
            (Some("properties".into()), list(vec![text("not a mapping")])),
        ]));
        assert!(collect_parameter_text(odd).is_empty());
        // Very deep nesting stops at the depth cap without recursion.
        let mut deep = map(&[("properties", map(&[("bottom", Value::Int)]))]);
        for _ in 0..10_000 {
            deep = map(&[("items", deep)]);
        }
        assert!(collect_parameter_text(deep.clone()).is_empty());
        // A self-containing object (as Python dicts can be) is bounded too.
        let looped = collect_parameter_text(Value::Loop);
        assert!(!looped.is_empty() && looped.len() <= MAX_SCHEMA_NODES);
        let mut shallow = map(&[("properties", map(&[("top", Value::Int)]))]);
        for _ in 0..10 {
            shallow = map(&[("items", shallow)]);
        }
        assert_eq!(collect_parameter_text(shallow).names, ["top"]);
        // The node budget bounds huge schemas.
        let huge = map(&[(
            "properties",
            Value::Map(Rc::new(
                (0..50_000)
                    .map(|i| (Some(format!("p{i}")), Value::Int))
                    .collect(),
            )),
        )]);
        assert!(collect_parameter_text(huge).len() < MAX_SCHEMA_NODES);
        std::mem::forget(deep); // dropping 10,000 nested Rcs would recurse in the test itself
    }

    #[test]
    fn truncation_respects_char_boundaries() {
        assert_eq!(truncate_str("héllo", 2), "h");
        assert_eq!(truncate_str("héllo", 3), "hé");
        assert_eq!(truncate_str("abc", 10), "abc");
        assert_eq!(truncate_str("組", 0), "");
    }
}
