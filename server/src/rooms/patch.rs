//! Patches built from the typed public state: what changed between two versions, as
//! RFC 6902 operations, without building either version as a JSON tree or diffing trees.
//!
//! The state's shape says how each part changes, so each part is compared the way it
//! moves: the board and the discarded tiles only grow, so new tiles are appended (`-`);
//! figures are placed at the end and taken off anywhere; a new turn replaces the turn
//! whole; scores, supplies and clocks change item by item; the rest is replaced when it
//! differs. Whatever does not change the expected way (the seats renumbered at the start)
//! is replaced whole, which is always right, only longer. Only the parts that changed are
//! serialized. The tests check on a thousand random games that applying the patch always
//! gives exactly the new state, and, against the general JSON diff, that the patch only
//! touches what changed.

use crate::rooms::view::{ClockView, GameView, PublicState, TurnView};
use carcassonne_core::Supply;
use carcassonne_store::LobbyStatus;
use serde::Serialize;
use serde_json::value::{RawValue, to_raw_value};
use utoipa::ToSchema;

/// One operation of an RFC 6902 JSON Patch.
// Its value is kept as the JSON text it is sent as: building it as a `serde_json::Value`
// tree first cost an allocation per key and string.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[schema(as = PatchOperation)]
pub struct Operation {
    #[schema(inline)]
    op: Op,
    /// A JSON Pointer into the public state.
    path: String,
    /// For `add` and `replace`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = serde_json::Value)]
    value: Option<Box<RawValue>>,
}

// The operations a patch of the public state uses; the schema lists only these.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
enum Op {
    Add,
    Remove,
    Replace,
}

/// The operations that turn `before` into `after`.
pub fn patch_between(before: &PublicState, after: &PublicState) -> Vec<Operation> {
    let mut patch = PatchBuilder::default();
    patch.field("/name", &before.name, &after.name);
    patch.field("/status", &before.status, &after.status);
    patch.field("/public", &before.public, &after.public);
    patch.field("/rules", &before.rules, &after.rules);
    patch.field("/time_control", &before.time_control, &after.time_control);
    patch.field("/seat_count", &before.seat_count, &after.seat_count);
    patch.item_by_item("/seats", &before.seats, &after.seats);
    patch.field(
        "/deck_commitment",
        &before.deck_commitment,
        &after.deck_commitment,
    );
    patch.game_part(before.game.as_ref(), after.game.as_ref());
    patch.operations
}

/// The operations of a move, which changes only the status and the game: from `status`
/// and `game` before it to `after`. The same as [`patch_between`] gives when nothing
/// else differs.
pub fn patch_of_move(
    status: LobbyStatus,
    game: Option<&GameView>,
    after: &PublicState,
) -> Vec<Operation> {
    let mut patch = PatchBuilder::default();
    patch.field("/status", &status, &after.status);
    patch.game_part(game, after.game.as_ref());
    patch.operations
}

#[derive(Default)]
struct PatchBuilder {
    operations: Vec<Operation>,
}

impl PatchBuilder {
    fn game_part(&mut self, before: Option<&GameView>, after: Option<&GameView>) {
        match (before, after) {
            (Some(before), Some(after)) => self.game(before, after),
            (before, after) => self.field("/game", &before, &after),
        }
    }

    fn game(&mut self, before: &GameView, after: &GameView) {
        self.appended("/game/board", &before.board, &after.board);
        self.kept_then_appended("/game/figures", &before.figures, &after.figures);
        self.item_by_item("/game/scores", &before.scores, &after.scores);
        self.supplies(&before.supplies, &after.supplies);
        self.turn(before.turn.as_ref(), after.turn.as_ref());
        self.appended("/game/discarded", &before.discarded, &after.discarded);
        self.field("/game/result", &before.result, &after.result);
        self.clock(before.clock.as_ref(), after.clock.as_ref());
    }

