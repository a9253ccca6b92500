//! The error type of the pki crate: each variant names the file (where there is one) and
//! the reason, so the CLI can print it as it is.

use std::path::PathBuf;

/// Why a pki operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PkiError {
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// An input file could not be read: missing, not a regular file (FIFO, device), or
    /// larger than its limit (named in the message).
    #[error(transparent)]
    Read(#[from] tlskit_io::ReadError),
    /// The output file exists and `--force` was not given.
    #[error("{}: already exists (use --force to replace it)", path.display())]
    Exists {
        /// The file.
        path: PathBuf,
    },
    /// A file's content could not be understood.
    #[error("{}: {reason}", path.display())]
    BadInput {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A file's content could not be understood; the typed reason is the source (an
    /// [`crate::inspect::DescribeError`], a [`crate::lint::LintInputError`], a
    /// [`crate::key::PemError`], a [`crate::dn::DnProblem`], ...).
    #[error("{}: {source}", path.display())]
    Content {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A file's content was refused by the library that reads it (x509-parser, rcgen,
    /// serde_json, p12-keystore, ...).
    #[error("{}: {context}: {source}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// What was being read ("not a certificate", "line 3", ...).
        context: String,
        /// The library's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A library tlskit uses failed at something other than reading a file.
    #[error("{context}: {source}")]
    Failed {
        /// What was being done.
        context: String,
        /// The library's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A distinguished name given by the user is malformed.
    #[error("invalid subject DN {input:?}: {reason}")]
    Dn {
        /// The DN as given.
        input: String,
        /// The problem.
        reason: DnProblem,
    },
    /// A subjectAltName given by the user is invalid.
    #[error("invalid SAN {input:?}: {reason}")]
    San {
        /// The SAN as given.
        input: String,
        /// The problem.
        reason: String,
    },
    /// A subjectAltName (or name constraint) given by the user was refused by the
    /// library that checks it: a [`tlskit_names::NameError`] (which names the input
    /// again), or rcgen's string checks.
    #[error("invalid SAN {input:?}: {source}")]
    SanRefused {
        /// The SAN or name constraint as given.
        input: String,
        /// The library's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A CA operation was refused (name constraints, path length, validity, ...).
    #[error("{0}")]
    Refused(String),
    /// A CA was asked about a serial its index does not hold (or, when revoking by
    /// certificate, holds for another certificate).
    #[error("{}: this CA has not issued a certificate with serial {serial}", dir.display())]
    NotIssued {
        /// The serial, canonical lower-case hex.
        serial: String,
        /// The CA directory.
        dir: PathBuf,
    },
    /// The certificate is revoked already; nothing was recorded.
    #[error("serial {serial} is already revoked ({reason}, {revoked_at})")]
    AlreadyRevoked {
        /// The serial, canonical lower-case hex.
        serial: String,
        /// The reason recorded first.
        reason: tlskit_x509::RevocationReason,
        /// When it was revoked (RFC 3339).
        revoked_at: String,
    },
    /// Key and certificate do not belong together.
    #[error("{0}")]
    Mismatch(String),
    /// The PKCS#12 password is wrong.
    #[error("{}: wrong password (PKCS#12 MAC check failed)", path.display())]
    WrongPassword {
        /// The PKCS#12 file.
        path: PathBuf,
    },
    /// A file asks for more work than allowed (a PKCS#12 file's key-derivation cost).
    #[error("{}: {reason}", path.display())]
    Limit {
        /// The file.
        path: PathBuf,
        /// Which limit, and how to raise it.
        reason: String,
    },
    /// rcgen could not build or sign something.
    #[error("{context}: {source}")]
    Rcgen {
        /// What was being built.
        context: String,
        /// The rcgen error.
        source: rcgen::Error,
    },
    /// A key on a PKCS#11 token could not be used (the message names the URI, PIN
    /// redacted).
    #[error(transparent)]
    Pkcs11(#[from] tlskit_pkcs11::Pkcs11Error),
    /// A file could not be written, for a reason other than the two above.
    #[error(transparent)]
    Write(tlskit_io::WriteError),
    /// Another error with its explanation.
    #[error("{0}")]
    Other(String),
}

impl From<tlskit_io::WriteError> for PkiError {
    fn from(e: tlskit_io::WriteError) -> Self {
        match e {
            tlskit_io::WriteError::Exists { path } => PkiError::Exists { path },
            tlskit_io::WriteError::Io { path, source } => PkiError::Io { path, source },
            // WriteError is non_exhaustive.
            other => PkiError::Write(other),
        }
    }
}

impl PkiError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }
    pub(crate) fn bad(path: impl Into<PathBuf>, reason: impl Into<String>) -> Self {
        Self::BadInput {
            path: path.into(),
            reason: reason.into(),
        }
    }
    pub(crate) fn content(
        path: impl Into<PathBuf>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self::Content {
            path: path.into(),
            source: Box::new(source),
        }
    }
    pub(crate) fn parse<E: std::error::Error + Send + Sync + 'static>(
        path: impl Into<PathBuf>,
        context: impl Into<String>,
    ) -> impl FnOnce(E) -> Self {
        let path = path.into();
        let context = context.into();
        move |source| Self::Parse {
            path,
            context,
            source: Box::new(source),
        }
    }
    pub(crate) fn failed<E: std::error::Error + Send + Sync + 'static>(
        context: impl Into<String>,
    ) -> impl FnOnce(E) -> Self {
        let context = context.into();
        move |source| Self::Failed {
            context,
            source: Box::new(source),
        }
    }
    pub(crate) fn san_refused<E: std::error::Error + Send + Sync + 'static>(
        input: &str,
    ) -> impl FnOnce(E) -> Self {
        let input = input.to_string();
        move |source| Self::SanRefused {
            input,
            source: Box::new(source),
        }
    }
    pub(crate) fn rcgen(context: impl Into<String>) -> impl FnOnce(rcgen::Error) -> Self {
        let context = context.into();
        move |source| Self::Rcgen { context, source }
    }
}

