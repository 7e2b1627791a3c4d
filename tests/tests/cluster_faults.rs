//! Cluster mode under the faults that once misled clients, each from outside as an
//! operator would cause it: an owner frozen (SIGSTOP) while its write is in flight, an
//! update published while NATS restarts, a shutdown while NATS is away, and a single
//! node pointed at a live cluster's database.

use carcassonne_tests::client::{Api, WsClient};
use carcassonne_tests::cluster::{move_log, nats_or_skip, start_node, start_node_on};
use carcassonne_tests::database::TestDatabase;
use carcassonne_tests::nats::TestNats;
use carcassonne_tests::proxy::TcpProxy;
use carcassonne_tests::server::TestServer;
use carcassonne_tests::table::Table;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// Short leases, so that a frozen owner's games are taken over within seconds.
const LEASE_TTL: &str = "2s";

fn tag() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..8].to_owned()
}

/// Two nodes on a fresh Postgres database and a NATS server of the test's own (to stop
/// and start again), or None when either is missing and not required.
struct TwoNodes {
    database: TestDatabase,
    nats: TestNats,
    n1: TestServer,
    n2: TestServer,
}

async fn two_nodes_on_their_own_nats(prefix: &str) -> Option<TwoNodes> {
    let database = TestDatabase::postgres_or_skip()?;
    let nats = TestNats::start_or_skip()?;
    let (url, tag) = (database.url(), tag());
    let n1 = start_node_on(&url, &nats.url(), &format!("{prefix}-{tag}-1"), LEASE_TTL).await;
    let n2 = start_node_on(&url, &nats.url(), &format!("{prefix}-{tag}-2"), LEASE_TTL).await;
    Some(TwoNodes {
        database,
        nats,
        n1,
        n2,
    })
}

