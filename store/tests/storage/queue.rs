//! Quick play's tickets: one waiting ticket per player, a bounded queue, and rounds that
//! match each ticket exactly once, writing its lobby in the same transaction.

use carcassonne_core::Rules;
use carcassonne_store::{
    MatchPlanner, QueueTicket, QueuedLobby, Store, StoreError, TicketStatus, TimeControl,
};
use uuid::Uuid;

use crate::common::{Context, EPOCH, open_lobby, player, seat};

async fn ticket_for(store: &Store, name: &str, created_at: i64) -> QueueTicket {
    let row = player(name);
    store.create_player(&row).await.unwrap();
    QueueTicket {
        id: Uuid::new_v4(),
        player_id: row.id,
        token_hash: format!("{:064}", 0),
        display_name: name.to_owned(),
        min_players: 2,
        max_players: 2,
        rules: Rules::default(),
        clock: TimeControl::None,
        rated: false,
        match_key: "base".to_owned(),
        rating: 25.0,
        created_at,
        expires_at: created_at + 60_000,
        status: TicketStatus::Waiting,
        lobby_id: None,
        seat: None,
    }
}

/// Pairs the tickets in the order given, each pair a two-seat lobby.
fn pairs() -> MatchPlanner {
    Box::new(|tickets: &[QueueTicket]| {
        tickets
            .chunks_exact(2)
            .map(|pair| {
                let mut lobby = open_lobby("quick", EPOCH);
                lobby.seat_count = 2;
                let seats = pair
                    .iter()
                    .enumerate()
                    .map(|(number, ticket)| {
                        seat(number as u8, &ticket.display_name, Some(ticket.player_id))
                    })
                    .collect();
                let tickets = pair
                    .iter()
                    .enumerate()
                    .map(|(number, ticket)| (ticket.id, number as u8))
                    .collect();
                QueuedLobby {
                    lobby,
                    seats,
                    tickets,
                }
            })
            .collect()
    })
}

backend_tests! {
    async fn a_player_waits_with_one_ticket_in_a_bounded_queue(context: Context) {
        let store = &context.store;
        let first = ticket_for(store, "ann", EPOCH).await;
        assert!(store.enqueue(&first, 10).await.unwrap());
        let again = QueueTicket { id: Uuid::new_v4(), ..first.clone() };
        assert!(matches!(store.enqueue(&again, 10).await, Err(StoreError::Conflict(_))));
        let other = ticket_for(store, "bob", EPOCH).await;
        assert!(!store.enqueue(&other, 1).await.unwrap(), "the queue holds one ticket");
        assert_eq!(store.queue_ticket(other.id).await.unwrap(), None);

        assert!(store.cancel_ticket(first.id).await.unwrap());
        assert!(!store.cancel_ticket(first.id).await.unwrap(), "cancelled already");
        let stored = store.queue_ticket(first.id).await.unwrap().unwrap();
        assert_eq!(stored.status, TicketStatus::Cancelled);
        assert!(store.enqueue(&again, 10).await.unwrap(), "no ticket waits any more");
    }

    async fn a_round_writes_its_lobbies_and_matches_their_tickets(context: Context) {
        let store = &context.store;
        let mut tickets = Vec::new();
        for (index, name) in ["ann", "bob", "cid"].iter().enumerate() {
            let ticket = ticket_for(store, name, EPOCH + index as i64).await;
            store.enqueue(&ticket, 10).await.unwrap();
            tickets.push(ticket);
        }
        let round = store.queue_round(EPOCH + 1_000, 100, pairs()).await.unwrap();
        assert!(round.ran);
        assert_eq!(round.lobbies.len(), 1);
        let lobby = &round.lobbies[0].lobby;
        let (stored, seats) = store.lobby(lobby.id).await.unwrap().expect("the lobby is written");
        assert_eq!(stored.seat_count, 2);
        assert_eq!(seats.len(), 2);
        for (ticket, expected_seat) in tickets.iter().take(2).zip(0..) {
            let matched = store.queue_ticket(ticket.id).await.unwrap().unwrap();
            assert_eq!(matched.status, TicketStatus::Matched);
            assert_eq!((matched.lobby_id, matched.seat), (Some(lobby.id), Some(expected_seat)));
            assert!(!store.cancel_ticket(ticket.id).await.unwrap(), "a matched ticket stays");
        }
        let third = store.queue_ticket(tickets[2].id).await.unwrap().unwrap();
        assert_eq!(third.status, TicketStatus::Waiting, "an odd one out waits on");

        let later = store.queue_round(EPOCH + 61_000, 100, pairs()).await.unwrap();
        assert_eq!((later.expired, later.lobbies.len()), (1, 0));
        let expired = store.queue_ticket(tickets[2].id).await.unwrap().unwrap();
        assert_eq!(expired.status, TicketStatus::Expired);
    }

    async fn a_round_that_seats_a_ticket_it_did_not_take_writes_nothing(context: Context) {
        let store = &context.store;
        let waiting = ticket_for(store, "ann", EPOCH).await;
        store.enqueue(&waiting, 10).await.unwrap();
        let stranger = ticket_for(store, "bob", EPOCH).await;
        let planner: MatchPlanner = Box::new(move |taken: &[QueueTicket]| {
            let mut lobby = open_lobby("quick", EPOCH);
            lobby.seat_count = 2;
            vec![QueuedLobby {
                seats: vec![seat(0, "ann", Some(taken[0].player_id)), seat(1, "bob", None)],
                tickets: vec![(taken[0].id, 0), (stranger.id, 1)],
                lobby,
            }]
        });
        let failed = store.queue_round(EPOCH, 100, planner).await;
        assert!(matches!(failed, Err(StoreError::Conflict(_))), "{failed:?}");
        assert_eq!(context.count("SELECT COUNT(*) FROM lobbies").await, 0);
        let still = store.queue_ticket(waiting.id).await.unwrap().unwrap();
        assert_eq!(still.status, TicketStatus::Waiting);
    }

    async fn concurrent_rounds_match_every_ticket_exactly_once(context: Context) {
        let store = &context.store;
        for index in 0..40 {
            let ticket = ticket_for(store, &format!("p{index}"), EPOCH + index).await;
            store.enqueue(&ticket, 100).await.unwrap();
        }
        let other = context.reopen().await;
        let rounds: Vec<_> = (0..8)
            .map(|index| {
                let store = if index % 2 == 0 { store.clone() } else { other.clone() };
                tokio::spawn(async move {
                    // Until a round that ran found nothing left to pair (a round may
                    // also not run: another one holds the turn).
                    let mut formed = 0;
                    for _ in 0..500 {
                        let round = store.queue_round(EPOCH, 6, pairs()).await.unwrap();
                        if round.ran && round.lobbies.is_empty() {
                            break;
                        }
                        formed += round.lobbies.len();
                    }
                    formed
                })
            })
            .collect();
        let mut formed = 0;
        for round in rounds {
            formed += round.await.unwrap();
        }
        assert_eq!(formed, 20, "40 tickets, 20 games");
        let matched = context
            .count("SELECT COUNT(*) FROM queue_tickets WHERE status = 'matched'")
            .await;
        assert_eq!(matched, 40);
        let seats = context.count("SELECT COUNT(*) FROM seats").await;
        assert_eq!(seats, 40, "every ticket seated once");
        let players = context
            .count("SELECT COUNT(DISTINCT player_id) FROM seats")
            .await;
        assert_eq!(players, 40, "no player seated twice");
    }
}
