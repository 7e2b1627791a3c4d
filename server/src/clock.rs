//! Wall-clock time, in the store's milliseconds and in RFC 3339 for clients.

use carcassonne_store::Millis;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

pub fn now_millis() -> Millis {
    let now = OffsetDateTime::now_utc();
    (now.unix_timestamp_nanos() / 1_000_000) as Millis
}

/// `2026-11-29T23:41:35.123Z` for a millisecond timestamp.
pub fn rfc3339(millis: Millis) -> String {
    OffsetDateTime::from_unix_timestamp_nanos(millis as i128 * 1_000_000)
        .ok()
        .and_then(|time| time.format(&Rfc3339).ok())
        .unwrap_or_default()
}

/// Parses an RFC 3339 timestamp into milliseconds.
pub fn parse_rfc3339(text: &str) -> Option<Millis> {
    let time = OffsetDateTime::parse(text, &Rfc3339).ok()?;
    Some((time.unix_timestamp_nanos() / 1_000_000) as Millis)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_round_trip_through_rfc3339() {
        let millis = 1_796_000_000_123;
        assert_eq!(parse_rfc3339(&rfc3339(millis)), Some(millis));
        assert_eq!(parse_rfc3339("yesterday"), None);
    }
}
