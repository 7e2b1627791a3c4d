//! The web client as players want it, in a real browser against the real binary: a whole
//! 72-tile base game on a phone-sized screen, by touch, against a bot (the figure step,
//! the last move, the clocks, the tiles to come, the final table, the replay); the
//! details of play by mouse and keyboard on a desktop (turning the chosen tile, arrow
//! keys on the board, the log after a reload and for a late spectator, notices that go
//! away; a move refused while the database is away, sent again until it lands); aborting;
//! quick play (waiting, cancelling, the matched game); a rematch against a bot; and
//! axe-core's WCAG 2.2 AA rules on every page at both sizes.
//!
//! Screenshots are saved under `target/browser-screenshots/` as a gallery a person can
//! look at (`phone-*`): the start, the figure step, the last move, the final table and
//! the replay.

use carcassonne_tests::browser::{Browser, Driver, NewLobby, Stage, create_lobby};
use carcassonne_tests::client::WsClient;
use carcassonne_tests::database::TestDatabase;
use carcassonne_tests::proxy::TcpProxy;
use carcassonne_tests::server::TestServer;
use carcassonne_tests::table::Table;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// WebDriver key codes.
const ENTER: &str = "\u{e007}";
const ARROW_UP: &str = "\u{e013}";
const ARROW_RIGHT: &str = "\u{e014}";

/// Several browsers at once are heavy on a small machine: one test at a time.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// How long a whole 72-tile game against a bot may take.
const WHOLE_GAME_PATIENCE: Duration = Duration::from_secs(420);

/// Adds a bot by touch and starts; the focus stays on a control of the panel each time.
async fn add_bot_and_start(page: &Browser) {
    page.tap_on("button[data-action=add-bot]").await;
    page.wait_until("window.carcassonne.connection.state.seats.length === 2")
        .await;
    assert_focus_kept(page, "after Add bot").await;
    page.tap_on("button[data-action=start]:not([disabled])")
        .await;
    page.wait_until("window.carcassonne.connection.state.status === 'playing'")
        .await;
    page.wait_for("svg.board use.tile").await;
    assert_focus_kept(page, "after Start").await;
}

async fn assert_focus_kept(page: &Browser, when: &str) {
    let focused = page
        .wait_until("document.activeElement && document.activeElement !== document.body && document.activeElement.tagName")
        .await;
    assert_ne!(focused, "BODY", "the focus fell to the page {when}");
}

/// Waits until it is this page's turn to place its tile, with the legal cells in.
async fn wait_for_a_tile_to_place(page: &Browser) {
    page.wait_until(
        "window.carcassonne.connection.legal?.place_tile && document.querySelector('.turn.mine')",
    )
    .await;
}

/// A legal cell whose centre is free to tap (not under the zoom buttons), as
/// `[x, y, rotations]`; fits the board first when none is.
async fn tappable_cell(page: &Browser) -> Value {
    const FIND: &str = "(() => {
        for (const rect of document.querySelectorAll('rect.target')) {
          const box = rect.getBoundingClientRect();
          const hit = document.elementFromPoint(box.x + box.width / 2, box.y + box.height / 2);
          if (hit === rect) return rect.dataset.cell;
        }
        return null;
      })()";
    let mut found = page.eval(FIND).await;
    if found.is_null() {
        page.tap_on("button[aria-label='Fit the board']").await;
        found = page.eval(FIND).await;
    }
    let cell = found.as_str().expect("a legal cell free to tap").to_owned();
    let (x, y) = cell.split_once(',').expect("x,y");
    page.eval(&format!(
        "window.carcassonne.connection.legal.place_tile.find(([x, y]) => x === {x} && y === {y})"
    ))
    .await
}

/// The figure step on a phone, checked on the first turn that offers one: the view
/// zooms to the placed tile, every spot is a finger wide, nothing is chosen yet, Enter
/// sends nothing, a tap shows the choice with Confirm and Undo.
async fn check_the_figure_step(page: &Browser) {
    let sizes = page
        .eval("[...document.querySelectorAll('g.spot')].map((g) => { const b = g.getBoundingClientRect(); return Math.min(b.width, b.height); })")
        .await;
    let smallest = sizes
        .as_array()
        .expect("spot sizes")
        .iter()
        .filter_map(Value::as_f64)
        .fold(f64::MAX, f64::min);
    assert!(smallest >= 44.0, "a spot is {smallest:.1} CSS px across");
    let tile = page
        .eval("(() => { const b = window.carcassonne.connection.state.game.board.at(-1); const r = document.querySelector(`.last-move[data-last='${b[0]},${b[1]}']`); return r ? r.getBoundingClientRect().width : 0; })()")
        .await;
    let tile = tile.as_f64().unwrap_or(0.0);
    assert!(
        tile >= 200.0,
        "the placed tile is {tile:.0} px wide: the view did not zoom to it"
    );
    let preselected = page
        .all("g.spot[aria-pressed=true], .moves [aria-pressed=true]")
        .await;
    assert!(
        preselected.is_empty(),
        "a spot is chosen before the player chose one"
    );
    let before = page.seq().await;
    page.keys(&format!("{ENTER}{ENTER}")).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(page.seq().await, before, "Enter sent a figure nobody chose");
    page.tap_on("g.spot").await;
    page.wait_for("button[data-action=confirm]").await;
    page.wait_for(".figure.chosen, g.spot[aria-pressed=true]")
        .await;
    page.screenshot_named("phone-figure-step").await;
    page.tap_on("button[data-action=undo]").await;
    page.wait_until("!document.querySelector('button[data-action=confirm]')")
        .await;
    assert_eq!(page.seq().await, before, "Undo sent something");
}

/// The tiles to come, counted from the list, equal what the server says the stack holds.
async fn check_the_tiles_to_come(page: &Browser) {
    let listed = page
        .eval("[...document.querySelectorAll('.remaining-list li span')].reduce((sum, s) => sum + Number(s.textContent.replace('×', '')), 0)")
        .await;
    let stack = page
        .eval("window.carcassonne.connection.state.game.turn.tiles_left")
        .await;
    assert_eq!(
        listed, stack,
        "the tiles to come do not add up to the stack"
    );
}

/// The last move is outlined in the colour of who made it and said in words, with no
/// tile letter or coordinates.
async fn check_the_last_move(page: &Browser) {
    let mark = page
        .wait_until("(() => { const b = window.carcassonne.connection.state.game.board.at(-1); return !!document.querySelector(`.last-move[data-last='${b[0]},${b[1]}']`); })()")
        .await;
    assert_eq!(mark, Value::Bool(true));
    let text = page
        .wait_until("document.querySelector('.last-move-text')?.textContent")
        .await;
    let text = text.as_str().expect("words").to_owned();
    assert!(text.contains(" placed a"), "the last move reads {text:?}");
    assert_says_where(&text);
    assert_plain_words(&text);
}

