//! The web client in a real browser (headless Chromium over WebDriver), against the real
//! server binary: two people create, join and play a whole game by clicking and by
//! keyboard, watched by a third on a phone-sized screen, with a dropped connection and a
//! reload in the middle; a game against a bot; the finished match stepped through in the
//! history view; and the size of the first load and the speed of a large board redraw.
//!
//! Screenshots of the key screens are saved under `target/browser-screenshots/` and
//! checked to show a drawing, not a blank page. Without chromium and chromedriver these
//! tests skip loudly, unless `REQUIRE_BROWSER=1` (as in CI) makes them fail.

use carcassonne_tests::browser::{Browser, NewLobby, Stage, create_lobby};
use carcassonne_tests::client::Api;
use serde_json::Value;
use std::time::{Duration, Instant};

/// WebDriver key codes.
const ENTER: &str = "\u{e007}";
const ARROW_RIGHT: &str = "\u{e014}";

/// Several browsers at once are heavy on a small machine: one test at a time.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A whole game of this many tiles (the house rule for short games) keeps each test
/// within a minute while still ending with the final scoring.
const TILE_LIMIT: &str = "16";

/// A lobby of two seats for a short game of the base game.
fn short_game(player: &str) -> NewLobby<'_> {
    NewLobby {
        player,
        seats: "2",
        tile_limit: Some(TILE_LIMIT),
        expansions: &[],
        turn_clock: false,
        rated: false,
    }
}

/// How long a whole game may take in the browser.
const GAME_PATIENCE: Duration = Duration::from_secs(240);

