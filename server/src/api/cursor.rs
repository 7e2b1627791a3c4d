//! Page cursors: what a list hands out as `next_cursor` and takes back as `cursor`.
//!
//! Each list writes its position as short text (the match history `finished_at:id`, a
//! leaderboard `rating-bits:player`, a rating history its ledger number); clients get it
//! base64url-encoded, so that they treat it as opaque, and anything that does not decode
//! is one `bad_request`.

use crate::error::AppError;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// The cursor a client is given for a position written as `text`.
pub fn encode(text: &str) -> String {
    URL_SAFE_NO_PAD.encode(text)
}

/// The position text of a cursor this server gave out.
pub fn decode(cursor: &str) -> Result<String, AppError> {
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| bad_cursor())?;
    String::from_utf8(bytes).map_err(|_| bad_cursor())
}

/// The answer to a cursor whose text does not parse as the list's position.
pub fn bad_cursor() -> AppError {
    AppError::BadRequest("the cursor is not one this server gave out".into())
}
