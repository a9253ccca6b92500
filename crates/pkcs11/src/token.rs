//! Modules, tokens and the session pool behind a [`TokenKey`].
//!
//! A module is loaded and initialised once per process and shared by every key on it
//! (PKCS#11 allows one C_Initialize per process). A key logs in once; the login belongs
//! to the application, so every session opened afterwards on that token can sign. The
//! pool opens sessions on demand up to its size (`TLSKIT_PKCS11_SESSIONS`, default 4),
//! and a signer waits (at most [`CHECKOUT_WAIT`]) when all are busy.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use cryptoki::context::{CInitializeArgs, Pkcs11};
use cryptoki::error::{Error as CkError, RvError};
use cryptoki::mechanism::{Mechanism, MechanismType};
use cryptoki::object::{Attribute, AttributeType, KeyType, ObjectClass, ObjectHandle};
use cryptoki::session::{Session, UserType};
use cryptoki::slot::Slot;
use cryptoki::types::AuthPin;

use crate::error::{call_name, rv_name};
use crate::uri::{redact, Pkcs11Uri};
use crate::{spki, Pkcs11Error};

/// Environment variable with the user PIN (when the URI has none).
pub const PIN_ENV: &str = "TLSKIT_PKCS11_PIN";
/// Environment variable with the module path (when the URI and the CLI name none).
pub const MODULE_ENV: &str = "TLSKIT_PKCS11_MODULE";
/// Environment variable with the session pool size per key (1 to 64, default 4).
pub const SESSIONS_ENV: &str = "TLSKIT_PKCS11_SESSIONS";

/// How long a signer waits for a free session before failing.
const CHECKOUT_WAIT: Duration = Duration::from_secs(10);
/// [`TokenKey::check`] trusts a signature or check this recent without asking the token
/// again (asking costs SoftHSM2 several file reads).
const CHECK_FRESH: Duration = Duration::from_millis(250);
/// A token that went away is re-opened at most this often.
const REOPEN_INTERVAL: Duration = Duration::from_secs(1);
/// The largest PIN file read.
const PIN_FILE_MAX: u64 = 4096;

static DEFAULT_MODULE: OnceLock<PathBuf> = OnceLock::new();
type Modules = Mutex<HashMap<PathBuf, Pkcs11>>;
static MODULES: OnceLock<Modules> = OnceLock::new();

/// Set the module used for URIs without `module-path=` (the CLI's `--pkcs11-module`).
/// The first call wins.
pub fn set_default_module(path: PathBuf) {
    let _ = DEFAULT_MODULE.set(path);
}

pub(crate) fn module_path(uri: &Pkcs11Uri, explicit: Option<&Path>) -> Option<PathBuf> {
    uri.module_path
        .clone()
        .or_else(|| explicit.map(Path::to_path_buf))
        .or_else(|| DEFAULT_MODULE.get().cloned())
        .or_else(|| std::env::var_os(MODULE_ENV).map(PathBuf::from))
}

/// Load (once) and initialise the module at `path`.
pub(crate) fn module(path: &Path) -> Result<Pkcs11, Pkcs11Error> {
    let map = MODULES.get_or_init(|| Mutex::new(HashMap::new()));
    let mut map = map.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(m) = map.get(path) {
        return Ok(m.clone());
    }
    let err = |reason: String| Pkcs11Error::Module {
        path: path.to_path_buf(),
        reason,
    };
    // A bounded look first: the loader would otherwise block on a FIFO or read a device.
    let meta = std::fs::metadata(path).map_err(|source| Pkcs11Error::ModuleIo {
        path: path.to_path_buf(),
        source,
    })?;
    if !meta.is_file() {
        return Err(err("not a regular file".into()));
    }
    let m = Pkcs11::new(path).map_err(|e| {
        err(match e {
            CkError::LibraryLoading(l) => {
                format!("not a loadable shared library ({})", escape(&l.to_string()))
            }
            other => escape(&other.to_string()),
        })
    })?;
    match m.initialize(CInitializeArgs::OsThreads) {
        Ok(()) | Err(CkError::AlreadyInitialized) => {}
        Err(CkError::Pkcs11(RvError::CryptokiAlreadyInitialized, _)) => {}
        Err(e) => return Err(err(format!("C_Initialize: {}", rv_name(&e)))),
    }
    map.insert(path.to_path_buf(), m.clone());
    Ok(m)
}

