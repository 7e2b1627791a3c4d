//! A real browser for the tests of the web client: Debian's headless `chromium` driven
//! over WebDriver (`chromedriver`) with `fantoccini`.
//!
//! Each [`Browser::open`] is a separate browser with its own profile, so its local
//! storage (where the client keeps seat tokens) is its own, as on another machine. When
//! `chromium` or `chromedriver` is missing, [`Driver::start_or_skip`] says so on stderr
//! and the test passes without running, so a developer machine without them still
//! passes; with `REQUIRE_BROWSER=1`, as CI sets, it fails instead.

use crate::database::TestDatabase;
use crate::server::TestServer;
use fantoccini::actions::{InputSource, MOUSE_BUTTON_LEFT, PointerAction, TouchActions};
use fantoccini::elements::Element;
use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::process::{Child, Command};

const CHROMIUM: &str = "chromium";
const CHROMEDRIVER: &str = "chromedriver";

/// A running `chromedriver`; dropping it ends the process.
pub struct Driver {
    _child: Child,
    url: String,
    profiles: tempfile::TempDir,
    opened: usize,
}

fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

impl Driver {
    /// Starts `chromedriver`, or returns `None` (said loudly) when the browser is missing
    /// and `REQUIRE_BROWSER=1` is not set.
    pub async fn start_or_skip() -> Option<Driver> {
        let (Some(_), Some(driver)) = (on_path(CHROMIUM), on_path(CHROMEDRIVER)) else {
            let required = std::env::var("REQUIRE_BROWSER").is_ok_and(|value| value == "1");
            assert!(
                !required,
                "REQUIRE_BROWSER=1, but chromium or chromedriver is not installed \
                 (apt-get install chromium chromium-driver)"
            );
            let thread = std::thread::current();
            let test = thread.name().unwrap_or("a test");
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED (chromium and chromedriver not installed): {test}"
            );
            return None;
        };
        let port = free_port();
        let child = Command::new(driver)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("chromedriver starts");
        let url = format!("http://127.0.0.1:{port}");
        wait_until_listening(port).await;
        Some(Driver {
            _child: child,
            url,
            profiles: tempfile::tempdir().expect("a temporary directory"),
            opened: 0,
        })
    }

    /// A new headless browser, with a profile of its own, showing `width` by `height`.
    pub async fn open(&mut self, width: u32, height: u32) -> Browser {
        self.opened += 1;
        let profile = self
            .profiles
            .path()
            .join(format!("profile-{}", self.opened));
        let binary = on_path(CHROMIUM).expect("chromium");
        let options = json!({
            "binary": binary,
            "args": [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--no-first-run", "--disable-extensions",
                format!("--window-size={width},{height}"),
                format!("--user-data-dir={}", profile.display()),
            ],
        });
        let mut capabilities = serde_json::Map::new();
        capabilities.insert("browserName".into(), json!("chrome"));
        capabilities.insert("goog:chromeOptions".into(), options);
        let client = ClientBuilder::new(HttpConnector::new())
            .capabilities(capabilities)
            .connect(&self.url)
            .await
            .expect("a WebDriver session");
        Browser { client }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}

