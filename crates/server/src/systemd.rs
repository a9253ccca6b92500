//! systemd service notifications (`Type=notify`): `READY=1` once every address listens,
//! `RELOADING=1` (with `MONOTONIC_USEC`, which `Type=notify-reload` requires) and `READY=1`
//! around each reload, `STOPPING=1` when the server starts to drain. Nothing is sent when
//! `NOTIFY_SOCKET` is unset; a failed send is logged and never stops the server.
//!
//! The datagrams are sent by the `sd-notify` crate (a Unix datagram socket, path or
//! abstract name); `NOTIFY_SOCKET` stays set so that every later state is reported too.

use sd_notify::NotifyState;
use tlskit_tls::log::{self, Level};

fn send(what: &str, states: &[NotifyState<'_>]) {
    if std::env::var_os("NOTIFY_SOCKET").is_none() {
        return;
    }
    if let Err(e) = sd_notify::notify(false, states) {
        log::event(
            Level::Warn,
            "notify_failed",
            &[("state", &what), ("reason", &e)],
        );
    }
}

/// Startup finished, or a reload is over: the server accepts connections.
pub(crate) fn ready() {
    send("ready", &[NotifyState::Ready]);
}

/// A reload starts (its `MONOTONIC_USEC` lets systemd match it to `systemctl reload`).
pub(crate) fn reloading() {
    match NotifyState::monotonic_usec_now() {
        Ok(now) => send("reloading", &[NotifyState::Reloading, now]),
        Err(_) => send("reloading", &[NotifyState::Reloading]),
    }
}

/// Shutdown begins: no new connections, open ones drain.
pub(crate) fn stopping() {
    send("stopping", &[NotifyState::Stopping]);
}