/// Drop the process's handle on a module (keys that still hold it keep it alive).
fn forget_module(path: &Path) {
    if let Some(map) = MODULES.get() {
        map.lock().unwrap_or_else(|p| p.into_inner()).remove(path);
    }
}

pub(crate) fn escape(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}

/// The PIN: the URI's pin-value, its pin-source file, or `TLSKIT_PKCS11_PIN`.
pub(crate) fn pin(uri: &Pkcs11Uri) -> Result<Option<AuthPin>, Pkcs11Error> {
    if let Some(v) = &uri.pin_value {
        return Ok(Some(AuthPin::new(v.clone())));
    }
    if let Some(p) = &uri.pin_source {
        use std::io::Read;
        let err = |reason: String| Pkcs11Error::PinFile {
            path: p.clone(),
            reason,
        };
        // Look before opening: opening a FIFO would block.
        let io_err = |source| Pkcs11Error::PinFileIo {
            path: p.clone(),
            source,
        };
        let meta = std::fs::metadata(p).map_err(io_err)?;
        if !meta.is_file() {
            return Err(err("not a regular file".into()));
        }
        let f = std::fs::File::open(p).map_err(io_err)?;
        let mut s = String::new();
        f.take(PIN_FILE_MAX)
            .read_to_string(&mut s)
            .map_err(io_err)?;
        let v = s.trim_end_matches(['\r', '\n']).to_string();
        if v.is_empty() {
            return Err(err("empty".into()));
        }
        return Ok(Some(AuthPin::new(v)));
    }
    Ok(std::env::var(PIN_ENV)
        .ok()
        .filter(|v| !v.is_empty())
        .map(AuthPin::new))
}

/// The slot whose token matches the URI's token attributes (first match).
pub(crate) fn find_slot(ctx: &Pkcs11, uri: &Pkcs11Uri) -> Result<(Slot, String), Pkcs11Error> {
    let u = redact(&uri.to_string());
    let slots = ctx.get_slots_with_token().map_err(|e| Pkcs11Error::Call {
        uri: u.clone(),
        call: call_name(&e, "C_GetSlotList"),
        rv: rv_name(&e),
    })?;
    let mut present = Vec::new();
    for slot in slots {
        if uri.slot_id.is_some_and(|id| id != slot.id()) {
            continue;
        }
        let info = match ctx.get_token_info(slot) {
            Ok(i) => i,
            Err(e) => {
                present.push(format!("slot {}: {}", slot.id(), rv_name(&e)));
                continue;
            }
        };
        let label = info.label().trim_end().to_string();
        present.push(format!("{:?}", escape(&label)));
        let eq = |want: &Option<String>, have: &str| {
            want.as_ref()
                .is_none_or(|w| w.trim_end() == have.trim_end())
        };
        if eq(&uri.token, &label)
            && eq(&uri.serial, info.serial_number())
            && eq(&uri.manufacturer, info.manufacturer_id())
            && eq(&uri.model, info.model())
        {
            return Ok((slot, label));
        }
    }
    Err(Pkcs11Error::NoToken {
        uri: u,
        present: if present.is_empty() {
            "none".into()
        } else {
            present.join(", ")
        },
    })
}

/// A token whose user PIN it refused (CKR_PIN_INCORRECT or CKR_PIN_LOCKED): no login is
/// tried again with the same PIN.
struct Refusal {
    /// SHA-256 of the process's salt and the refused PIN (the PIN itself is not kept).
    digest: [u8; 32],
    /// The token label, for messages and metrics.
    label: String,
    /// `CKR_PIN_INCORRECT` or `CKR_PIN_LOCKED`.
    rv: &'static str,
}

/// (module path, token serial and label) → the refusal.
type Refusals = Mutex<HashMap<(PathBuf, String), Refusal>>;

static REFUSALS: OnceLock<Refusals> = OnceLock::new();
static LOGINS_OK: AtomicU64 = AtomicU64::new(0);
static LOGINS_REFUSED: AtomicU64 = AtomicU64::new(0);
static LOGINS_SKIPPED: AtomicU64 = AtomicU64::new(0);

fn refusals() -> std::sync::MutexGuard<'static, HashMap<(PathBuf, String), Refusal>> {
    REFUSALS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

