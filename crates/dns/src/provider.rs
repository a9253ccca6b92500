//! Who writes the TXT records: the `DnsProvider` trait, with RFC 2136 (`Rfc2136`: TSIG
//! UPDATE to the zone's primary) and a user's command (`Exec`: `CMD add|remove NAME
//! VALUE`, like lego's exec provider and dehydrated's hooks); and where their effect is
//! checked (`propagation_servers`).

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::error::DnsError;
use crate::key::TsigKey;
use crate::query::{find_zone, name, show, zone_servers};
use crate::update::update_txt;

/// Something that adds and removes TXT records. Names are absolute
/// (`_acme-challenge.example.com.`); each call ends by `deadline`.
pub trait DnsProvider: Send + Sync {
    /// Add the TXT record `name` = `value` (beside any others at `name`).
    fn add_txt(&self, name: &str, value: &str, deadline: Instant) -> Result<(), DnsError>;
    /// Remove the TXT record `name` = `value` (only that value); removing one that is not
    /// there succeeds.
    fn remove_txt(&self, name: &str, value: &str, deadline: Instant) -> Result<(), DnsError>;
    /// What it is, for logs (`rfc2136 127.0.0.1:53`, `exec /usr/local/bin/dns-hook`).
    fn describe(&self) -> String;
    /// The server holding the zone's primary copy, when the provider knows it: asked for
    /// the zone's name servers and checked for propagation too.
    fn primary(&self) -> Option<SocketAddr> {
        None
    }
}

/// RFC 2136 dynamic updates to `server`, TSIG-signed with `key`.
#[derive(Debug, Clone)]
pub struct Rfc2136 {
    server: SocketAddr,
    key: Option<TsigKey>,
    ttl: u32,
}

impl Rfc2136 {
    /// Updates go to `server`, signed with `key` (`None`: unsigned, for servers that
    /// allow updates by address); records get a TTL of `ttl` seconds.
    pub fn new(server: SocketAddr, key: Option<TsigKey>, ttl: u32) -> Self {
        Rfc2136 { server, key, ttl }
    }

    fn update(
        &self,
        text: &str,
        value: &str,
        add: bool,
        deadline: Instant,
    ) -> Result<(), DnsError> {
        let n = name(text)?;
        let zone = find_zone(self.server, &n, deadline)?;
        update_txt(
            self.server,
            self.key.as_ref(),
            &zone,
            &n,
            value,
            self.ttl,
            add,
            deadline,
        )
    }
}

impl DnsProvider for Rfc2136 {
    fn add_txt(&self, name: &str, value: &str, deadline: Instant) -> Result<(), DnsError> {
        self.update(name, value, true, deadline)
    }
    fn remove_txt(&self, name: &str, value: &str, deadline: Instant) -> Result<(), DnsError> {
        self.update(name, value, false, deadline)
    }
    fn describe(&self) -> String {
        match &self.key {
            Some(k) => format!(
                "rfc2136 {} key {}",
                self.server,
                tlskit_x509::text::escape(k.name())
            ),
            None => format!("rfc2136 {}", self.server),
        }
    }
    fn primary(&self) -> Option<SocketAddr> {
        Some(self.server)
    }
}

/// Most bytes of a hook's standard error kept for the message.
const MAX_STDERR: usize = 4096;

/// A user's program run as `PROGRAM add NAME VALUE` / `PROGRAM remove NAME VALUE`
/// (no shell; standard input empty, standard output discarded; its own process group),
/// which must exit 0 within its deadline; otherwise it is killed with every process of its
/// group, and its standard error (escaped, at most 4 KiB) is in the error.
#[derive(Debug, Clone)]
pub struct Exec {
    program: PathBuf,
}

impl Exec {
    /// Run `program` for each change.
    pub fn new(program: &Path) -> Self {
        Exec {
            program: program.to_path_buf(),
        }
    }