/// Connects `token`'s player (or a spectator) to `server` and says hello, again and
/// again until the server serves the game (a node may first answer "reconnect shortly"
/// while the game's owner is frozen and its lease not yet lapsed), resuming from what
/// `old` knew.
async fn join_when_served(
    server: &TestServer,
    game: &str,
    token: Option<&str>,
    old: &WsClient,
) -> WsClient {
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        assert!(
            Instant::now() < deadline,
            "{game} was never served by {}",
            server.address
        );
        if let Ok(mut client) = WsClient::try_connect(&server.ws_url(game)).await {
            client.state = old.state.clone();
            client.legal_moves = old.legal_moves.clone();
            let welcome = client.hello(token, old.seq).await;
            if welcome["type"] == "welcome" {
                return client;
            }
            let code = &welcome["error"]["code"];
            assert!(
                code == "shutting_down" || code == "storage_unavailable",
                "{welcome}"
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Plays until seat 0 is to move with at least two legal moves to choose from.
async fn play_until_seat_zero_chooses(table: &mut Table) -> (Value, Value) {
    for _ in 0..60 {
        let legal = table.players[0].legal_moves.clone().unwrap_or_default();
        if table.mover() == Some(0) && legal.len() >= 2 {
            return (legal[0].clone(), legal[1].clone());
        }
        table.play_one().await;
    }
    panic!("seat 0 never had a choice");
}

/// The fork: node n1 owns a game and reaches Postgres slowly. Seat 0 sends move
/// X and n1 freezes with the write in flight. n1's lease lapses, n2 takes the game over,
/// and seat 0 plays move Y there, acknowledged at the `seq` X would have had; seat 0
/// also resends Y's command to n1, as a retrying client would. When n1 resumes, its
/// write of X has timed out; the stored `seq` has reached X's, but the move there is Y.
/// n1 must not acknowledge X, must not broadcast it, must not refuse Y as stale: it
/// must tell its clients to go elsewhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_owner_never_acks_or_broadcasts_a_move_it_cannot_prove() {
    let Some(database) = TestDatabase::postgres_or_skip() else {
        return;
    };
    if !nats_or_skip() {
        return;
    }
    let proxy = TcpProxy::start("127.0.0.1:5432".parse().unwrap()).await;
    let tag = tag();
    let slow_url = database.url_through_port(proxy.port);
    let n1 = start_node(&slow_url, &format!("fork-{tag}-1"), LEASE_TTL).await;
    let n2 = start_node(&database.url(), &format!("fork-{tag}-2"), LEASE_TTL).await;
    let mut table = Table::start(&n1, 2, json!({}), 7).await;
    let (x, y) = play_until_seat_zero_chooses(&mut table).await;
    let seq = table.seq();

    proxy.delay_replies(Duration::from_millis(150));
    let command =
        |id: &str, mv: &Value| json!({"type": "command", "id": id, "seq": seq, "move": mv});
    table.players[0].send(command("x", &x)).await;
    tokio::time::sleep(Duration::from_millis(60)).await;
    n1.pause();
    let paused = Instant::now();

    let token = table.seats[0].token.clone();
    let mut seat0 = join_when_served(&n2, &table.game, Some(&token), &table.players[0]).await;
    eprintln!("n2 served the game {:?} after n1 froze", paused.elapsed());
    assert_eq!(seat0.seq, Some(seq), "X was not stored before n1 froze");
    let reply = seat0.command_at("y", seq, y.clone()).await;
    assert_eq!(
        (reply["type"].as_str(), reply["seq"].as_u64()),
        (Some("ack"), Some(seq + 1)),
        "{reply}"
    );
    table.players[0].send(command("y", &y)).await;
    // Frozen past every timeout n1 had running (the store's operation timeout is 8 s).
    tokio::time::sleep(Duration::from_secs(10).saturating_sub(paused.elapsed())).await;
    n1.resume();

    let patience = Duration::from_secs(20);
    let (heard_by_seat0, closed_seat0) = table.players[0].rest_until_closed(patience).await;
    let spectator = table.spectator.as_mut().expect("a spectator on n1");
    let (heard_by_spectator, closed_spectator) = spectator.rest_until_closed(patience).await;
    eprintln!("seat 0 on n1 heard {heard_by_seat0:?}, closed {closed_seat0:?}");
    for message in heard_by_seat0.iter().chain(&heard_by_spectator) {
        assert_ne!(
            message["type"], "update",
            "n1 broadcast a move it cannot have: {message}"
        );
        assert_ne!(
            message["type"], "snapshot",
            "n1 showed a state it cannot have: {message}"
        );
    }
    for message in &heard_by_seat0 {
        match (message["type"].as_str(), message["id"].as_str()) {
            (Some("ack"), Some("x")) => panic!("n1 acknowledged X, which is not stored: {message}"),
            (Some("ack"), Some("y")) => assert_eq!(message["seq"].as_u64(), Some(seq + 1)),
            (Some("rejected"), _) => {
                let code = message["error"]["code"].as_str();
                assert!(
                    matches!(code, Some("shutting_down" | "storage_unavailable")),
                    "a refusal that does not say to retry: {message}"
                );
            }
            _ => {}
        }
    }
    assert_eq!(closed_seat0, Some(1012), "n1 sends its clients elsewhere");
    assert_eq!(
        closed_spectator,
        Some(1012),
        "n1 sends its spectators elsewhere"
    );
    let logged = move_log(&database, &table.game);
    assert_eq!(
        logged.last(),
        Some(&(seq + 1, "y".to_owned())),
        "{logged:?}"
    );
    let log = n1.log();
    assert!(log.contains("this node no longer owns the game"), "{log}");
}

/// Seat 0 plays on the owner n1, seat 1 waits on n2 through a stand-in. NATS is down
/// while seat 0 plays its whole turn (both commands acknowledged: n1 needs no NATS for
/// them), so the updates published for n2 are lost. Once NATS is back, seat 1 must be
/// told of its turn within seconds, though nothing else happens in the game.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn updates_lost_while_nats_restarts_still_reach_the_waiting_player() {
    // The database is held to the end: dropping it drops the database.
    let Some(TwoNodes {
        database: _database,
        mut nats,
        n1,
        n2,
    }) = two_nodes_on_their_own_nats("lost").await
    else {
        return;
    };
    let api = Api::new(n1.http());
    let creator = api.create_lobby("ann", 2, json!({})).await;
    let joiner = api.join(&creator.lobby, "bob").await;
    let mut seat0 = WsClient::join(&n1.ws_url(&creator.lobby), Some(&creator.token), None).await;
    let mut seat1 = WsClient::join(&n2.ws_url(&creator.lobby), Some(&joiner.token), None).await;
    api.start(&creator).await;
    seat0.next_of("update").await;
    seat1.next_of("update").await;
    assert_eq!(seat0.state["game"]["turn"]["player"], 0, "seat 0 begins");
    let seq = seat0.seq.expect("a started game");
    seat1.catch_up_to(seq).await;

    nats.stop();
    for id in ["place", "act"] {
        let legal = seat0.legal_moves.clone().expect("seat 0 to move");
        let reply = seat0.command(id, legal[0].clone()).await;
        assert_eq!(reply["type"], "ack", "{reply}");
        seat0.catch_up_to(reply["seq"].as_u64().unwrap()).await;
    }
    assert_eq!(
        seat0.state["game"]["turn"]["player"], 1,
        "seat 1's turn now"
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    nats.start();
    let back = Instant::now();

    let waited = tokio::time::timeout(Duration::from_secs(10), seat1.catch_up_to(seq + 2)).await;
    assert!(
        waited.is_ok(),
        "seat 1 never heard of its turn: at {:?}",
        seat1.seq
    );
    eprintln!("seat 1 caught up {:?} after NATS came back", back.elapsed());
    assert_eq!(seat1.state, seat0.state, "both mirror the same game");
    assert!(seat1.legal_moves.is_some(), "seat 1 got its legal moves");
}

/// A player reconnects through a stand-in (n2) having seen everything, and then a late
/// update of an earlier `seq` arrives over NATS, as a former owner thawed with a write in
/// flight would publish it. The stand-in passes every update on; the connection must drop
/// this one rather than rewind its client, and go on with the next move as usual.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_resumed_at_the_games_seq_never_gets_an_older_update() {
    let Some(TwoNodes {
        database: _database,
        nats,
        n1,
        n2,
    }) = two_nodes_on_their_own_nats("stale").await
    else {
        return;
    };
    let api = Api::new(n1.http());
    let creator = api.create_lobby("ann", 2, json!({})).await;
    let joiner = api.join(&creator.lobby, "bob").await;
    let game = creator.lobby.clone();
    let mut seat0 = WsClient::join(&n1.ws_url(&game), Some(&creator.token), None).await;
    let mut first = WsClient::join(&n2.ws_url(&game), Some(&joiner.token), None).await;
    api.start(&creator).await;
    seat0.next_of("update").await;
    let reply = seat0
        .command(
            "place",
            seat0.legal_moves.clone().expect("seat 0 to move")[0].clone(),
        )
        .await;
    assert_eq!(reply["type"], "ack", "{reply}");
    let seq = reply["seq"].as_u64().unwrap();
    seat0.catch_up_to(seq).await;
    first.catch_up_to(seq).await;
    let (earlier_seq, earlier_events) = first.updates[0].clone();
    assert!(earlier_seq < seq);
    let mut seat1 = WsClient::resume(&n2.ws_url(&game), &joiner.token, &first).await;
    drop(first);

    let late = json!({"type": "update", "seq": earlier_seq, "events": earlier_events,
        "patch": [{"op": "replace", "path": "/game/turn", "value": null}]});
    let publisher = async_nats::connect(nats.url()).await.expect("NATS answers");
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("Carcassonne-Kind", "update");
    headers.insert("Carcassonne-Seq", earlier_seq.to_string().as_str());
    let subject = format!("carcassonne.game.{game}.updates");
    publisher
        .publish_with_headers(subject, headers, late.to_string().into())
        .await
        .expect("published");
    publisher.flush().await.expect("flushed");
    tokio::time::sleep(Duration::from_millis(300)).await;

    let legal = seat0.legal_moves.clone().expect("seat 0 still to act");
    let reply = seat0.command("act", legal[0].clone()).await;
    assert_eq!(reply["type"], "ack", "{reply}");
    let next = seat1.next_of("update").await;
    assert_eq!(next["seq"].as_u64(), Some(seq + 1), "{next}");
    seat0.catch_up_to(seq + 1).await;
    assert_eq!(seat1.state, seat0.state, "both mirror the same game");
}

/// SIGTERM while NATS is unreachable: the node exits within its drain timeout (it used
/// to wait for NATS to come back, indefinitely).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_exits_within_the_drain_timeout_while_nats_is_down() {
    let Some(TwoNodes {
        database: _database,
        mut nats,
        n1,
        n2,
    }) = two_nodes_on_their_own_nats("term").await
    else {
        return;
    };
    let mut table = Table::start(&n1, 2, json!({}), 3).await;
    table.play_one().await;
    // A spectator through n2, so that n1 has a stand-in's subscribers to publish to.
    let mut watcher = WsClient::join(&n2.ws_url(&table.game), None, None).await;
    watcher.next_of("snapshot").await;

    nats.stop();
    tokio::time::sleep(Duration::from_millis(500)).await;
    table.play_one().await;
    let asked = Instant::now();
    // The default drain timeout is 20 s.
    let (status, log) = n1.terminate_within(Duration::from_secs(22)).await;
    eprintln!("n1 exited {:?} after SIGTERM", asked.elapsed());
    assert!(status.success(), "{log}");
    assert!(log.contains("stopped"), "{log}");
    drop(n2);
}

