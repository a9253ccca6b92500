//! What the namespace tests (net_rtt, probe_rtt) share: whether this machine can run
//! them, and the namespaces' removal whatever happens.

use std::process::{Command, Stdio};

use crate::net_support::require;

/// Two network namespaces, removed on drop (a failed assertion included).
pub(crate) struct Namespaces(pub(crate) [String; 2]);

impl Drop for Namespaces {
    fn drop(&mut self) {
        for ns in &self.0 {
            let _ = Command::new("ip")
                .args(["netns", "del", ns])
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// Why namespace tests cannot run here (not root, no /dev/net/tun, namespaces refused),
/// for `cannot_run`. iproute2 and python3 are test peers: missing, the test fails.
pub(crate) fn can_run() -> Result<(), String> {
    let uid = Command::new("id")
        .arg("-u")
        .output()
        .map_err(|e| e.to_string())?;
    if uid.stdout != b"0\n" {
        return Err("not root".into());
    }
    if !std::path::Path::new("/dev/net/tun").exists() {
        return Err("no /dev/net/tun".into());
    }
    require("ip");
    require("python3");
    let probe = format!("tkprobe{}", std::process::id());
    let ok = Command::new("ip")
        .args(["netns", "add", &probe])
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    let _ = Command::new("ip")
        .args(["netns", "del", &probe])
        .stderr(Stdio::null())
        .status();
    if !ok {
        return Err("cannot create network namespaces".into());
    }
    Ok(())
}