    fn run(
        &self,
        action: &'static str,
        name: &str,
        value: &str,
        deadline: Instant,
    ) -> Result<(), DnsError> {
        let fail = |reason: String| DnsError::Exec {
            program: self.program.clone(),
            action,
            name: tlskit_x509::text::escape(name).into_owned(),
            reason,
        };
        let mut cmd = Command::new(&self.program);
        cmd.arg(action).arg(name).arg(value).stdout(Stdio::null());
        // tlskit-io runs it in its own process group, so that the deadline stops what it
        // started too (a shell hook's curl or sleep), not only the hook itself; starts it
        // again while it is busy being written ("Text file busy": an editor's or a
        // deploy's save a moment ago); and reads standard error bounded, on a thread, so
        // that neither a chatty hook nor a grandchild holding the pipe can block us.
        match tlskit_io::child::run(&mut cmd, deadline, MAX_STDERR) {
            Ok(f) if f.status.success() => Ok(()),
            Ok(f) => Err(fail(format!(
                "it exited with {}{}",
                f.status,
                stderr_text(&f.stderr)
            ))),
            Err(tlskit_io::child::ChildError::Deadline { stderr }) => Err(fail(format!(
                "it did not finish in time and was killed{}",
                stderr_text(&stderr)
            ))),
            Err(e) => Err(fail(e.to_string())),
        }
    }
}

fn stderr_text(b: &[u8]) -> String {
    let t = String::from_utf8_lossy(b);
    let t = t.trim();
    if t.is_empty() {
        String::new()
    } else {
        format!("; its standard error: \"{}\"", tlskit_x509::text::escape(t))
    }
}

impl DnsProvider for Exec {
    fn add_txt(&self, name: &str, value: &str, deadline: Instant) -> Result<(), DnsError> {
        self.run("add", name, value, deadline)
    }
    fn remove_txt(&self, name: &str, value: &str, deadline: Instant) -> Result<(), DnsError> {
        self.run("remove", name, value, deadline)
    }
    fn describe(&self) -> String {
        format!(
            "exec {}",
            tlskit_x509::text::escape(&self.program.display().to_string())
        )
    }
}

/// Where a TXT record at `record` is checked before the CA is told to validate:
/// `resolver` alone when given (`--acme-dns-resolver`); otherwise the zone's name servers
/// (SOA, then NS, then their addresses, port 53), asked of `primary` (the update server)
/// or else of the system's resolver (the first `nameserver` of /etc/resolv.conf). A name
/// server at `primary`'s address is checked at `primary` (its port included), and
/// `primary` is always checked.
pub fn propagation_servers(
    record: &str,
    resolver: Option<SocketAddr>,
    primary: Option<SocketAddr>,
    deadline: Instant,
) -> Result<Vec<SocketAddr>, DnsError> {
    if let Some(r) = resolver {
        return Ok(vec![r]);
    }
    let n = name(record)?;
    let ask = match primary {
        Some(p) => p,
        None => system_resolver().ok_or_else(|| DnsError::NoServer {
            name: show(&n),
            reason: "/etc/resolv.conf names no nameserver; give --acme-dns-resolver".into(),
        })?,
    };
    let zone = find_zone(ask, &n, deadline)?;
    let mut out: Vec<SocketAddr> = Vec::new();
    for (_host, addrs) in zone_servers(ask, &zone, deadline)? {
        for ip in addrs {
            let a = match primary {
                Some(p) if p.ip() == ip => p,
                _ => SocketAddr::new(ip, 53),
            };
            if !out.contains(&a) {
                out.push(a);
            }
        }
    }
    if let Some(p) = primary {
        if !out.contains(&p) {
            out.push(p);
        }
    }
    if out.is_empty() {
        return Err(DnsError::NoServer {
            name: show(&n),
            reason: format!("no address found for the name servers of {}", show(&zone)),
        });
    }
    Ok(out)
}

/// The first `nameserver` of /etc/resolv.conf (read bounded), on port 53.
fn system_resolver() -> Option<SocketAddr> {
    let text = tlskit_io::read_to_string(Path::new("/etc/resolv.conf"), 64 << 10).ok()?;
    text.lines().find_map(|l| {
        let mut w = l.split_whitespace();
        (w.next() == Some("nameserver"))
            .then(|| w.next())
            .flatten()
            .and_then(|ip| ip.split('%').next()?.parse::<IpAddr>().ok())
            .map(|ip| SocketAddr::new(ip, 53))
    })
}