async fn wait_until_listening(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(Instant::now() < deadline, "chromedriver did not listen");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// One browser window, with helpers that wait for the page as a person would.
pub struct Browser {
    pub client: Client,
}

/// How long to wait for something the page should show soon.
const PATIENCE: Duration = Duration::from_secs(20);

impl Browser {
    pub async fn goto(&self, url: &str) {
        self.client.goto(url).await.expect("the page loads");
    }

    /// The element matching `css`, waiting for it to appear.
    pub async fn wait_for(&self, css: &str) -> Element {
        self.client
            .wait()
            .at_most(PATIENCE)
            .for_element(Locator::Css(css))
            .await
            .unwrap_or_else(|error| panic!("no {css} within {PATIENCE:?}: {error}"))
    }

    /// Every element matching `css` now.
    pub async fn all(&self, css: &str) -> Vec<Element> {
        self.client
            .find_all(Locator::Css(css))
            .await
            .expect("a query")
    }

    /// Clicks the element matching `css`, waiting for it first. The game's panel is
    /// redrawn on every change, so an element found may be replaced before the click:
    /// then it is found again.
    pub async fn click(&self, css: &str) {
        for _ in 0..10 {
            match self.wait_for(css).await.click().await {
                Ok(_) => return,
                Err(error) if error.to_string().contains("stale element") => continue,
                Err(error) => panic!("cannot click {css}: {error}"),
            }
        }
        panic!("{css} was redrawn under every click");
    }

    /// The value of a JavaScript expression in the page.
    pub async fn eval(&self, expression: &str) -> Value {
        self.client
            .execute(&format!("return ({expression});"), vec![])
            .await
            .unwrap_or_else(|error| panic!("{expression}: {error}"))
    }

    /// Waits until a JavaScript expression is truthy, and returns its value.
    pub async fn wait_until(&self, expression: &str) -> Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let value = self.eval(expression).await;
            if !matches!(value, Value::Null | Value::Bool(false)) && value != json!("") {
                return value;
            }
            assert!(Instant::now() < deadline, "never true: {expression}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Types `keys` into the focused element (WebDriver key codes allowed).
    pub async fn keys(&self, keys: &str) {
        let active = self
            .client
            .active_element()
            .await
            .expect("a focused element");
        active.send_keys(keys).await.expect("keys sent");
    }

    /// Saves a screenshot to `path` and returns its PNG bytes.
    pub async fn screenshot(&self, path: &Path) -> Vec<u8> {
        let png = self.client.screenshot().await.expect("a screenshot");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("the screenshot folder");
        }
        std::fs::write(path, &png).expect("the screenshot is saved");
        png
    }

    pub async fn close(self) {
        let _ = self.client.close().await;
    }

    /// Taps `element` with a finger (a touch pointer), as on a phone.
    pub async fn tap(&self, element: &Element) {
        self.try_tap(element).await.expect("a tap");
    }

    async fn try_tap(&self, element: &Element) -> Result<(), fantoccini::error::CmdError> {
        let finger = TouchActions::new("finger".to_owned())
            .then(PointerAction::MoveToElement {
                element: element.clone(),
                duration: None,
                x: 0.0,
                y: 0.0,
            })
            .then(PointerAction::Down {
                button: MOUSE_BUTTON_LEFT,
            })
            .then(PointerAction::Up {
                button: MOUSE_BUTTON_LEFT,
            });
        let tapped = self.client.perform_actions(finger).await;
        let _ = self.client.release_actions().await;
        tapped
    }

    /// Taps the element matching `css`, waiting for it first. The panel is redrawn on
    /// every change, so an element found may be replaced before the tap: find it again.
    pub async fn tap_on(&self, css: &str) {
        for _ in 0..10 {
            let element = self.wait_for(css).await;
            match self.try_tap(&element).await {
                Ok(()) => return,
                Err(error) if error.to_string().contains("stale element") => continue,
                Err(error) => panic!("cannot tap {css}: {error}"),
            }
        }
        panic!("{css} was redrawn under every tap");
    }

    /// The violations of the WCAG 2.2 A and AA rules that axe-core finds on the page now,
    /// as `rule: target, target...` lines (empty when there are none).
    pub async fn accessibility_violations(&self) -> Vec<String> {
        let Some(source) = axe_core_source() else {
            return Vec::new();
        };
        self.client
            .execute(&format!("{source}\n;return true;"), vec![])
            .await
            .expect("axe-core loads");
        let result = self
            .client
            .execute_async(
                "const done = arguments[arguments.length - 1];
                 axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'] } })
                   .then((r) => done(r.violations.map((v) => v.id + ': ' + v.nodes.map((n) => n.target.join(' ')).join(', '))))
                   .catch((e) => done(['axe failed: ' + e]));",
                vec![],
            )
            .await
            .expect("axe-core runs");
        serde_json::from_value(result).expect("a list of violations")
    }
}

/// The text of axe-core's `axe.min.js`, from `AXE_CORE_JS` or `target/axe-core` (CI
/// installs it there with npm). Without it the check is skipped, loudly, unless
/// `REQUIRE_BROWSER=1` makes that a failure.
fn axe_core_source() -> Option<String> {
    let path = std::env::var("AXE_CORE_JS").unwrap_or_else(|_| {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../target/axe-core/node_modules/axe-core/axe.min.js")
            .display()
            .to_string()
    });
    match std::fs::read_to_string(&path) {
        Ok(source) => Some(source),
        Err(error) => {
            let required = std::env::var("REQUIRE_BROWSER").is_ok_and(|value| value == "1");
            assert!(
                !required,
                "axe-core is needed at {path} ({error}): npm install --prefix target/axe-core \
                 axe-core@4.14.1, or set AXE_CORE_JS"
            );
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED the accessibility check: no axe-core at {path}"
            );
            None
        }
    }
}

/// Where the tests save screenshots: `target/browser-screenshots` (or under
/// `CARGO_TARGET_DIR`).
pub fn screenshot_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"));
    target.join("browser-screenshots")
}

/// How many distinct colours a PNG has, and the share of its pixels that differ from
/// its most common colour: a blank page has one colour and no such pixels.
pub fn picture_variety(png_bytes: &[u8]) -> (usize, f64) {
    let decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
    let mut reader = decoder.read_info().expect("a PNG");
    let mut buffer = vec![0; reader.output_buffer_size().expect("a buffer size")];
    let info = reader.next_frame(&mut buffer).expect("a frame");
    let channels = info.color_type.samples();
    let pixels = &buffer[..info.buffer_size()];
    let mut counts = std::collections::HashMap::<&[u8], usize>::new();
    for pixel in pixels.chunks_exact(channels) {
        *counts.entry(&pixel[..channels.min(3)]).or_default() += 1;
    }
    let total = pixels.len() / channels;
    let most = counts.values().copied().max().unwrap_or(0);
    (counts.len(), 1.0 - most as f64 / total.max(1) as f64)
}

