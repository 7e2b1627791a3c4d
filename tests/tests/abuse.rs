//! Abuse and faults at the transport: every command gets its one reply, bad frames get
//! the fitting close code, fair play of any speed is never cut off while floods are,
//! and slow, silent or non-reading clients are bounded (per client too).

use carcassonne_tests::client::{Api, WsClient};
use carcassonne_tests::database::TestDatabase;
use carcassonne_tests::raw::{
    OTHER_CLIENT, closed_after, connect_from, send_frame, websocket_over,
};
use carcassonne_tests::server::TestServer;
use carcassonne_tests::table::Table;
use futures_util::{SinkExt, StreamExt};
use serde_json::json;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio_tungstenite::tungstenite::Message;

async fn sqlite_server(options: &[&str]) -> (TestDatabase, TestServer) {
    let database = TestDatabase::sqlite();
    let server = TestServer::start_with(&database.url(), options).await;
    (database, server)
}

type RawSocket = tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>;

/// The close code the server sends next on a raw socket, reading past other frames.
async fn raw_close_code(socket: &mut RawSocket) -> Option<u16> {
    raw_close(socket).await.map(|(code, _)| code)
}

/// The close code and reason the server sends next on a raw socket, reading past other
/// frames; `None` if it hung up without a close frame.
async fn raw_close(socket: &mut RawSocket) -> Option<(u16, String)> {
    loop {
        let frame = tokio::time::timeout(Duration::from_secs(15), socket.next())
            .await
            .expect("the server answers in time");
        match frame {
            Some(Ok(Message::Close(frame))) => {
                return frame.map(|f| (u16::from(f.code), f.reason.to_string()));
            }
            Some(Ok(_)) => continue,
            Some(Err(_)) | None => return None,
        }
    }
}

/// Asserts that the server closed `socket` with 1008 because a newer connection took its
/// place before it said hello.
async fn assert_evicted(socket: &mut RawSocket, which: &str) {
    let (code, reason) = raw_close(socket)
        .await
        .unwrap_or_else(|| panic!("{which} got no close frame"));
    assert_eq!(code, 1008, "{which}: {reason}");
    assert!(reason.starts_with("evicted"), "{which}: {reason}");
}

/// Asserts that the server has sent nothing on `socket` (no close either) for a moment.
async fn assert_still_open(socket: &mut RawSocket, which: &str) {
    let next = tokio::time::timeout(Duration::from_millis(300), socket.next()).await;
    assert!(next.is_err(), "{which} is still open: {next:?}");
}

/// A silent WebSocket (it never says hello) to `url` from the client address `source`.
async fn silent_websocket(source: &str, server: &TestServer, url: &str) -> RawSocket {
    let stream = connect_from(source, server.address, None).await;
    websocket_over(stream, url)
        .await
        .unwrap_or_else(|status| panic!("a silent socket from {source} was refused: {status}"))
}

/// Says hello on a raw socket with a seat token and returns the server's answer.
async fn raw_hello(socket: &mut RawSocket, token: &str) -> serde_json::Value {
    let hello = json!({ "type": "hello", "token": token }).to_string();
    socket.send(Message::Text(hello.into())).await.unwrap();
    loop {
        let frame = tokio::time::timeout(Duration::from_secs(15), socket.next())
            .await
            .expect("the server answers in time");
        match frame {
            Some(Ok(Message::Text(text))) => return serde_json::from_str(&text).unwrap(),
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
            other => panic!("no answer to the hello: {other:?}"),
        }
    }
}

