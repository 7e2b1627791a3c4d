//! Rematch end to end, on one node (SQLite) and across two nodes (Postgres and NATS),
//! over real sockets: the players still chat after the end; no offer before the end,
//! and none from a spectator; an offer
//! nobody answers expires; a declined offer ends for everyone and opens nothing; an
//! accepted one opens and starts a new game with the same players, seats rotated, and
//! tells each seat (and only that seat) its new token, which plays; a game against a bot
//! is rematched on the player's word alone, the bot kept.

use carcassonne_tests::client::{Api, Seat, WsClient};
use carcassonne_tests::cluster::{nats_or_skip, nats_url, start_node_with};
use carcassonne_tests::database::TestDatabase;
use carcassonne_tests::server::TestServer;
use carcassonne_tests::table::Table;
use serde_json::{Value, json};

/// An offer's time: long enough for an answer across two nodes, short enough to wait
/// out once.
const OFFER_TIME: &str = "3s";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rematch_on_one_node() {
    let database = TestDatabase::sqlite();
    let server = TestServer::start_with(&database.url(), &["--rematch-offer", OFFER_TIME]).await;
    rematch_a_game(&server, &server).await;
    rematch_a_game_against_a_bot(&server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rematch_across_two_nodes() {
    let Some(database) = TestDatabase::postgres_or_skip() else {
        return;
    };
    if !nats_or_skip() {
        return;
    }
    let tag = &uuid::Uuid::new_v4().simple().to_string()[..8];
    let mut nodes = Vec::new();
    for name in ["a", "b"] {
        let name = format!("rematch-{tag}-{name}");
        let more = ["--rematch-offer", OFFER_TIME];
        nodes.push(start_node_with(&database.url(), &nats_url(), &name, "5s", &more).await);
    }
    rematch_a_game(&nodes[0], &nodes[1]).await;
}

/// The game is played on `home`; after it, the second player answers from `away`.
async fn rematch_a_game(home: &TestServer, away: &TestServer) {
    let mut table = Table::start(home, 2, json!({ "tile_limit": 4 }), 30).await;
    let game = table.game.clone();
    let away_api = Api::new(away.http());

    // Too early: the game is still on.
    table.players[0].send(rematch(true)).await;
    assert_eq!(
        error_code(&mut table.players[0]).await,
        "rematch_unavailable"
    );
    table.play_to_the_end().await;
    let mut first = table.players.remove(0);
    let mut second = WsClient::join(&away.ws_url(&game), Some(&table.seats[1].token), None).await;
    let mut watcher = table.spectator.take().expect("the table's spectator");

    // The room stays after the end: the players can still say "good game".
    first
        .send(json!({"type": "say", "text": "good game"}))
        .await;
    let heard = second.next_of("chat").await;
    assert_eq!(heard["entry"]["text"], "good game", "{heard}");

    // A spectator has no say in the rematch.
    watcher.send(rematch(true)).await;
    assert_eq!(error_code(&mut watcher).await, "not_a_player");
    // Declining with no offer made is refused.
    second.send(rematch(false)).await;
    assert_eq!(error_code(&mut second).await, "rematch_unavailable");

    // An offer nobody answers expires, and everyone hears so.
    first.send(rematch(true)).await;
    for client in [&mut first, &mut second, &mut watcher] {
        let offered = client.next_of("rematch").await;
        assert_eq!(offered["status"], "offered", "{offered}");
        assert_eq!(offered["by"], 0);
        assert_eq!(offered["accepted"], json!([0]));
        assert_eq!(offered["waiting_for"], json!([1]));
        assert!(offered["expires_at"].as_i64().is_some(), "{offered}");
    }
    for client in [&mut first, &mut second, &mut watcher] {
        let expired = client.next_of("rematch").await;
        assert_eq!(expired["status"], "expired", "{expired}");
    }

    // Offered again, the second player declines from the other node.
    second.send(rematch(true)).await;
    assert_eq!(first.next_of("rematch").await["by"], 1);
    first.send(rematch(false)).await;
    for client in [&mut first, &mut second, &mut watcher] {
        let declined = skip_to_status(client, "declined").await;
        assert_eq!(declined["by"], 0, "{declined}");
    }
    first.send(json!({"type": "ping"})).await;
    let next = first
        .next_of_any(&["pong", "rematch", "rematch_seat"])
        .await;
    assert_eq!(
        next["type"], "pong",
        "a declined offer opens nothing: {next}"
    );

    // The third offer is accepted: a new game, already started, seats rotated.
    first.send(rematch(true)).await;
    skip_to_status(&mut second, "offered").await;
    second.send(rematch(true)).await;
    let mut lobby = None;
    for client in [&mut first, &mut second, &mut watcher] {
        let agreed = skip_to_status(client, "agreed").await;
        assert_eq!(agreed["waiting_for"], json!([]), "{agreed}");
        let new_game = agreed["lobby"].as_str().expect("the new game").to_owned();
        assert_ne!(new_game, game);
        assert!(lobby.get_or_insert(new_game.clone()) == &new_game);
    }
    let lobby = lobby.unwrap();
    let new_first = new_seat(&mut first, &lobby).await;
    let new_second = new_seat(&mut second, &lobby).await;
    assert_eq!((new_first.seat, new_second.seat), (1, 0), "rotated by one");

    let (status, started) = away_api.get(&format!("/api/lobbies/{lobby}")).await;
    assert_eq!(status, 200, "{started}");
    assert_eq!(started["status"], "playing", "{started}");
    assert_eq!(
        started["rules"]["tile_limit"], 4,
        "the same rules: {started}"
    );
    assert_eq!(started["seats"][0]["name"], "seat1");
    assert_eq!(started["seats"][1]["name"], "seat0");

    // Each seat's token plays its new seat, on either node.
    let mut mover = WsClient::join(&away.ws_url(&lobby), Some(&new_second.token), None).await;
    assert_eq!(mover.seat, Some(0));
    mover.next_of("snapshot").await;
    assert_eq!(mover.state["game"]["turn"]["player"], 0, "seat 0 begins");
    let mv = mover.legal_moves.clone().expect("seat 0 to move")[0].clone();
    let reply = mover.command("rematch-1", mv).await;
    assert_eq!(reply["type"], "ack", "{reply}");
    let other = WsClient::join(&home.ws_url(&lobby), Some(&new_first.token), None).await;
    assert_eq!(other.seat, Some(1));

    // Agreed is final; and whoever comes back to the old game learns where it went:
    // a spectator the outcome, a player their own new seat too.
    first.send(rematch(true)).await;
    assert_eq!(error_code(&mut first).await, "rematch_unavailable");
    let mut late_watcher = WsClient::join(&away.ws_url(&game), None, None).await;
    assert_eq!(late_watcher.next_of("rematch").await["status"], "agreed");
    let mut back = WsClient::join(&away.ws_url(&game), Some(&table.seats[0].token), None).await;
    assert_eq!(back.next_of("rematch").await["lobby"], lobby.as_str());
    assert_eq!(back.next_of("rematch_seat").await["token"], new_first.token);
    late_watcher.send(json!({"type": "ping"})).await;
    let next = late_watcher.next_of_any(&["pong", "rematch_seat"]).await;
    assert_eq!(
        next["type"], "pong",
        "no spectator gets a seat token: {next}"
    );
}

/// Against a bot, the one person's offer is the agreement; the bot keeps its level.
async fn rematch_a_game_against_a_bot(server: &TestServer) {
    let api = Api::new(server.http());
    let ann = api.create_lobby("ann", 2, json!({ "tile_limit": 4 })).await;
    let path = format!("/api/lobbies/{}/bots", ann.lobby);
    let (status, seated) = api
        .post_as(&path, &ann.token, json!({ "level": "greedy" }))
        .await;
    assert_eq!(status, 201, "{seated}");
    let mut client = WsClient::join(&server.ws_url(&ann.lobby), Some(&ann.token), None).await;
    api.start(&ann).await;
    play_out(&mut client).await;

    client.send(rematch(true)).await;
    let agreed = skip_to_status(&mut client, "agreed").await;
    let lobby = agreed["lobby"].as_str().unwrap().to_owned();
    let seat = new_seat(&mut client, &lobby).await;
    assert_eq!(seat.seat, (ann.seat + 1) % 2);
    let (_, started) = api.get(&format!("/api/lobbies/{lobby}")).await;
    assert_eq!(started["status"], "playing", "{started}");
    let bot_seat = (seat.seat + 1) % 2;
    assert_eq!(
        started["seats"][bot_seat as usize]["bot"], "greedy",
        "{started}"
    );
    let mut next = WsClient::join(&server.ws_url(&lobby), Some(&seat.token), None).await;
    play_out(&mut next).await;
}

fn rematch(accept: bool) -> Value {
    json!({ "type": "rematch", "accept": accept })
}

async fn error_code(client: &mut WsClient) -> String {
    let error = client.next_of("error").await;
    error["error"]["code"].as_str().unwrap().to_owned()
}

/// The next `rematch` frame of `status`, skipping the ones before it.
async fn skip_to_status(client: &mut WsClient, status: &str) -> Value {
    loop {
        let frame = client.next_of("rematch").await;
        if frame["status"] == status {
            return frame;
        }
    }
}

/// The `rematch_seat` frame a player gets once the rematch `lobby` is agreed.
async fn new_seat(client: &mut WsClient, lobby: &str) -> Seat {
    let seat = client.next_of("rematch_seat").await;
    assert_eq!(seat["lobby"], lobby, "{seat}");
    Seat {
        lobby: lobby.to_owned(),
        seat: seat["seat"].as_u64().unwrap(),
        token: seat["token"].as_str().unwrap().to_owned(),
    }
}

/// Plays the first legal move on each of the client's turns until the game is over.
async fn play_out(client: &mut WsClient) {
    let mut commands = 0;
    while client.state["status"] != "finished" {
        let my_turn = client.state["game"]["turn"]["player"].as_u64() == client.seat;
        match client.legal_moves.clone().filter(|_| my_turn) {
            Some(moves) if !moves.is_empty() => {
                commands += 1;
                let reply = client
                    .command(&format!("m{commands}"), moves[0].clone())
                    .await;
                assert_eq!(reply["type"], "ack", "{reply}");
                client.catch_up_to(reply["seq"].as_u64().unwrap()).await;
            }
            _ => {
                client.next().await;
            }
        }
    }
}