/// The last move says where the tile went, by its neighbours.
fn assert_says_where(text: &str) {
    let beside = [
        "next to the start tile",
        "to the right of a",
        "to the left of a",
        "above a",
        "below a",
    ];
    assert!(
        beside.iter().any(|words| text.contains(words)),
        "the last move does not say where: {text:?}"
    );
}

/// No tile letter ("placed Q", "R01", "IC16"), coordinates ("2,6") or "1 followers" in
/// what players read. "A" is a word only where a sentence starts.
fn assert_plain_words(text: &str) {
    for line in text.lines() {
        let mut sentence_start = true;
        for word in line.split_whitespace() {
            let bare = word.trim_matches(|c: char| !c.is_alphanumeric());
            let letters = bare.trim_end_matches(|c: char| c.is_ascii_digit());
            let tile_like = (1..=2).contains(&letters.len())
                && letters.chars().all(|c| c.is_ascii_uppercase())
                && !(bare == "A" && sentence_start);
            assert!(!tile_like, "a tile letter {bare:?} in {text:?}");
            sentence_start = word.ends_with(['.', '!', '?']);
        }
    }
    let coordinates = text
        .as_bytes()
        .windows(3)
        .any(|w| w[0].is_ascii_digit() && w[1] == b',' && (w[2].is_ascii_digit() || w[2] == b'-'));
    assert!(!coordinates, "coordinates in {text:?}");
    for wrong in ["1 followers", "1 points", "1 tiles"] {
        let singular_as_plural = text
            .match_indices(wrong)
            .any(|(at, _)| at == 0 || !text.as_bytes()[at - 1].is_ascii_digit());
        assert!(!singular_as_plural, "{wrong:?} in {text:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_base_game_on_a_phone_by_touch_against_a_bot() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let Some(mut stage) = Stage::start_or_skip().await else {
        return;
    };
    let base = stage.base.clone();
    let page = stage.driver.open(390, 844).await;
    page.goto(&format!("{base}/")).await;
    page.wait_for("form.create").await;
    page.assert_accessible("home, phone").await;
    let lobby = NewLobby {
        player: "ann",
        seats: "2",
        tile_limit: None,
        expansions: &[],
        turn_clock: true,
        rated: false,
    };
    let game = create_lobby(&page, &base, &lobby).await;
    let board_shown = page
        .eval("document.querySelector('.board-area').getClientRects().length > 0")
        .await;
    assert_eq!(
        board_shown,
        Value::Bool(false),
        "the lobby shows an empty board"
    );
    page.assert_accessible("lobby, phone").await;
    add_bot_and_start(&page).await;
    page.screenshot_named("phone-start").await;

    let started = Instant::now();
    let (mut turns, mut figure_step_checked, mut turned_by_tap, mut midgame_checked) =
        (0, false, false, false);
    while !page.game_over().await {
        assert!(
            started.elapsed() < WHOLE_GAME_PATIENCE,
            "the game did not end in time"
        );
        if !page.my_turn().await {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        }
        let title = page.eval("document.title").await;
        assert!(
            title.as_str().unwrap_or("").starts_with("Your turn"),
            "the title is {title}"
        );
        let before = page.seq().await;
        if page
            .eval("!!window.carcassonne.connection.legal.place_tile")
            .await
            == Value::Bool(true)
        {
            if !midgame_checked && turns >= 2 {
                midgame_checked = true;
                check_the_last_move(&page).await;
                page.screenshot_named("phone-last-move").await;
                check_the_tiles_to_come(&page).await;
                let clocks = page.all(".players .clock").await.len();
                assert_eq!(clocks, 2, "a clock for every player");
                page.assert_accessible("game, phone").await;
            }
            let cell = tappable_cell(&page).await;
            let css = format!("rect.target[data-cell='{},{}']", cell[0], cell[1]);
            page.tap_on(&css).await;
            if !turned_by_tap && cell[2].as_array().is_some_and(|r| r.len() > 1) {
                let rotation = "window.carcassonne.view.selected.rotation";
                let first = page.eval(rotation).await;
                page.tap_on(&css).await;
                let second = page.eval(rotation).await;
                assert_ne!(
                    first, second,
                    "tapping the chosen cell again did not turn the tile"
                );
                turned_by_tap = true;
            }
            page.tap_on("button[data-action=place]:not([disabled])")
                .await;
        } else if !page.all("g.spot").await.is_empty() && (!figure_step_checked || turns % 3 == 0) {
            if !figure_step_checked {
                check_the_figure_step(&page).await;
                page.assert_accessible("figure step, phone").await;
                figure_step_checked = true;
            }
            page.tap_on("g.spot").await;
            page.tap_on("button[data-action=confirm]").await;
        } else {
            page.tap_on("button[data-action=pass]").await;
        }
        page.wait_until(&format!("window.carcassonne.connection.seq > {before}"))
            .await;
        turns += 1;
    }
    assert!(
        figure_step_checked && turned_by_tap,
        "the game never offered a figure or a turn"
    );
    let state = page.state().await;
    let placed = state["game"]["board"].as_array().expect("a board").len()
        + state["game"]["discarded"].as_array().map_or(0, Vec::len);
    assert_eq!(placed, 72, "a whole base game");

    // The end explained: a row per player, totals equal to the final scores.
    page.wait_for(".score-table").await;
    let totals = page
        .eval("[...document.querySelectorAll('.score-table tbody td.total')].map((td) => Number(td.textContent))")
        .await;
    assert_eq!(totals, state["game"]["result"]["final_scores"]);
    let result = page
        .eval("document.querySelector('.result').textContent")
        .await;
    assert!(
        result.as_str().unwrap().contains("ann"),
        "the result names nobody: {result}"
    );
    let log = page.eval("document.querySelector('.log').innerText").await;
    assert_plain_words(log.as_str().unwrap());
    // Farmers lie down in their fields; every other figure stands.
    let farmers = page
        .eval("[window.carcassonne.connection.state.game.figures.filter((f) => f.spot.startsWith('f')).length, document.querySelectorAll('svg.board .figure.lying').length]")
        .await;
    assert_eq!(
        farmers[0], farmers[1],
        "farmers and figures lying down differ"
    );
    page.screenshot_named("phone-final-table").await;
    page.assert_accessible("finished game, phone").await;

    // The replay: no winner before the end, the last move outlined, the table at the end.
    page.goto(&format!("{base}/#/match/{game}")).await;
    page.wait_for(".stepper").await;
    let star = page
        .eval("document.querySelector('.players').textContent.includes('★')")
        .await;
    assert_eq!(star, Value::Bool(false), "the winner shows at turn 0");
    page.tap_on("button[aria-label='Next turn']").await;
    page.wait_for(".last-move").await;
    let replayed = page
        .eval("document.querySelector('.last-move-text').textContent")
        .await;
    assert!(
        replayed
            .as_str()
            .unwrap()
            .contains("next to the start tile"),
        "the first turn of the replay reads {replayed}"
    );
    page.tap_on("button[aria-label='Last turn']").await;
    page.wait_for(".score-table").await;
    page.screenshot_named("phone-replay").await;
    page.assert_accessible("replay, phone").await;

    // The match history says which time zone its times are in.
    page.goto(&format!("{base}/#/history")).await;
    let listing = page
        .wait_until("document.querySelector('.matches a') && document.querySelector('.matches').textContent")
        .await;
    let listing = listing.as_str().unwrap();
    assert!(
        listing.contains("UTC") || listing.contains("GMT"),
        "no time zone in {listing:?}"
    );
    page.assert_accessible("history, phone").await;
    page.close().await;
}

/// Plays `moves` moves (or to the end) by keyboard alone: right and Enter for a tile,
/// "p" to pass; checks on the way that the chosen figure kind looks chosen.
async fn play_by_keyboard(page: &Browser, moves: usize) {
    let mut played = 0;
    let started = Instant::now();
    while played < moves && !page.game_over().await {
        assert!(
            started.elapsed() < Duration::from_secs(180),
            "{played} moves took too long"
        );
        if !page.my_turn().await {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        }
        let before = page.seq().await;
        if !page.all("rect.target").await.is_empty() {
            page.keys(&format!("{ARROW_RIGHT}{ENTER}")).await;
        } else {
            if !page.all(".figure-kinds [aria-checked]").await.is_empty() {
                let looks = page
                    .eval("(() => { const [a, b] = document.querySelectorAll('.figure-kinds [role=radio]'); return getComputedStyle(a).backgroundColor !== getComputedStyle(b).backgroundColor; })()")
                    .await;
                assert_eq!(
                    looks,
                    Value::Bool(true),
                    "the chosen figure kind looks like the other"
                );
            }
            page.keys("p").await;
        }
        page.wait_until(&format!("window.carcassonne.connection.seq > {before}"))
            .await;
        played += 1;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_desktop_the_chosen_cell_turns_arrows_follow_the_board_and_the_log_survives_a_reload()
{
    let _turn = ONE_AT_A_TIME.lock().await;
    let Some(mut stage) = Stage::start_or_skip().await else {
        return;
    };
    let base = stage.base.clone();
    let page = stage.driver.open(1280, 900).await;
    page.goto(&format!("{base}/")).await;
    page.wait_for("form.create").await;
    let smallest_box = page
        .eval("Math.min(...[...document.querySelectorAll('input[type=checkbox]')].map((c) => Math.min(c.getBoundingClientRect().width, c.getBoundingClientRect().height)))")
        .await;
    assert!(
        smallest_box.as_f64().unwrap() >= 24.0,
        "a checkbox is {smallest_box} px"
    );
    page.assert_accessible("home, desktop").await;
    let lobby = NewLobby {
        player: "ann",
        seats: "2",
        tile_limit: Some("20"),
        expansions: &["abbot"],
        turn_clock: false,
        rated: false,
    };
    let game = create_lobby(&page, &base, &lobby).await;
    page.wait_for("button[data-action=copy-invite]").await;
    page.assert_accessible("lobby, desktop").await;
    add_bot_and_start(&page).await;

    // Clicking the chosen cell again turns the tile.
    wait_for_a_tile_to_place(&page).await;
    let cell = page
        .eval("window.carcassonne.connection.legal.place_tile.find(([, , r]) => r.length > 1) || window.carcassonne.connection.legal.place_tile[0]")
        .await;
    let css = format!("rect.target[data-cell='{},{}']", cell[0], cell[1]);
    page.click(&css).await;
    if cell[2].as_array().is_some_and(|r| r.len() > 1) {
        let first = page.eval("window.carcassonne.view.selected.rotation").await;
        page.click(&css).await;
        let second = page.eval("window.carcassonne.view.selected.rotation").await;
        assert_ne!(
            first, second,
            "clicking the chosen cell again did not turn the tile"
        );
    }

    // Arrow keys move on the board: right goes to a cell further right, up further up.
    for (key, axis, sign) in [(ARROW_RIGHT, 0, 1), (ARROW_UP, 1, -1)] {
        let from = page
            .eval("[window.carcassonne.view.selected.x, window.carcassonne.view.selected.y]")
            .await;
        let exists = page
            .eval(&format!("window.carcassonne.connection.legal.place_tile.some((c) => (c[{axis}] - {}) * {sign} > 0)", from[axis]))
            .await;
        page.keys(key).await;
        let to = page
            .eval("[window.carcassonne.view.selected.x, window.carcassonne.view.selected.y]")
            .await;
        if exists == Value::Bool(true) {
            let moved = (to[axis].as_i64().unwrap() - from[axis].as_i64().unwrap()) * sign;
            assert!(moved > 0, "{key:?} went from {from} to {to}");
        }
        // The focus follows the choice, so that Enter places the chosen cell rather than
        // picking the one clicked before.
        let focused = page
            .eval("document.activeElement?.dataset?.cell ?? null")
            .await;
        assert_eq!(
            focused,
            Value::String(format!("{},{}", to[0], to[1])),
            "the focus stayed behind after {key:?}"
        );
    }
    page.keys(ENTER).await;

    // The figure kinds show which one is chosen.
    play_by_keyboard(&page, 6).await;
    page.assert_accessible("game, desktop").await;

    // The log: in plain words, rebuilt after a reload, and there for a late spectator.
    let lines = page
        .eval("document.querySelectorAll('.log li').length")
        .await;
    let lines = lines.as_u64().unwrap();
    assert!(lines >= 6, "{lines} lines in the log");
    assert_plain_words(
        page.eval("document.querySelector('.log').innerText")
            .await
            .as_str()
            .unwrap(),
    );
    page.client.refresh().await.expect("reload");
    page.wait_until(&format!(
        "document.querySelectorAll('.log li').length >= {lines}"
    ))
    .await;
    let late = stage.driver.open(1280, 900).await;
    late.goto(&format!("{base}/#/game/{game}")).await;
    late.wait_until("window.carcassonne?.connection?.role === 'spectator'")
        .await;
    late.wait_until(&format!(
        "document.querySelectorAll('.log li').length >= {lines}"
    ))
    .await;
    late.wait_for(".last-move").await;

    // A notice goes away when what it said is over.
    page.eval("window.sawNotice = false, new MutationObserver(() => { if (document.querySelector('.notice')) window.sawNotice = true; }).observe(document.body, { subtree: true, childList: true }), true")
        .await;
    let welcomes = page.eval("window.carcassonne.connection.welcomes").await;
    page.eval("window.carcassonne.connection.drop(), true")
        .await;
    page.wait_until(&format!("window.sawNotice && window.carcassonne.connection.welcomes > {welcomes} && window.carcassonne.connection.online"))
        .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let still = page
        .eval("document.querySelector('.notice')?.textContent ?? null")
        .await;
    assert_eq!(
        still,
        Value::Null,
        "the notice stays after the connection is back"
    );

    // To the end of the 20 tiles: the player's own finished game, explained.
    play_by_keyboard(&page, usize::MAX).await;
    page.wait_for(".score-table").await;
    page.assert_accessible("finished game, desktop").await;

    page.goto(&format!("{base}/#/history")).await;
    page.wait_for(".listing").await;
    page.assert_accessible("history, desktop").await;
    late.close().await;
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_player_aborts_a_game_that_has_just_started_after_confirming() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let Some(mut stage) = Stage::start_or_skip().await else {
        return;
    };
    let base = stage.base.clone();
    let page = stage.driver.open(1280, 900).await;
    let lobby = NewLobby {
        player: "ann",
        seats: "2",
        tile_limit: None,
        expansions: &[],
        turn_clock: false,
        rated: false,
    };
    create_lobby(&page, &base, &lobby).await;
    add_bot_and_start(&page).await;
    page.click("button[data-action=abort]").await;
    page.click("button[data-action=keep-playing]").await;
    page.click("button[data-action=abort]").await;
    page.click("button[data-action=confirm-abort]").await;
    page.wait_until("window.carcassonne.connection.state.status === 'cancelled'")
        .await;
}

/// A game that ended, and whose room closed after its post-game stay, while its player
/// was away (a phone asleep, an old link): the server refuses the connection for good,
/// so the page asks the REST API what became of the game and opens its finished match at
/// the final scores, rather than reconnecting forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_game_that_ended_and_closed_while_away_opens_as_its_finished_match() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let Some(mut stage) = Stage::start_with_or_skip(&["--post-game", "1s"]).await else {
        return;
    };
    let server = &stage.server;
    let mut table = Table::start(server, 2, json!({ "tile_limit": 3 }), 31).await;
    table.play_to_the_end().await;
    assert_eq!(
        table.players[0].close_code().await,
        Some(1000),
        "the room closes after its post-game stay"
    );
    let page = stage.driver.open(1280, 900).await;
    page.goto(&format!("{}/#/game/{}", stage.base, table.game))
        .await;
    page.wait_until("location.hash.endsWith('?at=end')").await;
    page.wait_until("document.body.innerText.includes('Points by category')")
        .await;
    let text = page.eval("document.body.innerText").await;
    assert!(
        text.as_str().unwrap().contains("Turn 3 of 3"),
        "the match opens at its end: {text}"
    );
    page.assert_accessible("a finished match reached from its game")
        .await;
}

/// A move made while the database is away is refused (`storage_unavailable`: nothing
/// was written). The page says it will send the move again, and does, with the same id,
/// until the database is back: the move lands once, without the player making it again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_refused_while_the_database_is_away_is_sent_again_until_it_lands() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let Some(database) = TestDatabase::postgres_or_skip() else {
        return;
    };
    let Some(mut driver) = Driver::start_or_skip().await else {
        return;
    };
    let mut proxy = TcpProxy::start("127.0.0.1:5432".parse().unwrap()).await;
    let server = TestServer::start(&database.url_through_port(proxy.port)).await;
    let base = server.http();
    let page = driver.open(1280, 900).await;
    let lobby = NewLobby {
        player: "ann",
        seats: "2",
        tile_limit: Some("10"),
        expansions: &[],
        turn_clock: false,
        rated: false,
    };
    create_lobby(&page, &base, &lobby).await;
    add_bot_and_start(&page).await;
    wait_for_a_tile_to_place(&page).await;
    let cell = page
        .eval("window.carcassonne.connection.legal.place_tile[0]")
        .await;
    page.click(&format!("rect.target[data-cell='{},{}']", cell[0], cell[1]))
        .await;
    let before = page.seq().await;
    let tiles = page
        .eval("window.carcassonne.connection.state.game.board.length")
        .await;

    proxy.cut().await;
    page.keys(ENTER).await;
    page.wait_until("document.body.innerText.includes('sending your move again')")
        .await;
    assert_eq!(
        page.seq().await,
        before,
        "nothing landed with the database away"
    );
    proxy.restore().await;
    page.wait_until(&format!("window.carcassonne.connection.seq > {before}"))
        .await;
    // The figure step of the same turn: the bot waits for it, so nothing else moved.
    assert_eq!(page.seq().await, before + 1, "the move landed once");
    let placed = page
        .eval("window.carcassonne.connection.state.game.board.length")
        .await;
    assert_eq!(
        placed.as_u64(),
        tiles.as_u64().map(|n| n + 1),
        "one tile more"
    );
}

