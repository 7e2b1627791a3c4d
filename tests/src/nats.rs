//! A NATS server of the test's own, on a free port, that the test may stop and start
//! again on the same port: the shared one at `TEST_NATS_URL` must never be restarted
//! under other tests.
//!
//! The binary is `nats-server` on the `PATH` (Debian's package puts it in `/usr/sbin`).
//! Without it the tests that need one skip, saying so on stderr; with `REQUIRE_NATS=1`,
//! as CI sets, they fail instead.

use crate::database::skip_unless_required;
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct TestNats {
    pub port: u16,
    binary: PathBuf,
    process: Option<Child>,
}

impl TestNats {
    /// Starts one on a free port, or None (said loudly) when there is no `nats-server`.
    pub fn start_or_skip() -> Option<TestNats> {
        let Some(binary) = nats_binary() else {
            skip_unless_required("nats-server", "REQUIRE_NATS", "a nats-server binary");
            return None;
        };
        let port = free_port();
        let mut nats = TestNats {
            port,
            binary,
            process: None,
        };
        nats.start();
        Some(nats)
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Kills it: every client connection drops, and messages in flight are lost.
    pub fn stop(&mut self) {
        if let Some(mut process) = self.process.take() {
            let _ = process.kill();
            let _ = process.wait();
        }
    }

    /// Starts it (again) on its port, and waits until it listens.
    pub fn start(&mut self) {
        assert!(self.process.is_none(), "already running");
        let process = Command::new(&self.binary)
            .args(["-a", "127.0.0.1", "-p", &self.port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nats-server starts");
        self.process = Some(process);
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect((Ipv4Addr::LOCALHOST, self.port)).is_err() {
            assert!(Instant::now() < deadline, "nats-server listens within 10 s");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for TestNats {
    fn drop(&mut self) {
        self.stop();
    }
}

fn nats_binary() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/local/bin")])
        .map(|dir| dir.join("nats-server"))
        .find(|candidate| candidate.is_file())
}

/// A port nothing listens on now (the kernel's choice, released at once).
fn free_port() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("a free port");
    listener.local_addr().expect("its address").port()
}
