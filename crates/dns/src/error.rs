//! Every failure of this crate, as one typed error whose messages are sentences.

use std::net::SocketAddr;
use std::path::PathBuf;

/// A DNS-01 step failed. Text that came from a peer, a file or a hook is escaped (control
/// characters as `\xNN`) and shortened before it is put in a message; a TSIG secret never
/// is.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DnsError {
    /// The TSIG key file could not be read.
    #[error("{0}")]
    KeyRead(#[source] tlskit_io::ReadError),
    /// The TSIG key file was read but is not a usable BIND key file.
    #[error("{}: not a usable TSIG key file: {reason}", path.display())]
    KeyFile {
        /// The file.
        path: PathBuf,
        /// Why, in words (never the secret).
        reason: String,
    },
    /// A name is not a valid DNS name.
    #[error("\"{name}\" is not a valid DNS name: {reason}")]
    Name {
        /// The name as given (escaped).
        name: String,
        /// Why.
        reason: String,
    },
    /// A socket operation failed.
    #[error("cannot reach the DNS server {server}: {source}")]
    Io {
        /// The server.
        server: SocketAddr,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// No answer before the deadline.
    #[error("the DNS server {server} did not answer the {what} in time")]
    Timeout {
        /// The server.
        server: SocketAddr,
        /// What was asked ("TXT query for NAME", "update of NAME").
        what: String,
    },
    /// The answer could not be decoded or does not answer the question.
    #[error("the DNS server {server} sent an unusable answer to the {what}: {reason}")]
    Malformed {
        /// The server.
        server: SocketAddr,
        /// What was asked.
        what: String,
        /// Why it is unusable.
        reason: String,
    },
    /// The server answered with an error code.
    #[error("the DNS server {server} refused the {what}: {rcode}")]
    Refused {
        /// The server.
        server: SocketAddr,
        /// What was asked.
        what: String,
        /// The response code (`REFUSED`, `NOTAUTH`, ...), with the TSIG error if any.
        rcode: String,
    },
    /// The update's answer did not carry a valid TSIG signature.
    #[error(
        "the DNS server {server} answered the {what} without a valid TSIG signature: {reason}"
    )]
    Tsig {
        /// The server.
        server: SocketAddr,
        /// What was asked.
        what: String,
        /// Why the signature was refused.
        reason: String,
    },
    /// No zone holds the name (no SOA found walking up to the root).
    #[error("no DNS zone found for {name} at {server}")]
    NoZone {
        /// The name.
        name: String,
        /// The server asked.
        server: SocketAddr,
    },
    /// No server to check propagation on, or none configured to ask.
    #[error("no name server to ask for {name}: {reason}")]
    NoServer {
        /// The name.
        name: String,
        /// Why.
        reason: String,
    },
    /// The record was not seen on every server before the deadline.
    #[error("the TXT record {name} did not reach every authoritative server in time; still missing: {}", missing.join(", "))]
    NotPropagated {
        /// The record's name.
        name: String,
        /// Each server still missing it, with what it answered.
        missing: Vec<String>,
    },
    /// The exec hook failed, timed out or could not be started.
    #[error("the DNS hook {} failed ({action} {name}): {reason}", program.display())]
    Exec {
        /// The hook's program.
        program: PathBuf,
        /// `add` or `remove`.
        action: &'static str,
        /// The record's name.
        name: String,
        /// Why, with its standard error escaped.
        reason: String,
    },
}
