//! What nodes say to each other over NATS: a room request without its reply channel, the
//! reply, and a room's updates. Requests and answers are JSON, like everything else this
//! server speaks, so that `nats sub 'carcassonne.>'` shows an operator what is going on;
//! updates are the clients' own JSON texts, with what the stand-ins need in headers
//! (see [`Published`]).
//!
//! Seat tokens cross this wire only as hashes, except the fresh token of a seat just
//! taken or reclaimed, which the owner made and must hand to the node the player asked.

use crate::auth::Token;
use crate::error::AppError;
use crate::rooms::view::LobbyView;
use crate::rooms::{Connected, JoinedSeat, Outgoing, Reply, RoomRequest};
use async_nats::HeaderMap;
use axum::body::Bytes;
use axum::extract::ws::Utf8Bytes;
use carcassonne_bots::BotLevel;
use carcassonne_core::Move;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::{broadcast, oneshot};
use uuid::Uuid;

/// A [`RoomRequest`] as it travels to the room's owner.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Request {
    Join {
        name: String,
        player_id: Option<Uuid>,
        invite_code: Option<String>,
    },
    Leave {
        token_hash: String,
    },
    Start {
        token_hash: String,
        randomize_seats: bool,
    },
    Cancel {
        token_hash: String,
    },
    AddBot {
        token_hash: String,
        level: BotLevel,
        name: Option<String>,
    },
    RemoveBot {
        token_hash: String,
        seat: u8,
    },
    Resign {
        token_hash: String,
    },
    Abort {
        token_hash: String,
    },
    Reclaim {
        player_id: Uuid,
    },
    Connect {
        token_hash: Option<String>,
        invite_code: Option<String>,
        last_seq: Option<u64>,
    },
    Disconnect {
        token_hash: Option<String>,
    },
    Resync {
        token_hash: Option<String>,
        last_seq: Option<u64>,
    },
    Command {
        token_hash: String,
        id: String,
        expected_seq: u64,
        mv: Move,
    },
    /// The `seq` of the last update the owner published: a stand-in's check that none
    /// was lost on the way. Answered by the relay itself, without asking the room.
    PublishedSeq,
}

/// The owner's answer to a [`Request`].
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Answer {
    Done,
    Seat {
        seat: u8,
    },
    Joined {
        seat: u8,
        token: String,
        lobby: LobbyView,
    },
    /// The lobby as it stands after the request (a start).
    Lobby {
        lobby: LobbyView,
    },
    Connected {
        seat: Option<u8>,
        catch_up: Vec<Update>,
    },
    CatchUp {
        updates: Vec<Update>,
    },
    Seq {
        seq: u64,
    },
    Refused(RelayedError),
}

/// An [`AppError`] as the client would have seen it from the owner.
#[derive(Debug, Serialize, Deserialize)]
pub struct RelayedError {
    pub code: String,
    pub message: String,
    pub status: u16,
}

impl From<&AppError> for RelayedError {
    fn from(error: &AppError) -> RelayedError {
        RelayedError {
            code: error.code().to_owned(),
            message: error.to_string(),
            status: error.status().as_u16(),
        }
    }
}

impl From<RelayedError> for AppError {
    fn from(error: RelayedError) -> AppError {
        AppError::Relayed {
            code: error.code,
            message: error.message,
            status: error.status,
        }
    }
}

/// One [`Outgoing`] on the wire. `for_mover` is left out when it equals `for_others`.
#[derive(Debug, Serialize, Deserialize)]
pub struct Update {
    pub seq: Option<u64>,
    pub mover: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub for_mover: Option<String>,
    pub for_others: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reseated: Option<HashMap<String, u8>>,
    #[serde(default)]
    pub snapshot: bool,
    #[serde(default)]
    pub closing: bool,
}

impl From<&Outgoing> for Update {
    fn from(outgoing: &Outgoing) -> Update {
        let same = outgoing.for_mover == outgoing.for_others;
        Update {
            seq: outgoing.seq,
            mover: outgoing.mover.clone(),
            for_mover: (!same).then(|| outgoing.for_mover.as_str().to_owned()),
            for_others: outgoing.for_others.as_str().to_owned(),
            reseated: outgoing.reseated.as_deref().cloned(),
            snapshot: outgoing.snapshot,
            closing: outgoing.closing,
        }
    }
}