/// Why a distinguished name (typed by a user, or found in a request) was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DnProblem {
    /// Nothing was given.
    #[error("the DN is empty")]
    Empty,
    /// A `\` at the very end.
    #[error("it ends with a lone backslash")]
    LoneBackslash,
    /// An empty RDN between two separators.
    #[error("empty component #{position} (a stray or doubled '{separator}'?)")]
    EmptyComponent {
        /// Which component, from 1.
        position: usize,
        /// The separator (`,` or `/`).
        separator: char,
    },
    /// An RDN without `=` (as given, trimmed).
    #[error("{0:?} has no '=' (expected TYPE=value)")]
    NoEquals(String),
    /// An RDN with an unescaped `+` (as given, trimmed).
    #[error("{0:?}: multi-valued RDNs ('+') are not supported; escape a literal plus as \\+")]
    MultiValued(String),
    /// An attribute type tlskit does not know.
    #[error(
        "unknown attribute type {0:?} (known: CN, O, OU, C, ST, L, street, serialNumber, DC, \
         emailAddress, ...)"
    )]
    UnknownType(String),
    /// An attribute (its short name) with an empty value.
    #[error("{0} has an empty value")]
    EmptyValue(&'static str),
    /// An attribute (its short name) whose value holds a control character.
    #[error("{0} contains a control character")]
    ControlChar(&'static str),
    /// A CN over 64 characters.
    #[error("CN is longer than 64 characters (RFC 5280 ub-common-name)")]
    CnTooLong,
    /// A countryName that is not two letters.
    #[error("C must be a two-letter ISO 3166 country code, not {0:?}")]
    BadCountry(String),
    /// A countryName that is not a PrintableString.
    #[error("C is not printable")]
    CountryNotPrintable,
    /// A PrintableString attribute (its short name) with other characters.
    #[error("{0} allows only A-Z a-z 0-9 space and '()+,-./:=?")]
    NotPrintable(&'static str),
    /// An IA5String attribute (its short name) that is not ASCII.
    #[error("{0} must be ASCII")]
    NotAscii(&'static str),
    /// An attribute type (its short name) given twice.
    #[error("{0} appears twice (repeated attributes are not supported)")]
    Repeated(&'static str),
    /// `\` and one hex digit.
    #[error("bad escape \\{0}: expected two hex digits")]
    BadHexEscape(char),
    /// `\` and a character that needs no escape.
    #[error("bad escape \\{0}")]
    BadEscape(char),
    /// `\XX` escapes that are not UTF-8.
    #[error("hex escapes do not form valid UTF-8")]
    NotUtf8,
    /// A request's subject attribute type OID with an arc too large.
    #[error("attribute type OID too large")]
    OidTooLarge,
    /// A request's subject repeats an attribute type (its short name or OID).
    #[error("the subject repeats attribute {0} (not supported)")]
    RequestRepeats(String),
    /// A request's subject attribute (its short name or OID) that is not a string.
    #[error("subject attribute {0} is not a string")]
    NotAString(String),
    /// rcgen refused a request's subject string.
    #[error("{0}")]
    Rcgen(#[source] rcgen::Error),
}

/// Result type of this crate.
pub type Result<T, E = PkiError> = std::result::Result<T, E>;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    //! The typed errors that replaced `String`s: each keeps the text the CLI has always
    //! printed, and the error of the library underneath stays reachable as the source.
    use std::error::Error as _;

    use x509_parser::error::X509Error;

    use super::PkiError;
    use crate::dn::DnProblem;
    use crate::inspect::{self, DescribeError};
    use crate::key::{KeyType, PemError};
    use crate::lint::{self, LintInputError};

    type X509Err = x509_parser::nom::Err<X509Error>;

    #[test]
    fn a_malformed_certificate_block_keeps_x509_parsers_error() {
        let pem = "-----BEGIN CERTIFICATE-----\nMAMCAQA=\n-----END CERTIFICATE-----\n";
        let e = inspect::describe_bytes(pem.as_bytes()).unwrap_err();
        assert!(matches!(e, DescribeError::Certificate(_)), "{e:?}");
        let source = e.source().unwrap();
        assert!(source.downcast_ref::<X509Err>().is_some(), "{source:?}");
        assert_eq!(e.to_string(), format!("malformed certificate: {source}"));
    }

    #[test]
    fn a_file_that_cannot_be_described_keeps_the_reason_typed() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("x.bin");
        std::fs::write(&p, b"hello").unwrap();
        let e = inspect::describe(&p).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "{}: not PEM, and not a DER certificate, request, CRL, public or private key",
                p.display()
            )
        );
        let why = e.source().unwrap().downcast_ref::<DescribeError>().unwrap();
        assert!(matches!(why, DescribeError::Unknown), "{why:?}");
    }

    #[test]
    fn malformed_pem_is_one_typed_error_quoting_none_of_the_input() {
        let pem = "-----BEGIN CERTIFICATE-----\nMIIB secret";
        let e = lint::lint_bytes(pem.as_bytes(), time::OffsetDateTime::now_utc()).unwrap_err();
        assert!(
            matches!(e, LintInputError::Pem(PemError::Incomplete)),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "malformed PEM: a block has no matching END line (is the PEM on one line, with \
             its newlines replaced by spaces or a literal \\n?)"
        );
        assert!(
            e.source().is_none(),
            "the PEM error's own text is not repeated"
        );
    }

    #[test]
    fn lint_keeps_the_certificate_parse_error() {
        let pem = "-----BEGIN CERTIFICATE-----\nMAMCAQA=\n-----END CERTIFICATE-----\n";
        let e = lint::lint_bytes(pem.as_bytes(), time::OffsetDateTime::now_utc()).unwrap_err();
        let LintInputError::Certificate { index, .. } = &e else {
            panic!("{e:?}")
        };
        assert_eq!(*index, 1);
        assert!(e.source().unwrap().downcast_ref::<X509Err>().is_some());
        assert!(
            e.to_string().starts_with("certificate #1: malformed: "),
            "{e}"
        );
    }

    #[test]
    fn dn_problems_are_typed_and_read_as_before() {
        let e = crate::dn::parse("CN=a,,O=b").unwrap_err();
        let PkiError::Dn { reason, .. } = &e else {
            panic!("{e:?}")
        };
        assert!(matches!(
            reason,
            DnProblem::EmptyComponent {
                position: 2,
                separator: ','
            }
        ));
        assert_eq!(
            e.to_string(),
            "invalid subject DN \"CN=a,,O=b\": empty component #2 (a stray or doubled ','?)"
        );
        let e = crate::dn::parse(r"CN=a\zz").unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"invalid subject DN "CN=a\\zz": bad escape \z"#
        );
    }

    #[test]
    fn a_refused_san_keeps_the_name_error() {
        let e = crate::san::parse("dns:example\u{2024}com").unwrap_err();
        let name = e
            .source()
            .unwrap()
            .downcast_ref::<tlskit_names::NameError>()
            .unwrap();
        assert!(matches!(
            name.kind,
            tlskit_names::NameErrorKind::DotLookalike('\u{2024}')
        ));
        assert_eq!(
            e.to_string(),
            format!("invalid SAN \"dns:example\u{2024}com\": {name}")
        );
    }

    #[test]
    fn unknown_names_of_key_types_and_profiles_read_as_before() {
        let e = "dsa".parse::<KeyType>().unwrap_err();
        assert_eq!(e.input, "dsa");
        let e = "root".parse::<crate::ca::Profile>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown profile \"root\" (one of: server, client, intermediate)"
        );
    }

    #[test]
    fn a_bad_index_line_keeps_serde_jsons_error() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("index.jsonl"), "{\"serial\":\n").unwrap();
        let e = crate::ca::index(t.path()).unwrap_err();
        let PkiError::Parse { context, .. } = &e else {
            panic!("{e:?}")
        };
        assert_eq!(context, "line 1");
        let source = e.source().unwrap();
        assert!(source.downcast_ref::<serde_json::Error>().is_some());
        assert!(
            e.to_string().ends_with(&format!(": line 1: {source}")),
            "{e}"
        );
    }
}