/// The salted SHA-256 of a PIN: compares PINs without keeping one. The salt is random per
/// process, so the digest is no PIN table's entry.
fn pin_digest(pin: &AuthPin) -> [u8; 32] {
    use secrecy::ExposeSecret;
    static SALT: OnceLock<[u8; 16]> = OnceLock::new();
    let salt = SALT.get_or_init(|| {
        let mut s = [0u8; 16];
        // A failed fill leaves a zero salt: the digest still compares PINs.
        let _ = aws_lc_rs::rand::fill(&mut s);
        s
    });
    let mut ctx = aws_lc_rs::digest::Context::new(&aws_lc_rs::digest::SHA256);
    ctx.update(salt);
    ctx.update(pin.expose_secret().as_bytes());
    let mut out = [0u8; 32];
    out.copy_from_slice(ctx.finish().as_ref());
    out
}

/// A token whose PIN is refused, as [`login_stats`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinRefusal {
    /// The module.
    pub module: PathBuf,
    /// The token label (control characters escaped).
    pub token: String,
    /// `CKR_PIN_INCORRECT` or `CKR_PIN_LOCKED`.
    pub rv: &'static str,
}

/// The process's login record: which tokens refused their PIN (no login is tried again on
/// them until the PIN given changes), and how many logins succeeded, were refused by a
/// token, or were not tried because the PIN was one a token had refused. For metrics.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoginStats {
    /// Tokens whose PIN is refused now.
    pub refused: Vec<PinRefusal>,
    /// C_Login calls that succeeded (or found the user logged in).
    pub ok: u64,
    /// C_Login calls a token answered CKR_PIN_INCORRECT or CKR_PIN_LOCKED.
    pub refused_total: u64,
    /// Logins not tried: the PIN was the one the token refused.
    pub skipped: u64,
}

/// See [`LoginStats`].
pub fn login_stats() -> LoginStats {
    use std::sync::atomic::Ordering::Relaxed;
    let mut refused: Vec<PinRefusal> = refusals()
        .iter()
        .map(|((module, _), r)| PinRefusal {
            module: module.clone(),
            token: r.label.clone(),
            rv: r.rv,
        })
        .collect();
    refused.sort_by(|a, b| (&a.module, &a.token).cmp(&(&b.module, &b.token)));
    LoginStats {
        refused,
        ok: LOGINS_OK.load(Relaxed),
        refused_total: LOGINS_REFUSED.load(Relaxed),
        skipped: LOGINS_SKIPPED.load(Relaxed),
    }
}

/// Log in as the user on `session`. CKR_USER_ALREADY_LOGGED_IN is success (the login is
/// per application); CKR_PIN_INCORRECT and CKR_PIN_LOCKED are final: the token is
/// remembered with (a digest of) the refused PIN, and no login is tried again with that
/// PIN, whatever key, reload or command of this process asks; a different PIN (the
/// operator changed the URI, the PIN file or `TLSKIT_PKCS11_PIN`) is tried once.
pub(crate) fn login(
    ctx: &Pkcs11,
    slot: Slot,
    session: &Session,
    module: &Path,
    uri: &Pkcs11Uri,
    label: &str,
    pin: Option<&AuthPin>,
) -> Result<(), Pkcs11Error> {
    use std::sync::atomic::Ordering::Relaxed;
    let u = redact(&uri.to_string());
    let info = ctx.get_token_info(slot).map_err(|e| Pkcs11Error::Call {
        uri: u.clone(),
        call: call_name(&e, "C_GetTokenInfo"),
        rv: rv_name(&e),
    })?;
    if !info.login_required() {
        return Ok(());
    }
    let token = escape(label);
    if info.user_pin_locked() {
        return Err(Pkcs11Error::PinLocked {
            uri: u,
            token,
            reason: "the user PIN is locked (CKF_USER_PIN_LOCKED); unlock it with the security officer PIN".into(),
        });
    }
    if info.user_pin_final_try() {
        return Err(Pkcs11Error::PinLocked {
            uri: u,
            token,
            reason: "one more wrong PIN locks this token (CKF_USER_PIN_FINAL_TRY); not trying; log in once with the vendor's tool to reset the counter".into(),
        });
    }
    let Some(pin) = pin else {
        return Err(Pkcs11Error::NoPin { uri: u, token });
    };
    let who = (
        module.to_path_buf(),
        format!("{}\0{label}", info.serial_number().trim_end()),
    );
    let digest = pin_digest(pin);
    if let Some(r) = refusals().get(&who).filter(|r| r.digest == digest) {
        LOGINS_SKIPPED.fetch_add(1, Relaxed);
        return Err(Pkcs11Error::PinRefused {
            uri: u,
            token,
            rv: r.rv.to_string(),
        });
    }
    let refused = |rv: &'static str| {
        LOGINS_REFUSED.fetch_add(1, Relaxed);
        refusals().insert(
            who.clone(),
            Refusal {
                digest,
                label: token.clone(),
                rv,
            },
        );
    };
    match session.login(UserType::User, Some(pin)) {
        Ok(()) | Err(CkError::Pkcs11(RvError::UserAlreadyLoggedIn, _)) => {
            LOGINS_OK.fetch_add(1, Relaxed);
            refusals().remove(&who);
            Ok(())
        }
        Err(CkError::Pkcs11(RvError::PinIncorrect, _)) => {
            refused("CKR_PIN_INCORRECT");
            Err(Pkcs11Error::PinIncorrect { uri: u, token })
        }
        Err(CkError::Pkcs11(RvError::PinLocked, _)) => {
            refused("CKR_PIN_LOCKED");
            Err(Pkcs11Error::PinLocked {
                uri: u,
                token,
                reason: "the user PIN is locked (CKR_PIN_LOCKED)".into(),
            })
        }
        Err(e) => Err(Pkcs11Error::Call {
            uri: u,
            call: call_name(&e, "C_Login"),
            rv: rv_name(&e),
        }),
    }
}

