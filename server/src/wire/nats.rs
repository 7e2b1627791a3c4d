//! What nodes say to each other over NATS: room requests and their answers (the room
//! contract's own [`Request`] and [`Answer`], as JSON, so that `nats sub 'carcassonne.>'`
//! shows an operator what is going on), and a room's updates, which are the clients' own
//! JSON texts with what the stand-ins need in headers (see [`Published`]).
//!
//! Seat tokens cross this wire only as hashes, except the fresh token of a seat just
//! taken or reclaimed, which the owner made and must hand to the node the player asked.

use crate::error::AppError;
use crate::rooms::chat::Author;
use crate::rooms::error::RoomError;
use crate::rooms::outgoing::Audience;
use crate::rooms::{Answer, Outgoing, Request, Text};
use async_nats::HeaderMap;
use axum::body::Bytes;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;

/// What a node sends a game's owner: a request for the room, or the relay's own question.
#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ToOwner {
    Room(Request),
    Relay(RelayQuestion),
}

/// Asked of the owner's relay, never of the room.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RelayQuestion {
    /// The `seq` of the last update the owner published: a stand-in's check that none
    /// was lost on the way. Answered with [`Answer::Seq`].
    PublishedSeq,
}

/// The owner's reply: its room's answer, or the refusal the client would have had from
/// the owner.
#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub enum FromOwner {
    Answer(Box<Answer>),
    Refused(Refusal),
}

/// An [`AppError`] as the client would have seen it from the owner.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename = "refused")]
pub struct Refusal {
    pub code: String,
    pub message: String,
    pub status: u16,
}

impl From<Result<Answer, RoomError>> for FromOwner {
    fn from(outcome: Result<Answer, RoomError>) -> FromOwner {
        match outcome {
            Ok(answer) => FromOwner::Answer(Box::new(answer)),
            Err(refusal) => {
                let error = AppError::Room(refusal);
                FromOwner::Refused(Refusal {
                    code: error.code().to_owned(),
                    message: error.to_string(),
                    status: error.status().as_u16(),
                })
            }
        }
    }
}

impl From<FromOwner> for Result<Answer, RoomError> {
    fn from(reply: FromOwner) -> Result<Answer, RoomError> {
        match reply {
            FromOwner::Answer(answer) => Ok(*answer),
            FromOwner::Refused(refusal) => Err(RoomError::Relayed {
                code: refusal.code,
                message: refusal.message,
                status: refusal.status,
            }),
        }
    }
}

/// What the owner publishes on a game's update subject.
///
/// Unlike requests and answers, these are not JSON: every update goes out on this path,
/// and wrapping its two texts (themselves JSON) in JSON would cost escaping them on the
/// owner and parsing them on every other node. The texts are the payload, one after the
/// other, and the rest goes in NATS headers.
#[derive(Debug)]
pub enum Published {
    /// One update of the room, in `seq` order.
    Update(Arc<Outgoing>),
    /// The room ended (finished or cancelled) and left its owner's memory.
    Ended,
    /// The game has, or is about to have, a new owner (a node took it over from its log,
    /// or its room stopped here without ending it): connections elsewhere reconnect so
    /// that the owner knows them.
    TakenOver,
}

mod header {
    pub const KIND: &str = "Carcassonne-Kind";
    pub const SEQ: &str = "Carcassonne-Seq";
    pub const MOVER: &str = "Carcassonne-Mover";
    /// The length of the mover's text at the start of the payload, when it has one of
    /// its own.
    pub const MOVER_BYTES: &str = "Carcassonne-Mover-Bytes";
    pub const RESEATED: &str = "Carcassonne-Reseated";
    pub const SNAPSHOT: &str = "Carcassonne-Snapshot";
    pub const CLOSING: &str = "Carcassonne-Closing";
    /// Who may receive it, when not everyone (JSON).
    pub const AUDIENCE: &str = "Carcassonne-Audience";
    /// A chat entry's mark (JSON).
    pub const CHAT: &str = "Carcassonne-Chat";
    /// A seat's new mute list (JSON).
    pub const MUTES: &str = "Carcassonne-Mutes";
}

