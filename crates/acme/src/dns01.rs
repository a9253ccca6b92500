//! DNS-01 (RFC 8555 §8.4): the TXT records `_acme-challenge.NAME` written through a
//! `tlskit_dns::DnsProvider` (RFC 2136 with TSIG, or the user's hook), checked on every
//! authoritative server (or `--acme-dns-resolver`) before the CA is told to validate, and
//! removed afterwards, also after a failure. Every record is remembered in the ACME
//! storage before it is added and forgotten once removed, so that records a crash left
//! behind are removed at the next start or order ([`Dns01::remove_leftovers`]). The caller
//! holds the storage's issuance lock while records are written: in a fleet
//! (`--shared-state`) one node writes them.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tlskit_dns::{DnsProvider, Exec, Rfc2136, TsigKey};
use tlskit_tls::log::{self, Level};

use crate::error::{clean, AcmeError};
use crate::settings::{AcmeSettings, ChallengeKind};
use crate::storage::{cert_name, AcmeStorage, DnsRecord};

/// Poll interval of the propagation check.
const POLL: Duration = Duration::from_secs(1);

/// DNS-01 for one certificate: its provider, where records are checked, its bookkeeping.
pub(crate) struct Dns01 {
    provider: Arc<dyn DnsProvider>,
    resolver: Option<SocketAddr>,
    propagation: Duration,
    step: Duration,
    storage: Arc<dyn AcmeStorage>,
    /// The storage name of the certificate (its first domain).
    name: String,
}

impl std::fmt::Debug for Dns01 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dns01")
            .field("provider", &self.provider.describe())
            .finish_non_exhaustive()
    }
}

impl Dns01 {
    /// DNS-01 for `settings` when its challenge is DNS-01 (`None` otherwise). The TSIG key
    /// file is read now: a bad one is an error at start.
    pub(crate) fn from_settings(
        settings: &AcmeSettings,
        storage: Arc<dyn AcmeStorage>,
    ) -> Result<Option<Arc<Self>>, AcmeError> {
        if settings.challenge != ChallengeKind::Dns01 {
            return Ok(None);
        }
        let d = &settings.dns;
        let provider: Arc<dyn DnsProvider> = match (&d.update, &d.exec) {
            (Some(server), None) => {
                let key = d.tsig_key.as_deref().map(TsigKey::from_file).transpose()?;
                Arc::new(Rfc2136::new(*server, key, d.ttl))
            }
            (None, Some(program)) => Arc::new(Exec::new(program)),
            _ => {
                // AcmeSettings::check refuses both and neither.
                return Err(AcmeError::Config(
                    "dns-01 needs exactly one of --acme-dns-update and --acme-dns-exec".into(),
                ));
            }
        };
        Ok(Some(Arc::new(Self::with_provider(
            settings, provider, storage,
        ))))
    }

    /// DNS-01 through `provider` (tests: a fake one).
    pub(crate) fn with_provider(
        settings: &AcmeSettings,
        provider: Arc<dyn DnsProvider>,
        storage: Arc<dyn AcmeStorage>,
    ) -> Self {
        Self {
            provider,
            resolver: settings.dns.resolver,
            propagation: settings.dns.propagation_timeout,
            step: settings.dns.step_timeout,
            storage,
            name: cert_name(&settings.domains),
        }
    }