/// What kind of key a token holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyKind {
    /// ECDSA on P-256.
    EcP256,
    /// ECDSA on P-384.
    EcP384,
    /// RSA with this many modulus bits.
    Rsa(u32),
}

impl std::fmt::Display for KeyKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeyKind::EcP256 => f.write_str("ECDSA P-256"),
            KeyKind::EcP384 => f.write_str("ECDSA P-384"),
            KeyKind::Rsa(b) => write!(f, "RSA {b}"),
        }
    }
}

/// Whether an error means the session or the token is gone (re-open and try again).
fn is_gone(e: &CkError) -> bool {
    matches!(
        e,
        CkError::Pkcs11(
            RvError::SessionHandleInvalid
                | RvError::SessionClosed
                | RvError::DeviceRemoved
                | RvError::TokenNotPresent
                | RvError::TokenNotRecognized
                | RvError::DeviceError
                | RvError::UserNotLoggedIn
                | RvError::KeyHandleInvalid
                | RvError::ObjectHandleInvalid
                | RvError::SlotIdInvalid
                | RvError::CryptokiNotInitialized,
            _
        )
    )
}

struct PoolState {
    /// The module context; dropped (with every session) when the token cannot be found
    /// again, so that the module is finalised and initialised afresh at the next attempt
    /// (some modules, SoftHSM2 among them, only look for tokens at C_Initialize).
    ctx: Option<Pkcs11>,
    idle: Vec<Session>,
    /// Sessions of this generation, idle or lent out.
    open: usize,
    generation: u64,
    slot: Slot,
    handle: ObjectHandle,
    /// Set when the token went away; the next checkout re-opens it.
    broken: Option<String>,
    last_reopen: Option<Instant>,
    /// The last signature or check that succeeded.
    last_ok: Option<Instant>,
    /// A wrong PIN: never tried again.
    dead: Option<String>,
}

/// A private key on a token, with its pool of logged-in sessions. Cheap to share
/// (`Arc<TokenKey>`); every method takes `&self` and may be called from many threads.
pub struct TokenKey {
    uri: Pkcs11Uri,
    shown: String,
    module_path: PathBuf,
    pin: Option<AuthPin>,
    label: Mutex<String>,
    kind: KeyKind,
    spki: Vec<u8>,
    /// RSAPublicKey or the EC point: rcgen's `der_bytes`.
    public_raw: Vec<u8>,
    mechanisms: Vec<MechanismType>,
    max: usize,
    state: Mutex<PoolState>,
    freed: Condvar,
}

impl std::fmt::Debug for TokenKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenKey")
            .field("uri", &self.shown)
            .field("kind", &self.kind)
            .field("sessions", &self.max)
            .finish()
    }
}

/// The pool size: `TLSKIT_PKCS11_SESSIONS` (1 to 64), default 4.
fn pool_size() -> usize {
    std::env::var(SESSIONS_ENV)
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|n| (1..=64).contains(n))
        .unwrap_or(4)
}

