//! Every shape that crosses a process boundary, in one place: what clients send
//! ([`client`]), what the server sends them ([`frames`]; the frames a room encodes for
//! all of its connections are its own, in [`crate::rooms::frames`], and described here),
//! and what nodes say to each other over NATS ([`nats`]). Each names its audience.

pub mod client;
pub mod frames;
pub mod nats;

pub use client::parse_client_message;