/// What a browser test starts from: chromedriver, and the real server on a fresh SQLite
/// database of its own.
pub struct Stage {
    pub driver: Driver,
    pub server: TestServer,
    /// The server's address, `http://127.0.0.1:PORT`.
    pub base: String,
    // Dropped after the server that uses it.
    _database: TestDatabase,
}

impl Stage {
    /// The stage, or `None` when the browser is missing (see [`Driver::start_or_skip`]).
    pub async fn start_or_skip() -> Option<Stage> {
        Stage::start_with_or_skip(&[]).await
    }

    /// [`Stage::start_or_skip`] with the server started with `options`.
    pub async fn start_with_or_skip(options: &[&str]) -> Option<Stage> {
        let driver = Driver::start_or_skip().await?;
        let database = TestDatabase::sqlite();
        let server = TestServer::start_with(&database.url(), options).await;
        let base = server.http();
        Some(Stage {
            driver,
            server,
            base,
            _database: database,
        })
    }
}

/// What the home page's create form is filled with.
pub struct NewLobby<'a> {
    pub player: &'a str,
    pub seats: &'a str,
    /// The house rule for short games; `None` plays every tile.
    pub tile_limit: Option<&'a str>,
    pub expansions: &'a [&'a str],
    /// A clock of 60 s a turn and a 300 s reserve, instead of none.
    pub turn_clock: bool,
    /// A rated lobby: the browser registers a player identity for it.
    pub rated: bool,
}

/// Fills the create form on the home page and submits it; returns the new game's id
/// once its lobby shows.
pub async fn create_lobby(browser: &Browser, base: &str, lobby: &NewLobby<'_>) -> String {
    browser.goto(&format!("{base}/")).await;
    let mut fields = vec![
        ("display_name", lobby.player),
        ("name", "Browser game"),
        ("seats", lobby.seats),
    ];
    if let Some(limit) = lobby.tile_limit {
        fields.push(("tile_limit", limit));
    }
    for (name, value) in fields {
        let input = browser
            .wait_for(&format!("form.create [name={name}]"))
            .await;
        input.clear().await.expect("cleared");
        input.send_keys(value).await.expect("typed");
    }
    for expansion in lobby.expansions {
        browser
            .click(&format!(
                "form.create input[name=expansion][value={expansion}]"
            ))
            .await;
    }
    if lobby.rated {
        browser.click("form.create input[name=rated]").await;
    }
    if lobby.turn_clock {
        browser
            .eval("document.querySelector('form.create select[name=clock]').value = 'turn'")
            .await;
    }
    browser.click("button[data-action=create]").await;
    let hash = browser
        .wait_until("location.hash.startsWith('#/game/') && location.hash")
        .await;
    let hash = hash.as_str().expect("a hash").to_owned();
    browser.wait_for("button[data-action=start]").await;
    hash.trim_start_matches("#/game/").to_owned()
}

impl Browser {
    /// The seq the page's connection has reached, or -1 before its snapshot.
    pub async fn seq(&self) -> i64 {
        let seq = self.eval("window.carcassonne?.connection?.seq ?? -1").await;
        seq.as_i64().unwrap_or(-1)
    }

    /// Whether the page shows that it is this player's turn, with the legal moves in.
    pub async fn my_turn(&self) -> bool {
        self.eval("!!document.querySelector('.turn.mine') && !!window.carcassonne.connection.legal")
            .await
            == Value::Bool(true)
    }

    pub async fn game_over(&self) -> bool {
        self.eval("window.carcassonne?.connection?.state?.status === 'finished'")
            .await
            == Value::Bool(true)
    }

    /// The public state the page mirrors.
    pub async fn state(&self) -> Value {
        self.eval("window.carcassonne.connection.state").await
    }

    /// Saves a screenshot under [`screenshot_dir`] and checks it shows a drawing, not a
    /// blank page.
    pub async fn screenshot_named(&self, name: &str) {
        let path = screenshot_dir().join(format!("{name}.png"));
        let png = self.screenshot(&path).await;
        let (colours, drawn) = picture_variety(&png);
        assert!(
            colours > 30 && drawn > 0.2,
            "{} looks blank: {colours} colours, {:.0}% of pixels drawn",
            path.display(),
            drawn * 100.0
        );
    }

    /// Fails with the list when axe-core finds a WCAG 2.2 AA violation on the page.
    pub async fn assert_accessible(&self, page: &str) {
        let violations = self.accessibility_violations().await;
        assert!(
            violations.is_empty(),
            "{page}: axe-core finds {} violation(s):\n{}",
            violations.len(),
            violations.join("\n")
        );
    }
}
