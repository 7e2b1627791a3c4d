//! The server's CPU time and memory, read from Linux's `/proc/PID/stat` and
//! `/proc/PID/status`.

use std::io;

/// The process's user plus system CPU time in clock ticks: fields 14 and 15 of
/// `/proc/PID/stat`, counted after the parenthesised command name (which may itself hold
/// spaces and parentheses, hence the search for the last `)`).
pub fn parse_cpu_ticks(stat: &str) -> Option<u64> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    // After the name come field 3 (state) onwards; utime is field 14, stime field 15.
    let mut fields = after_name.split_whitespace().skip(11);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some(user + system)
}

/// The resident set size in bytes, from the `VmRSS:` line of `/proc/PID/status` (in kB).
pub fn parse_vm_rss_bytes(status: &str) -> Option<u64> {
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    let kib: u64 = line["VmRSS:".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// The process's CPU time (user plus system) so far, in seconds.
pub fn cpu_seconds(pid: u32) -> io::Result<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let ticks = parse_cpu_ticks(&stat).ok_or_else(|| unreadable("stat"))?;
    Ok(ticks as f64 / clock_ticks_per_second())
}

/// The process's resident memory now, in bytes.
pub fn rss_bytes(pid: u32) -> io::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    parse_vm_rss_bytes(&status).ok_or_else(|| unreadable("status"))
}

/// The machine's 1-minute load average, from `/proc/loadavg`: how busy the shared cores
/// were, to judge how far a run's figures can be trusted.
pub fn load_average() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

fn unreadable(file: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("unexpected /proc {file}"),
    )
}

fn clock_ticks_per_second() -> f64 {
    // SAFETY: sysconf only reads a system constant.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 { ticks as f64 } else { 100.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_ticks_add_user_and_system_time_even_with_a_tricky_name() {
        let stat = "4242 (carc (server) x) S 1 4242 4242 0 -1 4194560 2305 0 0 0 \
                    731 158 0 0 20 0 9 0 123456 1000000 3000 18446744073709551615";
        assert_eq!(parse_cpu_ticks(stat), Some(731 + 158));
    }

    #[test]
    fn a_truncated_stat_line_is_refused() {
        assert_eq!(parse_cpu_ticks("12 (x) S 1 2 3"), None);
    }

    #[test]
    fn rss_is_read_in_kib_and_returned_in_bytes() {
        let status = "Name:\tserver\nVmPeak:\t  999 kB\nVmRSS:\t   20480 kB\nThreads:\t3\n";
        assert_eq!(parse_vm_rss_bytes(status), Some(20480 * 1024));
        assert_eq!(parse_vm_rss_bytes("Name:\tkthread\n"), None);
    }

    #[test]
    fn this_process_can_be_read() {
        let pid = std::process::id();
        assert!(rss_bytes(pid).unwrap() > 0);
        assert!(cpu_seconds(pid).unwrap() >= 0.0);
    }
}