    /// The same turn moves on by its phase; any other change is a new turn.
    fn turn(&mut self, before: Option<&TurnView>, after: Option<&TurnView>) {
        match (before, after) {
            (Some(before), Some(after))
                if (before.player, before.tile, before.tiles_left)
                    == (after.player, after.tile, after.tiles_left) =>
            {
                self.field("/game/turn/phase", &before.phase, &after.phase);
            }
            (before, after) => self.field("/game/turn", &before, &after),
        }
    }

    fn supplies(&mut self, before: &[Supply], after: &[Supply]) {
        if before.len() != after.len() {
            return self.replace("/game/supplies".into(), &after);
        }
        for (seat, (before, after)) in before.iter().zip(after).enumerate() {
            // Paths are written only for what changed: a move changes one count at most,
            // and formatting all of them on every move showed in the profile.
            let counts = [
                ("follower", before.follower, after.follower),
                ("big", before.big, after.big),
                ("abbot", before.abbot, after.abbot),
            ];
            for (kind, before, after) in counts {
                if before != after {
                    self.replace(format!("/game/supplies/{seat}/{kind}"), &after);
                }
            }
        }
    }

    fn clock(&mut self, before: Option<&ClockView>, after: Option<&ClockView>) {
        match (before, after) {
            (Some(before), Some(after)) => {
                let (reserves_before, reserves_after) = (&before.reserve_ms, &after.reserve_ms);
                self.item_by_item("/game/clock/reserve_ms", reserves_before, reserves_after);
                self.field("/game/clock/turn", &before.turn, &after.turn);
            }
            (before, after) => self.field("/game/clock", &before, &after),
        }
    }

    /// Replaces the value at `path` when it differs.
    fn field<T: PartialEq + Serialize>(&mut self, path: &str, before: &T, after: &T) {
        if before != after {
            self.replace(path.to_owned(), after);
        }
    }

    /// A list that only grows: its new items appended; otherwise replaced whole.
    fn appended<T: PartialEq + Serialize>(&mut self, path: &str, before: &[T], after: &[T]) {
        match after.strip_prefix(before) {
            Some(new) => {
                for item in new {
                    self.push(Op::Add, format!("{path}/-"), Some(item));
                }
            }
            None => self.replace(path.to_owned(), &after),
        }
    }

    /// A list of the same length: each changed item replaced; otherwise replaced whole.
    fn item_by_item<T: PartialEq + Serialize>(&mut self, path: &str, before: &[T], after: &[T]) {
        if before.len() != after.len() {
            return self.appended(path, before, after);
        }
        for (index, (before, after)) in before.iter().zip(after).enumerate() {
            if before != after {
                self.replace(format!("{path}/{index}"), after);
            }
        }
    }

    /// A list whose items are taken off anywhere and added at the end: the removals
    /// (from the last, so that indexes stay valid), then the additions. When `after` is
    /// not of that form, the list is replaced whole.
    fn kept_then_appended<T: PartialEq + Serialize>(
        &mut self,
        path: &str,
        before: &[T],
        after: &[T],
    ) {
        if before == after {
            return;
        }
        let kept: Vec<bool> = before.iter().map(|item| after.contains(item)).collect();
        let mut kept_items = before.iter().zip(&kept).filter(|(_, kept)| **kept);
        let kept_count = kept.iter().filter(|kept| **kept).count();
        let prefix_matches = after.len() >= kept_count
            && after[..kept_count]
                .iter()
                .all(|item| kept_items.next().is_some_and(|(kept, _)| kept == item));
        if !prefix_matches {
            return self.replace(path.to_owned(), &after);
        }
        for index in (0..before.len()).rev().filter(|&index| !kept[index]) {
            self.push::<()>(Op::Remove, format!("{path}/{index}"), None);
        }
        for item in &after[kept_count..] {
            self.push(Op::Add, format!("{path}/-"), Some(item));
        }
    }

    fn replace<T: Serialize + ?Sized>(&mut self, path: String, value: &T) {
        self.push(Op::Replace, path, Some(value));
    }

    fn push<T: Serialize + ?Sized>(&mut self, op: Op, path: String, value: Option<&T>) {
        let value = value.map(|value| to_raw_value(value).expect("states serialize"));
        self.operations.push(Operation { op, path, value });
    }
}