/// A short game against a bot, then its rematch on a phone: at the end the player is
/// offered a rematch, below the board and clear of it, and the page passes axe-core; a
/// tap agrees at once (the bot needs no asking) and opens the new game, already started,
/// where this browser holds its new seat: the seats turn by one, so the bot begins.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_game_against_a_bot_offer_a_rematch_opens_the_new_game_as_a_player() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let Some(mut stage) = Stage::start_or_skip().await else {
        return;
    };
    let base = stage.base.clone();
    let page = stage.driver.open(390, 844).await;
    let lobby = NewLobby {
        player: "ann",
        seats: "2",
        tile_limit: Some("4"),
        expansions: &[],
        turn_clock: false,
        rated: false,
    };
    let game = create_lobby(&page, &base, &lobby).await;
    add_bot_and_start(&page).await;
    let old_seat = page.eval("window.carcassonne.connection.seat").await;
    play_by_keyboard(&page, usize::MAX).await;

    let offer = "button[data-action=rematch-offer]";
    page.wait_for(offer).await;
    let words = page
        .eval(&format!("document.querySelector('{offer}').textContent"))
        .await;
    assert_eq!(words, "Offer a rematch");
    let apart = page
        .eval("(() => { const a = document.querySelector('.board-area').getBoundingClientRect(), r = document.querySelector('.rematch').getBoundingClientRect();
            return r.top >= a.bottom || r.bottom <= a.top || r.left >= a.right || r.right <= a.left; })()")
        .await;
    assert_eq!(apart, Value::Bool(true), "the rematch covers the board");
    page.wait_for(".score-table").await;
    page.assert_accessible("finished game with the rematch offer, phone")
        .await;

    page.tap_on(offer).await;
    let hash = page
        .wait_until(&format!(
            "location.hash.startsWith('#/game/') && location.hash !== '#/game/{game}' && location.hash"
        ))
        .await;
    let rematch = hash
        .as_str()
        .expect("a hash")
        .trim_start_matches("#/game/")
        .to_owned();
    page.wait_until(&format!(
        "window.carcassonne.view.gameId === '{rematch}' && window.carcassonne.connection.role === 'player' && window.carcassonne.connection.state?.status === 'playing'"
    ))
    .await;
    page.wait_for("svg.board use.tile").await;
    let state = page.state().await;
    assert_eq!(state["id"], rematch.as_str(), "{state}");
    let seat = page.eval("window.carcassonne.connection.seat").await;
    let held = page
        .eval(&format!(
            "JSON.parse(localStorage.getItem('seat:{rematch}'))"
        ))
        .await;
    assert_eq!(held["seat"], seat, "the seat held is not the seat played");
    assert_eq!(
        seat.as_u64(),
        old_seat.as_u64().map(|old| (old + 1) % 2),
        "the seats did not turn"
    );
    let mine = &state["seats"][seat.as_u64().unwrap() as usize];
    assert_eq!(mine["name"], "ann", "{state}");
    let bot = &state["seats"][(seat.as_u64().unwrap() as usize + 1) % 2];
    assert!(bot["bot"].is_string(), "the bot was not kept: {state}");
    let shown = page
        .wait_until("document.querySelector('.panel .connection')?.textContent")
        .await;
    assert!(
        shown.as_str().unwrap().starts_with("You play"),
        "the new game shows {shown}"
    );
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tiles_keep_their_marks_upright_and_figures_show_their_kind() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let Some(mut stage) = Stage::start_or_skip().await else {
        return;
    };
    let page = stage.driver.open(1280, 900).await;
    page.goto(&format!("{}/#/bench", stage.base)).await;
    page.wait_until("document.querySelector('#bench-result')?.dataset.msPerRedraw")
        .await;
    // Monasteries, shields and inns of turned tiles stand upright: drawn in a symbol of
    // their own per rotation, outside the turned ground.
    let marks = page
        .eval("[...document.querySelectorAll('symbol[id$=\"-90\"] .chapel-wall, symbol[id$=\"-90\"] .shield, symbol[id$=\"-270\"] .chapel-wall, symbol[id$=\"-270\"] .shield')].map((m) => !m.closest('g[transform*=rotate]'))")
        .await;
    let marks = marks.as_array().expect("marks");
    assert!(!marks.is_empty(), "no turned tile draws its marks apart");
    assert!(
        marks.iter().all(|upright| upright == &Value::Bool(true)),
        "a mark turns with its tile"
    );
    // No feature of a tile wears a player's colour.
    let clashes = page
        .eval("(() => { const players = ['rgb(214, 40, 40)', 'rgb(29, 78, 216)', 'rgb(21, 128, 61)', 'rgb(234, 179, 8)', 'rgb(17, 24, 39)', 'rgb(156, 163, 175)'];
            return [...document.querySelectorAll('.shield, .shield-charge, .chapel-wall, .chapel-roof, .inn-roof, .cathedral-roof')]
              .map((m) => getComputedStyle(m).fill).filter((fill) => players.includes(fill)); })()")
        .await;
    assert_eq!(
        clashes,
        Value::Array(vec![]),
        "tile marks in a player's colour"
    );
    // Figures by kind: a big one drawn clearly bigger.
    let kinds = page
        .eval("({ big: [...document.querySelectorAll('svg.board .figure.big')].every((f) => /scale\\(1\\.[6-9]/.test(f.getAttribute('transform'))) })")
        .await;
    assert_eq!(
        kinds["big"],
        Value::Bool(true),
        "a big follower is not clearly bigger"
    );
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_final_table_counts_inns_and_cathedrals_apart_from_roads_and_cities() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let Some(mut stage) = Stage::start_or_skip().await else {
        return;
    };
    let page = stage.driver.open(1280, 900).await;
    page.goto(&format!("{}/", stage.base)).await;
    page.wait_for("form.create").await;
    // The client's own table, given a breakdown as the server sends it: a road with an
    // inn (8), a plain road (3), a city with a cathedral (21) and a plain city (4).
    page.eval("import('/assets/scoring.js').then(({ scoreTable }) => { const feature = (kind, points, scorers, extra) => ({ kind, completed: true, points, scorers, tiles: [], figures: [], ...extra });
        const table = scoreTable({ breakdown: [feature('road', 8, [0], { inn: true }), feature('road', 3, [1]), feature('city', 21, [1], { cathedral: true }), feature('city', 4, [0])],
          seats: ['ann', 'bob'], finalScores: [12, 24], winners: [1], caption: 'Points by category' });
        table.id = 'table-under-test'; document.body.append(table); }), true")
        .await;
    let table = page
        .wait_until("document.querySelector('#table-under-test') && [...document.querySelectorAll('#table-under-test tr')].map((row) => [...row.children].map((cell) => cell.textContent))")
        .await;
    assert_eq!(
        table,
        serde_json::json!([
            ["Player", "Cities", "Roads", "Inns & cathedrals", "Total"],
            [" ann", "4", "0", "8", "12"],
            [" bob (winner)", "0", "3", "21", "24"],
        ]),
    );
    page.close().await;
}

