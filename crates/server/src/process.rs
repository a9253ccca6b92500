//! The standard Prometheus process metrics (the names and meanings of the Go and Python
//! clients' process collectors), read from /proc/self at scrape time: CPU time, open and
//! maximum file descriptors, virtual and resident memory, start time. Where /proc is not
//! there (not Linux), nothing is written.

use std::fmt::Write;
use std::io::Read;

/// Largest /proc file read (they are a few hundred bytes; the bound is for form).
const MAX_PROC_FILE: u64 = 64 * 1024;

fn read(path: &str) -> Option<String> {
    let mut out = String::new();
    std::fs::File::open(path)
        .ok()?
        .take(MAX_PROC_FILE)
        .read_to_string(&mut out)
        .ok()?;
    Some(out)
}

/// Clock ticks per second of /proc's times: AT_CLKTCK (17) from the auxiliary vector the
/// kernel gave the process (pairs of native-endian words), else the usual 100.
fn clock_ticks() -> f64 {
    const AT_CLKTCK: u64 = 17;
    let mut buf = Vec::new();
    let ok = std::fs::File::open("/proc/self/auxv")
        .and_then(|f| f.take(MAX_PROC_FILE).read_to_end(&mut buf))
        .is_ok();
    const W: usize = std::mem::size_of::<usize>();
    if ok {
        let word = |c: &[u8]| -> u64 {
            let mut b = [0u8; W];
            b.copy_from_slice(c);
            usize::from_ne_bytes(b) as u64
        };
        for pair in buf.chunks_exact(2 * W) {
            if word(&pair[..W]) == AT_CLKTCK {
                let v = word(&pair[W..]);
                if v > 0 {
                    return v as f64;
                }
            }
        }
    }
    100.0
}

/// What /proc says about this process.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Process {
    pub(crate) cpu_seconds: f64,
    pub(crate) open_fds: Option<u64>,
    pub(crate) max_fds: Option<u64>,
    pub(crate) virtual_bytes: u64,
    pub(crate) resident_bytes: u64,
    pub(crate) start_time_seconds: f64,
}

/// Fields of /proc/self/stat after the command name (which may hold spaces and `)`):
/// the first is field 3 (state).
fn stat_fields(stat: &str) -> Option<Vec<&str>> {
    let rest = &stat[stat.rfind(')')? + 1..];
    Some(rest.split_whitespace().collect())
}

/// `Max open files` soft limit from /proc/self/limits.
fn max_fds(limits: &str) -> Option<u64> {
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line["Max open files".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// `VmRSS:  1234 kB` from /proc/self/status, in bytes.
fn rss_bytes(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line["VmRSS:".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// `btime N` from /proc/stat: boot time, seconds since the Unix epoch.
fn boot_time(stat: &str) -> Option<f64> {
    stat.lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()
}

impl Process {
    /// Read /proc/self (None when it cannot be read or parsed).
    pub(crate) fn read() -> Option<Self> {
        let stat = read("/proc/self/stat")?;
        let f = stat_fields(&stat)?;
        // stat(5): utime 14, stime 15, starttime 22, vsize 23; f[0] is field 3.
        let num = |i: usize| -> Option<u64> { f.get(i - 3)?.parse().ok() };
        let ticks = clock_ticks();
        let start_ticks = num(22)?;
        let boot = boot_time(&read("/proc/stat")?)?;
        let open_fds = std::fs::read_dir("/proc/self/fd")
            .ok()
            .map(|d| d.count() as u64);
        Some(Self {
            cpu_seconds: (num(14)? + num(15)?) as f64 / ticks,
            open_fds,
            max_fds: read("/proc/self/limits").and_then(|l| max_fds(&l)),
            virtual_bytes: num(23)?,
            resident_bytes: rss_bytes(&read("/proc/self/status")?)?,
            start_time_seconds: boot + start_ticks as f64 / ticks,
        })
    }
}

/// Append the process metrics to a scrape.
pub(crate) fn render(s: &mut String) {
    let Some(p) = Process::read() else {
        return;
    };
    let mut metric = |name: &str, kind: &str, help: &str, value: &dyn std::fmt::Display| {
        let _ = writeln!(s, "# HELP {name} {help}");
        let _ = writeln!(s, "# TYPE {name} {kind}");
        let _ = writeln!(s, "{name} {value}");
    };
    metric(
        "process_cpu_seconds_total",
        "counter",
        "Total user and system CPU time spent in seconds.",
        &p.cpu_seconds,
    );
    if let Some(n) = p.open_fds {
        metric(
            "process_open_fds",
            "gauge",
            "Number of open file descriptors.",
            &n,
        );
    }
    if let Some(n) = p.max_fds {
        metric(
            "process_max_fds",
            "gauge",
            "Maximum number of open file descriptors.",
            &n,
        );
    }
    metric(
        "process_virtual_memory_bytes",
        "gauge",
        "Virtual memory size in bytes.",
        &p.virtual_bytes,
    );
    metric(
        "process_resident_memory_bytes",
        "gauge",
        "Resident memory size in bytes.",
        &p.resident_bytes,
    );
    metric(
        "process_start_time_seconds",
        "gauge",
        "Start time of the process since unix epoch in seconds.",
        &format!("{:.2}", p.start_time_seconds),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_formats() {
        let stat = "1234 (tl (sk) it) S 1 1234 1234 0 -1 4194560 100 0 0 0 25 15 0 0 20 0 \
                    3 0 5000 123456789 300 18446744073709551615";
        let f = stat_fields(stat).unwrap_or_default();
        assert_eq!(f[0], "S");
        assert_eq!(f[14 - 3], "25");
        assert_eq!(f[22 - 3], "5000");
        assert_eq!(f[23 - 3], "123456789");
        assert_eq!(
            max_fds("Max processes 1 1 processes\nMax open files            1024                 524288               files\n"),
            Some(1024)
        );
        assert_eq!(
            rss_bytes("Name:\tx\nVmRSS:\t    2048 kB\n"),
            Some(2048 * 1024)
        );
        assert_eq!(boot_time("cpu 1 2\nbtime 1700000000\n"), Some(1.7e9));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_is_plausible() {
        let p = Process::read();
        let Some(p) = p else {
            panic!("/proc/self unreadable on Linux")
        };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        // Started within the last day, not in the future (clock ticks and btime agree).
        assert!(p.start_time_seconds <= now + 1.0 && p.start_time_seconds > now - 86_400.0);
        assert!(p.resident_bytes > 1024 * 1024 && p.virtual_bytes >= p.resident_bytes);
        assert!(p.open_fds.is_some_and(|n| n >= 3));
        assert!(clock_ticks() >= 1.0);
    }
}
