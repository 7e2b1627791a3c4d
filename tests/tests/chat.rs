//! In-game chat end to end: two players and a spectator, on one node (SQLite) and across
//! two nodes (Postgres and NATS), over real sockets. The players' chat never reaches a
//! spectator; a reconnect, a reload and a late spectator get the history; a mute hides
//! an author from the muter only; a flood is cut with `chat_rate_limited` and the
//! connection stays; the creator closes the spectators' chat; an operator's deletion
//! reaches every client and the database; REST serves the history by audience.

use carcassonne_tests::client::{Api, Player, Seat, WsClient};
use carcassonne_tests::cluster::{nats_or_skip, nats_url, start_node_with};
use carcassonne_tests::database::TestDatabase;
use carcassonne_tests::server::TestServer;
use serde_json::{Value, json};

/// The operator's admin token, and its SHA-256 as the server is configured with it.
const ADMIN_TOKEN: &str = "e2e-operator-token-0123456789abcdef0123456789abcdef";

fn admin_token_sha256() -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(ADMIN_TOKEN.as_bytes()))
}

#[tokio::test]
async fn chat_on_one_node() {
    let database = TestDatabase::sqlite();
    let hash = admin_token_sha256();
    let server = TestServer::start_with(&database.url(), &["--admin-token-sha256", &hash]).await;
    talk_through_a_game(&server, &server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_across_two_nodes() {
    let Some(database) = TestDatabase::postgres_or_skip() else {
        return;
    };
    if !nats_or_skip() {
        return;
    }
    let tag = &uuid::Uuid::new_v4().simple().to_string()[..8];
    let hash = admin_token_sha256();
    let mut nodes = Vec::new();
    for name in ["a", "b"] {
        let name = format!("chat-{tag}-{name}");
        let more = ["--admin-token-sha256", &hash];
        nodes.push(start_node_with(&database.url(), &nats_url(), &name, "5s", &more).await);
    }
    talk_through_a_game(&nodes[0], &nodes[1]).await;
}

/// The game lives on `home` (created, started and played there); Bob, the spectators
/// and the operator use `away`.
async fn talk_through_a_game(home: &TestServer, away: &TestServer) {
    let (home_api, away_api) = (Api::new(home.http()), Api::new(away.http()));
    let ann = home_api.create_lobby("Ann", 2, json!({})).await;
    let bob = away_api.join(&ann.lobby, "Bob").await;
    home_api.start(&ann).await;
    let game = ann.lobby.clone();
    let watcher = away_api.register("Watcher").await;

    let mut ann_ws = player(home, &ann).await;
    let mut bob_ws = player(away, &bob).await;
    let mut watcher_ws = spectator(away, &game, &watcher).await;
    let (ann_seat, bob_seat) = (ann_ws.seat.unwrap(), bob_ws.seat.unwrap());

    // The players' chat: both players read it, the spectator does not.
    ann_ws
        .send(json!({"type": "say", "text": "  good luck  "}))
        .await;
    let heard = chat_of(&mut bob_ws).await;
    assert_eq!(heard["chat_seq"], 1);
    assert_eq!(heard["entry"]["text"], "good luck", "trimmed: {heard}");
    assert_eq!(heard["entry"]["author"], json!({"seat": ann_seat}));
    assert_eq!(heard["entry"]["room"], "players");
    assert_eq!(chat_of(&mut ann_ws).await["chat_seq"], 1);

    // The spectators' chat: everyone reads it. The spectator's first chat frame is
    // this one, so the players' message above never reached them.
    watcher_ws
        .send(json!({"type": "say", "text": "go Bob"}))
        .await;
    let seen = chat_of(&mut watcher_ws).await;
    assert_eq!(
        seen["chat_seq"], 2,
        "the players' entry 1 is not a spectator's: {seen}"
    );
    assert_eq!(seen["entry"]["room"], "spectators");
    assert_eq!(seen["entry"]["name"], "Watcher");
    assert_eq!(chat_of(&mut ann_ws).await["chat_seq"], 2);
    assert_eq!(chat_of(&mut bob_ws).await["chat_seq"], 2);

    // A spectator without a player identity reads but cannot write.
    let mut anonymous = WsClient::join(&away.ws_url(&game), None, None).await;
    anonymous.send(json!({"type": "say", "text": "hi"})).await;
    assert_eq!(error_code(&mut anonymous).await, "spectator_unknown");
    let late: Vec<u64> = chat_catch_up(&mut anonymous, 1).await;
    assert_eq!(
        late,
        vec![2],
        "a late spectator gets the spectators' chat only"
    );

    // Text checked like names: invisible characters are refused, nothing is written.
    ann_ws
        .send(json!({"type": "say", "text": "a\u{200B}b"}))
        .await;
    assert_eq!(error_code(&mut ann_ws).await, "bad_chat_text");
    ann_ws
        .send(json!({"type": "say", "text": "x".repeat(501)}))
        .await;
    assert_eq!(error_code(&mut ann_ws).await, "bad_chat_text");

    // Bob mutes Ann: her next message reaches her but not him.
    bob_ws
        .send(json!({"type": "mute", "author": {"seat": ann_seat}, "muted": true}))
        .await;
    let mutes = bob_ws.next_of("chat_mutes").await;
    assert_eq!(mutes["muted"], json!([{"seat": ann_seat}]));
    ann_ws
        .send(json!({"type": "say", "text": "are you there"}))
        .await;
    assert_eq!(chat_of(&mut ann_ws).await["chat_seq"], 3);
    watcher_ws
        .send(json!({"type": "say", "text": "tense"}))
        .await;
    let next_for_bob = chat_of(&mut bob_ws).await;
    assert_eq!(
        next_for_bob["chat_seq"], 4,
        "Ann's entry 3 is hidden from Bob: {next_for_bob}"
    );
    assert_eq!(chat_of(&mut ann_ws).await["chat_seq"], 4);
    assert_eq!(chat_of(&mut watcher_ws).await["chat_seq"], 4);

    // Reconnect (with last_chat_seq) and reload (without) on the other node: the
    // history as the server holds it, the mute kept.
    drop(bob_ws);
    let mut bob_back = WsClient::connect(&home.ws_url(&game)).await;
    bob_back
        .send(json!({"type": "hello", "token": bob.token, "last_chat_seq": 1}))
        .await;
    assert_eq!(bob_back.next_of("welcome").await["seat"], bob_seat);
    assert_eq!(chat_catch_up(&mut bob_back, 2).await, vec![2, 4]);
    assert_eq!(
        bob_back.next_of("chat_mutes").await["muted"],
        json!([{"seat": ann_seat}])
    );
    let mut bob_reloaded = player(home, &bob).await;
    // Ann is muted: none of her messages, older ones included, reach Bob.
    assert_eq!(chat_catch_up(&mut bob_reloaded, 2).await, vec![2, 4]);
    let mut ann_reloaded = player(away, &ann).await;
    assert_eq!(chat_catch_up(&mut ann_reloaded, 4).await, vec![1, 2, 3, 4]);
    let mut late_spectator = WsClient::join(&home.ws_url(&game), None, None).await;
    assert_eq!(chat_catch_up(&mut late_spectator, 2).await, vec![2, 4]);

    // A flood is cut by the rate limit, with a typed error; the connection stays.
    let mut refused = 0;
    for n in 0..8 {
        ann_ws
            .send(json!({"type": "say", "text": format!("spam {n}")}))
            .await;
    }
    for _ in 0..8 {
        let reply = ann_ws.next_of_any(&["chat", "error"]).await;
        if reply["type"] == "error" {
            assert_eq!(reply["error"]["code"], "chat_rate_limited", "{reply}");
            refused += 1;
        }
    }
    assert!(refused >= 3, "at most 5 of 8 pass: {refused} refused");
    ann_ws.send(json!({"type": "ping"})).await;
    ann_ws.next_of("pong").await;

    // The operator deletes the watcher's message 2: every client is told, the database
    // forgets its text, and a reload sees a tombstone.
    let path = format!("/api/lobbies/{game}/chat/2");
    assert_eq!(away_api.delete_as(&path, "wrong-token").await.0, 401);
    let (status, body) = away_api.delete_as(&path, ADMIN_TOKEN).await;
    assert_eq!(status, 204, "{body}");
    let deletion = next_entry_of_kind(&mut watcher_ws, "deletion").await;
    assert_eq!(deletion["entry"]["deletes"], 2);
    assert_eq!(
        next_entry_of_kind(&mut bob_back, "deletion").await["entry"]["deletes"],
        2
    );
    let (status, history) = home_api.get(&format!("/api/lobbies/{game}/chat")).await;
    assert_eq!(status, 200, "{history}");
    let listed = history.to_string();
    assert!(!listed.contains("go Bob"), "{history}");
    assert!(
        !listed.contains("good luck"),
        "the players' chat needs a seat token: {history}"
    );
    assert!(listed.contains(r#""kind":"deleted""#), "{history}");
    let (_, as_player) = home_api
        .get_with(
            &format!("/api/lobbies/{game}/chat"),
            "authorization",
            &format!("Bearer {}", ann.token),
        )
        .await;
    assert!(as_player.to_string().contains("good luck"), "{as_player}");
    // A page bound is an int64, as the schema says: the largest pages everything,
    // one past it is refused as out of range rather than failing inside.
    let (status, unbounded) = home_api
        .get(&format!(
            "/api/lobbies/{game}/chat?before=9223372036854775807"
        ))
        .await;
    assert_eq!(status, 200, "{unbounded}");
    assert_eq!(unbounded["items"], history["items"]);
    for past_int64 in ["9223372036854775808", "18446744073709551616"] {
        let (status, body) = home_api
            .get(&format!("/api/lobbies/{game}/chat?before={past_int64}"))
            .await;
        assert_eq!(status, 400, "before={past_int64}: {body}");
        assert_eq!(body["error"]["code"], "bad_request", "{body}");
    }

    // The creator keeps the chat to the players: the spectator may no longer write.
    ann_ws
        .send(json!({"type": "chat_policy", "chat": "players"}))
        .await;
    let policy = next_entry_of_kind(&mut watcher_ws, "policy").await;
    assert_eq!(policy["entry"]["chat"], "players");
    watcher_ws
        .send(json!({"type": "say", "text": "still here"}))
        .await;
    assert_eq!(error_code(&mut watcher_ws).await, "chat_closed");
    bob_back
        .send(json!({"type": "chat_policy", "chat": "off"}))
        .await;
    assert_eq!(error_code(&mut bob_back).await, "not_creator");
    let (_, lobby) = away_api.get(&format!("/api/lobbies/{game}")).await;
    assert_eq!(lobby["chat"], "players", "{lobby}");

    // Once the game is over no room holds it: the operator still deletes from its
    // history, and an entry that is not a message, or no entry, is 404.
    let abort = format!("/api/lobbies/{game}/abort");
    let (status, body) = home_api.post_as(&abort, &ann.token, json!({})).await;
    assert_eq!(status, 204, "{body}");
    let chat = format!("/api/lobbies/{game}/chat");
    for missing in ["0", "999", "18446744073709551615"] {
        let (status, body) = away_api
            .delete_as(&format!("{chat}/{missing}"), ADMIN_TOKEN)
            .await;
        assert_eq!(status, 404, "{missing}: {body}");
    }
    let (status, body) = away_api.delete_as(&format!("{chat}/3"), ADMIN_TOKEN).await;
    assert_eq!(status, 204, "{body}");
    let (status, body) = away_api.delete_as(&format!("{chat}/3"), ADMIN_TOKEN).await;
    assert_eq!(status, 404, "deleted already: {body}");
    let bearer = format!("Bearer {}", ann.token);
    let (_, history) = home_api.get_with(&chat, "authorization", &bearer).await;
    let listed = history.to_string();
    assert!(!listed.contains("are you there"), "{history}");
    let last = history["items"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        last["entry"],
        json!({"kind": "deletion", "deletes": 3, "room": "players"})
    );
}

async fn player(server: &TestServer, seat: &Seat) -> WsClient {
    WsClient::join(&server.ws_url(&seat.lobby), Some(&seat.token), None).await
}

async fn spectator(server: &TestServer, game: &str, identity: &Player) -> WsClient {
    let mut client = WsClient::connect(&server.ws_url(game)).await;
    client
        .send(json!({"type": "hello", "player_id": identity.id, "player_secret": identity.secret}))
        .await;
    let welcome = client.next_of_any(&["welcome", "error"]).await;
    assert_eq!(welcome["type"], "welcome", "{welcome}");
    assert_eq!(welcome["role"], "spectator");
    client
}

async fn chat_of(client: &mut WsClient) -> Value {
    client.next_of("chat").await
}

async fn next_entry_of_kind(client: &mut WsClient, kind: &str) -> Value {
    loop {
        let chat = client.next_of("chat").await;
        if chat["entry"]["kind"] == kind {
            return chat;
        }
    }
}

async fn error_code(client: &mut WsClient) -> String {
    let error = client.next_of("error").await;
    error["error"]["code"].as_str().unwrap().to_owned()
}

/// The `chat_seq`s of the chat frames a client gets right after its hello: `count`
/// of them, then (checked with a ping) nothing more.
async fn chat_catch_up(client: &mut WsClient, count: usize) -> Vec<u64> {
    let mut seqs = Vec::new();
    for _ in 0..count {
        seqs.push(client.next_of("chat").await["chat_seq"].as_u64().unwrap());
    }
    client.send(json!({"type": "ping"})).await;
    loop {
        let message = client.next_of_any(&["chat", "pong"]).await;
        if message["type"] == "pong" {
            return seqs;
        }
        seqs.push(message["chat_seq"].as_u64().unwrap());
    }
}
