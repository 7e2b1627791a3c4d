//! Games that always finish, over real sockets: turn clocks and timeouts, bots in seats,
//! resigning, aborting, abandoned seats taken back, a restart in the middle of a running
//! clock, and lobbies that expire.

use carcassonne_core::record::{GameRecord, replay};
use carcassonne_tests::client::{Api, Seat, WsClient};
use carcassonne_tests::database::TestDatabase;
use carcassonne_tests::server::TestServer;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// Bots that answer quickly, so that timed-out turns and bot seats do not slow the tests.
/// Quick bots, and a finished game's room that stays a second for a rematch, not two
/// minutes: these tests see it leave memory.
const QUICK_BOTS: [&str; 6] = [
    "--stand-in-think",
    "20ms",
    "--bot-think",
    "40ms",
    "--post-game",
    "1s",
];

fn turn_clock(per_turn_ms: u64, reserve_ms: u64) -> Value {
    json!({ "type": "turn", "per_turn_ms": per_turn_ms, "reserve_ms": reserve_ms })
}

/// Creates a 2-seat lobby with `clock` and `rules`, its creator a guest named "ann".
async fn create_lobby(api: &Api, clock: Value, rules: Value) -> Seat {
    let body = json!({ "name": "finishing", "seats": 2, "rules": rules,
        "clock": clock, "display_name": "ann" });
    let (status, created) = api.post("/api/lobbies", body).await;
    assert_eq!(status, 201, "create lobby: {created}");
    Seat {
        lobby: created["lobby"]["id"].as_str().unwrap().to_owned(),
        seat: 0,
        token: created["seat_token"].as_str().unwrap().to_owned(),
    }
}

async fn start(api: &Api, creator: &Seat) {
    let path = format!("/api/lobbies/{}/start", creator.lobby);
    let (status, lobby) = api.post_as(&path, &creator.token, json!({})).await;
    assert_eq!(status, 200, "start: {lobby}");
}

async fn post_as(api: &Api, seat: &Seat, action: &str) -> (u16, Value) {
    let path = format!("/api/lobbies/{}/{action}", seat.lobby);
    api.post_as(&path, &seat.token, json!({})).await
}

/// Connects `seat`'s player (before or after the start).
async fn connect_player(server: &TestServer, seat: &Seat) -> WsClient {
    WsClient::join(&server.ws_url(&seat.lobby), Some(&seat.token), None).await
}

/// Reads until the client mirrors a started game.
async fn wait_playing(client: &mut WsClient) {
    while client.state["status"] != "playing" {
        client.next().await;
    }
}

fn my_turn(client: &WsClient) -> bool {
    let to_move = client.state["game"]["turn"]["player"].as_u64();
    to_move.is_some() && to_move == client.seat && client.legal_moves.is_some()
}

/// Plays the client's seat (its first legal move each time) until the game ends.
/// Returns every event the client saw.
async fn play_until_over(client: &mut WsClient, tag: &str) -> Vec<Value> {
    let mut commands = 0;
    while client.state["status"] == "playing" {
        if !my_turn(client) {
            client.next().await;
            continue;
        }
        let mv = client.legal_moves.clone().unwrap()[0].clone();
        commands += 1;
        let decided_at = client.seq;
        let reply = client.command(&format!("{tag}-{commands}"), mv).await;
        match reply["type"].as_str() {
            Some("ack") => client.catch_up_to(reply["seq"].as_u64().unwrap()).await,
            // The clock beat the player to it (the stand-in's update comes next), or an
            // update came first (the seat next to it was abandoned): decide again on
            // that update if it arrived with the reply, else read on for it, as any
            // client would.
            _ if is_overtaken(&reply) => {
                if client.seq == decided_at {
                    client.next().await;
                }
            }
            _ => panic!("a legal move on one's turn is accepted: {reply}"),
        }
    }
    client.events.clone()
}

/// A rejection that only says the game moved on before the command arrived.
fn is_overtaken(reply: &Value) -> bool {
    let code = &reply["error"]["code"];
    code == "turn_timed_out" || code == "stale_seq"
}

