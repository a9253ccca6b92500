//! Waiting for a TXT record to reach the servers that will be asked: each one is queried
//! directly until every one answers with every value, or the deadline passes.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::error::DnsError;
use crate::query::query_txt;

/// Longest wait for one server's answer inside a propagation check.
const PER_QUERY: Duration = Duration::from_secs(5);

/// Query each of `servers` for the TXT records at `name` until every server answers with
/// every one of `values`, polling every `interval`, until `deadline`. After each round
/// with something still missing, `progress` is called with one line per server still
/// missing (`ADDR: what it answered`). Returns an error naming them at the deadline.
pub fn wait_for_txt(
    servers: &[SocketAddr],
    name: &str,
    values: &[String],
    interval: Duration,
    deadline: Instant,
    progress: &mut dyn FnMut(&[String]),
) -> Result<(), DnsError> {
    if servers.is_empty() {
        return Err(DnsError::NoServer {
            name: tlskit_x509::text::escape(name).into_owned(),
            reason: "the list of servers to check is empty".into(),
        });
    }
    let mut pending: Vec<SocketAddr> = servers.to_vec();
    loop {
        let mut missing = Vec::new();
        let mut still = Vec::new();
        for &server in &pending {
            let until = deadline.min(Instant::now() + PER_QUERY);
            match query_txt(server, name, until) {
                Ok(found) => {
                    let absent: Vec<&String> =
                        values.iter().filter(|v| !found.contains(v)).collect();
                    if !absent.is_empty() {
                        missing.push(format!(
                            "{server}: {} of {} values not there yet",
                            absent.len(),
                            values.len()
                        ));
                        still.push(server);
                    }
                }
                Err(e) => {
                    missing.push(format!("{server}: {e}"));
                    still.push(server);
                }
            }
        }
        if still.is_empty() {
            return Ok(());
        }
        pending = still;
        if Instant::now() + interval >= deadline {
            return Err(DnsError::NotPropagated {
                name: tlskit_x509::text::escape(name).into_owned(),
                missing,
            });
        }
        progress(&missing);
        std::thread::sleep(interval);
    }
}