    /// Run blocking DNS or storage work off the runtime's workers.
    async fn blocking<T: Send + 'static>(
        f: impl FnOnce() -> Result<T, AcmeError> + Send + 'static,
    ) -> Result<T, AcmeError> {
        tokio::task::spawn_blocking(f)
            .await
            .map_err(|e| AcmeError::Config(format!("a DNS-01 task ended: {e}")))?
    }

    fn remember(&self, add: &[DnsRecord], forget: &[DnsRecord]) -> Result<(), AcmeError> {
        let mut list = self.storage.dns_records(&self.name)?;
        list.retain(|r| !forget.contains(r));
        for r in add {
            if !list.contains(r) {
                list.push(r.clone());
            }
        }
        // What storage reads back is at most MAX_DNS_RECORDS: refuse to write more (a
        // longer list would be refused as corrupt at the next read, and every order after).
        if list.len() > crate::storage::MAX_DNS_RECORDS {
            return Err(AcmeError::Config(format!(
                "{} DNS-01 records are already waiting to be removed (at most {} are \
                 remembered): their removal keeps failing (event acme_dns_cleanup_failed \
                 says why); fix the DNS provider before ordering again",
                list.len() - add.len(),
                crate::storage::MAX_DNS_RECORDS
            )));
        }
        self.storage.set_dns_records(&self.name, &list)
    }

    /// Add every record (each remembered first), then wait until every server that will
    /// be asked answers with all of them.
    pub(crate) async fn present(self: &Arc<Self>, records: &[DnsRecord]) -> Result<(), AcmeError> {
        let me = self.clone();
        let recs = records.to_vec();
        Self::blocking(move || {
            for r in &recs {
                me.remember(std::slice::from_ref(r), &[])?;
                me.provider
                    .add_txt(&r.name, &r.value, Instant::now() + me.step)?;
                log::event(
                    Level::Info,
                    "acme_dns_record_added",
                    &[
                        ("record", &clean(&r.name)),
                        ("value", &clean(&r.value)),
                        ("by", &clean(&me.provider.describe())),
                    ],
                );
            }
            me.wait(&recs)
        })
        .await
    }

    /// The propagation check: per record name, every server must answer with every value.
    fn wait(&self, records: &[DnsRecord]) -> Result<(), AcmeError> {
        let t0 = Instant::now();
        let deadline = t0 + self.propagation;
        let mut names: Vec<&str> = records.iter().map(|r| r.name.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        for name in names {
            let values: Vec<String> = records
                .iter()
                .filter(|r| r.name == name)
                .map(|r| r.value.clone())
                .collect();
            let servers = tlskit_dns::propagation_servers(
                name,
                self.resolver,
                self.provider.primary(),
                deadline,
            )?;
            let shown: Vec<String> = servers.iter().map(ToString::to_string).collect();
            tlskit_dns::wait_for_txt(&servers, name, &values, POLL, deadline, &mut |missing| {
                log::event(
                    Level::Info,
                    "acme_dns_waiting",
                    &[
                        ("record", &clean(name)),
                        ("missing", &clean(&missing.join("; "))),
                    ],
                );
            })?;
            log::event(
                Level::Info,
                "acme_dns_propagated",
                &[
                    ("record", &clean(name)),
                    ("servers", &shown.join(",")),
                    ("ms", &t0.elapsed().as_millis()),
                ],
            );
        }
        Ok(())
    }

    /// Remove `records` (each forgotten once removed); a failure is logged and the record
    /// stays remembered for the next attempt. Returns how many could not be removed.
    pub(crate) async fn cleanup(self: &Arc<Self>, records: &[DnsRecord]) -> usize {
        let me = self.clone();
        let recs = records.to_vec();
        Self::blocking(move || Ok(me.remove(&recs, "acme_dns_record_removed")))
            .await
            .unwrap_or(records.len())
    }

    fn remove(&self, records: &[DnsRecord], event: &str) -> usize {
        let mut failed = 0;
        for r in records {
            let done = self
                .provider
                .remove_txt(&r.name, &r.value, Instant::now() + self.step)
                .map_err(AcmeError::from)
                .and_then(|()| self.remember(&[], std::slice::from_ref(r)));
            match done {
                Ok(()) => log::event(
                    Level::Info,
                    event,
                    &[("record", &clean(&r.name)), ("value", &clean(&r.value))],
                ),
                Err(e) => {
                    failed += 1;
                    log::event(
                        Level::Warn,
                        "acme_dns_cleanup_failed",
                        &[("record", &clean(&r.name)), ("reason", &e)],
                    );
                }
            }
        }
        failed
    }

    /// Remove the records an earlier run added and did not remove (a crash, a failed
    /// removal). The caller holds the issuance lock.
    pub(crate) async fn remove_leftovers(self: &Arc<Self>) -> Result<usize, AcmeError> {
        let me = self.clone();
        Self::blocking(move || {
            let left = me.storage.dns_records(&me.name)?;
            if left.is_empty() {
                return Ok(0);
            }
            let failed = me.remove(&left, "acme_dns_leftover_removed");
            Ok(left.len() - failed)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::FsStorage;
    use std::sync::Mutex;

    /// Records what it is asked; `fail_remove` makes removals fail.
    #[derive(Default)]
    struct Fake {
        zone: Mutex<Vec<(String, String)>>,
        fail_remove: std::sync::atomic::AtomicBool,
    }

    impl DnsProvider for Fake {
        fn add_txt(&self, n: &str, v: &str, _: Instant) -> Result<(), tlskit_dns::DnsError> {
            self.zone
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push((n.into(), v.into()));
            Ok(())
        }
        fn remove_txt(&self, n: &str, v: &str, _: Instant) -> Result<(), tlskit_dns::DnsError> {
            if self.fail_remove.load(std::sync::atomic::Ordering::Relaxed) {
                return Err(tlskit_dns::DnsError::NoServer {
                    name: n.into(),
                    reason: "the fake refuses".into(),
                });
            }
            self.zone
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .retain(|r| r != &(n.to_string(), v.to_string()));
            Ok(())
        }
        fn describe(&self) -> String {
            "fake".into()
        }
    }

    fn rec(n: &str, v: &str) -> DnsRecord {
        DnsRecord::new(n.into(), v.into())
    }

    #[tokio::test]
    async fn records_are_remembered_until_removed_and_leftovers_go_at_next_start() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let storage: Arc<dyn AcmeStorage> =
            Arc::new(FsStorage::open(dir.path()).unwrap_or_else(|e| panic!("{e}")));
        let mut s = AcmeSettings::new(
            "https://ca.test/dir".into(),
            vec!["*.example.test".into(), "example.test".into()],
            dir.path().to_path_buf(),
        );
        s.challenge = ChallengeKind::Dns01;
        let fake = Arc::new(Fake::default());
        let dns = Arc::new(Dns01::with_provider(&s, fake.clone(), storage.clone()));
        let recs = [
            rec("_acme-challenge.example.test.", "one"),
            rec("_acme-challenge.example.test.", "two"),
        ];
        // Added and remembered (the wait itself needs servers: done on one record's
        // bookkeeping here, the propagation check is tested in tlskit-dns).
        let me = dns.clone();
        let r2 = recs.clone();
        tokio::task::spawn_blocking(move || {
            for r in &r2 {
                me.remember(std::slice::from_ref(r), &[])
                    .unwrap_or_else(|e| panic!("{e}"));
                me.provider
                    .add_txt(&r.name, &r.value, Instant::now())
                    .unwrap_or_else(|e| panic!("{e}"));
            }
        })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            storage.dns_records("_.example.test").unwrap_or_default(),
            recs
        );
        let file = dir.path().join("dns/_.example.test.json");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).map(|m| m.permissions().mode() & 0o777);
        assert_eq!(mode.ok(), Some(0o600));
        // A failed removal keeps the record remembered...
        fake.fail_remove
            .store(true, std::sync::atomic::Ordering::Relaxed);
        assert_eq!(dns.cleanup(&recs).await, 2);
        assert_eq!(
            storage
                .dns_records("_.example.test")
                .unwrap_or_default()
                .len(),
            2
        );
        // ...and a new start (a new Dns01 on the same storage) removes it.
        fake.fail_remove
            .store(false, std::sync::atomic::Ordering::Relaxed);
        let again = Arc::new(Dns01::with_provider(&s, fake.clone(), storage.clone()));
        assert_eq!(again.remove_leftovers().await.unwrap_or(99), 2);
        assert!(fake
            .zone
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_empty());
        assert!(storage
            .dns_records("_.example.test")
            .unwrap_or_default()
            .is_empty());
        assert!(!file.exists());
        assert_eq!(again.remove_leftovers().await.unwrap_or(99), 0);
        // Never more remembered than storage reads back: the 1001st record is refused
        // and the 1,000 stay readable.
        let full: Vec<DnsRecord> = (0..crate::storage::MAX_DNS_RECORDS)
            .map(|i| rec("_acme-challenge.example.test.", &format!("v{i}")))
            .collect();
        storage
            .set_dns_records("_.example.test", &full)
            .unwrap_or_else(|e| panic!("{e}"));
        let one_more = [rec("_acme-challenge.example.test.", "extra")];
        let e = dns
            .remember(&one_more, &[])
            .map(|()| "remembered".to_string());
        assert!(
            e.as_ref()
                .is_err_and(|e| e.to_string().contains("1000 DNS-01 records")),
            "{e:?}"
        );
        assert_eq!(
            storage.dns_records("_.example.test").map(|l| l.len()).ok(),
            Some(crate::storage::MAX_DNS_RECORDS)
        );
        // A hostile bookkeeping file is an error, not a panic or a huge list.
        std::fs::write(&file, "[{\"name\":\"\",\"value\":\"x\"}]")
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(storage.dns_records("_.example.test").is_err());
    }

    #[test]
    fn settings_checks_for_dns01_and_wildcards() {
        let mut s = AcmeSettings::new(
            "https://ca.test/dir".into(),
            vec!["*.example.test".into()],
            std::path::PathBuf::from("/tmp/x"),
        );
        let e = s
            .check()
            .map_err(|e| e.to_string())
            .err()
            .unwrap_or_default();
        assert!(
            e.contains("*.example.test: a wildcard name needs --acme-challenge dns-01"),
            "{e}"
        );
        s.challenge = ChallengeKind::Dns01;
        let e = s
            .check()
            .map_err(|e| e.to_string())
            .err()
            .unwrap_or_default();
        assert!(e.contains("dns-01 needs --acme-dns-update"), "{e}");
        s.dns.update =
            Some(crate::settings::dns_server("127.0.0.1:5353").unwrap_or_else(|e| panic!("{e}")));
        assert!(s.check().is_ok());
        s.dns.exec = Some("/bin/true".into());
        assert!(s.check().is_err());
        s.dns.update = None;
        s.dns.tsig_key = Some("k".into());
        assert!(s.check().is_err());
        s.dns.tsig_key = None;
        assert!(s.check().is_ok());
        s.domains.push("192.0.2.1".into());
        let e = s
            .check()
            .map_err(|e| e.to_string())
            .err()
            .unwrap_or_default();
        assert!(
            e.contains("192.0.2.1: an IP address cannot be validated with dns-01"),
            "{e}"
        );
        s.domains.pop();
        s.challenge = ChallengeKind::Http01;
        s.domains = vec!["a.test".into()];
        assert!(s.check().is_err(), "dns flags without dns-01");
        assert_eq!(
            crate::settings::dns_server("::1").ok(),
            Some("[::1]:53".parse().unwrap_or_else(|e| panic!("{e}")))
        );
        assert!(crate::settings::dns_server("ns.example").is_err());
        for bad in ["127.0.0.1:0", "[::1]:0", "0.0.0.0", "[::]:53"] {
            let e = crate::settings::dns_server(bad).map(|a| a.to_string());
            assert!(e.is_err(), "{bad}: {e:?}");
        }
    }
}
