//! A real browser for the tests of the web client: Debian's headless `chromium` driven
//! over WebDriver (`chromedriver`) with `fantoccini`.
//!
//! Each [`Browser::open`] is a separate browser with its own profile, so its local
//! storage (where the client keeps seat tokens) is its own, as on another machine. When
//! `chromium` or `chromedriver` is missing, [`Driver::start_or_skip`] says so on stderr
//! and the test passes without running, so a developer machine without them still
//! passes; with `REQUIRE_BROWSER=1`, as CI sets, it fails instead.

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

    /// Clicks the element matching `css`, waiting for it first.
    pub async fn click(&self, css: &str) {
        self.wait_for(css)
            .await
            .click()
            .await
            .unwrap_or_else(|error| panic!("cannot click {css}: {error}"));
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
