//! The ack log (`--ack-log FILE`): one JSON line for every game the load generator
//! starts and one for every move the server acknowledges, written as they happen.
//!
//! It exists for the crash test: the server is killed mid-run, and every move it
//! acknowledged must then be found in its database. So each line reaches the file (the
//! operating system's cache, which outlives the server and the load generator alike)
//! within moments of its ack, not at the end of the run. The clients hand their lines to
//! one writer thread over a channel, which writes whatever has queued up in one system
//! call: the many game tasks never wait on the file.
//!
//! The game lines carry both seat tokens, so that whoever reads the log can take a seat
//! over after a restart: the file is as secret as the games it describes.

use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::sync::mpsc;
use std::thread::JoinHandle;

/// One line of the log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AckLine {
    /// A game set up and started: its id and the seat tokens of its creator and joiner,
    /// in that order.
    Game { game: String, tokens: [String; 2] },
    /// The server acknowledged command `command` of `game` with update number `seq`.
    Ack {
        game: String,
        seq: u64,
        command: String,
    },
}

/// Where the clients send their lines; cheap to clone, one per client task.
#[derive(Clone)]
pub struct AckLog {
    lines: mpsc::Sender<String>,
}

/// The thread that writes the lines; [`AckLogWriter::finish`] waits for the last one.
pub struct AckLogWriter {
    thread: JoinHandle<std::io::Result<()>>,
}

/// Creates (or truncates) `path` and starts the thread that writes to it.
pub fn create(path: &Path) -> Result<(AckLog, AckLogWriter), String> {
    let file = File::create(path)
        .map_err(|error| format!("cannot create the ack log {}: {error}", path.display()))?;
    let (lines, queued) = mpsc::channel();
    let thread = std::thread::spawn(move || write_lines(file, &queued));
    Ok((AckLog { lines }, AckLogWriter { thread }))
}

impl AckLog {
    pub fn game(&self, game: &str, tokens: [&str; 2]) {
        self.push(&AckLine::Game {
            game: game.to_owned(),
            tokens: tokens.map(str::to_owned),
        });
    }

    pub fn ack(&self, game: &str, seq: u64, command: &str) {
        self.push(&AckLine::Ack {
            game: game.to_owned(),
            seq,
            command: command.to_owned(),
        });
    }

    fn push(&self, line: &AckLine) {
        let mut text = serde_json::to_string(line).expect("an ack line serializes");
        text.push('\n');
        // The writer only stops early on a write error, which `finish` reports.
        let _ = self.lines.send(text);
    }
}

impl AckLogWriter {
    /// Waits until every line sent is written. Every [`AckLog`] must have been dropped
    /// first, or this waits for ever.
    pub async fn finish(self) -> Result<(), String> {
        let joined = tokio::task::spawn_blocking(move || self.thread.join()).await;
        match joined {
            Ok(Ok(Ok(()))) => Ok(()),
            Ok(Ok(Err(error))) => Err(format!("writing the ack log: {error}")),
            _ => Err("the ack log's writer panicked".to_owned()),
        }
    }
}

/// Writes lines as they come, everything queued at once in one write, until every
/// sender is gone.
fn write_lines(mut file: File, queued: &mpsc::Receiver<String>) -> std::io::Result<()> {
    let mut chunk = String::new();
    while let Ok(first) = queued.recv() {
        chunk.clear();
        chunk.push_str(&first);
        while let Ok(more) = queued.try_recv() {
            chunk.push_str(&more);
        }
        file.write_all(chunk.as_bytes())?;
    }
    Ok(())
}

/// Reads a log back. A last line cut short (the writer was killed mid-write) is left
/// out; any other unreadable line is an error.
pub fn read(path: &Path) -> Result<Vec<AckLine>, String> {
    let file = File::open(path).map_err(|error| format!("{}: {error}", path.display()))?;
    let mut lines = Vec::new();
    for line in BufReader::new(file).lines() {
        let line = line.map_err(|error| format!("{}: {error}", path.display()))?;
        match serde_json::from_str(&line) {
            Ok(parsed) => lines.push(parsed),
            Err(error) if error.is_eof() => break,
            Err(error) => return Err(format!("{}: {error}: {line}", path.display())),
        }
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_line_sent_is_read_back_in_order() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("acks.jsonl");
        let (log, writer) = create(&path).unwrap();
        log.game("g1", ["t0", "t1"]);
        let clone = log.clone();
        for seq in 4..1004 {
            clone.ack("g1", seq, &format!("a{seq}"));
        }
        drop((log, clone));
        writer.finish().await.unwrap();
        let lines = read(&path).unwrap();
        assert_eq!(lines.len(), 1001);
        let tokens = ["t0".to_owned(), "t1".to_owned()];
        let game = "g1".to_owned();
        assert_eq!(lines[0], AckLine::Game { game, tokens });
        let command = "a1003".to_owned();
        let game = "g1".to_owned();
        assert_eq!(
            lines[1000],
            AckLine::Ack {
                game,
                seq: 1003,
                command
            }
        );
    }

    #[tokio::test]
    async fn a_line_is_on_disk_before_the_log_is_finished() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("acks.jsonl");
        let (log, writer) = create(&path).unwrap();
        log.ack("g", 7, "b3");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while read(&path).unwrap().is_empty() {
            assert!(
                std::time::Instant::now() < deadline,
                "the ack never reached the file"
            );
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            "{\"type\":\"ack\",\"game\":\"g\",\"seq\":7,\"command\":\"b3\"}\n"
        );
        drop(log);
        writer.finish().await.unwrap();
    }

    #[test]
    fn a_torn_last_line_is_left_out_but_a_bad_line_is_an_error() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("acks.jsonl");
        let whole = r#"{"type":"ack","game":"g","seq":7,"command":"b3"}"#;
        std::fs::write(&path, format!("{whole}\n{{\"type\":\"ack\",\"ga")).unwrap();
        assert_eq!(read(&path).unwrap().len(), 1);
        std::fs::write(&path, format!("{whole}\nnot json\n{whole}\n")).unwrap();
        assert!(read(&path).is_err());
    }
}