/// Find the one private key the URI names (after login). Returns its handle.
fn find_key(session: &Session, uri: &Pkcs11Uri, shown: &str) -> Result<ObjectHandle, Pkcs11Error> {
    if let Some(t) = uri.object_type {
        if t != crate::ObjectType::Private {
            return Err(Pkcs11Error::Object {
                uri: shown.to_string(),
                reason: "names a non-private object (type=private is needed to sign)".into(),
            });
        }
    }
    let mut tmpl = vec![Attribute::Class(ObjectClass::PRIVATE_KEY)];
    if let Some(l) = &uri.object {
        tmpl.push(Attribute::Label(l.as_bytes().to_vec()));
    }
    if let Some(id) = &uri.id {
        tmpl.push(Attribute::Id(id.clone()));
    }
    let found = session.find_objects(&tmpl).map_err(|e| Pkcs11Error::Call {
        uri: shown.to_string(),
        call: call_name(&e, "C_FindObjects"),
        rv: rv_name(&e),
    })?;
    match found.len() {
        1 => Ok(found[0]),
        0 => Err(Pkcs11Error::Object {
            uri: shown.to_string(),
            reason: "no private key object matches on the token (see `tlskit pkcs11 list`)".into(),
        }),
        n => Err(Pkcs11Error::Object {
            uri: shown.to_string(),
            reason: format!("{n} private keys match; add object= or id= to name one"),
        }),
    }
}

fn attr_bytes(attrs: &[Attribute], want: AttributeType) -> Option<Vec<u8>> {
    attrs.iter().find_map(|a| match (a, want) {
        (Attribute::EcParams(v), AttributeType::EcParams) => Some(v.clone()),
        (Attribute::EcPoint(v), AttributeType::EcPoint) => Some(v.clone()),
        (Attribute::Modulus(v), AttributeType::Modulus) => Some(v.clone()),
        (Attribute::PublicExponent(v), AttributeType::PublicExponent) => Some(v.clone()),
        (Attribute::Id(v), AttributeType::Id) => Some(v.clone()),
        (Attribute::Label(v), AttributeType::Label) => Some(v.clone()),
        _ => None,
    })
}

/// Read one attribute, tolerating tokens that refuse it (sensitive or absent).
pub(crate) fn get_attr(s: &Session, h: ObjectHandle, t: AttributeType) -> Option<Vec<u8>> {
    s.get_attributes(h, &[t])
        .ok()
        .and_then(|a| attr_bytes(&a, t))
}

pub(crate) fn key_type(s: &Session, h: ObjectHandle) -> Option<KeyType> {
    s.get_attributes(h, &[AttributeType::KeyType])
        .ok()?
        .into_iter()
        .find_map(|a| match a {
            Attribute::KeyType(k) => Some(k),
            _ => None,
        })
}

/// The public key of a private key object: (kind, SPKI DER, rcgen raw public key). EC
/// points live on the public key object (same CKA_ID, else same label).
pub(crate) fn public_of(
    s: &Session,
    h: ObjectHandle,
    shown: &str,
) -> Result<(KeyKind, Vec<u8>, Vec<u8>), Pkcs11Error> {
    let unsupported = |reason: &str| Pkcs11Error::Unsupported {
        uri: shown.to_string(),
        reason: reason.to_string(),
    };
    let kt = key_type(s, h).ok_or_else(|| unsupported("the key's CKA_KEY_TYPE cannot be read"))?;
    let public_object = || -> Option<ObjectHandle> {
        for t in [AttributeType::Id, AttributeType::Label] {
            if let Some(v) = get_attr(s, h, t).filter(|v| !v.is_empty()) {
                let a = match t {
                    AttributeType::Id => Attribute::Id(v),
                    _ => Attribute::Label(v),
                };
                if let Ok(found) = s.find_objects(&[Attribute::Class(ObjectClass::PUBLIC_KEY), a]) {
                    if let Some(p) = found.first() {
                        return Some(*p);
                    }
                }
            }
        }
        None
    };
    if kt == KeyType::EC {
        let params = get_attr(s, h, AttributeType::EcParams)
            .or_else(|| public_object().and_then(|p| get_attr(s, p, AttributeType::EcParams)))
            .ok_or_else(|| unsupported("the EC key's CKA_EC_PARAMS cannot be read"))?;
        let (kind, field) = if params == spki::P256_PARAMS {
            (KeyKind::EcP256, 32)
        } else if params == spki::P384_PARAMS {
            (KeyKind::EcP384, 48)
        } else {
            return Err(unsupported(
                "EC key on a curve other than P-256 or P-384 (not usable for TLS here)",
            ));
        };
        let point = public_object()
            .and_then(|p| get_attr(s, p, AttributeType::EcPoint))
            .or_else(|| get_attr(s, h, AttributeType::EcPoint))
            .and_then(|a| spki::ec_point(&a, field))
            .ok_or_else(|| {
                unsupported("no public key object with the EC point beside the private key (same id or label)")
            })?;
        let spki = spki::ec_spki(&params, &point);
        Ok((kind, spki, point))
    } else if kt == KeyType::RSA {
        let read = |t| {
            get_attr(s, h, t)
                .filter(|v| !v.is_empty())
                .or_else(|| public_object().and_then(|p| get_attr(s, p, t)))
        };
        let n = read(AttributeType::Modulus)
            .ok_or_else(|| unsupported("the RSA key's modulus cannot be read"))?;
        let e = read(AttributeType::PublicExponent)
            .ok_or_else(|| unsupported("the RSA key's public exponent cannot be read"))?;
        let bits = n.iter().skip_while(|b| **b == 0).count() as u32 * 8;
        if bits < 2048 {
            return Err(unsupported("RSA keys under 2048 bits are refused"));
        }
        let raw = spki::rsa_public_key(&n, &e);
        Ok((KeyKind::Rsa(bits), spki::rsa_spki(&raw), raw))
    } else {
        Err(unsupported(
            "the key is neither EC nor RSA (only ECDSA P-256/P-384 and RSA sign here)",
        ))
    }
}

