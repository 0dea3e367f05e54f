//! Records, the index's view of one tool, and their content fingerprints.

use std::hash::{BuildHasher, Hasher};

use super::schema_text::ParameterText;

/// One tool as the index sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Record {
    /// Identity of the record, normally the canonical name `group__tool`
    /// ([`crate::names::canonical_name`]).
    pub key: String,
    pub group: String,
    pub tool: String,
    pub description: String,
    /// Parameter names and texts, see [`super::collect_parameter_text`].
    pub parameter_text: ParameterText,
}

impl Record {
    /// A 64-bit hash of the record's content (everything but the key), to skip re-indexing an
    /// unchanged record. foldhash's quality variant with its fixed seed: the same in every
    /// process.
    pub(super) fn fingerprint(&self) -> u64 {
        let mut hasher = foldhash::quality::FixedState::default().build_hasher();
        let mut feed = |bytes: &[u8]| {
            hasher.write_usize(bytes.len());
            hasher.write(bytes);
        };
        feed(self.group.as_bytes());
        feed(self.tool.as_bytes());
        feed(self.description.as_bytes());
        let parameters = &self.parameter_text;
        feed(&(parameters.names.len() as u64).to_le_bytes());
        for text in parameters.iter() {
            feed(text.as_bytes());
        }
        hasher.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_tell_contents_apart() {
        let record = |group: &str, tool: &str, names: &[&str], texts: &[&str]| Record {
            key: "k".to_owned(),
            group: group.to_owned(),
            tool: tool.to_owned(),
            description: String::new(),
            parameter_text: ParameterText {
                names: names.iter().map(|&n| n.to_owned()).collect(),
                texts: texts.iter().map(|&t| t.to_owned()).collect(),
            },
        };
        let base = record("a", "b", &["x"], &[]);
        assert_eq!(base.fingerprint(), base.clone().fingerprint());
        let mut other_key = base.clone();
        other_key.key = "other".to_owned();
        assert_eq!(base.fingerprint(), other_key.fingerprint());
        // Field boundaries and the names/texts split count.
        assert_ne!(
            base.fingerprint(),
            record("ab", "", &["x"], &[]).fingerprint()
        );
        assert_ne!(
            base.fingerprint(),
            record("a", "b", &[], &["x"]).fingerprint()
        );
    }
}
