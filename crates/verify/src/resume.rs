//! Resumption bound to the store's anchor set.
//!
//! rustls does not verify certificates again when a session is resumed, so a session
//! established under one trust store could be resumed after that store dropped the CA
//! that vouched for the peer. These wrappers tie every resumption secret to the anchor
//! set it was issued under ([`StoreHandle::anchor_set_generation`]: a number that moves
//! when a reload installs different anchors, and stays when a reload finds exactly the
//! same anchors), so a reload that changes the anchors invalidates them all, and a reload
//! of unchanged sources (SIGHUP, a file rewritten with the same certificates) keeps them:
//!
//! - [`GenerationTickets`] (server, `ServerConfig::ticketer`): the number is sealed
//!   inside the encrypted ticket; a ticket from another anchor set does not decrypt.
//! - [`GenerationSessionCache`] (server, `ServerConfig::session_storage`): keys are
//!   prefixed with the number, so old sessions are never found (they age out of the
//!   inner cache).
//! - [`GenerationClientSessions`] (client, `ClientConfig::resumption`): the inner store
//!   is replaced by a fresh one when the number changes.
//!
//! Why a number compared at reload rather than a digest of the anchors: computing a
//! digest of a 100,000-anchor snapshot at start would read every anchor of a file that
//! is otherwise only mapped; the comparison costs one fingerprint lookup per anchor on
//! the reloading thread, and only when a reload happens.
//!
//! Known limit: a session whose certificate was verified a moment before a reload and
//! whose ticket is issued (or stored) a moment after it carries the new generation.

use std::fmt;
use std::sync::{Arc, Mutex};

use rustls::client::ClientSessionStore;
use rustls::client::{Tls12ClientSessionValue, Tls13ClientSessionValue};
use rustls::server::{ProducesTickets, StoresServerSessions};
use rustls::NamedGroup;
use rustls_pki_types::ServerName;
use tlskit_store::StoreHandle;

/// Server tickets sealed with the store's anchor-set generation.
pub struct GenerationTickets {
    inner: Arc<dyn ProducesTickets>,
    handle: Arc<StoreHandle>,
}

impl GenerationTickets {
    /// Wrap a ticketer (e.g. `rustls::crypto::aws_lc_rs::Ticketer::new()`).
    pub fn new(inner: Arc<dyn ProducesTickets>, handle: Arc<StoreHandle>) -> Self {
        Self { inner, handle }
    }
}

impl fmt::Debug for GenerationTickets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GenerationTickets")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl ProducesTickets for GenerationTickets {
    fn enabled(&self) -> bool {
        self.inner.enabled()
    }

    fn lifetime(&self) -> u32 {
        self.inner.lifetime()
    }

    fn encrypt(&self, plain: &[u8]) -> Option<Vec<u8>> {
        let mut sealed = Vec::with_capacity(8 + plain.len());
        sealed.extend_from_slice(&self.handle.anchor_set_generation().to_be_bytes());
        sealed.extend_from_slice(plain);
        self.inner.encrypt(&sealed)
    }

    fn decrypt(&self, cipher: &[u8]) -> Option<Vec<u8>> {
        let plain = self.inner.decrypt(cipher)?;
        let (gen, rest) = plain.split_first_chunk::<8>()?;
        (u64::from_be_bytes(*gen) == self.handle.anchor_set_generation()).then(|| rest.to_vec())
    }
}

/// A server session cache whose entries belong to one anchor set.
pub struct GenerationSessionCache {
    inner: Arc<dyn StoresServerSessions>,
    handle: Arc<StoreHandle>,
}

impl GenerationSessionCache {
    /// Wrap a session store (e.g. `rustls::server::ServerSessionMemoryCache::new(256)`).
    pub fn new(inner: Arc<dyn StoresServerSessions>, handle: Arc<StoreHandle>) -> Self {
        Self { inner, handle }
    }

    fn key(&self, key: &[u8]) -> Vec<u8> {
        let mut k = Vec::with_capacity(8 + key.len());
        k.extend_from_slice(&self.handle.anchor_set_generation().to_be_bytes());
        k.extend_from_slice(key);
        k
    }
}

impl fmt::Debug for GenerationSessionCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GenerationSessionCache")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl StoresServerSessions for GenerationSessionCache {
    fn put(&self, key: Vec<u8>, value: Vec<u8>) -> bool {
        self.inner.put(self.key(&key), value)
    }

    fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.inner.get(&self.key(key))
    }

    fn take(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.inner.take(&self.key(key))
    }

    fn can_cache(&self) -> bool {
        self.inner.can_cache()
    }
}

type MakeStore = dyn Fn() -> Arc<dyn ClientSessionStore> + Send + Sync;

/// A client session store that forgets everything when the store's anchor set changes.
pub struct GenerationClientSessions {
    handle: Arc<StoreHandle>,
    make: Box<MakeStore>,
    state: Mutex<(u64, Arc<dyn ClientSessionStore>)>,
}

impl GenerationClientSessions {
    /// `make` builds an empty inner store, e.g.
    /// `|| Arc::new(rustls::client::ClientSessionMemoryCache::new(256))`.
    pub fn new(
        handle: Arc<StoreHandle>,
        make: impl Fn() -> Arc<dyn ClientSessionStore> + Send + Sync + 'static,
    ) -> Self {
        let first = make();
        let gen = handle.anchor_set_generation();
        Self {
            handle,
            make: Box::new(make),
            state: Mutex::new((gen, first)),
        }
    }

    fn inner(&self) -> Arc<dyn ClientSessionStore> {
        let gen = self.handle.anchor_set_generation();
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if s.0 != gen {
            *s = (gen, (self.make)());
        }
        s.1.clone()
    }
}

impl fmt::Debug for GenerationClientSessions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GenerationClientSessions")
            .finish_non_exhaustive()
    }
}

impl ClientSessionStore for GenerationClientSessions {
    fn set_kx_hint(&self, server_name: ServerName<'static>, group: NamedGroup) {
        self.inner().set_kx_hint(server_name, group)
    }

    fn kx_hint(&self, server_name: &ServerName<'_>) -> Option<NamedGroup> {
        self.inner().kx_hint(server_name)
    }

    fn set_tls12_session(&self, server_name: ServerName<'static>, value: Tls12ClientSessionValue) {
        self.inner().set_tls12_session(server_name, value)
    }

    fn tls12_session(&self, server_name: &ServerName<'_>) -> Option<Tls12ClientSessionValue> {
        self.inner().tls12_session(server_name)
    }

    fn remove_tls12_session(&self, server_name: &ServerName<'static>) {
        self.inner().remove_tls12_session(server_name)
    }

    fn insert_tls13_ticket(
        &self,
        server_name: ServerName<'static>,
        value: Tls13ClientSessionValue,
    ) {
        self.inner().insert_tls13_ticket(server_name, value)
    }

    fn take_tls13_ticket(
        &self,
        server_name: &ServerName<'static>,
    ) -> Option<Tls13ClientSessionValue> {
        self.inner().take_tls13_ticket(server_name)
    }
}