impl TokenKey {
    /// Open the private key a URI names. `module` is the CLI's `--pkcs11-module` (the
    /// URI's `module-path=` wins).
    pub fn open(uri: &Pkcs11Uri, module: Option<&Path>) -> Result<Arc<Self>, Pkcs11Error> {
        let shown = redact(&uri.to_string());
        let path =
            module_path(uri, module).ok_or_else(|| Pkcs11Error::NoModule { uri: shown.clone() })?;
        let ctx = self::module(&path)?;
        let pin = pin(uri)?;
        let (slot, label) = find_slot(&ctx, uri)?;
        let session = ctx.open_ro_session(slot).map_err(|e| Pkcs11Error::Call {
            uri: shown.clone(),
            call: call_name(&e, "C_OpenSession"),
            rv: rv_name(&e),
        })?;
        login(&ctx, slot, &session, &path, uri, &label, pin.as_ref())?;
        let handle = find_key(&session, uri, &shown)?;
        let (kind, spki, public_raw) = public_of(&session, handle, &shown)?;
        let mechanisms = ctx.get_mechanism_list(slot).unwrap_or_default();
        let need = match kind {
            KeyKind::EcP256 | KeyKind::EcP384 => MechanismType::ECDSA,
            KeyKind::Rsa(_) => MechanismType::RSA_PKCS_PSS,
        };
        let key = TokenKey {
            uri: uri.without_pin_value(),
            shown,
            module_path: path,
            pin,
            label: Mutex::new(label),
            kind,
            spki,
            public_raw,
            mechanisms,
            max: pool_size(),
            state: Mutex::new(PoolState {
                ctx: Some(ctx),
                idle: vec![session],
                open: 1,
                generation: 0,
                slot,
                handle,
                broken: None,
                last_reopen: None,
                last_ok: None,
                dead: None,
            }),
            freed: Condvar::new(),
        };
        if matches!(kind, KeyKind::EcP256 | KeyKind::EcP384) && !key.supports(need) {
            return Err(Pkcs11Error::Unsupported {
                uri: key.shown.clone(),
                reason: "the token does not offer CKM_ECDSA".into(),
            });
        }
        Ok(Arc::new(key))
    }

    /// The key type.
    pub fn kind(&self) -> KeyKind {
        self.kind
    }

    /// The public key as an X.509 SubjectPublicKeyInfo (DER).
    pub fn spki(&self) -> &[u8] {
        &self.spki
    }

    pub(crate) fn public_raw(&self) -> &[u8] {
        &self.public_raw
    }

    /// The URI (without any pin-value), as given.
    pub fn uri(&self) -> &Pkcs11Uri {
        &self.uri
    }

    /// The URI for messages (PIN redacted).
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// How many sessions the pool may hold.
    pub fn pool_size(&self) -> usize {
        self.max
    }

    pub(crate) fn supports(&self, m: MechanismType) -> bool {
        self.mechanisms.contains(&m)
    }

