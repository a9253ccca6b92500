//! A blocking server run in the test's own process, on a thread of its own: the in-process
//! ACME server (`tlskit_ca_server::serve`) of the account tests, the ca-server tests and
//! its load example. Generic over the server so that this crate depends on no tlskit
//! crate (README).

use std::fmt::Display;
use std::net::SocketAddr;
use std::time::Duration;

/// How long a server may take to report its address.
pub const START_WAIT: Duration = Duration::from_secs(30);

/// What a server is handed to report the address it listens on, once bound.
pub type Ready = Box<dyn FnOnce(SocketAddr) + Send>;

/// Run `serve` on a new thread and return the address it reports through its [`Ready`]
/// (`tlskit_ca_server::serve(opts, ready)` takes it as is). Panics, naming `what`, when
/// the server fails before that, or says nothing within [`START_WAIT`]. The thread lives
/// as long as the server (the test process, for a server that never returns); an error
/// after the address was reported is dropped with it.
pub fn serve_in_thread<E, F>(what: &str, serve: F) -> SocketAddr
where
    E: Display,
    F: FnOnce(Ready) -> Result<(), E> + Send + 'static,
{
    let (tx, rx) = std::sync::mpsc::channel::<Result<SocketAddr, String>>();
    let ready_tx = tx.clone();
    std::thread::spawn(move || {
        let ready: Ready = Box::new(move |a| {
            let _ = ready_tx.send(Ok(a));
        });
        if let Err(e) = serve(ready) {
            let _ = tx.send(Err(e.to_string()));
        }
    });
    match rx.recv_timeout(START_WAIT) {
        Ok(Ok(addr)) => addr,
        Ok(Err(e)) => panic!("{what} failed to start: {e}"),
        Err(e) => panic!("{what} did not report its address within {START_WAIT:?}: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reported_address_comes_back() {
        let want: SocketAddr = "127.0.0.1:4321".parse().unwrap();
        let got = serve_in_thread("a server", move |ready| {
            ready(want);
            Ok::<(), String>(())
        });
        assert_eq!(got, want);
    }

    #[test]
    #[should_panic(expected = "a server failed to start: port taken")]
    fn a_failure_before_the_address_is_told() {
        serve_in_thread("a server", |_ready| Err::<(), _>("port taken"));
    }
}
