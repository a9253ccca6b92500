//! The server's state: accounts, orders, authorizations and certificates, held in memory
//! and written through to `DIR/acme/` one JSON file per object (atomic replace, so a
//! crash leaves each object either old or new). A restart reads them back and continues
//! pending orders (a validation that was running is offered again). `DIR/acme/lock` is
//! held for the life of the process: a second `ca serve` on the same directory refuses to
//! start instead of writing beside the first. [`State::sweep`] forgets what no client can
//! use any more, so the directory does not grow forever; accounts always stay.

use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use serde::{de::DeserializeOwned, Deserialize, Serialize};
use serde_json::Value;

use crate::error::ServerError;

/// Largest state file read back.
const MAX_STATE_FILE: u64 = 1 << 20;

/// An object's status (RFC 8555 7.1.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Status {
    Pending,
    Processing,
    Ready,
    Valid,
    Invalid,
    Deactivated,
    Revoked,
    Expired,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Account {
    pub(crate) id: String,
    pub(crate) status: Status,
    /// The public JWK (RFC 7638 members only).
    pub(crate) jwk: Value,
    pub(crate) thumbprint: String,
    #[serde(default)]
    pub(crate) contact: Vec<String>,
    pub(crate) created: u64,
    #[serde(default)]
    pub(crate) eab_kid: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub(crate) struct Identifier {
    #[serde(rename = "type")]
    pub(crate) kind: String,
    pub(crate) value: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Challenge {
    #[serde(rename = "type")]
    pub(crate) kind: String,
    pub(crate) token: String,
    pub(crate) status: Status,
    #[serde(default)]
    pub(crate) validated: Option<u64>,
    #[serde(default)]
    pub(crate) error: Option<Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Authz {
    pub(crate) id: String,
    pub(crate) account: String,
    pub(crate) identifier: Identifier,
    pub(crate) status: Status,
    pub(crate) expires: u64,
    #[serde(default)]
    pub(crate) wildcard: bool,
    pub(crate) challenges: Vec<Challenge>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Order {
    pub(crate) id: String,
    pub(crate) account: String,
    /// Pending, processing, valid or invalid as stored; ready is computed.
    pub(crate) status: Status,
    pub(crate) expires: u64,
    pub(crate) identifiers: Vec<Identifier>,
    pub(crate) authzs: Vec<String>,
    pub(crate) profile: String,
    #[serde(default)]
    pub(crate) cert: Option<String>,
    #[serde(default)]
    pub(crate) error: Option<Value>,
    #[serde(default)]
    pub(crate) replaces: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Cert {
    pub(crate) id: String,
    pub(crate) account: String,
    /// Serial, hex as the CA's index has it.
    pub(crate) serial: String,
    pub(crate) not_before: u64,
    pub(crate) not_after: u64,
    /// The certificate and the chain above it, PEM.
    pub(crate) chain: String,
    /// The public key of the certificate (SubjectPublicKeyInfo DER, base64url), for
    /// revocation by the certificate's key.
    #[serde(default)]
    pub(crate) spki: String,
    #[serde(default)]
    pub(crate) identifiers: Vec<Identifier>,
}

/// Everything, in memory, plus where it lives on disk.
#[derive(Debug)]
pub(crate) struct State {
    root: PathBuf,
    _lock: File,
    pub(crate) accounts: HashMap<String, Account>,
    pub(crate) by_thumbprint: HashMap<String, String>,
    pub(crate) orders: HashMap<String, Order>,
    pub(crate) authzs: HashMap<String, Authz>,
    pub(crate) certs: HashMap<String, Cert>,
    pub(crate) by_serial: HashMap<String, String>,
}

const KINDS: [&str; 5] = ["accounts", "orders", "authz", "certs", "eab"];

/// What one [`State::sweep`] removed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Swept {
    pub(crate) orders: usize,
    pub(crate) authzs: usize,
    pub(crate) certs: usize,
}

impl State {
    /// Open (creating) `acme_dir`, take its lock, read every object back.
    pub(crate) fn open(acme_dir: &Path) -> Result<Self, ServerError> {
        create_private_dir(acme_dir)?;
        for k in KINDS {
            create_private_dir(&acme_dir.join(k))?;
        }
        let lock_path = acme_dir.join("lock");
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| ServerError::file(&lock_path, e))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(ServerError::Locked { path: lock_path })
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(ServerError::file(&lock_path, e)),
        }
        let mut st = State {
            root: acme_dir.to_path_buf(),
            _lock: lock,
            accounts: read_all(&acme_dir.join("accounts"))?,
            by_thumbprint: HashMap::new(),
            orders: read_all(&acme_dir.join("orders"))?,
            authzs: read_all(&acme_dir.join("authz"))?,
            certs: read_all(&acme_dir.join("certs"))?,
            by_serial: HashMap::new(),
        };
        for a in st.accounts.values() {
            st.by_thumbprint.insert(a.thumbprint.clone(), a.id.clone());
        }
        for c in st.certs.values() {
            st.by_serial
                .insert(c.serial.to_ascii_lowercase(), c.id.clone());
        }
        // A validation that was running when the process stopped is offered again.
        let mut reset = Vec::new();
        for a in st.authzs.values_mut() {
            let mut changed = false;
            for c in &mut a.challenges {
                if c.status == Status::Processing {
                    c.status = Status::Pending;
                    changed = true;
                }
            }
            if changed {
                reset.push(a.clone());
            }
        }
        for a in reset {
            st.save_authz(&a)?;
        }
        Ok(st)
    }

    fn write<T: Serialize>(&self, kind: &str, id: &str, v: &T) -> Result<(), ServerError> {
        let path = self.root.join(kind).join(format!("{id}.json"));
        let bytes = serde_json::to_vec(v).map_err(|e| ServerError::file(&path, e))?;
        tlskit_io::replace(&path, &[&bytes], true).map_err(|e| ServerError::file(&path, e))
    }

    pub(crate) fn save_account(&mut self, a: &Account) -> Result<(), ServerError> {
        self.write("accounts", &a.id, a)?;
        self.by_thumbprint
            .insert(a.thumbprint.clone(), a.id.clone());
        self.accounts.insert(a.id.clone(), a.clone());
        Ok(())
    }

    pub(crate) fn save_order(&mut self, o: &Order) -> Result<(), ServerError> {
        self.write("orders", &o.id, o)?;
        self.orders.insert(o.id.clone(), o.clone());
        Ok(())
    }

    pub(crate) fn save_authz(&mut self, a: &Authz) -> Result<(), ServerError> {
        self.write("authz", &a.id, a)?;
        self.authzs.insert(a.id.clone(), a.clone());
        Ok(())
    }

    pub(crate) fn save_cert(&mut self, c: &Cert) -> Result<(), ServerError> {
        self.write("certs", &c.id, c)?;
        self.by_serial
            .insert(c.serial.to_ascii_lowercase(), c.id.clone());
        self.certs.insert(c.id.clone(), c.clone());
        Ok(())
    }

    /// Remove, from disk then from memory, what has expired at `now`:
    /// - an order that is not valid, once past its `expires` (it can only be invalid
    ///   then); a valid (or processing) one `keep_valid` seconds later;
    /// - an authorization no remaining order names, on the same terms;
    /// - a certificate's record `keep_valid` seconds after the certificate expired (until
    ///   then revokeCert, renewalInfo and `replaces` need it), unless an order still names it.
    ///
    /// Orders go first: they name the others, so a crash midway leaves only files that
    /// nothing names, which the next sweep removes. Accounts are never removed.
    pub(crate) fn sweep(&mut self, now: u64, keep_valid: u64) -> Result<Swept, ServerError> {
        let over = |expires: u64, kept: bool| {
            now >= expires.saturating_add(if kept { keep_valid } else { 0 })
        };
        let mut swept = Swept::default();
        let orders: Vec<String> = self
            .orders
            .values()
            .filter(|o| {
                over(
                    o.expires,
                    matches!(o.status, Status::Valid | Status::Processing),
                )
            })
            .map(|o| o.id.clone())
            .collect();
        for id in orders {
            self.remove("orders", &id)?;
            self.orders.remove(&id);
            swept.orders += 1;
        }
        let named: HashSet<&str> = self
            .orders
            .values()
            .flat_map(|o| o.authzs.iter().map(String::as_str))
            .collect();
        let authzs: Vec<String> = self
            .authzs
            .values()
            .filter(|a| {
                !named.contains(a.id.as_str()) && over(a.expires, a.status == Status::Valid)
            })
            .map(|a| a.id.clone())
            .collect();
        for id in authzs {
            self.remove("authz", &id)?;
            self.authzs.remove(&id);
            swept.authzs += 1;
        }
        let named: HashSet<&str> = self
            .orders
            .values()
            .filter_map(|o| o.cert.as_deref())
            .collect();
        let certs: Vec<(String, String)> = self
            .certs
            .values()
            .filter(|c| !named.contains(c.id.as_str()) && over(c.not_after, true))
            .map(|c| (c.id.clone(), c.serial.to_ascii_lowercase()))
            .collect();
        for (id, serial) in certs {
            self.remove("certs", &id)?;
            self.certs.remove(&id);
            if self.by_serial.get(&serial) == Some(&id) {
                self.by_serial.remove(&serial);
            }
            swept.certs += 1;
        }
        Ok(swept)
    }

    fn remove(&self, kind: &str, id: &str) -> Result<(), ServerError> {
        let path = self.root.join(kind).join(format!("{id}.json"));
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(ServerError::file(&path, e)),
        }
    }

    /// An order's status as the client sees it: `ready` once every authorization is
    /// valid, `invalid` once one failed or the order expired.
    pub(crate) fn order_status(&self, o: &Order, now: u64) -> Status {
        match o.status {
            Status::Valid | Status::Invalid | Status::Processing => return o.status,
            _ => {}
        }
        if now >= o.expires {
            return Status::Invalid;
        }
        let mut all_valid = true;
        for id in &o.authzs {
            match self.authzs.get(id).map(|a| authz_status(a, now)) {
                Some(Status::Valid) => {}
                Some(Status::Pending) => all_valid = false,
                _ => return Status::Invalid,
            }
        }
        if all_valid {
            Status::Ready
        } else {
            Status::Pending
        }
    }
}

/// An authorization's status with expiry applied.
pub(crate) fn authz_status(a: &Authz, now: u64) -> Status {
    if now >= a.expires && matches!(a.status, Status::Pending | Status::Valid) {
        Status::Expired
    } else {
        a.status
    }
}

/// The EAB key enrolled under `kid` in `acme_dir/eab/` (None when there is none).
pub(crate) fn eab_key(acme_dir: &Path, kid: &str) -> Option<Vec<u8>> {
    if !valid_kid(kid) {
        return None;
    }
    let text =
        tlskit_io::read_to_string(&acme_dir.join("eab").join(format!("{kid}.key")), 4096).ok()?;
    crate::jws::from_b64url(text.trim())
}

/// A key id is 1 to 64 letters, digits, `-` or `_` (it names a file).
pub(crate) fn valid_kid(kid: &str) -> bool {
    !kid.is_empty()
        && kid.len() <= 64
        && kid
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

pub(crate) fn create_private_dir(dir: &Path) -> Result<(), ServerError> {
    use std::os::unix::fs::DirBuilderExt;
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        Err(e) => Err(ServerError::file(dir, e)),
    }
}

fn read_all<T: DeserializeOwned>(dir: &Path) -> Result<HashMap<String, T>, ServerError> {
    let mut out = HashMap::new();
    let rd = std::fs::read_dir(dir).map_err(|e| ServerError::file(dir, e))?;
    for entry in rd {
        let entry = entry.map_err(|e| ServerError::file(dir, e))?;
        let name = entry.file_name();
        let Some(id) = name.to_str().and_then(|n| n.strip_suffix(".json")) else {
            continue; // temporary files of an interrupted write, and anything else
        };
        if !valid_kid(id) {
            continue;
        }
        let path = entry.path();
        let bytes =
            tlskit_io::read(&path, MAX_STATE_FILE).map_err(|e| ServerError::file(&path, e))?;
        let v: T = serde_json::from_slice(&bytes).map_err(|e| {
            ServerError::file(&path, format!("not a state object of this server: {e}"))
        })?;
        out.insert(id.to_string(), v);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_survives_a_restart_and_a_second_opener_is_refused() {
        let t = tempfile::tempdir().expect("tempdir");
        let dir = t.path().join("acme");
        let mut st = State::open(&dir).expect("open");
        assert!(matches!(State::open(&dir), Err(ServerError::Locked { .. })));
        let ident = Identifier {
            kind: "dns".into(),
            value: "a.example".into(),
        };
        let az = Authz {
            id: "az1".into(),
            account: "acct1".into(),
            identifier: ident.clone(),
            status: Status::Pending,
            expires: u64::MAX,
            wildcard: false,
            challenges: vec![Challenge {
                kind: "http-01".into(),
                token: "tok".into(),
                status: Status::Processing,
                validated: None,
                error: None,
            }],
        };
        st.save_authz(&az).expect("authz");
        let o = Order {
            id: "o1".into(),
            account: "acct1".into(),
            status: Status::Pending,
            expires: u64::MAX,
            identifiers: vec![ident],
            authzs: vec!["az1".into()],
            profile: "default".into(),
            cert: None,
            error: None,
            replaces: None,
        };
        st.save_order(&o).expect("order");
        // A crash mid-write leaves a temporary file beside the objects: ignored.
        std::fs::write(dir.join("orders/.tmpXYZ"), b"{").expect("temp");
        drop(st);
        let st = State::open(&dir).expect("reopen");
        let o = st.orders.get("o1").expect("order kept");
        assert_eq!(st.order_status(o, 0), Status::Pending);
        // The validation that was running is offered again.
        assert_eq!(st.authzs["az1"].challenges[0].status, Status::Pending);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.join("orders/o1.json"))
            .expect("file")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    fn authz(id: &str, status: Status, expires: u64) -> Authz {
        Authz {
            id: id.into(),
            account: "acct1".into(),
            identifier: Identifier {
                kind: "dns".into(),
                value: "a.example".into(),
            },
            status,
            expires,
            wildcard: false,
            challenges: Vec::new(),
        }
    }

    fn order(id: &str, status: Status, expires: u64, authz: &str, cert: Option<&str>) -> Order {
        Order {
            id: id.into(),
            account: "acct1".into(),
            status,
            expires,
            identifiers: Vec::new(),
            authzs: vec![authz.into()],
            profile: "default".into(),
            cert: cert.map(str::to_string),
            error: None,
            replaces: None,
        }
    }

    fn cert(id: &str, serial: &str, not_after: u64) -> Cert {
        Cert {
            id: id.into(),
            account: "acct1".into(),
            serial: serial.into(),
            not_before: 0,
            not_after,
            chain: String::new(),
            spki: String::new(),
            identifiers: Vec::new(),
        }
    }

    /// Pending and invalid objects go at their expiry, valid ones `keep` later, a
    /// certificate's record `keep` after the certificate expired; accounts stay; what an
    /// order still names stays with it; a second sweep finds nothing.
    #[test]
    fn sweep_forgets_expired_objects_and_keeps_what_is_named() {
        let t = tempfile::tempdir().expect("tempdir");
        let dir = t.path().join("acme");
        let mut st = State::open(&dir).expect("open");
        let keep = 7 * 86_400;
        let acct = Account {
            id: "acct1".into(),
            status: Status::Valid,
            jwk: Value::Null,
            thumbprint: "tp".into(),
            contact: Vec::new(),
            created: 0,
            eab_kid: None,
        };
        st.save_account(&acct).expect("account");
        st.save_authz(&authz("azp", Status::Pending, 100))
            .expect("a");
        st.save_order(&order("op", Status::Pending, 100, "azp", None))
            .expect("o");
        st.save_authz(&authz("azv", Status::Valid, 100)).expect("a");
        st.save_order(&order("ov", Status::Valid, 100, "azv", Some("c1")))
            .expect("o");
        st.save_cert(&cert("c1", "0A", 50)).expect("c");
        st.save_cert(&cert("c2", "0B", 150)).expect("c");
        // An authorization left behind by a crash between an order's removal and its own.
        st.save_authz(&authz("orphan", Status::Invalid, 100))
            .expect("a");

        assert_eq!(st.sweep(99, keep).expect("sweep"), Swept::default());
        let s = st.sweep(100, keep).expect("sweep");
        assert_eq!((s.orders, s.authzs, s.certs), (1, 2, 0));
        assert!(!dir.join("orders/op.json").exists());
        assert!(!dir.join("authz/azp.json").exists() && !dir.join("authz/orphan.json").exists());
        // The valid order keeps its authorization and its (expired) certificate.
        assert!(dir.join("authz/azv.json").exists() && dir.join("certs/c1.json").exists());

        let s = st.sweep(100 + keep, keep).expect("sweep");
        assert_eq!((s.orders, s.authzs, s.certs), (1, 1, 1));
        assert!(!dir.join("certs/c1.json").exists());
        assert!(!st.by_serial.contains_key("0a"));
        // c2 expires at 150: its record stays until 150 + keep, for revocation and ARI.
        assert!(st.by_serial.contains_key("0b"));
        let s = st.sweep(150 + keep, keep).expect("sweep");
        assert_eq!(s.certs, 1);
        assert!(st.certs.is_empty() && st.orders.is_empty() && st.authzs.is_empty());
        assert_eq!(st.sweep(u64::MAX, keep).expect("sweep"), Swept::default());
        // The account stays, on disk and after a restart.
        drop(st);
        let st = State::open(&dir).expect("reopen");
        assert_eq!(st.accounts.len(), 1);
        assert!(st.orders.is_empty() && st.certs.is_empty());
    }
}