/// A rated lobby made from the form registers this browser's player identity and offers
/// no bots; a registered opponent joins over REST; the profiles (the player's own, and
/// the opponent's with the record between them) and the leaderboards show what the
/// server holds, and pass axe-core; a recovery code moves the identity to an emptied
/// browser.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rated_lobby_registers_the_player_and_the_profile_and_leaderboards_show_ratings() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let Some(mut stage) = Stage::start_or_skip().await else {
        return;
    };
    let base = stage.base.clone();
    let page = stage.driver.open(1280, 900).await;
    let lobby = NewLobby {
        player: "ann",
        seats: "2",
        tile_limit: Some("3"),
        expansions: &[],
        turn_clock: false,
        rated: true,
    };
    let game = create_lobby(&page, &base, &lobby).await;
    page.wait_until("window.carcassonne.connection.state.rated === true")
        .await;
    let me = page
        .eval("JSON.parse(localStorage.getItem('identity')).id")
        .await;
    let me = me.as_str().expect("an identity in localStorage").to_owned();
    let state = page.state().await;
    assert_eq!(state["seats"][0]["player_id"], me.as_str(), "{state}");
    assert!(page.all("button[data-action=add-bot]").await.is_empty());

    let api = carcassonne_tests::client::Api::new(base.clone());
    let (_, bob) = api
        .post("/api/players", serde_json::json!({ "display_name": "bob" }))
        .await;
    let body = serde_json::json!({ "player_id": bob["id"], "player_secret": bob["secret"] });
    let (status, joined) = api.post(&format!("/api/lobbies/{game}/join"), body).await;
    assert_eq!(status, 200, "{joined}");

    page.goto(&format!("{base}/#/player/me")).await;
    page.wait_until("document.querySelector('section.profile h2')?.textContent === 'ann'")
        .await;
    page.wait_for("section.profile p").await;
    page.assert_accessible("profile").await;
    // Another player's profile says how this browser's player fares against them.
    let bob_id = bob["id"].as_str().unwrap();
    page.goto(&format!("{base}/#/player/{bob_id}")).await;
    page.wait_until("document.querySelector('section.profile h2')?.textContent === 'bob'")
        .await;
    let versus = page
        .eval("document.querySelector('p.versus').textContent")
        .await;
    assert_eq!(versus, "You have not played bob yet.");
    let recent = page
        .eval("document.querySelector('section.profile').textContent")
        .await;
    assert!(
        recent
            .as_str()
            .unwrap()
            .contains("No finished public match yet."),
        "{recent}"
    );

    // A recovery code moves the identity to "another device": this browser, emptied.
    page.goto(&format!("{base}/#/player/me")).await;
    page.click("button.move-identity").await;
    let code = page
        .wait_until("document.querySelector('code.recovery-code')?.textContent")
        .await;
    let code = code.as_str().unwrap().to_owned();
    page.eval("localStorage.removeItem('identity') || true")
        .await;
    page.goto(&format!("{base}/#/leaderboards/two_player"))
        .await;
    page.goto(&format!("{base}/#/player/me")).await;
    let input = page.wait_for("form.recover input[name=code]").await;
    input.send_keys(&code).await.expect("typed");
    page.click("form.recover button[type=submit]").await;
    page.wait_until("document.querySelector('section.profile h2')?.textContent === 'ann'")
        .await;
    let moved = page
        .eval("JSON.parse(localStorage.getItem('identity'))")
        .await;
    assert_eq!(moved["id"], me.as_str(), "{moved}");
    page.assert_accessible("profile with the move button").await;
    page.goto(&format!("{base}/#/leaderboards/multiplayer"))
        .await;
    page.wait_until(
        "document.querySelector('ol.leaderboard li')?.textContent.includes('Nobody is ranked')",
    )
    .await;
    let current = page
        .eval("document.querySelector('.tabs a[aria-current=page]').textContent")
        .await;
    assert_eq!(current, "Three to six players");
    page.assert_accessible("leaderboards").await;
}