/// The value of one line of the server's metrics, 0 when it has no such line.
async fn metric(server: &TestServer, line_start: &str) -> u64 {
    let metrics = reqwest::get(format!("{}/metrics", server.http()))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(line_start))
        .map_or(0, |value| value.trim().parse().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_command_is_rejected_with_its_id() {
    let (_db, server) = sqlite_server(&[]).await;
    let table = Table::start(&server, 2, json!({}), 3).await;
    let url = server.ws_url(&table.game);
    let mut client = WsClient::join(&url, Some(&table.seats[0].token), None).await;
    client.next_of("snapshot").await;
    let bad = r#"{"type":"command","id":"c-bad","seq":1,"move":{"type":"fly"}}"#;
    client.send_text(bad.to_owned()).await;
    let reply = client.next_of_any(&["rejected", "error"]).await;
    assert_eq!(reply["type"], "rejected", "{reply}");
    assert_eq!(reply["id"], "c-bad");
    assert_eq!(reply["error"]["code"], "bad_message");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_id_of_64_characters_is_accepted_however_many_bytes() {
    let (_db, server) = sqlite_server(&[]).await;
    let mut table = Table::start(&server, 2, json!({}), 5).await;
    let mover = table.mover().unwrap();
    let chosen = table.players[mover].legal_moves.clone().unwrap()[0].clone();
    let id = "é".repeat(64);
    let reply = table.players[mover].command(&id, chosen).await;
    assert_eq!(reply["type"], "ack", "64 characters (128 bytes): {reply}");
    let too_long = "é".repeat(65);
    let mover = table.mover().unwrap();
    let chosen = table.players[mover].legal_moves.clone().unwrap()[0].clone();
    let reply = table.players[mover].command(&too_long, chosen).await;
    assert_eq!(reply["error"]["code"], "bad_request", "{reply}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_game_start_without_reseating_sends_no_second_welcome() {
    let (_db, server) = sqlite_server(&[]).await;
    let api = Api::new(server.http());
    let creator = api.create_lobby("ann", 2, json!({})).await;
    let guest = api.join(&creator.lobby, "bob").await;
    let url = server.ws_url(&creator.lobby);
    let mut first = WsClient::join(&url, Some(&creator.token), None).await;
    let mut second = WsClient::join(&url, Some(&guest.token), None).await;
    api.start(&creator).await;
    for client in [&mut first, &mut second] {
        client.send(json!({ "type": "ping" })).await;
        let mut seen = Vec::new();
        loop {
            let message = client.next().await;
            if message["type"] == "pong" {
                break;
            }
            seen.push(message["type"].as_str().unwrap_or_default().to_owned());
        }
        assert!(
            !seen.iter().any(|kind| kind == "welcome"),
            "no welcome when the seat did not change: {seen:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_utf8_text_closes_with_1007() {
    let (_db, server) = sqlite_server(&[]).await;
    let table = Table::start(&server, 2, json!({}), 7).await;
    let stream = connect_from("127.0.0.1", server.address, None).await;
    let mut socket = websocket_over(stream, &server.ws_url(&table.game))
        .await
        .unwrap();
    send_frame(&mut socket, vec![b'{', 0xff, 0xfe, b'}'], false, true)
        .await
        .unwrap();
    assert_eq!(raw_close_code(&mut socket).await, Some(1007));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fragmented_message_is_refused_before_twice_the_limit_is_buffered() {
    // The default limit: 16 KiB, and nothing past twice that is read of one message.
    // The fragments never end, so only that bound can act.
    let (_db, server) = sqlite_server(&[]).await;
    let table = Table::start(&server, 2, json!({}), 8).await;
    let stream = connect_from("127.0.0.1", server.address, None).await;
    let mut socket = websocket_over(stream, &server.ws_url(&table.game))
        .await
        .unwrap();
    let fragment = || vec![b'x'; 4 * 1024];
    send_frame(&mut socket, fragment(), false, false)
        .await
        .unwrap();
    for _ in 0..11 {
        // 48 KiB in all: over the bound, far under the old 1 MiB buffer.
        if send_frame(&mut socket, fragment(), true, false)
            .await
            .is_err()
        {
            break;
        }
    }
    assert_eq!(raw_close_code(&mut socket).await, Some(1009));
}

/// A frame a little over the limit (17 KiB of 16) is refused with 1009, and the close
/// handshake finishes: the server reads the rest of the frame, waits for the client's
/// close and ends the connection with a FIN. (It used to close with the frame half read,
/// which makes the kernel send a reset, and a client may then lose the close frame.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_frame_is_refused_with_the_whole_close_handshake() {
    let (_db, server) = sqlite_server(&[]).await;
    let table = Table::start(&server, 2, json!({}), 8).await;
    for _ in 0..3 {
        let stream = connect_from("127.0.0.1", server.address, None).await;
        let mut socket = websocket_over(stream, &server.ws_url(&table.game))
            .await
            .unwrap();
        send_frame(&mut socket, vec![b'x'; 17 * 1024], false, true)
            .await
            .unwrap();
        assert_eq!(raw_close_code(&mut socket).await, Some(1009));
        // The client's close frame, queued when the server's came, goes out now.
        socket.flush().await.expect("the close frame is sent back");
        let mut rest = Vec::new();
        let read = tokio::time::timeout(
            Duration::from_secs(5),
            tokio::io::AsyncReadExt::read_to_end(socket.get_mut(), &mut rest),
        )
        .await
        .expect("the server ends the connection");
        assert!(
            read.is_ok(),
            "the connection ended with {read:?}, not a clean end of stream"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_websocket_to_a_malformed_game_id_gets_the_documented_404() {
    let (_db, server) = sqlite_server(&[]).await;
    let url = server.ws_url("not-a-uuid");
    let error = tokio_tungstenite::connect_async(&url).await.unwrap_err();
    let tokio_tungstenite::tungstenite::Error::Http(response) = error else {
        panic!("an HTTP refusal, not {error}");
    };
    assert_eq!(response.status().as_u16(), 404);
    let body: serde_json::Value =
        serde_json::from_slice(response.body().as_deref().unwrap_or_default()).unwrap();
    assert_eq!(body["error"]["code"], "not_found");
}

/// Plays a whole two-player game as fast as the clients can answer under `options`;
/// returns the commands played and the seconds it took.
async fn play_fast(options: &[&str]) -> (f64, f64) {
    let (_db, server) = sqlite_server(options).await;
    let mut table = Table::start(&server, 2, json!({}), 11).await;
    let started = std::time::Instant::now();
    let played = table.play_to_the_end().await as f64;
    table.assert_mirrors_agree();
    (played, started.elapsed().as_secs_f64())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instant_fair_play_on_default_limits_is_never_cut_off() {
    let (played, seconds) = play_fast(&[]).await;
    assert!(
        played > 100.0,
        "a whole base game: {played} commands in {seconds:.2} s"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accepted_moves_are_free_so_even_a_tiny_limit_never_cuts_fair_play() {
    // A limit far below the pace of the game: only the refund of accepted moves lets
    // each player's ~70 commands through.
    let (played, seconds) =
        play_fast(&["--messages-per-second", "1", "--message-burst", "5"]).await;
    assert!(
        played / 2.0 > 5.0 + seconds,
        "the game outpaced the limit: {played} commands in {seconds:.2} s"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_pings_or_bad_frames_is_cut_off_after_a_rate_limited_error() {
    let (_db, server) = sqlite_server(&[]).await;
    let table = Table::start(&server, 2, json!({}), 12).await;
    let url = server.ws_url(&table.game);
    for frame in [json!({ "type": "ping" }).to_string(), "{garbage".to_owned()] {
        let mut flooder = WsClient::join(&url, None, None).await;
        for _ in 0..200 {
            if flooder.try_send_text(frame.clone()).await.is_err() {
                break;
            }
        }
        let error = flooder.next_of("error").await;
        let mut error = error;
        while error["error"]["code"] != "rate_limited" {
            error = flooder.next_of("error").await;
        }
        assert_eq!(flooder.close_code().await, Some(1008), "{frame}");
    }
    // Each cut-off connection counts once, as the error it was sent.
    let cut_off = metric(
        &server,
        "carcassonne_rejected_commands_total{code=\"rate_limited\"}",
    )
    .await;
    assert_eq!(cut_off, 2);
}

/// Sends resync requests (each answered with a whole snapshot) until the server stops
/// reading them, which it does once its sends to this client block. Each request is
/// padded to 15 KB so that the server's receive buffer fills soon after it stops.
async fn pile_up_snapshots(
    sleeper: &mut tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>,
) {
    let mut resync = br#"{"type":"resync","last_seq":null}"#.to_vec();
    resync.resize(15_000, b' ');
    for sent in 0..20_000 {
        let resync = resync.clone();
        let send = send_frame(sleeper, resync, false, true);
        match tokio::time::timeout(Duration::from_secs(1), send).await {
            Ok(Ok(())) => continue,
            Ok(Err(_)) | Err(_) => {
                assert!(sent > 10, "the server stopped reading after {sent} resyncs");
                return;
            }
        }
    }
    panic!("the server kept reading: a client with a tiny window absorbed every snapshot");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_finishes_while_a_client_never_reads() {
    // The message rate limit is not what this test is about: lift it so the snapshots
    // pile up fast. The send timeout is the default 10 s.
    let options = [
        "--messages-per-second",
        "1000000",
        "--message-burst",
        "1000000",
    ];
    let (_db, server) = sqlite_server(&options).await;
    // The game stays in play: an ended room unloads and would refuse the spectator.
    let mut table = Table::start(&server, 2, json!({ "tile_limit": 10 }), 13).await;
    for _ in 0..6 {
        table.play_one().await;
    }
    // A spectator with a tiny receive window that says hello and then never reads.
    let stream = connect_from("127.0.0.1", server.address, Some(1024)).await;
    let mut sleeper = websocket_over(stream, &server.ws_url(&table.game))
        .await
        .unwrap();
    send_frame(&mut sleeper, br#"{"type":"hello"}"#.to_vec(), false, true)
        .await
        .unwrap();
    pile_up_snapshots(&mut sleeper).await;
    let started = std::time::Instant::now();
    let (status, log) = server.terminate_within(Duration::from_secs(25)).await;
    assert!(status.success(), "{status:?}\n{log}");
    assert!(
        log.contains("the client did not read in time"),
        "the sleeper was dropped for not reading:\n{log}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    drop(sleeper);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trickled_headers_and_silent_connections_are_cut_after_the_timeout() {
    let (_db, server) = sqlite_server(&["--header-read-timeout", "1s"]).await;
    let mut silent = connect_from("127.0.0.1", server.address, None).await;
    let mut trickler = connect_from("127.0.0.1", server.address, None).await;
    trickler
        .write_all(b"GET /healthz HTTP/1.1\r\n")
        .await
        .unwrap();
    let trickle = async {
        for _ in 0..20 {
            tokio::time::sleep(Duration::from_millis(200)).await;
            if trickler.write_all(b"X-Slow: yes\r\n").await.is_err() {
                break;
            }
        }
    };
    trickle.await;
    let waited = closed_after(&mut trickler, Duration::from_secs(5)).await;
    assert!(waited.is_some(), "trickled headers are cut off");
    let waited = closed_after(&mut silent, Duration::from_secs(5)).await;
    assert!(waited.is_some(), "a silent connection is cut off");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_connections_from_one_ip_cannot_lock_a_player_out() {
    // The players' own connections (REST and WebSocket) count against their IP too.
    let options = [
        "--max-connections-per-ip",
        "8",
        "--header-read-timeout",
        "30s",
    ];
    let (_db, server) = sqlite_server(&options).await;
    let mut held = Vec::new();
    for _ in 0..8 {
        held.push(connect_from(OTHER_CLIENT, server.address, None).await);
    }
    let mut refused = connect_from(OTHER_CLIENT, server.address, None).await;
    let waited = closed_after(&mut refused, Duration::from_secs(5)).await;
    assert!(
        waited.is_some(),
        "the ninth connection from one IP is closed at once"
    );
    let mut table = Table::start(&server, 2, json!({ "tile_limit": 10 }), 14).await;
    table.play_to_the_end().await;
    for connection in &mut held {
        assert!(
            closed_after(connection, Duration::from_millis(50))
                .await
                .is_none(),
            "held connections stay open until their own timeout"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websockets_that_never_say_hello_have_their_own_smaller_cap() {
    // Past its client's cap, a silent socket takes the place of that client's oldest.
    let options = ["--max-pending-connections-per-ip", "3"];
    let (_db, server) = sqlite_server(&options).await;
    let mut table = Table::start(&server, 2, json!({ "tile_limit": 10 }), 15).await;
    let url = server.ws_url(&table.game);
    let mut silent = Vec::new();
    for _ in 0..4 {
        silent.push(silent_websocket(OTHER_CLIENT, &server, &url).await);
    }
    assert_evicted(&mut silent[0], "the client's oldest silent socket").await;
    for (number, socket) in silent.iter_mut().enumerate().skip(1) {
        assert_still_open(socket, &format!("silent socket {number}")).await;
    }
    let evicted = r#"carcassonne_refused_connections_total{reason="pending_evicted_per_client"}"#;
    assert_eq!(metric(&server, evicted).await, 1);
    let mut spectator = WsClient::join(&url, None, None).await;
    spectator.next_of("snapshot").await;
    table.play_to_the_end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_websockets_from_many_clients_give_way_to_a_player_oldest_first() {
    let options = ["--max-pending-connections", "50", "--hello-timeout", "60s"];
    let (_db, server) = sqlite_server(&options).await;
    let creator = Api::new(server.http())
        .create_lobby("seat0", 2, json!({}))
        .await;
    let url = server.ws_url(&creator.lobby);
    // 20 from each of 4 clients, each at its own cap (the default 20) and never over.
    let mut silent = Vec::new();
    for source in ["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"] {
        for _ in 0..20 {
            silent.push(silent_websocket(source, &server, &url).await);
        }
    }
    let stream = connect_from("127.0.0.6", server.address, None).await;
    let mut player = websocket_over(stream, &url)
        .await
        .expect("the player's socket is upgraded");
    let welcome = raw_hello(&mut player, &creator.token).await;
    assert_eq!(welcome["type"], "welcome", "{welcome}");
    assert_eq!(welcome["seat"], 0, "{welcome}");
    // 80 silent sockets and the player in 50 places: the 31 oldest silent ones went.
    for (number, socket) in silent.iter_mut().enumerate().take(31) {
        assert_evicted(socket, &format!("silent socket {number}")).await;
    }
    assert_still_open(&mut silent[31], "the oldest silent socket left").await;
    assert_still_open(&mut silent[79], "the newest silent socket").await;
    let evicted = r#"carcassonne_refused_connections_total{reason="pending_evicted"}"#;
    assert_eq!(metric(&server, evicted).await, 31);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_requests_are_rate_limited_per_client_with_retry_after() {
    let options = ["--requests-per-second", "1", "--request-burst", "3"];
    let (_db, server) = sqlite_server(&options).await;
    let http = reqwest::Client::new();
    let url = format!("{}/api/tiles", server.http());
    for _ in 0..3 {
        assert_eq!(http.get(&url).send().await.unwrap().status(), 200);
    }
    let limited = http.get(&url).send().await.unwrap();
    assert_eq!(limited.status(), 429);
    let retry_after: u64 = limited.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=2).contains(&retry_after), "{retry_after}");
    let body: serde_json::Value = limited.json().await.unwrap();
    assert_eq!(body["error"]["code"], "rate_limited");
    for path in ["/healthz", "/readyz", "/metrics"] {
        let status = http
            .get(format!("{}{path}", server.http()))
            .send()
            .await
            .unwrap()
            .status();
        assert_eq!(status, 200, "{path} is never rate limited");
    }
}