impl Published {
    /// The headers and payload of this message.
    pub fn encode(&self) -> (HeaderMap, Bytes) {
        let mut headers = HeaderMap::new();
        let outgoing = match self {
            Published::Ended => {
                headers.insert(header::KIND, "ended");
                return (headers, Bytes::new());
            }
            Published::TakenOver => {
                headers.insert(header::KIND, "taken_over");
                return (headers, Bytes::new());
            }
            Published::Update(outgoing) => outgoing,
        };
        headers.insert(header::KIND, "update");
        if let Some(seq) = outgoing.seq {
            headers.insert(header::SEQ, seq.to_string());
        }
        if let Some(mover) = &outgoing.mover {
            headers.insert(header::MOVER, mover.as_str());
        }
        if let Some(reseated) = &outgoing.reseated {
            let reseated = serde_json::to_string(&**reseated).expect("serializable");
            headers.insert(header::RESEATED, reseated);
        }
        insert_json(&mut headers, header::CHAT, outgoing.chat.as_ref());
        insert_json(&mut headers, header::MUTES, outgoing.mutes.as_deref());
        let audience = Some(&outgoing.audience).filter(|a| **a != Audience::Everyone);
        insert_json(&mut headers, header::AUDIENCE, audience);
        for (flag, name) in [
            (outgoing.snapshot, header::SNAPSHOT),
            (outgoing.closing, header::CLOSING),
        ] {
            if flag {
                headers.insert(name, "1");
            }
        }
        let (mover, others) = (
            outgoing.for_mover.as_bytes(),
            outgoing.for_others.as_bytes(),
        );
        if mover == others {
            return (headers, Bytes::copy_from_slice(others));
        }
        headers.insert(header::MOVER_BYTES, mover.len().to_string());
        let mut payload = Vec::with_capacity(mover.len() + others.len());
        payload.extend_from_slice(mover);
        payload.extend_from_slice(others);
        (headers, Bytes::from(payload))
    }

    /// Reads what [`Published::encode`] wrote.
    pub fn decode(headers: Option<&HeaderMap>, payload: Bytes) -> Result<Published, String> {
        let headers = headers.ok_or("no headers")?;
        let text = |name: &str| headers.get(name).map(|value| value.as_str().to_owned());
        match text(header::KIND).as_deref() {
            Some("ended") => return Ok(Published::Ended),
            Some("taken_over") => return Ok(Published::TakenOver),
            Some("update") => {}
            other => return Err(format!("unknown kind {other:?}")),
        }
        let number =
            |name: &str| text(name).map(|n| n.parse::<u64>().map_err(|e| format!("{name}: {e}")));
        let utf8 = |bytes: Bytes| Text::try_from(bytes).map_err(|e| e.to_string());
        let (for_mover, for_others) = match number(header::MOVER_BYTES).transpose()? {
            Some(split) if split as usize <= payload.len() => {
                let mut others = payload;
                let mover = others.split_to(split as usize);
                (utf8(mover)?, utf8(others)?)
            }
            Some(split) => {
                return Err(format!(
                    "a mover's text of {split} bytes in a shorter payload"
                ));
            }
            None => {
                let text = utf8(payload)?;
                (text.clone(), text)
            }
        };
        let reseated: Option<HashMap<String, u8>> = read_header(headers, header::RESEATED)?;
        Ok(Published::Update(Arc::new(Outgoing {
            seq: number(header::SEQ).transpose()?,
            mover: text(header::MOVER),
            for_mover,
            for_others,
            reseated: reseated.map(Arc::new),
            snapshot: headers.get(header::SNAPSHOT).is_some(),
            closing: headers.get(header::CLOSING).is_some(),
            seq_check: false,
            audience: read_header(headers, header::AUDIENCE)?.unwrap_or_default(),
            chat: read_header(headers, header::CHAT)?,
            mutes: read_header::<Vec<Author>>(headers, header::MUTES)?.map(Arc::new),
        })))
    }
}

fn insert_json<T: Serialize + ?Sized>(
    headers: &mut HeaderMap,
    name: &'static str,
    value: Option<&T>,
) {
    if let Some(value) = value {
        headers.insert(name, serde_json::to_string(value).expect("serializable"));
    }
}