fn count_of(events: &[Value], kind: &str) -> usize {
    events.iter().filter(|event| event["type"] == kind).count()
}

/// Reads until an event of `kind` comes that the client had not seen; returns it.
async fn await_event(client: &mut WsClient, kind: &str) -> Value {
    let seen = client.events.len();
    loop {
        if let Some(event) = client.events[seen..].iter().find(|e| e["type"] == kind) {
            return event.clone();
        }
        client.next().await;
    }
}

async fn finished_match(api: &Api, game: &str) -> Value {
    let (status, found) = api.get(&format!("/api/matches/{game}")).await;
    assert_eq!(status, 200, "the match is in the history: {found}");
    found
}

/// The match's record replays through the engine, its deck verified.
async fn assert_record_replays(api: &Api, game: &str) -> GameRecord {
    let (status, record) = api.get(&format!("/api/matches/{game}/record")).await;
    assert_eq!(status, 200, "{record}");
    let record: GameRecord = serde_json::from_value(record).expect("a game record");
    let replayed = replay(&record, false).expect("the record replays");
    assert_eq!(
        replayed.deck_verified,
        Some(true),
        "the deck is the committed one"
    );
    record
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_two_second_clock_game_finishes_though_its_second_player_never_connects() {
    let database = TestDatabase::sqlite();
    let server = TestServer::start_with(&database.url(), &QUICK_BOTS).await;
    let api = Api::new(server.http());
    let creator = create_lobby(&api, turn_clock(2_000, 0), json!({ "tile_limit": 16 })).await;
    let absent = api.join(&creator.lobby, "bob").await;
    let mut ann = connect_player(&server, &creator).await;
    let started = Instant::now();
    start(&api, &creator).await;
    wait_playing(&mut ann).await;
    let events = play_until_over(&mut ann, "ann").await;
    // Three timed-out turns in a row, then the bot plays the abandoned seat at once.
    assert_eq!(count_of(&events, "turn_timed_out"), 3, "{events:?}");
    assert_eq!(count_of(&events, "seat_abandoned"), 1);
    assert!(started.elapsed() < Duration::from_secs(30));
    let state = &ann.state;
    assert_eq!(state["seats"][absent.seat as usize]["control"], "abandoned");
    assert_eq!(state["game"]["result"]["status"], "finished");
    assert_eq!(
        ann.close_code().await,
        Some(1000),
        "the ended room closes its sockets after its post-game stay"
    );
    let found = finished_match(&api, &creator.lobby).await;
    assert_eq!(found["status"], "finished");
    assert_eq!(found["tiles_placed"], 16);
    assert_record_replays(&api, &creator.lobby).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_plays_a_whole_game_against_an_mcts_bot() {
    let database = TestDatabase::sqlite();
    let server = TestServer::start_with(&database.url(), &QUICK_BOTS).await;
    let api = Api::new(server.http());
    let creator = create_lobby(&api, json!({ "type": "none" }), json!({})).await;
    let path = format!("/api/lobbies/{}/bots", creator.lobby);
    let (status, seated) = api
        .post_as(&path, &creator.token, json!({ "level": "mcts" }))
        .await;
    assert_eq!(status, 201, "{seated}");
    assert_eq!(seated["lobby"]["seats"][1]["bot"], "mcts");
    let mut ann = connect_player(&server, &creator).await;
    start(&api, &creator).await;
    wait_playing(&mut ann).await;
    let events = play_until_over(&mut ann, "ann").await;
    assert!(
        count_of(&events, "bot_moved") > 50,
        "the bot played its half"
    );
    assert!(
        events
            .iter()
            .filter(|e| e["type"] == "bot_moved")
            .all(|e| e["reason"] == "bot")
    );
    let found = finished_match(&api, &creator.lobby).await;
    assert_eq!(found["status"], "finished");
    let record = assert_record_replays(&api, &creator.lobby).await;
    assert!(record.turns.len() > 60, "a whole base game");
    // Nothing that can no longer change stays in memory.
    assert_eq!(ann.close_code().await, Some(1000));
    let mut metrics = String::new();
    for _ in 0..20 {
        let (_, body) = api.get("/metrics").await;
        metrics = body.as_str().unwrap_or_default().to_owned();
        if metrics.contains("carcassonne_live_games 0") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(metrics.contains("carcassonne_live_games 0"), "{metrics}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resigned_seat_is_played_by_a_bot_never_wins_and_the_last_resignation_abandons() {
    for database in TestDatabase::both() {
        let server = TestServer::start_with(&database.url(), &QUICK_BOTS).await;
        let api = Api::new(server.http());
        let rules = json!({ "tile_limit": 20 });
        let ann = create_lobby(&api, json!({ "type": "none" }), rules).await;
        let bob = api.join(&ann.lobby, "bob").await;
        let mut ann_client = connect_player(&server, &ann).await;
        start(&api, &ann).await;
        wait_playing(&mut ann_client).await;
        let (status, body) = post_as(&api, &bob, "resign").await;
        assert_eq!(status, 204, "{body}");
        await_event(&mut ann_client, "seat_resigned").await;
        let (status, again) = post_as(&api, &bob, "resign").await;
        assert_eq!(
            (status, again["error"]["code"].as_str()),
            (409, Some("resigned"))
        );
        let events = play_until_over(&mut ann_client, "ann").await;
        assert!(
            events
                .iter()
                .any(|e| e["type"] == "bot_moved" && e["reason"] == "resigned")
        );
        let found = finished_match(&api, &ann.lobby).await;
        assert_eq!(found["status"], "finished");
        assert_eq!(found["seats"][1]["resigned"], true);
        assert_eq!(
            found["seats"][1]["winner"], false,
            "a resigned seat never wins"
        );
        assert_eq!(found["seats"][0]["winner"], true);

        // A second game: when both resign, it ends at once as abandoned.
        let carl = create_lobby(&api, json!({ "type": "none" }), json!({})).await;
        let dora = api.join(&carl.lobby, "dora").await;
        let mut watcher = connect_player(&server, &carl).await;
        start(&api, &carl).await;
        wait_playing(&mut watcher).await;
        assert_eq!(post_as(&api, &dora, "resign").await.0, 204);
        assert_eq!(post_as(&api, &carl, "resign").await.0, 204);
        await_event(&mut watcher, "game_abandoned").await;
        assert_eq!(watcher.state["game"]["result"]["status"], "abandoned");
        let found = finished_match(&api, &carl.lobby).await;
        assert_eq!(found["status"], "abandoned", "{found}");
        let (_, listed) = api.get("/api/matches?status=abandoned").await;
        let ids: Vec<&str> = listed["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| item["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, [carl.lobby.as_str()], "{listed}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_game_is_aborted_before_every_seat_has_played_and_is_no_match() {
    let database = TestDatabase::sqlite();
    let server = TestServer::start_with(&database.url(), &QUICK_BOTS).await;
    let api = Api::new(server.http());
    let ann = create_lobby(&api, json!({ "type": "none" }), json!({})).await;
    let bob = api.join(&ann.lobby, "bob").await;
    let mut ann_client = connect_player(&server, &ann).await;
    start(&api, &ann).await;
    wait_playing(&mut ann_client).await;
    for step in 0..2 {
        let mv = ann_client.legal_moves.clone().unwrap()[0].clone();
        let reply = ann_client.command(&format!("a{step}"), mv).await;
        assert_eq!(reply["type"], "ack", "{reply}");
        ann_client.catch_up_to(reply["seq"].as_u64().unwrap()).await;
    }
    assert_eq!(post_as(&api, &bob, "abort").await.0, 204);
    let aborted = await_event(&mut ann_client, "game_aborted").await;
    assert_eq!(aborted["seat"], 1);
    assert_eq!(ann_client.state["status"], "cancelled");
    assert_eq!(ann_client.close_code().await, Some(1000));
    let (status, _) = api.get(&format!("/api/matches/{}", ann.lobby)).await;
    assert_eq!(status, 404, "an aborted game is not a match");

    // Once every seat has placed a tile, it is too late.
    let carl = create_lobby(&api, json!({ "type": "none" }), json!({})).await;
    let dora = api.join(&carl.lobby, "dora").await;
    let mut carl_client = connect_player(&server, &carl).await;
    let mut dora_client = connect_player(&server, &dora).await;
    start(&api, &carl).await;
    wait_playing(&mut carl_client).await;
    wait_playing(&mut dora_client).await;
    play_moves(&mut carl_client, 2, "c").await;
    dora_client.catch_up_to(carl_client.seq.unwrap()).await;
    play_moves(&mut dora_client, 1, "d").await;
    let (status, refused) = post_as(&api, &carl, "abort").await;
    assert_eq!(
        (status, refused["error"]["code"].as_str()),
        (409, Some("too_late_to_abort"))
    );
}

async fn play_moves(client: &mut WsClient, count: usize, tag: &str) {
    for step in 0..count {
        let mv = client.legal_moves.clone().expect("my turn")[0].clone();
        let reply = client.command(&format!("{tag}{step}"), mv).await;
        assert_eq!(reply["type"], "ack", "{reply}");
        client.catch_up_to(reply["seq"].as_u64().unwrap()).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandoned_seat_is_taken_back_by_hello_and_recovered_with_the_player_secret() {
    let database = TestDatabase::sqlite();
    let server = TestServer::start_with(&database.url(), &QUICK_BOTS).await;
    let api = Api::new(server.http());
    let (status, player) = api
        .post("/api/players", json!({ "display_name": "bob" }))
        .await;
    assert_eq!(status, 201, "{player}");
    let (player_id, secret) = (
        player["id"].as_str().unwrap(),
        player["secret"].as_str().unwrap(),
    );
    let ann = create_lobby(&api, turn_clock(1_000, 0), json!({})).await;
    let (status, joined) = api
        .post(
            &format!("/api/lobbies/{}/join", ann.lobby),
            json!({ "player_id": player_id, "player_secret": secret }),
        )
        .await;
    assert_eq!(status, 200, "{joined}");
    let bob = Seat {
        lobby: ann.lobby.clone(),
        seat: 1,
        token: joined["seat_token"].as_str().unwrap().to_owned(),
    };
    let mut ann_client = connect_player(&server, &ann).await;
    start(&api, &ann).await;
    wait_playing(&mut ann_client).await;
    // Ann plays at once; Bob is away and times out three turns in a row.
    play_turns_until(&mut ann_client, "seat_abandoned").await;
    assert_eq!(ann_client.state["seats"][1]["control"], "abandoned");

    // Bob's hello with his token takes the seat back.
    let bob_client = WsClient::join(&server.ws_url(&bob.lobby), Some(&bob.token), None).await;
    await_event(&mut ann_client, "seat_reclaimed").await;
    assert_eq!(ann_client.state["seats"][1]["control"], "human");
    drop(bob_client);

    // Away again: abandoned again; this time he lost his token and recovers the seat.
    play_turns_until(&mut ann_client, "seat_abandoned").await;
    let (status, granted) = api
        .post(
            &format!("/api/lobbies/{}/reclaim", bob.lobby),
            json!({ "player_id": player_id, "player_secret": "wrong" }),
        )
        .await;
    assert_eq!(
        (status, granted["error"]["code"].as_str()),
        (401, Some("bad_player_secret"))
    );
    let (status, granted) = api
        .post(
            &format!("/api/lobbies/{}/reclaim", bob.lobby),
            json!({ "player_id": player_id, "player_secret": secret }),
        )
        .await;
    assert_eq!(status, 200, "{granted}");
    assert_eq!(granted["seat"], 1);
    let new_token = granted["seat_token"].as_str().unwrap();
    assert_ne!(new_token, bob.token);
    await_event(&mut ann_client, "seat_token_replaced").await;
    assert_eq!(ann_client.state["seats"][1]["control"], "human");
    let mut stale = WsClient::connect(&server.ws_url(&bob.lobby)).await;
    let refused = stale.hello(Some(&bob.token), None).await;
    assert_eq!(
        refused["error"]["code"], "bad_token",
        "the old token stops working"
    );
    let mut bob_client = WsClient::join(&server.ws_url(&bob.lobby), Some(new_token), None).await;
    bob_client.next_of("snapshot").await;
    assert_eq!(bob_client.seat, Some(1));
}

/// Ann plays her turns at once until an event of `kind` comes.
async fn play_turns_until(ann: &mut WsClient, kind: &str) {
    let seen = ann.events.len();
    let mut commands = 0;
    while !ann.events[seen..].iter().any(|event| event["type"] == kind) {
        if !my_turn(ann) {
            ann.next().await;
            continue;
        }
        let mv = ann.legal_moves.clone().unwrap()[0].clone();
        commands += 1;
        let reply = ann
            .command(&format!("{kind}-{commands}-{}", ann.seq.unwrap()), mv)
            .await;
        if is_overtaken(&reply) {
            ann.next().await;
            continue;
        }
        assert_eq!(reply["type"], "ack", "{reply}");
        ann.catch_up_to(reply["seq"].as_u64().unwrap()).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_in_the_middle_of_a_running_clock_gives_the_turn_a_fresh_allowance() {
    let database = TestDatabase::sqlite();
    let server = TestServer::start_with(&database.url(), &QUICK_BOTS).await;
    let api = Api::new(server.http());
    let ann = create_lobby(&api, turn_clock(3_000, 0), json!({})).await;
    let bob = api.join(&ann.lobby, "bob").await;
    let mut ann_client = connect_player(&server, &ann).await;
    start(&api, &ann).await;
    wait_playing(&mut ann_client).await;
    play_moves(&mut ann_client, 2, "a").await;
    let deadline_before = ann_client.state["game"]["clock"]["turn"]["deadline_ms"]
        .as_i64()
        .unwrap();
    assert_eq!(ann_client.state["game"]["clock"]["turn"]["seat"], bob.seat);
    server.terminate().await;
    tokio::time::sleep(Duration::from_millis(3_500)).await;

    // Bob's deadline passed while the server was down; he gets a whole turn from the restart.
    let restarted_at = now_ms();
    let server = TestServer::start_with(&database.url(), &QUICK_BOTS).await;
    let mut bob_client = WsClient::join(&server.ws_url(&bob.lobby), Some(&bob.token), None).await;
    let snapshot = bob_client.next_of("snapshot").await;
    let turn = &snapshot["state"]["game"]["clock"]["turn"];
    let deadline = turn["deadline_ms"].as_i64().unwrap();
    assert!(
        deadline >= restarted_at + 3_000,
        "{turn} after a restart at {restarted_at}"
    );
    assert!(deadline > deadline_before);
    let left = snapshot["turn_ms_left"].as_u64().unwrap();
    assert!(left > 1_000 && left <= 3_000, "{left} ms left");
    // He lets it run out: the stand-in plays his turn after the restart.
    let timed_out = await_event(&mut bob_client, "turn_timed_out").await;
    assert_eq!(timed_out["seat"], bob.seat);
    assert!(now_ms() >= deadline - 50, "not before the deadline");
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_open_lobby_expires_and_leaves_memory() {
    let database = TestDatabase::sqlite();
    let options = ["--lobby-idle-timeout", "1s"];
    let server = TestServer::start_with(&database.url(), &options).await;
    let api = Api::new(server.http());
    let ann = create_lobby(&api, json!({ "type": "none" }), json!({})).await;
    let mut watcher = WsClient::join(&server.ws_url(&ann.lobby), None, None).await;
    watcher.next_of("snapshot").await;
    let cancelled = await_event(&mut watcher, "lobby_cancelled").await;
    assert_eq!(cancelled["reason"], "expired");
    assert_eq!(watcher.close_code().await, Some(1000));
    let (_, lobby) = api.get(&format!("/api/lobbies/{}", ann.lobby)).await;
    assert_eq!(lobby["status"], "cancelled");
    let (status, _) = api
        .post(
            &format!("/api/lobbies/{}/join", ann.lobby),
            json!({ "display_name": "late" }),
        )
        .await;
    assert_eq!(status, 409, "an expired lobby takes no seats");
    // And it is not restored at the next start.
    server.terminate().await;
    let server = TestServer::start_with(&database.url(), &options).await;
    assert!(server.log().contains("unfinished=0"), "{}", server.log());
}
