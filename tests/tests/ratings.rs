//! Rated play over real sockets on both databases: only registered players take a rated
//! lobby's seats, finished rated games change ratings (in the match, the profile and the
//! rating history), profiles add points up by kind and give two players' record, and
//! `carcassonne-server ratings rebuild` on the stopped server's database reproduces
//! every number.

use carcassonne_tests::client::{Api, Player};
use carcassonne_tests::database::TestDatabase;
use carcassonne_tests::server::{TestServer, server_binary};
use carcassonne_tests::table::Table;
use serde_json::{Value, json};

fn code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or_default()
}

/// A short game, so that the test plays several to their end.
fn short_rules() -> Value {
    json!({ "tile_limit": 6 })
}

/// Everything the server says of the players' ratings and of the matches' changes.
async fn ratings_seen(api: &Api, players: &[Player], matches: &[String]) -> Vec<Value> {
    let mut seen = Vec::new();
    for player in players {
        let (status, profile) = api.get(&format!("/api/players/{}", player.id)).await;
        assert_eq!(status, 200, "{profile}");
        seen.push(profile["ratings"].clone());
    }
    for id in matches {
        let (status, detail) = api.get(&format!("/api/matches/{id}")).await;
        assert_eq!(status, 200, "{detail}");
        seen.push(detail["ratings"].clone());
    }
    seen
}

/// The rating changes announced after a rated game's last move: the update after it,
/// heard alike by every player and the spectator.
async fn ratings_announced(table: &mut Table) -> Value {
    let last = table.seq();
    table.catch_up(last + 1).await;
    let mut heard = Vec::new();
    for client in table.players.iter().chain(table.spectator.as_ref()) {
        let (seq, events) = client.updates.last().unwrap();
        assert_eq!(*seq, last + 1);
        assert_eq!(events.as_array().unwrap().len(), 1, "{events}");
        assert_eq!(events[0]["type"], "ratings_changed", "{events}");
        heard.push(events[0]["changes"].clone());
    }
    assert!(heard.windows(2).all(|pair| pair[0] == pair[1]), "{heard:?}");
    heard.pop().unwrap()
}

/// The five kinds of points of a `points` object, added up.
fn points_total(points: &Value) -> u64 {
    ["road", "city", "monastery", "garden", "field"]
        .iter()
        .map(|kind| points[kind].as_u64().unwrap())
        .sum()
}

/// The seat `player` took in a match's detail.
fn seat_of<'a>(detail: &'a Value, player: &Player) -> Option<&'a Value> {
    detail["seats"]
        .as_array()
        .unwrap()
        .iter()
        .find(|seat| seat["player_id"] == player.id.as_str())
}