/// Fills the quick-play form with a name and a player count, and asks for a game.
async fn ask_for_a_game(page: &Browser, players: &str, rated: bool) {
    for (name, value) in [
        ("display_name", "ann"),
        ("min_players", players),
        ("max_players", players),
    ] {
        let input = page.wait_for(&format!("form.queue [name={name}]")).await;
        input.clear().await.expect("cleared");
        input.send_keys(value).await.expect("typed");
    }
    let checked = page
        .eval("document.querySelector('form.queue input[name=rated]').checked")
        .await;
    if checked != Value::Bool(rated) {
        page.click("form.queue input[name=rated]").await;
    }
    page.click("button[data-action=find-game]:not([disabled])")
        .await;
}

/// The quick-play status line, once it reads `words`.
async fn wait_for_status(page: &Browser, words: &str) {
    page.wait_until(&format!(
        "document.querySelector('.queue-status[role=status]')?.textContent.includes({words:?})"
    ))
    .await;
}

/// Quick play from the nav bar: an unrated two-player request waits, is seated with a
/// bot and opens the game, already started; a rated request (never given bots) shows
/// the time waited and the rating window, is watched again after a reload, and its
/// Cancel gives the form back; a request while another waits is refused in words.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quick_play_finds_a_game_with_a_bot_and_a_waiting_request_can_be_cancelled() {
    let _turn = ONE_AT_A_TIME.lock().await;
    // Bots fill an unrated ticket after 3 s: long enough to see it wait.
    let options = ["--queue-bot-fill-after", "3s", "--queue-bot", "random"];
    let Some(mut stage) = Stage::start_with_or_skip(&options).await else {
        return;
    };
    let base = stage.base.clone();
    let page = stage.driver.open(1280, 900).await;
    page.goto(&format!("{base}/")).await;
    page.click("nav a[href='#/play']").await;
    page.wait_for("form.queue").await;
    page.assert_accessible("quick play").await;

    ask_for_a_game(&page, "2", false).await;
    wait_for_status(&page, "Looking for a game").await;
    let hash = page
        .wait_until("location.hash.startsWith('#/game/') && location.hash")
        .await;
    let game = hash.as_str().expect("a hash").trim_start_matches("#/game/");
    page.wait_until("window.carcassonne?.connection?.state?.status === 'playing'")
        .await;
    page.wait_for("svg.board use.tile").await;
    let me = page
        .eval("JSON.parse(localStorage.getItem('identity')).id")
        .await;
    let state = page.state().await;
    assert_eq!(state["id"], game, "{state}");
    let seats = state["seats"].as_array().expect("seats");
    assert_eq!(seats.len(), 2, "{state}");
    let mine = page.eval("window.carcassonne.connection.seat").await;
    let mine = &seats[mine.as_u64().expect("a seat of its own") as usize];
    assert_eq!(
        (&mine["player_id"], &mine["name"]),
        (&me, &Value::from("ann")),
        "{state}"
    );
    assert!(
        seats.iter().any(|seat| seat["bot"] == "random"),
        "no bot in the other seat: {state}"
    );
    assert_eq!(
        page.eval("sessionStorage.getItem('ticket')").await,
        Value::Null,
        "the ticket is kept after the match"
    );

    // A rated request waits for other people: it never gets a bot.
    page.click("nav a[href='#/play']").await;
    ask_for_a_game(&page, "2", true).await;
    wait_for_status(&page, "Looking for a game").await;
    page.wait_until(
        r"/^Waited \d+:\d\d · rating window ±\d+\.\d/.test(document.querySelector('.waited[role=timer]')?.textContent)",
    )
    .await;
    let locked = page
        .eval("document.querySelector('button[data-action=find-game]').disabled")
        .await;
    assert_eq!(
        locked,
        Value::Bool(true),
        "the form is usable while waiting"
    );
    page.assert_accessible("quick play, waiting").await;
    page.client.refresh().await.expect("a reload");
    page.wait_for("button[data-action=cancel-queue]:not([hidden])")
        .await;
    wait_for_status(&page, "Looking for a game").await;
    page.click("button[data-action=cancel-queue]").await;
    wait_for_status(&page, "cancelled").await;
    page.wait_for("button[data-action=find-game]:not([disabled])")
        .await;
    let cancel_shown = page
        .eval("!document.querySelector('button[data-action=cancel-queue]').hidden")
        .await;
    assert_eq!(cancel_shown, Value::Bool(false), "Cancel is still offered");
    page.assert_accessible("quick play, cancelled").await;

    // The same player waiting elsewhere (here over REST): the page says so.
    let identity = page
        .eval("JSON.parse(localStorage.getItem('identity'))")
        .await;
    let api = carcassonne_tests::client::Api::new(base.clone());
    let wish = serde_json::json!({
        "player_id": identity["id"],
        "player_secret": identity["secret"],
        "players": { "min": 2, "max": 2 },
        "rated": true,
    });
    let (status, body) = api.post("/api/queue", wish).await;
    assert_eq!(status, 201, "{body}");
    ask_for_a_game(&page, "2", true).await;
    page.wait_until(
        "document.querySelector('form.queue .notice[role=alert]')?.textContent.includes('already waiting')",
    )
    .await;
    page.wait_for("button[data-action=find-game]:not([disabled])")
        .await;
    page.close().await;
}

