//! The settings model of `serve` through its public API: a config file loaded, flags set
//! on a second `ServeSettings`, merged (flags win) and made into a `ServeConfig`, with
//! every range refusal naming where its value came from and every setting that needs
//! another refused without it. The messages are `serve`'s own (the CLI prints them as
//! they are), so they are compared whole.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tlskit_server::{
    CaHints, ClientAuth, Compression, LogFormat, Mode, Respond, ServeConfig, ServeSettings,
    TlsVersion, ValueError,
};

/// A config file in a fresh directory: (the directory, the file's path).
fn file(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("serve.toml");
    std::fs::write(&path, text).expect("write");
    (dir, path)
}

fn load(path: &Path) -> ServeSettings {
    ServeSettings::load(path).unwrap_or_else(|e| panic!("{e}"))
}

/// Flags that make a complete configuration: a listener and a certificate pair.
fn flags() -> ServeSettings {
    let mut s = ServeSettings::new();
    s.listen = Some(vec!["127.0.0.1:0".into()]);
    s.cert = Some("chain.pem".into());
    s.key = Some("leaf.key".into());
    s
}

fn config(s: ServeSettings) -> ServeConfig {
    s.into_config().unwrap_or_else(|e| panic!("{e}"))
}

fn refusal(s: ServeSettings) -> String {
    match s.into_config() {
        Ok(c) => panic!("accepted: {c:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn defaults_without_any_setting_but_the_required_ones() {
    let c = config(flags());
    assert_eq!(c.listen, vec!["127.0.0.1:0".parse().expect("addr")]);
    assert_eq!(c.mode, Mode::Http);
    assert_eq!(c.handshake_timeout, Duration::from_secs(10));
    assert_eq!(c.idle_timeout, Duration::from_secs(60));
    assert_eq!(c.max_connections, 10_000);
    assert_eq!(c.compress, vec![Compression::Brotli, Compression::Zlib]);
    assert_eq!(c.versions, vec![TlsVersion::Tls13, TlsVersion::Tls12]);
    assert_eq!(c.ca_hints, CaHints::Store);
    assert!(!c.client_auth_optional && !c.proxy_protocol && c.watch);
    assert_eq!(c.expiry_warning_days, 14);
}

#[test]
fn a_flag_beats_the_file_and_the_file_fills_the_rest() {
    let (_d, path) = file(
        "listen = [\"127.0.0.1:1\"]\nhandshake_timeout = 5\nmax_connections = 7\n\
         respond = \"echo\"\ncompress = \"zlib\"\nalpn = [\"h2\"]\nclient_auth = \"optional\"\n\
         ca_hints = \"off\"\ntls_version = [\"1.2\"]\nno_watch = true\n",
    );
    let mut f = flags();
    f.handshake_timeout = Some(3.0);
    f.respond = Some(Respond::Http);
    f.alpn = Some(vec!["http/1.1".into()]);
    let c = config(f.merge(load(&path)));
    // The flags' values.
    assert_eq!(c.listen, vec!["127.0.0.1:0".parse().expect("addr")]);
    assert_eq!(c.handshake_timeout, Duration::from_secs(3));
    assert_eq!(c.mode, Mode::Http);
    assert_eq!(c.alpn, vec!["http/1.1".to_string()]);
    // The file's, where no flag was given.
    assert_eq!(c.max_connections, 7);
    assert_eq!(c.compress, vec![Compression::Zlib]);
    assert!(c.client_auth_optional);
    assert_eq!(c.ca_hints, CaHints::Off);
    assert_eq!(c.versions, vec![TlsVersion::Tls12]);
    assert!(!c.watch);
    // Without flags the file's values count.
    let c = config(flags().merge(load(&path)));
    assert_eq!(c.handshake_timeout, Duration::from_secs(5));
    assert_eq!(c.mode, Mode::Echo);
    assert_eq!(c.alpn, vec!["h2".to_string()]);
}

#[test]
fn respond_given_as_a_flag_drops_the_files_backend() {
    let (_d, path) = file("backend = \"127.0.0.1:8080\"\n");
    let mut f = flags();
    f.respond = Some(Respond::Echo);
    assert_eq!(config(f.merge(load(&path))).mode, Mode::Echo);
    assert_eq!(
        config(flags().merge(load(&path))).mode,
        Mode::Backend("127.0.0.1:8080".into())
    );
    // A backend flag with the file's respond: both given, refused.
    let (_d2, path) = file("respond = \"http\"\n");
    let mut f = flags();
    f.backend = Some("127.0.0.1:8080".into());
    assert_eq!(
        refusal(f.merge(load(&path))),
        "--backend and --respond exclude each other"
    );
}

#[test]
fn a_range_refusal_names_the_flag_or_the_file_and_key() {
    let (_d, path) = file("max_connections = 0\nidle_timeout = 1e19\n");
    let mut only_file = flags().merge(load(&path));
    only_file.idle_timeout = None;
    assert_eq!(
        refusal(only_file),
        format!(
            "configuration: {}: max_connections = 0 is out of range: max_connections must be \
             1 to 1048576 connections",
            path.display()
        )
    );
    let mut f = flags();
    f.max_connections = Some(0);
    assert_eq!(
        refusal(f),
        "configuration: --max-connections 0 is out of range: max_connections must be 1 to \
         1048576 connections"
    );
    let mut f = flags();
    f.idle_timeout = Some(1e19);
    assert_eq!(
        refusal(f),
        "configuration: --idle-timeout 10000000000000000000 is out of range: idle_timeout \
         must be 0.001 to 604800 seconds"
    );
    // The range is checked on the value that wins: flags in range hide the file's.
    let mut f = flags();
    f.max_connections = Some(5);
    f.idle_timeout = Some(30.0);
    let c = config(f.merge(load(&path)));
    assert_eq!(c.max_connections, 5);
    assert_eq!(c.idle_timeout, Duration::from_secs(30));
    // A loaded file alone: every value is the file's.
    let (_d2, path) = file(
        "listen = [\"127.0.0.1:0\"]\ncert = \"c.pem\"\nkey = \"k.pem\"\nshutdown_grace = -1\n",
    );
    assert_eq!(
        refusal(load(&path)),
        format!(
            "configuration: {}: shutdown_grace = -1 is out of range: shutdown_grace must be 0 \
             to 86400 seconds",
            path.display()
        )
    );
}

/// One change made to complete flags.
type Change = fn(&mut ServeSettings);

#[test]
fn settings_that_need_another_are_refused_without_it() {
    let cases: &[(&str, Change)] = &[
        ("no address to listen on (--listen ADDR)", |s| {
            s.listen = None
        }),
        ("--cert FILE is required", |s| s.cert = None),
        ("--key FILE is required", |s| s.key = None),
        ("--proxy-protocol needs --backend", |s| {
            s.proxy_protocol = Some(true)
        }),
        ("--shared-state-key needs --shared-state URL", |s| {
            s.shared_state_key = Some("fleet.kek".into())
        }),
        (
            "--shared-state-ca, --shared-state-ca-profile and --shared-state-ca-allow need \
             --shared-state rediss://URL",
            |s| s.shared_state_ca = Some("ca.pem".into()),
        ),
        (
            "--shared-state-ca, --shared-state-ca-profile and --shared-state-ca-allow need \
             --shared-state rediss://URL",
            |s| s.shared_state_ca_profile = Some(tlskit_verify::Profile::Rfc5280),
        ),
        (
            "--domain and --acme-storage need --acme DIRECTORY_URL",
            |s| s.domain = Some(vec!["a.test".into()]),
        ),
        (
            "--domain and --acme-storage need --acme DIRECTORY_URL",
            |s| s.acme_storage = Some("acme".into()),
        ),
        (
            "--acme-roots-profile and --acme-roots-allow need --acme DIRECTORY_URL",
            |s| s.acme_roots_profile = Some(tlskit_verify::Profile::WebPki),
        ),
        (
            "--acme-dns-update, --acme-dns-tsig-key, --acme-dns-resolver and \
             --acme-dns-exec need --acme DIRECTORY_URL",
            |s| s.acme_dns_update = Some("127.0.0.1".into()),
        ),
        (
            "--acme-dns-update, --acme-dns-tsig-key, --acme-dns-resolver and \
             --acme-dns-exec need --acme DIRECTORY_URL",
            |s| s.acme_dns_exec = Some("/usr/local/bin/dns-hook".into()),
        ),
    ];
    for (want, set) in cases {
        let mut s = flags();
        set(&mut s);
        assert_eq!(&refusal(s), want);
    }
    // With a backend, the PROXY header is accepted.
    let mut s = flags();
    s.proxy_protocol = Some(true);
    s.backend = Some("127.0.0.1:8080".into());
    assert!(config(s).proxy_protocol);
}

#[test]
fn the_acme_keys_of_a_file_without_acme_are_ignored_as_they_always_were() {
    // Only flags are refused without --acme: a file's domain is left for later.
    let (_d, path) = file("domain = [\"a.test\"]\nacme_storage = \"acme\"\n");
    let c = config(flags().merge(load(&path)));
    assert!(c.acme.is_none());
}

/// The refusal of complete flags merged with this file, if any.
fn with_file(text: &str) -> Option<String> {
    let (_d, path) = file(text);
    flags()
        .merge(load(&path))
        .into_config()
        .err()
        .map(|e| e.to_string())
}

#[test]
fn words_are_typed_when_read_and_refused_with_serves_messages() {
    for (text, want) in [
        ("respond = \"x\"\n", "--respond x: use http or echo"),
        (
            "client_auth = \"maybe\"\n",
            "--client-auth maybe: use required or optional",
        ),
        ("ca_hints = \"all\"\n", "--ca-hints all: use store or off"),
        (
            "compress = \"brotli,lz4\"\n",
            "--compress lz4: use brotli, zlib or none",
        ),
        (
            "tls_version = [\"1.1\"]\n",
            "unknown TLS version \"1.1\" (use 1.2 or 1.3)",
        ),
        (
            "shared_state_ca_profile = \"strict\"\n",
            "shared_state_ca_profile strict: unknown profile; expected one of: browser, \
             webpki, rfc5280",
        ),
    ] {
        assert_eq!(with_file(text).as_deref(), Some(want), "{text}");
    }
    // Rules: client_ca_* quote the value, the others do not.
    let e = with_file("client_ca_allow = [\"no-such-rule\"]\n");
    assert!(
        e.as_deref()
            .is_some_and(|e| e.starts_with("client_ca_allow \"no-such-rule\": unknown rule")),
        "{e:?}"
    );
    // Loaded files are typed.
    let (_d, path) = file("respond = \"echo\"\ncompress = \"zlib, brotli\"\n");
    let s = load(&path);
    assert_eq!(s.respond, Some(Respond::Echo));
    assert_eq!(
        s.compress,
        Some(vec![Compression::Zlib, Compression::Brotli])
    );
    // The same words from a caller (the CLI's flags) parse alike.
    assert_eq!("echo".parse::<Respond>().ok(), Some(Respond::Echo));
    assert_eq!(
        "optional".parse::<ClientAuth>().ok(),
        Some(ClientAuth::Optional)
    );
    assert!(matches!(
        "x".parse::<CaHints>(),
        Err(ValueError::Choice { .. })
    ));
}

#[test]
fn a_flag_replaces_a_file_value_that_does_not_parse() {
    let (_d, path) = file("respond = \"x\"\ncompress = \"lz4\"\n");
    let mut f = flags();
    f.respond = Some(Respond::Echo);
    f.compress = Some(Vec::new());
    let c = config(f.merge(load(&path)));
    assert_eq!(c.mode, Mode::Echo);
    assert!(c.compress.is_empty());
    // Each is refused where serve has always checked it: after the backend's exclusion.
    let mut f = flags();
    f.backend = Some("127.0.0.1:8080".into());
    assert_eq!(
        refusal(f.merge(load(&path))),
        "--backend and --respond exclude each other"
    );
}

#[test]
fn a_callers_value_that_does_not_parse_is_refused_in_serves_order() {
    let bad = |w: &str| w.parse::<Respond>().expect_err("not a respond word");
    // It wins the merge over the file's good value, and is refused.
    let (_d, path) = file("respond = \"echo\"\n");
    let mut f = flags();
    f.set_invalid("respond", bad("x"));
    assert_eq!(
        refusal(f.merge(load(&path))),
        "--respond x: use http or echo"
    );
    // A problem serve checks earlier is reported first.
    let mut f = flags();
    f.cert = None;
    f.set_invalid("respond", bad("x"));
    assert_eq!(refusal(f), "--cert FILE is required");
    // One that only counts with another setting counts only with it.
    let mut f = flags();
    f.set_invalid(
        "acme_challenge",
        "dns-persist-01"
            .parse::<tlskit_server::AcmeChallenge>()
            .expect_err("not a challenge"),
    );
    config(f);
}

#[test]
fn the_log_settings_are_taken_out_for_the_callers_logging() {
    let (_d, path) = file("log_format = \"json\"\nlog_level = \"debug\"\n");
    let mut s = flags().merge(load(&path));
    let log = s.take_log();
    assert_eq!(log.level, Ok(Some(tlskit_tls::log::Level::Debug)));
    assert_eq!(log.format, Ok(Some(LogFormat::Json)));
    assert_eq!(s.log_level, None);
    config(s);
    let (_d, path) = file("log_format = \"xml\"\nlog_level = \"loud\"\n");
    let mut s = flags().merge(load(&path));
    let log = s.take_log();
    let text = |r: Result<(), ValueError>| r.err().map(|e| e.to_string());
    assert_eq!(
        text(log.level.map(drop)).as_deref(),
        Some("log_level loud: use off, error, warn, info or debug")
    );
    assert_eq!(
        text(log.format.map(drop)).as_deref(),
        Some("log_format \"xml\": use text or json")
    );
    // Taken out, they do not stop the configuration.
    config(s);
    // A caller's format replaces the file's that does not parse.
    let mut f = flags();
    f.log_format = Some(LogFormat::Text);
    assert_eq!(
        f.merge(load(&path)).take_log().format,
        Ok(Some(LogFormat::Text))
    );
}

#[test]
fn a_file_resolves_relative_paths_and_refuses_unknown_keys() {
    let (dir, path) = file(
        "cert = \"c.pem\"\nkey = \"pkcs11:token=t;object=k\"\nsni_dir = \"/abs/sni\"\n\
         shared_state_key = \"fleet.kek\"\nacme_storage = \"st\"\nmax_client_hello = 8192\n",
    );
    let s = load(&path);
    assert_eq!(s.cert, Some(dir.path().join("c.pem")));
    assert_eq!(s.key, Some(PathBuf::from("pkcs11:token=t;object=k")));
    assert_eq!(s.sni_dir, Some(PathBuf::from("/abs/sni")));
    assert_eq!(s.shared_state_key, Some(dir.path().join("fleet.kek")));
    assert_eq!(s.acme_storage, Some(dir.path().join("st")));
    assert_eq!(s.max_client_hello, Some(8192));
    let (_d, path) = file("lisen = 1\n");
    let e = ServeSettings::load(&path).err().map(|e| e.to_string());
    assert!(
        e.as_deref()
            .is_some_and(|e| e.starts_with(&format!("{}: unknown field `lisen`", path.display()))),
        "{e:?}"
    );
}

#[cfg(feature = "fleet")]
#[test]
fn shared_state_needs_its_key_and_tls_for_its_ca_checks() {
    let mut s = flags();
    s.shared_state = Some("redis://127.0.0.1:6379/0".into());
    assert_eq!(
        refusal(s.clone()),
        "--shared-state needs --shared-state-key FILE (32 bytes, mode 0600)"
    );
    s.shared_state_key = Some("fleet.kek".into());
    s.shared_state_ca_allow = Some(Vec::new());
    assert_eq!(
        refusal(s.clone()),
        "--shared-state-ca-profile and --shared-state-ca-allow need a rediss:// URL (TLS), \
         not redis://127.0.0.1:6379/0"
    );
    s.shared_state = Some("rediss://127.0.0.1:6380/0".into());
    s.shared_state_reread = Some(0.5);
    let c = config(s.clone());
    let shared = c.shared_state.expect("shared settings");
    assert_eq!(shared.reread, Duration::from_millis(500));
    s.shared_state_reread = Some(0.0);
    assert_eq!(
        refusal(s),
        "configuration: --shared-state-reread 0 is out of range: shared_state_reread must be \
         0.1 to 3600 seconds"
    );
}

#[cfg(feature = "acme")]
#[test]
fn acme_needs_a_domain_and_storage_unless_a_fleet_holds_it() {
    let mut s = flags();
    s.cert = None;
    s.key = None;
    s.acme = Some("https://ca.test/directory".into());
    assert_eq!(
        refusal(s.clone()),
        "--acme needs at least one --domain NAME"
    );
    s.domain = Some(vec!["a.test".into()]);
    assert_eq!(
        refusal(s.clone()),
        "--acme needs --acme-storage DIR (or --shared-state URL)"
    );
    s.acme_storage = Some("acme".into());
    s.acme_challenge = Some(tlskit_server::AcmeChallenge::Http01);
    s.acme_retry = Some(2.0);
    let c = config(s.clone());
    let a = c.acme.expect("acme settings");
    assert_eq!(a.domains, vec!["a.test".to_string()]);
    assert_eq!(a.challenge, tlskit_acme::ChallengeKind::Http01);
    assert_eq!(a.retry_base, Duration::from_secs(2));
    // A challenge of the file's that is not one is refused with --acme (ignored without).
    let (_d, path) = file("acme_challenge = \"dns-persist-01\"\n");
    let mut f = s.clone();
    f.acme_challenge = None;
    assert_eq!(
        refusal(f.merge(load(&path))),
        "--acme-challenge dns-persist-01: use tls-alpn-01, http-01 or dns-01"
    );
    config(flags().merge(load(&path)));
    // A range of the file's is named by the file.
    let (_d, path) = file("acme_recheck = 1e19\n");
    let e = refusal(s.merge(load(&path)));
    assert_eq!(
        e,
        format!(
            "configuration: {}: acme_recheck = 10000000000000000000 is out of range: \
             acme_recheck must be 0.1 to 604800 seconds",
            path.display()
        )
    );
}

#[cfg(not(feature = "acme"))]
#[test]
fn a_build_without_acme_refuses_it() {
    let mut s = flags();
    s.acme = Some("https://ca.test/directory".into());
    assert!(matches!(
        s.into_config(),
        Err(tlskit_server::SettingsError::NotBuilt("--acme", "acme"))
    ));
}

/// Issue 26: DNS-01's config keys, typed (paths relative to the file), checked with the
/// challenge (wildcards need it, a writer is needed) and a bad address named.
#[cfg(feature = "acme")]
#[test]
fn dns01_keys_from_a_file_and_their_checks() {
    let (dir, path) = file(
        "acme = \"https://ca.test/directory\"\ndomain = [\"*.example.test\", \"example.test\"]\n\
         acme_storage = \"st\"\nacme_challenge = \"dns-01\"\n\
         acme_dns_update = \"127.0.0.1:5353\"\nacme_dns_tsig_key = \"acme.key\"\n\
         acme_dns_resolver = \"::1\"\n",
    );
    let mut s = flags();
    s.cert = None;
    s.key = None;
    let c = config(s.clone().merge(load(&path)));
    let a = c.acme.expect("acme settings");
    assert_eq!(a.challenge, tlskit_acme::ChallengeKind::Dns01);
    assert_eq!(a.dns.update, Some("127.0.0.1:5353".parse().expect("addr")));
    assert_eq!(a.dns.resolver, Some("[::1]:53".parse().expect("addr")));
    assert_eq!(a.dns.tsig_key, Some(dir.path().join("acme.key")));
    assert_eq!(a.dns.exec, None);
    // The combinations are checked where every ACME setting is, when `serve` prepares
    // ACME (`AcmeSettings::check`): a hook beside the update server, a wildcard without
    // DNS-01.
    let mut f = s.clone();
    f.acme_dns_exec = Some("/usr/local/bin/dns-hook".into());
    let a = config(f.merge(load(&path))).acme.expect("acme");
    let e = a.check().expect_err("both writers").to_string();
    assert!(
        e.contains("--acme-dns-update and --acme-dns-exec exclude each other"),
        "{e}"
    );
    let mut f = s.clone();
    f.acme_challenge = Some(tlskit_server::AcmeChallenge::Http01);
    let a = config(f.merge(load(&path))).acme.expect("acme");
    let e = a.check().expect_err("wildcard").to_string();
    assert!(
        e.contains("*.example.test: a wildcard name needs --acme-challenge dns-01"),
        "{e}"
    );
    // An address that is not one, named.
    let mut f = s.clone();
    f.acme_dns_update = Some("ns1.example.test".into());
    let e = refusal(f.merge(load(&path)));
    assert!(
        e.contains("ns1.example.test: not a DNS server address"),
        "{e}"
    );
}