    /// Re-open the token after it went away: find it again, log in again, find the key
    /// again (handles do not survive). Called with the pool locked.
    fn reopen(&self, st: &mut PoolState) -> Result<(), Pkcs11Error> {
        let ctx = match &st.ctx {
            Some(c) => c.clone(),
            None => {
                let c = module(&self.module_path)?;
                st.ctx = Some(c.clone());
                c
            }
        };
        let (slot, label) = find_slot(&ctx, &self.uri)?;
        let session = ctx
            .open_ro_session(slot)
            .map_err(|e| Pkcs11Error::TokenGone {
                uri: self.shown.clone(),
                reason: format!("{}: {}", call_name(&e, "C_OpenSession"), rv_name(&e)),
            })?;
        login(
            &ctx,
            slot,
            &session,
            &self.module_path,
            &self.uri,
            &label,
            self.pin.as_ref(),
        )?;
        let handle = find_key(&session, &self.uri, &self.shown)?;
        let (_, spki, _) = public_of(&session, handle, &self.shown)?;
        if spki != self.spki {
            return Err(Pkcs11Error::Object {
                uri: self.shown.clone(),
                reason: "after re-opening the token, the URI names a different key".into(),
            });
        }
        *self.label.lock().unwrap_or_else(|p| p.into_inner()) = label;
        st.idle = vec![session];
        st.open = 1;
        st.generation += 1;
        st.slot = slot;
        st.handle = handle;
        st.broken = None;
        Ok(())
    }

