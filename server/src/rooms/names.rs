//! The rules for names people write: display names, lobby names, any short text shown
//! to other players. Kept apart from HTTP so that every way a name arrives (REST, a seat
//! in a room, later chat) is checked by the same rule, and the room can tell two names
//! apart the way people do.

use unicode_normalization::UnicodeNormalization;
use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};

/// The longest display name, in characters.
pub const MAX_NAME_CHARS: usize = 32;

/// A name or text that breaks the rules: `what` it was, and its bound.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{what} is 1 to {max_chars} printable characters, without invisible or formatting characters"
)]
pub struct NameError {
    pub what: &'static str,
    pub max_chars: usize,
}

/// A checked display name: trimmed, 1 to 32 characters, no control characters.
pub fn display_name(raw: &str) -> Result<String, NameError> {
    printable_text(raw, MAX_NAME_CHARS, "a display name")
}

/// `raw` trimmed and in Unicode normal form C, if it is 1 to `max_chars` characters of
/// visible text. Control characters, invisible formatting (zero-width spaces and joiners,
/// bidirectional overrides), private-use characters and line separators are refused:
/// they let one name pass for another ("ann" and "ann" + U+200B) or reorder the text
/// around it.
pub fn printable_text(
    raw: &str,
    max_chars: usize,
    what: &'static str,
) -> Result<String, NameError> {
    // The bound applies to what was sent, so that the documented length is the limit.
    let text: String = raw.trim().nfc().collect();
    let too_long = raw.chars().count() > max_chars;
    if text.is_empty() || too_long || !text.chars().all(is_visible_text) {
        return Err(NameError { what, max_chars });
    }
    Ok(text)
}

/// Whether `c` may appear in a name: anything but the invisible or reordering classes,
/// and no whitespace but the plain space.
fn is_visible_text(c: char) -> bool {
    use GeneralCategory::*;
    let hidden = matches!(
        c.general_category(),
        Control | Format | PrivateUse | Surrogate | Unassigned | LineSeparator | ParagraphSeparator
    );
    !hidden && (c == ' ' || !c.is_whitespace())
}

/// The form two names are compared in: "Ann" and "ANN", or "ﬁ" and "fi", are one name.
pub fn name_key(name: &str) -> String {
    name.nfkc().flat_map(char::to_lowercase).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_are_trimmed_and_bounded() {
        assert_eq!(display_name("  Ada ").unwrap(), "Ada");
        assert!(display_name("").is_err());
        assert!(display_name("   ").is_err());
        assert!(display_name(&"x".repeat(33)).is_err());
        assert!(display_name("bell\u{7}").is_err());
        assert_eq!(display_name(&"é".repeat(32)).unwrap().chars().count(), 32);
    }

    #[test]
    fn invisible_and_reordering_characters_are_refused() {
        for name in [
            "ann\u{200B}",
            "a\u{200D}nn",
            "\u{202E}nna",
            "ann\u{2066}",
            "\u{FEFF}ann",
            "an\u{00AD}n",
            "ann\u{E000}",
            "an\u{2028}n",
            "an\tn",
            "an\u{3000}n",
        ] {
            assert!(display_name(name).is_err(), "{name:?} was accepted");
        }
        assert_eq!(display_name("Zoë Ødegård 李").unwrap(), "Zoë Ødegård 李");
        assert_eq!(display_name("👩\u{200D}🚀").ok(), None);
    }

    #[test]
    fn names_are_stored_composed_and_compared_without_case_or_compatibility_forms() {
        // "e" followed by a combining acute accent is stored as the one character "é".
        assert_eq!(display_name("Zoe\u{301}").unwrap(), "Zo\u{e9}");
        assert_eq!(name_key("ANN"), name_key("ann"));
        assert_eq!(name_key("\u{FB01}x"), name_key("fix"));
        assert_ne!(name_key("ann"), name_key("anne"));
    }
}