/// A node started without `--nats` on a database whose cluster nodes are alive would
/// clear their leases and fight them over every game: it refuses to start, and says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_node_refuses_a_database_a_live_cluster_uses() {
    let Some(database) = TestDatabase::postgres_or_skip() else {
        return;
    };
    if !nats_or_skip() {
        return;
    }
    let node = start_node(&database.url(), &format!("alive-{}", tag()), "5s").await;
    let mut table = Table::start(&node, 2, json!({}), 5).await;
    table.play_one().await;
    let (status, log) = TestServer::refused_start(&database.url(), &[]).await;
    assert!(!status.success(), "{log}");
    assert!(log.contains("cluster nodes hold live leases"), "{log}");
    // The cluster's game goes on, undisturbed.
    table.play_one().await;
}

/// The owner n1 reaches Postgres through a proxy that holds the COMMIT of one move back
/// until after n1 read back that nothing was stored; the mover plays through a stand-in
/// on n2. The late COMMIT lands while n1 still owns the game: n1 must settle the write by
/// writing it again at the same `seq`, find its own move there, acknowledge it once, and
/// the game goes on to its end. (A room used to take "not stored" for final and forget
/// the write, then fail every later write of the game with a conflict, for minutes.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_that_lands_late_on_the_owner_is_settled_there() {
    let Some(database) = TestDatabase::postgres_or_skip() else {
        return;
    };
    if !nats_or_skip() {
        return;
    }
    let proxy = TcpProxy::start("127.0.0.1:5432".parse().unwrap()).await;
    let tag = tag();
    // In clear, so that the proxy can see the COMMIT go by.
    let owner_url = format!("{}?sslmode=disable", database.url_through_port(proxy.port));
    let n1 = start_node(&owner_url, &format!("late-{tag}-1"), "5s").await;
    let n2 = start_node(&database.url(), &format!("late-{tag}-2"), "5s").await;
    let mut table = Table::start(&n1, 2, json!({ "tile_limit": 6 }), 11).await;
    for _ in 0..3 {
        table.play_one().await;
    }
    let seq = table.seq();
    let mover = table.mover().unwrap();
    let token = table.seats[mover].token.clone();
    let mut remote = WsClient::resume(&n2.ws_url(&table.game), &token, &table.players[mover]).await;
    let chosen = remote.legal_moves.clone().expect("the mover's legal moves")[0].clone();

    proxy.land_commit_late("late-commit", Duration::from_secs(2));
    let reply = remote.command("late-commit", chosen.clone()).await;
    assert!(
        proxy.late_commit_taken(),
        "the COMMIT went through the proxy"
    );
    assert_eq!(
        reply["error"]["code"], "storage_unavailable",
        "nothing is stored yet when the owner answers: {reply}"
    );
    let ack = remote
        .command_until_acknowledged("late-commit", chosen, Duration::from_secs(15))
        .await;
    assert_eq!(ack["seq"], seq + 1, "{ack}");
    drop(remote);

    table.catch_up(seq + 1).await;
    table.play_to_the_end().await;
    table.assert_mirrors_agree();
    let logged = move_log(&database, &table.game);
    let late: Vec<_> = logged
        .iter()
        .filter(|(_, id)| id == "late-commit")
        .collect();
    assert_eq!(late, [&(seq + 1, "late-commit".to_owned())], "{logged:?}");
}