impl From<Update> for Outgoing {
    fn from(update: Update) -> Outgoing {
        let for_others = Utf8Bytes::from(update.for_others);
        Outgoing {
            seq: update.seq,
            mover: update.mover,
            for_mover: update
                .for_mover
                .map_or_else(|| for_others.clone(), Utf8Bytes::from),
            for_others,
            reseated: update.reseated.map(Arc::new),
            snapshot: update.snapshot,
            closing: update.closing,
            seq_check: false,
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
        let utf8 = |bytes: Bytes| Utf8Bytes::try_from(bytes).map_err(|e| e.to_string());
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
        let reseated = text(header::RESEATED)
            .map(|json| {
                serde_json::from_str::<HashMap<String, u8>>(&json).map_err(|e| e.to_string())
            })
            .transpose()?;
        Ok(Published::Update(Arc::new(Outgoing {
            seq: number(header::SEQ).transpose()?,
            mover: text(header::MOVER),
            for_mover,
            for_others,
            reseated: reseated.map(Arc::new),
            snapshot: headers.get(header::SNAPSHOT).is_some(),
            closing: headers.get(header::CLOSING).is_some(),
            seq_check: false,
        })))
    }
}

pub fn updates_of(outgoings: &[Arc<Outgoing>]) -> Vec<Update> {
    outgoings
        .iter()
        .map(|outgoing| Update::from(&**outgoing))
        .collect()
}

fn outgoings_of(updates: Vec<Update>) -> Vec<Arc<Outgoing>> {
    updates
        .into_iter()
        .map(|u| Arc::new(Outgoing::from(u)))
        .collect()
}

/// Splits a local request into what travels and the reply channel that waits for the
/// answer. `listen` is the local broadcast a `Connect` subscribes the caller to. None for
/// what concerns only this node (an unload).
pub fn split(
    request: RoomRequest,
    listen: &broadcast::Sender<Arc<Outgoing>>,
) -> Option<(Request, Option<Waiter>)> {
    use RoomRequest as R;
    let split = match request {
        R::Join {
            name,
            player_id,
            invite_code,
            reply,
        } => (
            Request::Join {
                name,
                player_id,
                invite_code,
            },
            Some(Waiter::Joined(reply)),
        ),
        R::Leave { token_hash, reply } => {
            (Request::Leave { token_hash }, Some(Waiter::Done(reply)))
        }
        R::Start {
            token_hash,
            randomize_seats,
            reply,
        } => (
            Request::Start {
                token_hash,
                randomize_seats,
            },
            Some(Waiter::Lobby(reply)),
        ),
        R::Cancel { token_hash, reply } => {
            (Request::Cancel { token_hash }, Some(Waiter::Done(reply)))
        }
        R::AddBot {
            token_hash,
            level,
            name,
            reply,
        } => (
            Request::AddBot {
                token_hash,
                level,
                name,
            },
            Some(Waiter::Seat(reply)),
        ),
        R::RemoveBot {
            token_hash,
            seat,
            reply,
        } => (
            Request::RemoveBot { token_hash, seat },
            Some(Waiter::Done(reply)),
        ),
        R::Resign { token_hash, reply } => {
            (Request::Resign { token_hash }, Some(Waiter::Done(reply)))
        }
        R::Abort { token_hash, reply } => {
            (Request::Abort { token_hash }, Some(Waiter::Done(reply)))
        }
        R::Reclaim { player_id, reply } => {
            (Request::Reclaim { player_id }, Some(Waiter::Joined(reply)))
        }
        R::Connect {
            token_hash,
            invite_code,
            last_seq,
            reply,
        } => {
            // Subscribed before the request leaves, so no update published after the
            // owner's answer can be missed; the connection drops what it already has.
            let updates = listen.subscribe();
            let request = Request::Connect {
                token_hash,
                invite_code,
                last_seq,
            };
            (request, Some(Waiter::Connected(reply, updates)))
        }
        R::Disconnect { token_hash } => (Request::Disconnect { token_hash }, None),
        R::Resync {
            token_hash,
            last_seq,
            reply,
        } => (
            Request::Resync {
                token_hash,
                last_seq,
            },
            Some(Waiter::CatchUp(reply)),
        ),
        R::Command {
            token_hash,
            id,
            expected_seq,
            mv,
            reply,
        } => (
            Request::Command {
                token_hash,
                id,
                expected_seq,
                mv,
            },
            Some(Waiter::Seq(reply)),
        ),
        R::Unload => return None,
    };
    Some(split)
}

/// A local caller waiting for the owner's [`Answer`].
pub enum Waiter {
    Done(Reply<()>),
    Seat(Reply<u8>),
    Joined(Reply<JoinedSeat>),
    Lobby(Reply<LobbyView>),
    Connected(Reply<Connected>, broadcast::Receiver<Arc<Outgoing>>),
    CatchUp(Reply<Vec<Arc<Outgoing>>>),
    Seq(Reply<u64>),
}

impl Waiter {
    /// Hands `answer` (or the failure to get one) to the caller.
    pub fn answer(self, answer: Result<Answer, AppError>) {
        let answer = answer.and_then(|answer| match answer {
            Answer::Refused(error) => Err(AppError::from(error)),
            other => Ok(other),
        });
        match self {
            Waiter::Done(reply) => send(reply, answer, |a| matches!(a, Answer::Done).then_some(())),
            Waiter::Seat(reply) => send(reply, answer, |a| match a {
                Answer::Seat { seat } => Some(seat),
                _ => None,
            }),
            Waiter::Joined(reply) => send(reply, answer, |a| match a {
                Answer::Joined { seat, token, lobby } => Some(JoinedSeat {
                    seat,
                    token: Token::from_client(token),
                    lobby,
                }),
                _ => None,
            }),
            Waiter::Lobby(reply) => send(reply, answer, |a| match a {
                Answer::Lobby { lobby } => Some(lobby),
                _ => None,
            }),
            Waiter::Connected(reply, updates) => send(reply, answer, |a| match a {
                Answer::Connected { seat, catch_up } => Some(Connected {
                    seat,
                    catch_up: outgoings_of(catch_up),
                    updates,
                }),
                _ => None,
            }),
            Waiter::CatchUp(reply) => send(reply, answer, |a| match a {
                Answer::CatchUp { updates } => Some(outgoings_of(updates)),
                _ => None,
            }),
            Waiter::Seq(reply) => send(reply, answer, |a| match a {
                Answer::Seq { seq } => Some(seq),
                _ => None,
            }),
        }
    }
}

/// Sends the expected kind of answer, or an internal error for one of another kind (a
/// node of another version).
fn send<T>(
    reply: oneshot::Sender<Result<T, AppError>>,
    answer: Result<Answer, AppError>,
    expected: impl FnOnce(Answer) -> Option<T>,
) {
    let outcome = answer.and_then(|answer| {
        expected(answer).ok_or_else(|| {
            tracing::error!("a node answered a request with the wrong kind of answer");
            AppError::Internal
        })
    });
    let _ = reply.send(outcome);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_update_crosses_the_wire_unchanged() {
        let mut outgoing = Outgoing::plain(Some(7), r#"{"type":"update","seq":7}"#.into());
        outgoing.mover = Some("hash".into());
        outgoing.for_mover = Utf8Bytes::from(r#"{"type":"update","seq":7,"legal_moves":{}}"#);
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
        let outgoing = Outgoing::plain(None, r#"{"type":"presence"}"#.into());
        let text = serde_json::to_string(&Update::from(&outgoing)).unwrap();
        assert_eq!(text.matches("presence").count(), 1, "{text}");
        let back = Outgoing::from(serde_json::from_str::<Update>(&text).unwrap());
        assert_eq!(back.for_mover, back.for_others);
    }

    #[test]
    fn a_refusal_reaches_the_client_as_the_owner_gave_it() {
        let error = AppError::StaleSeq {
            expected: 3,
            current: 5,
        };
        let text = serde_json::to_string(&Answer::Refused((&error).into())).unwrap();
        let (reply, answer) = oneshot::channel::<Result<u64, AppError>>();
        Waiter::Seq(reply).answer(Ok(serde_json::from_str(&text).unwrap()));
        let relayed = answer.blocking_recv().unwrap().unwrap_err();
        assert_eq!(relayed.code(), "stale_seq");
        assert_eq!(relayed.status(), error.status());
        assert_eq!(relayed.to_string(), error.to_string());
    }

    #[test]
    fn an_answer_of_the_wrong_kind_is_an_internal_error() {
        let (reply, answer) = oneshot::channel::<Result<u64, AppError>>();
        Waiter::Seq(reply).answer(Ok(Answer::Done));
        assert_eq!(answer.blocking_recv().unwrap(), Err(AppError::Internal));
    }
}