/// The chat of the game view: a browser player (ann, on a desktop) and a scripted one
/// (bob, over a WebSocket), and a spectator on a 360 px phone. Bob's "good game" shows
/// in ann's players' tab as text (markup in it stays text), never to the spectator; the
/// spectator registers a player name from the chat to write; unread counts show on the
/// tab not shown and on the collapsed panel; ann's mute hides bob's later message; a
/// refused message is said beside the input, not as a game notice; the creator closes
/// the chat to spectators; a dropped connection resumes with `last_chat_seq` and a reload
/// brings the history back, each without duplicates; axe-core finds nothing with the
/// chat open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn players_chat_beside_the_board_apart_from_spectators_with_unread_counts_mutes_and_history()
{
    let _turn = ONE_AT_A_TIME.lock().await;
    let Some(mut stage) = Stage::start_or_skip().await else {
        return;
    };
    let base = stage.base.clone();
    let page = stage.driver.open(1280, 900).await;
    let lobby = NewLobby {
        player: "ann",
        seats: "2",
        tile_limit: None,
        expansions: &[],
        turn_clock: false,
        rated: false,
    };
    let game = create_lobby(&page, &base, &lobby).await;
    assert_eq!(
        page.eval("document.querySelector('section.chat').hidden")
            .await,
        Value::Bool(true),
        "the chat shows before the game starts"
    );
    let api = carcassonne_tests::client::Api::new(base.clone());
    let (status, joined) = api
        .post(
            &format!("/api/lobbies/{game}/join"),
            serde_json::json!({ "display_name": "bob" }),
        )
        .await;
    assert_eq!(status, 200, "{joined}");
    page.click("button[data-action=start]:not([disabled])")
        .await;
    page.wait_until("window.carcassonne.connection.state.status === 'playing'")
        .await;
    let ws_url = stage.server.ws_url(&game);
    let bob_token = joined["seat_token"].as_str().expect("a seat token");
    let mut bob = WsClient::join(&ws_url, Some(bob_token), None).await;
    let ann_seat = page.eval("window.carcassonne.connection.seat").await;

    // A spectator on a phone: one tab, the chat below the board, and no writing without
    // a player name. Headless Chromium's window is at least 500 px wide: the page is
    // narrowed to 360 px, the phone layout applying below 720 px anyway.
    let watcher = stage.driver.open(390, 740).await;
    watcher.goto(&format!("{base}/#/game/{game}")).await;
    watcher
        .wait_until("window.carcassonne?.connection?.role === 'spectator' && window.carcassonne.connection.online")
        .await;
    watcher
        .wait_for("section.chat:not([hidden]) #chat-log")
        .await;
    watcher.eval("document.body.style.width = '360px'").await;
    let tabs = watcher
        .eval("[...document.querySelectorAll('section.chat [role=tab]')].filter((t) => !t.hidden).map((t) => t.textContent)")
        .await;
    assert_eq!(tabs, serde_json::json!(["Spectators"]));
    let layout = watcher
        .eval("(() => { const a = document.querySelector('.board-area').getBoundingClientRect(), c = document.querySelector('section.chat').getBoundingClientRect();
            return { board: a.height, apart: c.top >= a.bottom || c.bottom <= a.top || c.left >= a.right || c.right <= a.left, fits: c.left >= 0 && c.right <= 360 && document.querySelector('section.chat').scrollWidth <= c.width + 1 }; })()")
        .await;
    assert_eq!(
        (layout["apart"].clone(), layout["fits"].clone()),
        (Value::Bool(true), Value::Bool(true)),
        "the chat covers the board, or is wider than the phone: {layout}"
    );
    assert!(layout["board"].as_f64().unwrap() > 200.0, "{layout}");
    watcher
        .wait_until("document.querySelector('#chat-input').disabled && document.querySelector('#chat-hint').textContent.includes('player name')")
        .await;

    // Bob's message reaches ann's players' tab, as text.
    bob.send(serde_json::json!({"type": "say", "text": "good game <b>gg</b>"}))
        .await;
    let heard = page
        .wait_until("[...document.querySelectorAll('#chat-log li.chat-message')].find((li) => li.textContent.includes('good game'))?.textContent")
        .await;
    assert!(
        heard.as_str().unwrap().contains("bob") && heard.as_str().unwrap().contains("<b>gg</b>"),
        "ann reads {heard}"
    );
    assert!(
        page.all("#chat-log b").await.is_empty(),
        "a message's markup was parsed"
    );
    let selected = page
        .eval("document.querySelector('#chat-tab-players').getAttribute('aria-selected')")
        .await;
    assert_eq!(selected, "true");

    // Ann answers from the page; bob hears it.
    page.click("#chat-input").await;
    page.keys("thanks, you too").await;
    page.click("button[data-action=chat-send]:not([disabled])")
        .await;
    loop {
        let chat = bob.next_of("chat").await;
        if chat["entry"]["text"] == "thanks, you too" {
            assert_eq!(chat["entry"]["author"]["seat"], ann_seat);
            break;
        }
    }
    page.wait_until(
        "document.querySelector('#chat-log').textContent.includes('ann (you)thanks, you too')",
    )
    .await;
    assert_eq!(
        page.eval("document.querySelector('#chat-input').value")
            .await,
        "",
        "the sent text stays in the input"
    );

    // A refused message is said beside the input, not as a game notice.
    page.eval("window.carcassonne.connection.say('a\\u200Bb'), true")
        .await;
    page.wait_until("document.querySelector('#chat-error').textContent.includes('cannot be sent')")
        .await;
    assert!(
        page.all(".panel .notice").await.is_empty(),
        "a chat error as a game notice"
    );

    // The spectator registers a name from the chat and writes; the players' chat never
    // reached them.
    let name = watcher.wait_for("#chat-name").await;
    name.clear().await.expect("cleared");
    name.send_keys("Watcher").await.expect("typed");
    watcher.click("button[data-action=chat-register]").await;
    watcher
        .wait_until("!document.querySelector('#chat-input').disabled && !!window.carcassonne.connection.identity")
        .await;
    watcher.click("#chat-input").await;
    watcher.keys(&format!("go ann{ENTER}")).await;
    watcher
        .wait_until(
            "document.querySelector('#chat-log').textContent.includes('Watcher (you)go ann')",
        )
        .await;
    let leaked = watcher
        .eval("[...window.carcassonne.view.chat.entries.values()].filter((f) => f.entry.room === 'players').length + (document.body.textContent.includes('good game') ? 1 : 0)")
        .await;
    assert_eq!(leaked, 0, "the spectator reads the players' chat");
    watcher
        .assert_accessible("game with the chat, spectator, phone")
        .await;

    // Ann, on the players' tab, counts it as unread on the spectators' tab.
    page.wait_until(
        "document.querySelector('#chat-tab-spectators .badge')?.dataset.unread === '1'",
    )
    .await;
    page.click("#chat-tab-spectators").await;
    page.wait_until("document.querySelector('#chat-tab-spectators').getAttribute('aria-selected') === 'true' && document.querySelector('#chat-log').textContent.includes('Watchergo ann')")
        .await;
    let cleared = page
        .eval("!document.querySelector('#chat-tab-spectators .badge') && document.querySelector('#chat-input').disabled")
        .await;
    assert_eq!(
        cleared,
        Value::Bool(true),
        "the badge stays, or a player writes to spectators"
    );
    page.click("#chat-tab-players").await;

    // Collapsed, the panel still counts what arrives.
    page.click("button[data-action=chat-toggle]").await;
    page.wait_until("document.querySelector('button[data-action=chat-toggle]').getAttribute('aria-expanded') === 'false'")
        .await;
    bob.send(serde_json::json!({"type": "say", "text": "one more"}))
        .await;
    page.wait_until("document.querySelector('.chat-toggle .badge')?.textContent === '1 new'")
        .await;
    page.click("button[data-action=chat-toggle]").await;
    page.wait_until("document.querySelector('#chat-log').textContent.includes('one more') && document.querySelector('.chat-toggle .badge').hidden")
        .await;

    // Ann mutes bob: his next message never shows; the spectator's after it does.
    page.click("#chat-log li.chat-message button[data-action=mute]")
        .await;
    page.wait_until("window.carcassonne.connection.mutes.length === 1 && !!document.querySelector('#chat-log button[data-action=unmute]')")
        .await;
    bob.send(serde_json::json!({"type": "say", "text": "you will not read this"}))
        .await;
    watcher.click("#chat-input").await;
    watcher.keys(&format!("still watching{ENTER}")).await;
    page.wait_until("[...window.carcassonne.view.chat.entries.values()].some((f) => f.entry.text === 'still watching')")
        .await;
    let muted_shown = page
        .eval("[...window.carcassonne.view.chat.entries.values()].some((f) => f.entry.text === 'you will not read this')")
        .await;
    assert_eq!(
        muted_shown,
        Value::Bool(false),
        "a muted author's message shows"
    );

    // The creator keeps the chat to the players: the spectator's input closes, saying why.
    page.eval("(() => { const s = document.querySelector('#chat-policy'); s.value = 'players'; s.dispatchEvent(new Event('change')); return true; })()")
        .await;
    watcher
        .wait_until("document.querySelector('#chat-input').disabled && document.querySelector('#chat-hint').textContent.includes('Only the players')")
        .await;
    page.wait_until(
        "document.querySelector('#chat-log').textContent.includes('only the players may write')",
    )
    .await;

    // A dropped connection resumes from the last chat_seq it holds, repeating nothing.
    let chat_lines = "[...document.querySelectorAll('#chat-log li')].map((li) => li.textContent)";
    let before = page.eval(chat_lines).await;
    page.eval("window.sentFrames = [], (() => { const send = WebSocket.prototype.send; WebSocket.prototype.send = function (data) { window.sentFrames.push(JSON.parse(data)); return send.call(this, data); }; })(), true")
        .await;
    let highest = page.eval("window.carcassonne.view.chat.highest()").await;
    let welcomes = page.eval("window.carcassonne.connection.welcomes").await;
    page.eval("window.carcassonne.connection.drop(), true")
        .await;
    page.wait_until(&format!("window.carcassonne.connection.welcomes > {welcomes} && window.carcassonne.connection.online"))
        .await;
    let hello = page
        .eval("window.sentFrames.find((f) => f.type === 'hello')")
        .await;
    assert_eq!(hello["last_chat_seq"], highest, "{hello}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        page.eval(chat_lines).await,
        before,
        "the chat changed over a reconnect"
    );

    // A reload brings the history back as the server holds it, the mute kept: none of
    // the muted author's messages, older ones included, is sent again.
    page.client.refresh().await.expect("reload");
    page.wait_until("document.querySelector('#chat-log')?.textContent.includes('only the players may write') && window.carcassonne.connection.mutes.length === 1")
        .await;
    let log = page
        .eval("document.querySelector('#chat-log').textContent")
        .await;
    let log = log.as_str().unwrap_or_default();
    assert!(log.contains("thanks, you too"), "{log}");
    assert!(
        !log.contains("good game") && !log.contains("one more"),
        "{log}"
    );
    page.assert_accessible("game with the chat open, desktop")
        .await;
    watcher.close().await;
    page.close().await;
}