    fn checkout(&self) -> Result<(Session, u64, ObjectHandle), Pkcs11Error> {
        let deadline = Instant::now() + CHECKOUT_WAIT;
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(d) = &st.dead {
                return Err(Pkcs11Error::TokenGone {
                    uri: self.shown.clone(),
                    reason: d.clone(),
                });
            }
            if let Some(why) = st.broken.clone() {
                if st
                    .last_reopen
                    .is_some_and(|t| t.elapsed() < REOPEN_INTERVAL)
                {
                    return Err(Pkcs11Error::TokenGone {
                        uri: self.shown.clone(),
                        reason: why,
                    });
                }
                st.last_reopen = Some(Instant::now());
                if let Err(e) = self.reopen(&mut st) {
                    if matches!(e, Pkcs11Error::NoToken { .. }) {
                        // Let go of the module: once every key on it has, it is
                        // finalised, and the next attempt initialises it afresh.
                        st.idle.clear();
                        st.open = 0;
                        st.ctx = None;
                        forget_module(&self.module_path);
                    }
                    if matches!(
                        e,
                        Pkcs11Error::PinIncorrect { .. }
                            | Pkcs11Error::PinLocked { .. }
                            | Pkcs11Error::PinRefused { .. }
                    ) {
                        st.dead = Some(e.to_string());
                    } else {
                        // The latest reason only (a token gone for hours must not grow
                        // the message).
                        let _ = why;
                        st.broken = Some(format!("re-opening failed: {e}"));
                    }
                    return Err(e);
                }
            }
            if let Some(s) = st.idle.pop() {
                return Ok((s, st.generation, st.handle));
            }
            let Some(ctx) = st.ctx.clone() else {
                st.broken = Some("the module was released".into());
                continue;
            };
            if st.open < self.max {
                match ctx.open_ro_session(st.slot) {
                    Ok(s) => {
                        st.open += 1;
                        return Ok((s, st.generation, st.handle));
                    }
                    Err(e) if is_gone(&e) => {
                        st.broken = Some(rv_name(&e));
                        continue;
                    }
                    // Out of sessions on this token: wait for one of ours.
                    Err(_) if st.open > 0 => {}
                    Err(e) => {
                        return Err(Pkcs11Error::Call {
                            uri: self.shown.clone(),
                            call: call_name(&e, "C_OpenSession"),
                            rv: rv_name(&e),
                        })
                    }
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Pkcs11Error::TokenGone {
                    uri: self.shown.clone(),
                    reason: format!("no session free after {CHECKOUT_WAIT:?}"),
                });
            }
            st = self
                .freed
                .wait_timeout(st, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    fn checkin(&self, s: Session, generation: u64, ok: bool) {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if st.generation == generation && st.broken.is_none() {
            if ok {
                st.last_ok = Some(Instant::now());
            }
            st.idle.push(s);
        } else {
            drop(s);
        }
        drop(st);
        self.freed.notify_one();
    }

    /// A call found the token gone: the pool is marked broken (re-opened at the next
    /// checkout); the first time the caller retries, the second time this is the error.
    fn gone(&self, generation: u64, why: String, retried: &mut bool) -> Result<(), Pkcs11Error> {
        self.mark_broken(generation, why.clone());
        if *retried {
            return Err(Pkcs11Error::TokenGone {
                uri: self.shown.clone(),
                reason: why,
            });
        }
        *retried = true;
        Ok(())
    }

    fn mark_broken(&self, generation: u64, why: String) {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if st.generation == generation && st.broken.is_none() {
            st.broken = Some(why);
            st.idle.clear();
            st.open = 0;
            // Re-open at the next signature, without waiting.
            st.last_reopen = None;
        }
        drop(st);
        self.freed.notify_all();
    }

    /// Whether the key can sign now: takes a session, asks the token about it
    /// (C_GetSessionInfo and C_GetTokenInfo, no signature) and re-opens the token once if it went away.
    /// A signature or check that succeeded less than 250 ms ago answers without asking. A
    /// server calls this before choosing the key, so that an unavailable token fails the
    /// handshake with an alert rather than a dropped connection.
    pub fn check(&self) -> Result<(), Pkcs11Error> {
        {
            let st = self.state.lock().unwrap_or_else(|p| p.into_inner());
            if st.broken.is_none()
                && st.dead.is_none()
                && st.last_ok.is_some_and(|t| t.elapsed() < CHECK_FRESH)
            {
                return Ok(());
            }
        }
        let mut retried = false;
        loop {
            let (session, generation, _) = self.checkout()?;
            let (slot, ctx) = {
                let st = self.state.lock().unwrap_or_else(|p| p.into_inner());
                (st.slot, st.ctx.clone())
            };
            // The session, then the token: some tokens (SoftHSM2) keep a session's
            // handle valid after the token went away and only fail the token query.
            match session.get_session_info().and_then(|_| match &ctx {
                Some(c) => c.get_token_info(slot),
                None => Err(CkError::Pkcs11(
                    RvError::CryptokiNotInitialized,
                    cryptoki::context::Function::GetTokenInfo,
                )),
            }) {
                Ok(_) => {
                    self.checkin(session, generation, true);
                    return Ok(());
                }
                Err(e) => {
                    drop(session);
                    let why = format!("{}: {}", call_name(&e, "C_GetSessionInfo"), rv_name(&e));
                    self.gone(generation, why, &mut retried)?;
                }
            }
        }
    }

    /// Sign `data` with `mech` on a pooled session. A token that went away is re-opened
    /// once before giving up.
    pub(crate) fn sign_raw(
        &self,
        mech: &Mechanism<'_>,
        data: &[u8],
    ) -> Result<Vec<u8>, Pkcs11Error> {
        let mut retried = false;
        loop {
            let (session, generation, handle) = self.checkout()?;
            match session.sign(mech, handle, data) {
                Ok(sig) => {
                    self.checkin(session, generation, true);
                    return Ok(sig);
                }
                Err(e) if is_gone(&e) => {
                    drop(session);
                    let why = format!("{}: {}", call_name(&e, "C_Sign"), rv_name(&e));
                    self.gone(generation, why, &mut retried)?;
                }
                Err(e) => {
                    self.checkin(session, generation, false);
                    return Err(Pkcs11Error::Call {
                        uri: self.shown.clone(),
                        call: call_name(&e, "C_Sign"),
                        rv: rv_name(&e),
                    });
                }
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::error::Error as _;

    use super::*;

    #[test]
    fn a_missing_pin_file_keeps_the_io_error() {
        let t = std::env::temp_dir().join(format!("tlskit-no-pin-{}", std::process::id()));
        let uri =
            Pkcs11Uri::parse(&format!("pkcs11:token=t?pin-source=file:{}", t.display())).unwrap();
        let e = pin(&uri).unwrap_err();
        assert!(matches!(e, Pkcs11Error::PinFileIo { .. }), "{e:?}");
        let io = e
            .source()
            .unwrap()
            .downcast_ref::<std::io::Error>()
            .unwrap();
        assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
        assert_eq!(
            e.to_string(),
            format!("{}: cannot read the PIN file: {io}", t.display())
        );
    }

    #[test]
    fn a_missing_module_keeps_the_io_error() {
        let p = std::env::temp_dir().join(format!("tlskit-no-module-{}.so", std::process::id()));
        let Err(e) = module(&p) else {
            panic!("a module that does not exist loaded")
        };
        assert!(matches!(e, Pkcs11Error::ModuleIo { .. }), "{e:?}");
        let io = e
            .source()
            .unwrap()
            .downcast_ref::<std::io::Error>()
            .unwrap();
        assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
        assert_eq!(
            e.to_string(),
            format!("{}: cannot load the PKCS#11 module: {io}", p.display())
        );
    }
}