/// n1 owns a game and reaches Postgres slowly; it is frozen past its lease, n2 takes the
/// game over, and a move is made there (the game is at `seq` S). Clients that have seen S
/// say hello to n1 the moment it thaws, before it learns that it lost the game. n1's room,
/// asked for more than it holds, must send none of them anything older than S: it tells
/// them to come back (1012), as it finds out where the game is. (It used to send its own
/// snapshot, at S - 1, to every such client for up to 2.5 s after the thaw.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thawed_owner_never_sends_a_client_a_state_older_than_it_has() {
    let Some(database) = TestDatabase::postgres_or_skip() else {
        return;
    };
    if !nats_or_skip() {
        return;
    }
    let proxy = TcpProxy::start("127.0.0.1:5432".parse().unwrap()).await;
    let tag = tag();
    let n1 = start_node(
        &database.url_through_port(proxy.port),
        &format!("thaw-{tag}-1"),
        LEASE_TTL,
    )
    .await;
    let n2 = start_node(&database.url(), &format!("thaw-{tag}-2"), LEASE_TTL).await;
    let mut table = Table::start(&n1, 2, json!({}), 23).await;
    for _ in 0..4 {
        table.play_one().await;
    }
    // n1's first renewal after the thaw takes a while: the hellos below come first.
    proxy.delay_replies(Duration::from_millis(300));
    n1.pause();

    let mover = table.mover().unwrap();
    let token = table.seats[mover].token.clone();
    let mut there = join_when_served(&n2, &table.game, Some(&token), &table.players[mover]).await;
    let chosen = there.legal_moves.clone().expect("the mover's legal moves")[0].clone();
    let ack = there
        .command_until_acknowledged("on-n2", chosen, Duration::from_secs(15))
        .await;
    let newest = ack["seq"].as_u64().expect("an acknowledged seq");
    there.catch_up_to(newest).await;

    let url = n1.ws_url(&table.game);
    let hellos: Vec<_> = (0..8)
        .map(|_| {
            let url = url.clone();
            tokio::spawn(async move {
                // Accepted by the kernel while n1 is frozen; answered once it thaws.
                let mut client = WsClient::try_connect(&url).await.ok()?;
                let hello = json!({ "type": "hello", "token": null, "last_seq": newest });
                client.send(hello).await;
                Some(client.rest_until_closed(Duration::from_secs(4)).await)
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    n1.resume();

    let mut told_to_come_back = 0;
    for hello in hellos {
        let Some((heard, closed)) = hello.await.expect("a hello task") else {
            continue;
        };
        for message in &heard {
            let seq = message["seq"].as_u64();
            let kind = message["type"].as_str();
            if matches!(kind, Some("snapshot" | "update")) {
                assert!(
                    seq >= Some(newest),
                    "n1 sent a state older than the client's: {message}"
                );
            }
        }
        told_to_come_back += usize::from(closed == Some(1012));
    }
    eprintln!("{told_to_come_back} of 8 clients were told to come back");
    drop(there);
}