/// Plays this turn's next step with the mouse: a highlighted cell, then Place; in the
/// act phase a figure on the first offered spot every other turn, else Pass.
async fn step_by_mouse(browser: &Browser, turn: usize) {
    if !browser.all("rect.target").await.is_empty() {
        browser.click("button[aria-label='Fit the board']").await;
        // A cell under the zoom buttons cannot be clicked: take the first that can. The
        // board may be redrawn meanwhile (a scored feature's highlight ends), which makes
        // the cells found stale: then look again.
        let mut clicked = false;
        for _ in 0..10 {
            for target in browser.all("rect.target").await {
                if target.click().await.is_ok() {
                    clicked = true;
                    break;
                }
            }
            if clicked {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(clicked, "no legal cell could be clicked");
        browser
            .click("button[data-action=place]:not([disabled])")
            .await;
    } else if !turn.is_multiple_of(3) && !browser.all("[data-move=place_figure]").await.is_empty() {
        browser.click("[data-move=place_figure]").await;
        browser.click("button[data-action=confirm]").await;
    } else if !browser.all("[data-action=pass]").await.is_empty() {
        browser.click("[data-action=pass]").await;
    } else {
        browser.click(".moves button").await;
    }
}

/// Plays this turn's next step with the keyboard: arrow to a legal cell or spot, R to
/// rotate, Enter to confirm; P passes.
async fn step_by_keyboard(browser: &Browser, turn: usize) {
    let main = browser.wait_for("#main").await;
    let keys = if !browser.all("rect.target").await.is_empty() {
        format!("{ARROW_RIGHT}r{ENTER}")
    } else if turn % 2 == 1 && !browser.all("g.spot").await.is_empty() {
        format!("{ARROW_RIGHT}{ENTER}")
    } else {
        "p".to_owned()
    };
    main.send_keys(&keys).await.expect("keys sent");
}

/// Plays the game to its end: whoever's page shows their turn moves, then the test
/// waits until that page has seen the update its move caused. `midway` runs once, after
/// `at` moves.
async fn play_to_the_end(
    players: &[&Browser],
    mut midway: impl AsyncFnMut(usize),
    at: usize,
) -> usize {
    let started = Instant::now();
    let mut moves = 0;
    while !players[0].game_over().await {
        assert!(
            started.elapsed() < GAME_PATIENCE,
            "the game did not end in time"
        );
        let mut moved = false;
        for (index, browser) in players.iter().enumerate() {
            if !browser.my_turn().await {
                continue;
            }
            let before = browser.seq().await;
            if index == 0 {
                step_by_mouse(browser, moves).await;
            } else {
                step_by_keyboard(browser, moves).await;
            }
            browser
                .wait_until(&format!("window.carcassonne.connection.seq > {before}"))
                .await;
            moves += 1;
            moved = true;
            if moves == at {
                midway(moves).await;
            }
        }
        if !moved {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    moves
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_people_play_a_whole_game_watched_by_a_third_through_a_drop_and_a_reload() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let Some(mut stage) = Stage::start_or_skip().await else {
        return;
    };
    let base = stage.base.clone();
    let ann = stage.driver.open(1280, 900).await;
    let bob = stage.driver.open(1280, 900).await;
    let watcher = stage.driver.open(390, 844).await;

    let game = create_lobby(&ann, &base, &short_game("ann")).await;
    bob.goto(&format!("{base}/#/game/{game}")).await;
    let name = bob.wait_for("form.join input").await;
    name.clear().await.expect("cleared");
    name.send_keys("bob").await.expect("typed");
    bob.click("button[data-action=join]").await;
    bob.wait_until("window.carcassonne.connection.role === 'player'")
        .await;
    watcher.goto(&format!("{base}/#/game/{game}")).await;
    watcher
        .wait_until("window.carcassonne?.connection?.role === 'spectator'")
        .await;
    ann.wait_until("document.querySelectorAll('.seats li').length === 2 && !document.querySelector('button[data-action=start]').disabled")
        .await;
    ann.click("button[data-action=start]").await;
    watcher.wait_for("svg.board use.tile").await;
    watcher.screenshot_named("phone-spectator-start").await;

    let mut dropped_at = 0;
    let moves = play_to_the_end(
        &[&ann, &bob],
        async |moves| {
            // Bob's connection drops; his page comes back by itself and resumes from its
            // seq. Then Ann reloads hers, and plays on from a fresh snapshot.
            dropped_at = moves;
            bob.eval("window.carcassonne.connection.drop(), true").await;
            let resumed = "window.carcassonne.connection.welcomes === 2 \
                 && window.carcassonne.connection.online";
            bob.wait_until(resumed).await;
            ann.screenshot_named("desktop-player-midgame").await;
            ann.client.refresh().await.expect("reload");
            ann.wait_until("window.carcassonne?.connection?.state?.game?.board?.length > 1")
                .await;
        },
        9,
    )
    .await;
    assert_eq!(dropped_at, 9, "the game ended before the drop and reload");
    assert!(moves >= 2 * 16, "{moves} moves for 16 tiles");

    for page in [&ann, &bob, &watcher] {
        page.wait_until("window.carcassonne.connection.state.status === 'finished'")
            .await;
        page.wait_for(".result").await;
    }
    let truth = watcher.state().await;
    assert_eq!(ann.state().await, truth, "ann's mirror differs");
    assert_eq!(bob.state().await, truth, "bob's mirror differs");
    let (_, record) = Api::new(base.clone())
        .get(&format!("/api/matches/{game}"))
        .await;
    let scores: Vec<Value> = record["seats"]
        .as_array()
        .expect("seats")
        .iter()
        .map(|seat| seat["score"].clone())
        .collect();
    assert_eq!(truth["game"]["result"]["final_scores"], Value::from(scores));
    let tiles_drawn = watcher
        .eval("document.querySelectorAll('svg.board use.tile').length")
        .await;
    assert_eq!(
        tiles_drawn,
        truth["game"]["board"].as_array().unwrap().len()
    );
    let log = watcher
        .eval("document.querySelector('.log').innerText")
        .await;
    assert!(
        log.as_str().unwrap().contains("Game over"),
        "the spectator's log: {log}"
    );
    watcher.screenshot_named("phone-spectator-finished").await;
    watcher
        .assert_accessible("finished game, phone spectator")
        .await;
    ann.screenshot_named("desktop-player-finished").await;
    for browser in [ann, bob, watcher] {
        browser.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_game_against_a_bot_then_stepped_through_in_the_history() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let Some(mut stage) = Stage::start_or_skip().await else {
        return;
    };
    let base = stage.base.clone();
    let ann = stage.driver.open(1280, 900).await;

    let game = create_lobby(&ann, &base, &short_game("ann")).await;
    ann.click("button[data-action=add-bot]").await;
    ann.wait_until("document.querySelectorAll('.seats li').length === 2 && window.carcassonne.connection.state.seats.length === 2")
        .await;
    ann.click("button[data-action=start]").await;
    play_to_the_end(&[&ann], async |_| {}, usize::MAX).await;
    ann.wait_for(".result").await;
    ann.screenshot_named("desktop-against-bot-finished").await;

    ann.goto(&format!("{base}/#/history")).await;
    ann.click(&format!("a[href='#/match/{game}']")).await;
    let total = ann
        .wait_until("document.querySelector('.stepper .step')?.textContent")
        .await;
    let total: usize = total
        .as_str()
        .and_then(|text| text.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .expect("Turn 0 of N");
    assert_eq!(total, 16, "the record has a turn per placed tile");
    for _ in 0..3 {
        ann.click("button[aria-label='Next turn']").await;
    }
    ann.wait_until("document.querySelector('.stepper .step').textContent === 'Turn 3 of 16'")
        .await;
    let tiles = ann
        .eval("document.querySelectorAll('svg.board use.tile').length")
        .await;
    assert_eq!(tiles, 4, "the start tile and three turns");
    ann.wait_for("#main")
        .await
        .send_keys("\u{e010}")
        .await
        .expect("End");
    ann.wait_until("document.querySelector('.stepper .step').textContent === 'Turn 16 of 16'")
        .await;
    ann.screenshot_named("desktop-history-replay").await;
    ann.assert_accessible("replay, desktop").await;
    ann.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_load_is_small_and_a_large_board_redraws_within_a_frame() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let Some(mut stage) = Stage::start_or_skip().await else {
        return;
    };
    let base = stage.base.clone();
    let page = stage.driver.open(1280, 900).await;
    page.goto(&format!("{base}/")).await;
    page.wait_for("form.create").await;
    let bytes = page
        .wait_until("performance.getEntriesByType('resource').filter(e => /\\.(js|css)$/.test(e.name)).reduce((sum, e) => sum + e.decodedBodySize, 0)")
        .await;
    let bytes = bytes.as_u64().expect("a byte count");
    eprintln!("first load: {bytes} bytes of JavaScript and CSS");
    assert!(bytes < 200 * 1024, "the first load is {bytes} bytes");

    page.goto(&format!("{base}/#/bench")).await;
    let per_redraw = page
        .wait_until("document.querySelector('#bench-result')?.dataset.msPerRedraw")
        .await;
    let tiles = page
        .eval("document.querySelector('#bench-result').dataset.tiles")
        .await;
    eprintln!(
        "redraw of a {tiles}-tile board: {per_redraw} ms ({})",
        page.eval("document.querySelector('#bench-result').textContent")
            .await
    );
    assert_eq!(tiles, "144");
    page.screenshot_named("desktop-benchmark-board").await;
    page.close().await;
}