/// A header holding JSON, if present.
fn read_header<T: serde::de::DeserializeOwned>(
    headers: &HeaderMap,
    name: &str,
) -> Result<Option<T>, String> {
    let Some(value) = headers.get(name) else {
        return Ok(None);
    };
    serde_json::from_str(value.as_str()).map_err(|e| format!("{name}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rooms::Expected;

    #[test]
    fn an_update_crosses_the_wire_unchanged() {
        let mut outgoing = Outgoing::plain(Some(7), r#"{"type":"update","seq":7}"#.into());
        outgoing.mover = Some("hash".into());
        outgoing.for_mover = Text::from(r#"{"type":"update","seq":7,"legal_moves":{}}"#);
        outgoing.reseated = Some(Arc::new(HashMap::from([("hash".to_owned(), 1)])));
        let outgoing = Arc::new(outgoing);
        let (headers, payload) = Published::Update(outgoing.clone()).encode();
        let Ok(Published::Update(back)) = Published::decode(Some(&headers), payload) else {
            panic!("an update");
        };
        assert_eq!(back.seq, Some(7));
        assert_eq!(back.mover.as_deref(), Some("hash"));
        assert_eq!(back.for_mover, outgoing.for_mover);
        assert_eq!(back.for_others, outgoing.for_others);
        assert_eq!(back.reseated.as_deref(), outgoing.reseated.as_deref());
        assert!(!back.snapshot && !back.closing);
        assert_eq!(back.audience, Audience::Everyone);
    }

    #[test]
    fn a_chat_entry_keeps_its_audience_mark_and_mutes_across_the_wire() {
        use crate::rooms::outgoing::ChatMark;
        let mut outgoing = Outgoing::plain(None, r#"{"type":"chat"}"#.into());
        outgoing.audience = Audience::Seat(2);
        outgoing.chat = Some(ChatMark {
            chat_seq: 9,
            at: 5,
            author: Some(Author::Seat(1)),
        });
        outgoing.mutes = Some(Arc::new(vec![Author::Seat(1)]));
        let (headers, payload) = Published::Update(Arc::new(outgoing)).encode();
        let Ok(Published::Update(back)) = Published::decode(Some(&headers), payload) else {
            panic!("an update");
        };
        assert_eq!(back.audience, Audience::Seat(2));
        assert_eq!(back.chat.map(|mark| mark.chat_seq), Some(9));
        assert_eq!(back.mutes.as_deref(), Some(&vec![Author::Seat(1)]));
    }

    #[test]
    fn the_end_and_a_take_over_cross_the_wire() {
        let (headers, payload) = Published::Ended.encode();
        let ended = Published::decode(Some(&headers), payload);
        assert!(matches!(ended, Ok(Published::Ended)), "{ended:?}");
        let (headers, payload) = Published::TakenOver.encode();
        let taken = Published::decode(Some(&headers), payload);
        assert!(matches!(taken, Ok(Published::TakenOver)), "{taken:?}");
        let garbled = Published::decode(None, Bytes::from_static(b"{}"));
        assert!(garbled.is_err());
    }

    #[test]
    fn the_same_text_for_everyone_travels_once() {
        let outgoing = Outgoing::plain(Some(3), r#"{"type":"update"}"#.into());
        let (headers, payload) = Published::Update(Arc::new(outgoing)).encode();
        assert_eq!(payload.len(), r#"{"type":"update"}"#.len());
        let Ok(Published::Update(back)) = Published::decode(Some(&headers), payload) else {
            panic!("an update");
        };
        assert_eq!(back.for_mover, back.for_others);
        assert_eq!(back.seq, Some(3));
    }

    #[test]
    fn the_same_answer_text_for_everyone_travels_once() {
        let outgoing = Arc::new(Outgoing::plain(None, r#"{"type":"presence"}"#.into()));
        let answer = FromOwner::from(Ok(Answer::CatchUp {
            updates: vec![outgoing],
        }));
        let text = serde_json::to_string(&answer).unwrap();
        assert_eq!(text.matches("presence").count(), 1, "{text}");
        let reply: FromOwner = serde_json::from_str(&text).unwrap();
        let updates = Result::<Answer, RoomError>::from(reply).unwrap();
        let back = Vec::<Arc<Outgoing>>::from_answer(updates).unwrap();
        assert_eq!(back[0].for_mover, back[0].for_others);
    }

    #[test]
    fn a_refusal_reaches_the_client_as_the_owner_gave_it() {
        let error = RoomError::StaleSeq {
            expected: 3,
            current: 5,
        };
        let text = serde_json::to_string(&FromOwner::from(Err(error.clone()))).unwrap();
        assert!(text.starts_with(r#"{"type":"refused","#), "{text}");
        let reply: FromOwner = serde_json::from_str(&text).unwrap();
        let relayed = Result::<Answer, RoomError>::from(reply).unwrap_err();
        let (relayed, error) = (AppError::Room(relayed), AppError::Room(error));
        assert_eq!(relayed.code(), "stale_seq");
        assert_eq!(relayed.status(), error.status());
        assert_eq!(relayed.to_string(), error.to_string());
    }

    #[test]
    fn the_relay_question_is_not_taken_for_a_room_request() {
        let text = serde_json::to_string(&ToOwner::Relay(RelayQuestion::PublishedSeq)).unwrap();
        assert_eq!(text, r#"{"type":"published_seq"}"#);
        let back: ToOwner = serde_json::from_str(&text).unwrap();
        assert!(matches!(back, ToOwner::Relay(RelayQuestion::PublishedSeq)));
        let leave = r#"{"type":"leave","token_hash":"h"}"#;
        let back: ToOwner = serde_json::from_str(leave).unwrap();
        assert!(
            matches!(back, ToOwner::Room(Request::Leave { .. })),
            "{back:?}"
        );
    }
}