/// Ann's profile: her points by kind add up to her scores, match by match and in
/// total; her newest matches are listed; her record against Bob and Cy matches the
/// matches' results.
async fn profiles_add_up(api: &Api, players: &[Player], matches: &[String]) {
    let mut details = Vec::new();
    for id in matches {
        let (_, detail) = api.get(&format!("/api/matches/{id}")).await;
        for seat in detail["seats"].as_array().unwrap() {
            assert_eq!(
                points_total(&seat["points"]),
                seat["score"].as_u64().unwrap(),
                "{detail}"
            );
        }
        details.push(detail);
    }
    let [ann, bob, cy] = players else {
        panic!("three players")
    };
    let (_, profile) = api.get(&format!("/api/players/{}", ann.id)).await;
    let scored: u64 = details
        .iter()
        .map(|detail| seat_of(detail, ann).unwrap()["score"].as_u64().unwrap())
        .sum();
    assert!(scored > 0, "{details:?}");
    assert_eq!(points_total(&profile["points"]), scored, "{profile}");
    let recent: Vec<&str> = profile["recent_matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|listed| listed["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        recent,
        [matches[1].as_str(), matches[0].as_str()],
        "newest first"
    );

    let path = format!("/api/players/{}/head-to-head/{}", ann.id, bob.id);
    let (status, versus) = api.get(&path).await;
    assert_eq!(status, 200, "{versus}");
    let count = |test: &dyn Fn(&Value, &Value) -> bool| {
        details
            .iter()
            .filter(|detail| test(seat_of(detail, ann).unwrap(), seat_of(detail, bob).unwrap()))
            .count() as u64
    };
    assert_eq!(versus["games"], 2);
    assert_eq!(
        versus["wins"],
        count(&|a, _| a["winner"] == true),
        "{versus}"
    );
    assert_eq!(
        versus["opponent_wins"],
        count(&|_, b| b["winner"] == true),
        "{versus}"
    );
    let ahead = count(&|a, b| a["score"].as_u64() > b["score"].as_u64());
    assert_eq!(versus["ahead"], ahead, "{versus}");
    let shared = format!("/api/players/{}/matches?opponent={}", ann.id, cy.id);
    let (_, listed) = api.get(&shared).await;
    assert_eq!(listed["items"].as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed["items"][0]["id"], matches[1].as_str());

    let myself = format!("/api/players/{}/head-to-head/{}", ann.id, ann.id);
    let (status, body) = api.get(&myself).await;
    assert_eq!((status, code(&body)), (400, "bad_request"), "{body}");
    let nobody = format!(
        "/api/players/{}/head-to-head/{}",
        ann.id,
        uuid::Uuid::new_v4()
    );
    let (status, body) = api.get(&nobody).await;
    assert_eq!((status, code(&body)), (404, "not_found"), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rated_games_change_ratings_and_a_rebuild_reproduces_them() {
    for database in TestDatabase::both() {
        let server = TestServer::start(&database.url()).await;
        let api = Api::new(server.http());
        let players = [
            api.register("ann").await,
            api.register("bob").await,
            api.register("cy").await,
        ];

        // Guests and bots are refused a rated lobby's seats, with a typed error.
        let (status, body) = api
            .post(
                "/api/lobbies",
                json!({ "name": "x", "seats": 2, "rated": true, "display_name": "guest" }),
            )
            .await;
        assert_eq!((status, code(&body)), (403, "rated_players_only"), "{body}");
        let seats = api.rated_lobby(short_rules(), &[&players[0]]).await;
        let path = format!("/api/lobbies/{}/join", seats[0].lobby);
        let (status, body) = api.post(&path, json!({ "display_name": "guest" })).await;
        assert_eq!((status, code(&body)), (403, "rated_players_only"), "{body}");
        let path = format!("/api/lobbies/{}/bots", seats[0].lobby);
        let (status, body) = api
            .post_as(&path, &seats[0].token, json!({ "level": "random" }))
            .await;
        assert_eq!((status, code(&body)), (403, "rated_players_only"), "{body}");

        // A duel and a three-player game, played to their end.
        let mut matches = Vec::new();
        let duel = api
            .rated_lobby(short_rules(), &[&players[0], &players[1]])
            .await;
        let mut table = Table::open(&server, duel, 7).await;
        table.play_to_the_end().await;
        let mut announced = vec![ratings_announced(&mut table).await];
        matches.push(table.game.clone());
        let three = api
            .rated_lobby(short_rules(), &[&players[2], &players[0], &players[1]])
            .await;
        let mut table = Table::open(&server, three, 8).await;
        table.play_to_the_end().await;
        announced.push(ratings_announced(&mut table).await);
        matches.push(table.game.clone());
        // Every client heard the changes the match records, in the update after the last,
        // and the game's event log has that update too.
        for (game, changes) in matches.iter().zip(&announced) {
            let (_, detail) = api.get(&format!("/api/matches/{game}")).await;
            assert_eq!(changes, &detail["ratings"], "{detail}");
            let (_, log) = api
                .get(&format!("/api/lobbies/{game}/events?limit=500"))
                .await;
            assert!(log["next_after_seq"].is_null(), "one page holds the log");
            let last = log["items"].as_array().unwrap().last().unwrap().clone();
            assert_eq!(last["events"][0]["changes"], *changes, "{last}");
        }

        let (_, duel_detail) = api.get(&format!("/api/matches/{}", matches[0])).await;
        let changes = duel_detail["ratings"].as_array().unwrap();
        assert_eq!(changes.len(), 2, "{duel_detail}");
        for change in changes {
            assert!(change["after"]["sigma"].as_f64() < change["before"]["sigma"].as_f64());
            let place = change["place"].as_u64().unwrap();
            let seat = change["seat"].as_u64().unwrap() as usize;
            let won = duel_detail["seats"][seat]["winner"].as_bool().unwrap();
            assert_eq!(
                place == 1,
                won,
                "the winner takes first place: {duel_detail}"
            );
        }

        let (_, ann) = api.get(&format!("/api/players/{}", players[0].id)).await;
        let pools: Vec<&str> = ann["ratings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|rating| rating["pool"].as_str().unwrap())
            .collect();
        assert_eq!(pools, ["multiplayer", "two_player"], "{ann}");
        assert!(ann["ratings"][0]["provisional"].as_bool().unwrap());
        let (status, history) = api
            .get(&format!(
                "/api/players/{}/ratings/two_player",
                players[0].id
            ))
            .await;
        assert_eq!(status, 200, "{history}");
        assert_eq!(history["items"][0]["match_id"], matches[0].as_str());
        // Nobody has played enough rated games to be ranked yet.
        let (status, board) = api.get("/api/leaderboards/two_player").await;
        assert_eq!(
            (status, board["items"].clone()),
            (200, json!([])),
            "{board}"
        );
        let (status, body) = api.get("/api/leaderboards/chess").await;
        assert_eq!((status, code(&body)), (404, "not_found"));
        profiles_add_up(&api, &players, &matches).await;

        let before = ratings_seen(&api, &players, &matches).await;
        server.terminate().await;
        let rebuild = std::process::Command::new(server_binary())
            .args(["ratings", "rebuild", "--database", &database.url()])
            .output()
            .expect("running ratings rebuild");
        let printed = String::from_utf8_lossy(&rebuild.stdout);
        assert!(rebuild.status.success(), "{printed} {rebuild:?}");
        assert!(printed.contains("from 2 rated matches"), "{printed}");
        let server = TestServer::start(&database.url()).await;
        let api = Api::new(server.http());
        let after = ratings_seen(&api, &players, &matches).await;
        assert_eq!(
            after,
            before,
            "{}: the rebuild reproduces every number",
            database.kind()
        );
    }
}
