//! RFC 5280 6.1 basic path validation for the valid paths rustls-webpki 0.103 refuses.
//!
//! rustls-webpki refuses some paths RFC 5280 calls valid (crate README, "Limits of
//! rustls-webpki"): it counts self-issued intermediates toward pathLenConstraint, refuses
//! every directoryName, rfc822Name and URI name constraint, compares names byte for byte,
//! never takes a CA certificate as the end entity, and cannot read unique identifiers or
//! times before 1970. When it refuses a chain for any reason other than tlskit's own
//! profile or depth limit, [`validate`] searches the same certificates again the way RFC
//! 5280 6.1 describes, and the chain is accepted only if it finds a path that passes
//! every check here, then the profile layer, the depth limit and the name check as for
//! any path.
//!
//! What this module decides is only which key verifies which bytes and the path policy
//! of RFC 5280 6.1.3-6.1.5: signatures are verified by the same aws-lc-rs algorithm
//! objects rustls-webpki calls (`SignatureVerificationAlgorithm`), certificates and CRLs
//! are read by x509-parser. Certificate-policy processing (6.1.3 (d)-(f), 6.1.4 (a)-(j))
//! is not implemented: any certificate carrying policyConstraints, policyMappings or
//! inhibitAnyPolicy, or a critical certificatePolicies, is refused here (fail closed, as
//! rustls-webpki does). CRLs are used when they are complete for the certificate's issuer
//! (no distribution point, indirect or reasons scope, no delta) and signed by the issuer's
//! own key; any other CRL leaves the status unknown.
//!
//! Work is bounded: at most [`SIGNATURE_BUDGET`] signature verifications and
//! [`STEP_BUDGET`] search steps per call, whatever the peer sends.

use std::cell::{Cell, RefCell};

use rustls_pki_types::SignatureVerificationAlgorithm;
use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::{GeneralName, ParsedExtension};
use x509_parser::oid_registry::{
    OID_PKCS9_EMAIL_ADDRESS, OID_PKIX_AUTHORITY_INFO_ACCESS, OID_X509_EXT_AUTHORITY_KEY_IDENTIFIER,
    OID_X509_EXT_BASIC_CONSTRAINTS, OID_X509_EXT_CRL_DISTRIBUTION_POINTS,
    OID_X509_EXT_DELTA_CRL_INDICATOR, OID_X509_EXT_EXTENDED_KEY_USAGE,
    OID_X509_EXT_INHIBIT_ANY_POLICY, OID_X509_EXT_ISSUER, OID_X509_EXT_ISSUER_DISTRIBUTION_POINT,
    OID_X509_EXT_KEY_USAGE, OID_X509_EXT_NAME_CONSTRAINTS, OID_X509_EXT_POLICY_CONSTRAINTS,
    OID_X509_EXT_POLICY_MAPPINGS, OID_X509_EXT_SUBJECT_ALT_NAME,
    OID_X509_EXT_SUBJECT_KEY_IDENTIFIER,
};
use x509_parser::prelude::FromDer;
use x509_parser::revocation_list::CertificateRevocationList;
use x509_parser::x509::{RelativeDistinguishedName, X509Name};

use crate::crl::Crl;
use crate::profile::CertRole;
use crate::purpose::Purpose;
use tlskit_x509::der;

/// Most signature verifications (certificates and CRLs) per call, like rustls-webpki's
/// own budget of 100.
pub(crate) const SIGNATURE_BUDGET: u32 = 100;
/// Most search steps (candidate issuers considered) per call.
pub(crate) const STEP_BUDGET: u32 = 2_000;

/// What to validate.
pub(crate) struct Input<'a> {
    pub(crate) leaf: &'a [u8],
    pub(crate) presented: &'a [&'a [u8]],
    /// Candidate trust anchors (already filtered for validity and CA-ness).
    pub(crate) anchors: &'a [&'a [u8]],
    pub(crate) now: i64,
    /// Most certificates in a path, end entity and anchor included.
    pub(crate) max_depth: usize,
    pub(crate) purpose: Purpose,
    pub(crate) crls: &'a [Crl],
    pub(crate) allow_unknown_revocation: bool,
    pub(crate) enforce_crl_expiry: bool,
    /// A CA certificate may be the end entity (the caller asked for it).
    pub(crate) allow_ca_leaf: bool,
    pub(crate) algs: &'a [&'a dyn SignatureVerificationAlgorithm],
}

/// A path that passed: the anchor's index in `Input::anchors`, and the intermediates'
/// indices in `Input::presented`, from the one that issued the end entity upward.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    pub(crate) anchor: usize,
    pub(crate) intermediates: Vec<usize>,
}

/// Why a candidate path was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// At one certificate: its position in the chain (0 = end entity) and raw subject.
    At {
        position: usize,
        role: CertRole,
        subject: Vec<u8>,
        why: Why,
    },
    /// Every path to an anchor would be longer than `max_depth`.
    TooDeep,
    /// Anything else, in words.
    Other(&'static str),
}

/// What a certificate of a candidate path broke.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Why {
    /// Its issuer name is not its issuer's subject (RFC 5280 6.1.3 (a)(4)).
    NameChaining,
    /// notBefore (Unix seconds) is after the verification time.
    NotYetValid(i64),
    /// notAfter (Unix seconds) is before the verification time.
    Expired(i64),
    /// A CA certificate as the end entity, not allowed by the caller.
    CaAsEndEntity,
    /// policyConstraints, policyMappings or inhibitAnyPolicy (not processed).
    Policy,
    /// A critical extension not processed (its OID).
    UnknownCriticalExtension(String),
    /// An extension that cannot be read.
    Malformed,
    /// extendedKeyUsage without the purpose.
    Purpose,
    /// No usable CRL covers it, and unknown status is not allowed.
    RevocationUnknown,
    /// Listed on a CRL.
    Revoked,
    /// The CRL that covers it is past its nextUpdate.
    CrlExpired,
    /// A name outside the name constraints in force.
    NameConstraints,
    /// Used as an issuer without basicConstraints cA.
    NotCa,
    /// Its pathLenConstraint is exceeded by the certificates below it.
    PathLen,
    /// Used as an issuer while its keyUsage lacks keyCertSign.
    NoKeyCertSign,
}

/// A name compared the way RFC 5280 7.1 asks (RFC 4518 simplified: case folded,
/// whitespace runs collapsed and trimmed, for the string types; other values byte for
/// byte); each RDN's attributes sorted, so a multi-valued RDN compares as a set.
type NormName = Vec<Vec<(Vec<u8>, NormValue)>>;

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum NormValue {
    Text(String),
    Raw(u32, Vec<u8>),
}

fn normalize(name: &X509Name<'_>) -> NormName {
    name.iter().map(norm_rdn).collect()
}

fn norm_rdn(rdn: &RelativeDistinguishedName<'_>) -> Vec<(Vec<u8>, NormValue)> {
    {
        {
            let mut atvs: Vec<(Vec<u8>, NormValue)> = rdn
                .iter()
                .map(|atv| {
                    let v = atv.attr_value();
                    let tag = v.header.tag().0;
                    let value = text_of(tag, v.data).map_or_else(
                        || NormValue::Raw(tag, v.data.to_vec()),
                        |s| NormValue::Text(fold(&s)),
                    );
                    (atv.attr_type().as_bytes().to_vec(), value)
                })
                .collect();
            atvs.sort();
            atvs
        }
    }
}

/// The text of a directory string (UTF8String, PrintableString, IA5String,
/// NumericString, TeletexString read as Latin-1, BMPString, UniversalString).
fn text_of(tag: u32, data: &[u8]) -> Option<String> {
    match tag {
        12 | 18 | 19 | 22 => std::str::from_utf8(data).ok().map(str::to_owned),
        20 => Some(data.iter().map(|&b| char::from(b)).collect()),
        30 => {
            if !data.len().is_multiple_of(2) {
                return None;
            }
            let units = data
                .chunks_exact(2)
                .map(|c| u16::from_be_bytes([c[0], c[1]]));
            char::decode_utf16(units)
                .collect::<Result<String, _>>()
                .ok()
        }
        28 => {
            if !data.len().is_multiple_of(4) {
                return None;
            }
            data.chunks_exact(4)
                .map(|c| char::from_u32(u32::from_be_bytes([c[0], c[1], c[2], c[3]])))
                .collect()
        }
        _ => None,
    }
}

fn fold(s: &str) -> String {
    s.split_whitespace()
        .map(|w| w.chars().flat_map(char::to_lowercase).collect::<String>())
        .collect::<Vec<_>>()
        .join(" ")
}

/// One certificate, read once.
struct Cert<'a> {
    der: &'a [u8],
    x: X509Certificate<'a>,
    subject: NormName,
    issuer: NormName,
    is_ca: bool,
}

impl<'a> Cert<'a> {
    fn read(der: &'a [u8]) -> Option<Self> {
        let (rest, x) = x509_parser::parse_x509_certificate(der).ok()?;
        if !rest.is_empty() {
            return None;
        }
        let subject = normalize(x.subject());
        let issuer = normalize(x.issuer());
        // A duplicated or malformed basicConstraints makes the certificate unusable.
        let is_ca = x.basic_constraints().ok()?.is_some_and(|b| b.value.ca);
        Some(Self {
            der,
            x,
            subject,
            issuer,
            is_ca,
        })
    }

    fn self_issued(&self) -> bool {
        self.subject == self.issuer
    }

    fn spki(&self) -> &'a [u8] {
        self.x.tbs_certificate.subject_pki.raw
    }
}

struct Validator<'i, 'a> {
    input: &'i Input<'a>,
    leaf: Cert<'a>,
    pool: Vec<Option<Cert<'a>>>,
    anchors: Vec<Option<Cert<'a>>>,
    crls: Vec<Option<ParsedCrl<'a>>>,
    signatures: Cell<u32>,
    steps: Cell<u32>,
    /// The refusal of the end-entity path that got furthest, with how far it got.
    refusal: RefCell<Option<(usize, Refusal)>>,
    /// The search stopped somewhere at `max_depth`.
    depth_cut: Cell<bool>,
}

/// A CRL read once: the parse, its issuer normalized, its DER, and its
/// issuingDistributionPoint (if any).
struct ParsedCrl<'a> {
    crl: CertificateRevocationList<'a>,
    issuer: NormName,
    der: &'a [u8],
    /// `None`: the CRL cannot be used (a delta CRL, an unknown critical extension).
    scope: Option<CrlScope>,
}

/// What an issuingDistributionPoint says about a CRL's scope.
struct CrlScope {
    /// The distribution point names, as comparable names (empty: none).
    dp_names: Vec<DpName>,
    only_user: bool,
    only_ca: bool,
    only_attribute: bool,
    indirect: bool,
    /// onlySomeReasons, as reason bits (ALL_REASONS when absent).
    reasons: u16,
}

/// Reason bits 1..=8 of ReasonFlags (bit 0 is unused).
const ALL_REASONS: u16 = 0x1fe;

/// How deep CRL-signer paths go: a separate CRL signer's own status is checked, and
/// its signer's; deeper is undetermined.
const SIGNER_LEVELS: u8 = 2;

/// What the certificate at the bottom of a path is validated for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// The end entity of the verification (purpose, CA only when allowed).
    EndEntity,
    /// A certificate whose key signed a CRL (RFC 5280 6.3.3 (f)).
    CrlSigner,
}

/// A distribution point name made comparable: a directory name normalized, any other
/// general name as encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
enum DpName {
    Dn(NormName),
    Other(String),
}

fn dp_names(names: &[GeneralName<'_>]) -> Vec<DpName> {
    names
        .iter()
        .map(|g| match g {
            GeneralName::DirectoryName(n) => DpName::Dn(normalize(n)),
            other => DpName::Other(format!("{other:?}")),
        })
        .collect()
}

/// A DistributionPointName as read from DER (x509-parser 0.18 drops a
/// nameRelativeToCRLIssuer without saying so, which would make a partitioned CRL look
/// complete, so this module reads distribution points itself).
#[derive(Debug, Clone)]
enum PointName {
    Full(Vec<DpName>),
    Relative(Vec<(Vec<u8>, NormValue)>),
}

impl PointName {
    /// As comparable names; a relative name is appended to `issuer`.
    fn resolve(&self, issuer: &NormName) -> Vec<DpName> {
        match self {
            PointName::Full(names) => names.clone(),
            PointName::Relative(rdn) => {
                let mut full = issuer.clone();
                full.push(rdn.clone());
                vec![DpName::Dn(full)]
            }
        }
    }
}

/// A DistributionPoint of a certificate's cRLDistributionPoints.
#[derive(Debug, Clone)]
struct Dp {
    name: Option<PointName>,
    reasons: Option<u16>,
    crl_issuer: Option<Vec<DpName>>,
}

/// GeneralName TLVs one after another (the contents of GeneralNames).
fn general_names(mut rest: &[u8]) -> Option<Vec<DpName>> {
    let mut out = Vec::new();
    while !rest.is_empty() {
        let (r, g) = GeneralName::from_der(rest).ok()?;
        out.extend(dp_names(&[g]));
        rest = r;
    }
    Some(out)
}

/// `[0] DistributionPointName` (its contents: one CHOICE element).
fn point_name(contents: &[u8]) -> Option<PointName> {
    let (choice, rest) = der::next_part(contents)?;
    if !rest.is_empty() {
        return None;
    }
    match choice.tag {
        0xa0 => general_names(choice.contents).map(PointName::Full),
        0xa1 => {
            // RelativeDistinguishedName, implicitly tagged: AttributeTypeAndValue TLVs.
            let mut atvs = Vec::new();
            let mut rest = choice.contents;
            while !rest.is_empty() {
                let (atv, r) = der::next_part(rest)?;
                let (oid, v) = der::next_part(atv.contents)?;
                let (value, end) = der::next_part(v)?;
                if atv.tag != 0x30 || oid.tag != 0x06 || !end.is_empty() {
                    return None;
                }
                let tag = u32::from(value.tag);
                let norm = text_of(tag, value.contents).map_or_else(
                    || NormValue::Raw(tag, value.contents.to_vec()),
                    |s| NormValue::Text(fold(&s)),
                );
                atvs.push((oid.contents.to_vec(), norm));
                rest = r;
            }
            atvs.sort();
            Some(PointName::Relative(atvs))
        }
        _ => None,
    }
}

/// ReasonFlags (a BIT STRING's contents) as reason bits 1..=8.
fn reason_bits(contents: &[u8]) -> Option<u16> {
    let (_unused, bits) = contents.split_first()?;
    let b0 = u16::from(bits.first().copied().unwrap_or(0).reverse_bits());
    let b1 = u16::from(bits.get(1).copied().unwrap_or(0).reverse_bits());
    Some((b0 | (b1 << 8)) & ALL_REASONS)
}

/// A certificate's cRLDistributionPoints (the extension value).
fn distribution_points(value: &[u8]) -> Option<Vec<Dp>> {
    let (mut rest, end) = der::sequence_contents(value)?;
    if !end.is_empty() {
        return None;
    }
    let mut out = Vec::new();
    while !rest.is_empty() {
        let (dp, r) = der::sequence_contents(rest)?;
        let mut d = Dp {
            name: None,
            reasons: None,
            crl_issuer: None,
        };
        let mut fields = dp;
        while !fields.is_empty() {
            let (f, r) = der::next_part(fields)?;
            match f.tag {
                0xa0 => d.name = Some(point_name(f.contents)?),
                0x81 => d.reasons = Some(reason_bits(f.contents)?),
                0xa2 => d.crl_issuer = Some(general_names(f.contents)?),
                _ => return None,
            }
            fields = r;
        }
        out.push(d);
        rest = r;
    }
    Some(out)
}

/// A CRL's issuingDistributionPoint (the extension value), read into `scope`.
fn issuing_distribution_point(value: &[u8], issuer: &NormName, scope: &mut CrlScope) -> Option<()> {
    let (mut fields, end) = der::sequence_contents(value)?;
    if !end.is_empty() {
        return None;
    }
    let flag = |c: &[u8]| -> Option<bool> {
        match c {
            [0xff] => Some(true),
            [0x00] => Some(false),
            _ => None,
        }
    };
    while !fields.is_empty() {
        let (f, r) = der::next_part(fields)?;
        match f.tag {
            0xa0 => scope.dp_names = point_name(f.contents)?.resolve(issuer),
            0x81 => scope.only_user = flag(f.contents)?,
            0x82 => scope.only_ca = flag(f.contents)?,
            0x83 => scope.reasons = reason_bits(f.contents)?,
            0x84 => scope.indirect = flag(f.contents)?,
            0x85 => scope.only_attribute = flag(f.contents)?,
            _ => return None,
        }
        fields = r;
    }
    Some(())
}

fn read_crl<'a>(der: &'a [u8]) -> Option<ParsedCrl<'a>> {
    let (rest, crl) = CertificateRevocationList::from_der(der).ok()?;
    if !rest.is_empty() {
        return None;
    }
    let issuer = normalize(crl.issuer());
    let mut scope = Some(CrlScope {
        dp_names: Vec::new(),
        only_user: false,
        only_ca: false,
        only_attribute: false,
        indirect: false,
        reasons: ALL_REASONS,
    });
    for e in crl.extensions() {
        if e.oid == OID_X509_EXT_DELTA_CRL_INDICATOR {
            scope = None;
            continue;
        }
        match e.parsed_extension() {
            _ if e.oid == OID_X509_EXT_ISSUER_DISTRIBUTION_POINT => {
                if let Some(sc) = scope.as_mut() {
                    if issuing_distribution_point(e.value, &issuer, sc).is_none() {
                        scope = None;
                    }
                }
            }
            ParsedExtension::CRLNumber(_) | ParsedExtension::AuthorityKeyIdentifier(_) => {}
            _ if e.critical => scope = None,
            _ => {}
        }
    }
    Some(ParsedCrl {
        crl,
        issuer,
        der,
        scope,
    })
}

/// Why no path passed: the refusal of the candidate path that got furthest, or `None`
/// when no candidate path reached an anchor (or the end entity cannot be read).
pub(crate) type NoPath = Option<Refusal>;

/// Search the presented certificates and candidate anchors for a path RFC 5280 6.1
/// accepts, within the budgets.
pub(crate) fn validate<'a>(input: &Input<'a>) -> Result<Found, NoPath> {
    let leaf = Cert::read(input.leaf).ok_or(None)?;
    let mut v = Validator {
        input,
        leaf,
        pool: Vec::new(),
        anchors: Vec::new(),
        crls: Vec::new(),
        signatures: Cell::new(0),
        steps: Cell::new(0),
        refusal: RefCell::new(None),
        depth_cut: Cell::new(false),
    };
    // The end entity's own checks first: most refusals end here, before anything else
    // is parsed.
    if let Err(why) = v.basic_checks(&v.leaf, true, Role::EndEntity) {
        let subject = v.leaf.x.subject().as_raw().to_vec();
        return Err(Some(Refusal::At {
            position: 0,
            role: CertRole::EndEntity,
            subject,
            why,
        }));
    }
    v.pool = input.presented.iter().map(|d| Cert::read(d)).collect();
    v.anchors = input.anchors.iter().map(|d| Cert::read(d)).collect();
    v.crls = input.crls.iter().map(|c| read_crl(c.der())).collect();
    let mut chain = Vec::new();
    match v.search(&v.leaf, &mut chain, Role::EndEntity, 0, None) {
        Some(found) => Ok(found),
        None => {
            let cut = v.depth_cut.get();
            match v.refusal.into_inner() {
                Some((_, r)) => Err(Some(r)),
                None if cut => Err(Some(Refusal::TooDeep)),
                None => Err(None),
            }
        }
    }
}

/// Revocation status of one certificate (RFC 5280 6.3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Good,
    Revoked,
    Undetermined,
    /// A CRL that applies is past its nextUpdate and expiry is enforced.
    Stale,
}

impl<'a> Validator<'_, 'a> {
    fn signed_by(&self, signed: &[u8], spki: &[u8]) -> bool {
        if self.signatures.get() >= SIGNATURE_BUDGET {
            return false;
        }
        self.signatures.set(self.signatures.get() + 1);
        let (Some(s), Some((key_alg, key))) = (der::signed(signed), der::spki(spki)) else {
            return false;
        };
        self.input
            .algs
            .iter()
            .filter(|a| a.public_key_alg_id().as_ref() == key_alg)
            .filter(|a| a.signature_alg_id().as_ref() == s.alg)
            .any(|a| a.verify_signature(key, s.tbs, s.sig).is_ok())
    }

    fn step(&self) -> bool {
        self.steps.set(self.steps.get() + 1);
        self.steps.get() <= STEP_BUDGET
    }

    /// Depth-first from `start` (the end entity, or a CRL signer): anchors first, then
    /// presented certificates, each edge's signature verified before going further.
    fn search(
        &self,
        start: &Cert<'a>,
        chain: &mut Vec<usize>,
        role: Role,
        level: u8,
        anchor_only: Option<usize>,
    ) -> Option<Found> {
        let cur = match chain.last() {
            None => start,
            Some(&i) => self.pool.get(i)?.as_ref()?,
        };
        // What needs no signature is checked first: a CRL signer that is expired (...)
        // fails every path (the end entity was checked in `validate`).
        if chain.is_empty()
            && role == Role::CrlSigner
            && self.basic_checks(start, true, role).is_err()
        {
            return None;
        }
        for (ai, a) in self.anchors.iter().enumerate() {
            let Some(a) = a.as_ref().filter(|a| a.subject == cur.issuer) else {
                continue;
            };
            if anchor_only.is_some_and(|only| only != ai) {
                continue;
            }
            if !self.step() || !self.signed_by(cur.der, a.spki()) {
                continue;
            }
            if self.check(ai, chain, start, role, level) {
                return Some(Found {
                    anchor: ai,
                    intermediates: chain.clone(),
                });
            }
        }
        // One more intermediate keeps the path within max_depth (end entity, chain,
        // the new intermediate, an anchor).
        if chain.len() + 3 > self.input.max_depth {
            let more = self
                .pool
                .iter()
                .flatten()
                .any(|p| p.subject == cur.issuer && p.der != start.der);
            if more && role == Role::EndEntity {
                self.depth_cut.set(true);
            }
            return None;
        }
        for (pi, p) in self.pool.iter().enumerate() {
            let Some(p) = p.as_ref() else { continue };
            if chain.contains(&pi)
                || p.subject != cur.issuer
                || p.der == start.der
                || !self.valid_now(p)
            {
                continue;
            }
            if !self.step() || !self.signed_by(cur.der, p.spki()) {
                continue;
            }
            chain.push(pi);
            if let Some(found) = self.search(start, chain, role, level, anchor_only) {
                return Some(found);
            }
            chain.pop();
        }
        None
    }

    /// RFC 5280 6.1.2-6.1.5 on anchor, chain (top down), `start`. Signatures were
    /// verified during the search. A refusal of an end-entity path is remembered (see
    /// [`Refusal`]).
    fn check(
        &self,
        anchor: usize,
        chain: &[usize],
        start: &Cert<'a>,
        role: Role,
        level: u8,
    ) -> bool {
        match self.check_path(anchor, chain, start, role, level) {
            Ok(()) => true,
            Err((score, refusal)) => {
                if role == Role::EndEntity {
                    let mut best = self.refusal.borrow_mut();
                    if best.as_ref().is_none_or(|(s, _)| score > *s) {
                        *best = Some((score, refusal));
                    }
                }
                false
            }
        }
    }

    /// [`Self::check`]'s work: `Err((certificates that passed, why))`.
    fn check_path(
        &self,
        anchor: usize,
        chain: &[usize],
        start: &Cert<'a>,
        role: Role,
        level: u8,
    ) -> Result<(), (usize, Refusal)> {
        let Some(a) = self.anchors.get(anchor).and_then(Option::as_ref) else {
            return Err((0, Refusal::Other("no such anchor")));
        };
        // A pinned end-entity certificate anchors only itself.
        let pinned_itself = chain.is_empty() && a.der == start.der;
        if !der::cert_is_ca(a.der) && !pinned_itself {
            return Err((
                0,
                Refusal::Other("a pinned certificate anchors only itself"),
            ));
        }
        // The path below the anchor, top down.
        let mut path: Vec<&Cert<'a>> = Vec::with_capacity(chain.len() + 1);
        for &i in chain.iter().rev() {
            match self.pool.get(i).and_then(Option::as_ref) {
                Some(c) => path.push(c),
                None => return Err((0, Refusal::Other("unreadable certificate"))),
            }
        }
        path.push(start);
        let n = path.len();
        let mut max_path_length = n;
        let mut path_len_from = (a, n);
        if let Ok(Some(bc)) = a.x.basic_constraints() {
            if let Some(l) = bc.value.path_len_constraint {
                max_path_length = max_path_length.min(l as usize);
            }
        }
        let mut nc = Constraints::default();
        if !nc.add(a) {
            return Err((
                0,
                Refusal::Other("the anchor's nameConstraints cannot be read"),
            ));
        }
        for (i, c) in path.iter().enumerate() {
            let last = i + 1 == n;
            // Position in the chain as presented: 0 = the end entity.
            let at = |why: Why| {
                let position = n - 1 - i;
                let role = if position == 0 {
                    CertRole::EndEntity
                } else {
                    CertRole::Intermediate
                };
                let subject = c.x.subject().as_raw().to_vec();
                (
                    i,
                    Refusal::At {
                        position,
                        role,
                        subject,
                        why,
                    },
                )
            };
            let issuer = if i == 0 { a } else { path[i - 1] };
            if c.issuer != issuer.subject {
                return Err(at(Why::NameChaining));
            }
            self.basic_checks(c, last, role).map_err(at)?;
            if !self.input.crls.is_empty() {
                // A CRL signer may be covered by the CRL it signs itself (PKITS 4.14.30).
                let own_crls = last && role == Role::CrlSigner;
                match self.status(c, &path[..i], a, anchor, level, own_crls) {
                    Status::Good => {}
                    Status::Undetermined if self.input.allow_unknown_revocation => {}
                    Status::Undetermined => return Err(at(Why::RevocationUnknown)),
                    Status::Revoked => return Err(at(Why::Revoked)),
                    Status::Stale => return Err(at(Why::CrlExpired)),
                }
            }
            if (last || !c.self_issued()) && !nc.permits(c) {
                return Err(at(Why::NameConstraints));
            }
            if last {
                break;
            }
            // 6.1.4: prepare for the next certificate.
            if !c.is_ca {
                return Err(at(Why::NotCa));
            }
            if !c.self_issued() {
                if max_path_length == 0 {
                    let (by, position) = path_len_from;
                    let role = if position == n {
                        CertRole::Anchor
                    } else {
                        CertRole::Intermediate
                    };
                    return Err((
                        i,
                        Refusal::At {
                            position,
                            role,
                            subject: by.x.subject().as_raw().to_vec(),
                            why: Why::PathLen,
                        },
                    ));
                }
                max_path_length -= 1;
            }
            if let Ok(Some(bc)) = c.x.basic_constraints() {
                if let Some(l) = bc.value.path_len_constraint {
                    if (l as usize) < max_path_length {
                        max_path_length = l as usize;
                        path_len_from = (c, n - 1 - i);
                    }
                }
            }
            match c.x.key_usage() {
                Ok(Some(ku)) if !ku.value.key_cert_sign() => return Err(at(Why::NoKeyCertSign)),
                Ok(_) => {}
                Err(_) => return Err(at(Why::Malformed)),
            }
            if !nc.add(c) {
                return Err(at(Why::Malformed));
            }
        }
        Ok(())
    }

    /// Inside its validity period at the verification time.
    fn valid_now(&self, c: &Cert<'a>) -> bool {
        let v = c.x.validity();
        v.not_before.timestamp() <= self.input.now && self.input.now <= v.not_after.timestamp()
    }

    /// Validity, extensions this module cannot honour, extended key usage, and a CA as
    /// the end entity only when asked.
    fn basic_checks(&self, c: &Cert<'a>, last: bool, role: Role) -> Result<(), Why> {
        let v = c.x.validity();
        if v.not_before.timestamp() > self.input.now {
            return Err(Why::NotYetValid(v.not_before.timestamp()));
        }
        if self.input.now > v.not_after.timestamp() {
            return Err(Why::Expired(v.not_after.timestamp()));
        }
        if last && role == Role::EndEntity && c.is_ca && !self.input.allow_ca_leaf {
            return Err(Why::CaAsEndEntity);
        }
        for e in c.x.extensions() {
            let oid = &e.oid;
            if *oid == OID_X509_EXT_POLICY_CONSTRAINTS {
                // Without requireExplicitPolicy, explicit_policy never reaches 0 (RFC
                // 5280 6.1.4 (h), 6.1.5 (a)), so the policy tree cannot decide the
                // answer; inhibitPolicyMapping only matters with policyMappings, which
                // are refused below. Such a policyConstraints changes nothing: accepted
                // (the profile still asks that it be critical). With
                // requireExplicitPolicy the policy tree decides: fail closed.
                match e.parsed_extension() {
                    ParsedExtension::PolicyConstraints(pc)
                        if pc.require_explicit_policy.is_none() => {}
                    _ => return Err(Why::Policy),
                }
                continue;
            }
            if *oid == OID_X509_EXT_POLICY_MAPPINGS || *oid == OID_X509_EXT_INHIBIT_ANY_POLICY {
                return Err(Why::Policy); // policy processing is not implemented: fail closed
            }
            let known = [
                &OID_X509_EXT_BASIC_CONSTRAINTS,
                &OID_X509_EXT_KEY_USAGE,
                &OID_X509_EXT_EXTENDED_KEY_USAGE,
                &OID_X509_EXT_SUBJECT_ALT_NAME,
                &OID_X509_EXT_NAME_CONSTRAINTS,
                &OID_X509_EXT_AUTHORITY_KEY_IDENTIFIER,
                &OID_X509_EXT_SUBJECT_KEY_IDENTIFIER,
                &OID_X509_EXT_CRL_DISTRIBUTION_POINTS,
                // Informational for path validation; a critical one breaks RFC 5280
                // 4.2.2.1, which the profile reports as aia-malformed (and --allow
                // aia-malformed can lift).
                &OID_PKIX_AUTHORITY_INFO_ACCESS,
            ]
            .contains(&oid);
            if e.critical && !known {
                // Includes a critical certificatePolicies.
                return Err(Why::UnknownCriticalExtension(oid.to_id_string()));
            }
            if matches!(e.parsed_extension(), ParsedExtension::ParseError { .. }) {
                return Err(Why::Malformed);
            }
        }
        if role == Role::CrlSigner {
            return Ok(());
        }
        let ok = match c.x.extended_key_usage() {
            Ok(None) => true,
            Ok(Some(eku)) => match self.input.purpose {
                Purpose::Server => eku.value.server_auth,
                Purpose::Client => eku.value.client_auth,
            },
            Err(_) => false,
        };
        if ok {
            Ok(())
        } else {
            Err(Why::Purpose)
        }
    }

    /// RFC 5280 6.3.3 for `c`, whose issuer is the last of `above` (or the anchor):
    /// CRLs are taken while they add reasons, until every reason is covered.
    fn status(
        &self,
        c: &Cert<'a>,
        above: &[&Cert<'a>],
        anchor: &Cert<'a>,
        anchor_idx: usize,
        level: u8,
        own_crls: bool,
    ) -> Status {
        let dps: Vec<Dp> = match c
            .x
            .get_extension_unique(&OID_X509_EXT_CRL_DISTRIBUTION_POINTS)
        {
            Ok(Some(e)) => match distribution_points(e.value) {
                Some(d) => d,
                None => return Status::Undetermined,
            },
            Ok(None) => Vec::new(),
            Err(_) => return Status::Undetermined,
        };
        let mut covered: u16 = 0;
        for pc in self.crls.iter().flatten() {
            let Some(scope) = &pc.scope else { continue };
            // (b)(2)(ii)-(iv)
            if scope.only_attribute || (scope.only_user && c.is_ca) || (scope.only_ca && !c.is_ca) {
                continue;
            }
            // (b)(1), (b)(2)(i), (d): the distribution point this CRL serves.
            let Some(dp_reasons) = applicable(pc, scope, c, &dps) else {
                continue;
            };
            let interim = scope.reasons & dp_reasons;
            if interim & !covered == 0 {
                continue;
            }
            // (f)-(g): a signer with the CRL issuer's name, on this path or validated to
            // the same anchor, whose key verifies the CRL.
            let self_signed_crl =
                own_crls && pc.issuer == c.subject && self.signed_by(pc.der, c.spki());
            if !self_signed_crl && !self.crl_signed(pc, above, anchor, anchor_idx, c, level) {
                continue;
            }
            if self.input.enforce_crl_expiry
                && pc
                    .crl
                    .next_update()
                    .is_some_and(|t| t.timestamp() < self.input.now)
            {
                return Status::Stale;
            }
            // (i): entries; an indirect CRL names the issuer of the entries that follow
            // with certificateIssuer.
            let mut entry_issuer: Option<NormName> = Some(pc.issuer.clone());
            for r in pc.crl.iter_revoked_certificates() {
                if scope.indirect {
                    if let Some(e) = r.extensions().iter().find(|e| e.oid == OID_X509_EXT_ISSUER) {
                        entry_issuer = certificate_issuer(e.value);
                    }
                }
                if r.raw_serial() != c.x.raw_serial() {
                    continue;
                }
                match &entry_issuer {
                    Some(i) if *i != c.issuer => continue,
                    _ => {}
                }
                // removeFromCRL (8) belongs to delta CRLs, which are not used here.
                if r.reason_code().is_some_and(|(_, code)| code.0 == 8) {
                    continue;
                }
                return Status::Revoked;
            }
            covered |= interim;
            if covered == ALL_REASONS {
                return Status::Good;
            }
        }
        Status::Undetermined
    }

    fn crl_signed(
        &self,
        pc: &ParsedCrl<'a>,
        above: &[&Cert<'a>],
        anchor: &Cert<'a>,
        anchor_idx: usize,
        c: &Cert<'a>,
        level: u8,
    ) -> bool {
        let may_sign_crls = |s: &Cert<'_>| match s.x.key_usage() {
            Ok(Some(ku)) => ku.value.crl_sign(),
            Ok(None) => true,
            Err(_) => false,
        };
        // The issuer, then the path above it, then the anchor: already validated.
        let on_path = above.iter().rev().copied().chain(std::iter::once(anchor));
        for s in on_path {
            if s.subject == pc.issuer && may_sign_crls(s) && self.signed_by(pc.der, s.spki()) {
                return true;
            }
        }
        // A separate CRL signer among the presented certificates, validated (with its own
        // revocation status) to the same anchor.
        if level >= SIGNER_LEVELS {
            return false;
        }
        for s in self.pool.iter().flatten() {
            if s.subject != pc.issuer
                || s.der == c.der
                || above.iter().any(|a| a.der == s.der)
                || !may_sign_crls(s)
            {
                continue;
            }
            if !self.step() || !self.signed_by(pc.der, s.spki()) {
                continue;
            }
            let mut chain = Vec::new();
            if self
                .search(s, &mut chain, Role::CrlSigner, level + 1, Some(anchor_idx))
                .is_some()
            {
                return true;
            }
        }
        false
    }
}

/// Whether a CRL serves one of the certificate's distribution points (or, without
/// any, the certificate's issuer): the reasons that point asks for (ALL_REASONS when
/// it names none), or `None` when the CRL does not apply.
fn applicable(pc: &ParsedCrl<'_>, scope: &CrlScope, c: &Cert<'_>, dps: &[Dp]) -> Option<u16> {
    if dps.is_empty() {
        return (pc.issuer == c.issuer && scope.dp_names.is_empty()).then_some(ALL_REASONS);
    }
    let mut reasons = 0u16;
    for dp in dps {
        let crl_issuers = dp.crl_issuer.as_ref();
        let issuer_ok = match &crl_issuers {
            Some(names) => scope.indirect && names.contains(&DpName::Dn(pc.issuer.clone())),
            None => pc.issuer == c.issuer,
        };
        if !issuer_ok {
            continue;
        }
        let point_ok = if scope.dp_names.is_empty() {
            true
        } else {
            let relative_to = match &crl_issuers {
                Some(_) => &pc.issuer,
                None => &c.issuer,
            };
            let names = match &dp.name {
                Some(p) => p.resolve(relative_to),
                None => crl_issuers.cloned().unwrap_or_default(),
            };
            names.iter().any(|n| scope.dp_names.contains(n))
        };
        if point_ok {
            reasons |= dp.reasons.unwrap_or(ALL_REASONS);
        }
    }
    (reasons != 0).then_some(reasons)
}

/// The directory name in a certificateIssuer CRL entry extension (GeneralNames).
fn certificate_issuer(value: &[u8]) -> Option<NormName> {
    let (mut rest, _) = der::sequence_contents(value)?;
    while !rest.is_empty() {
        let (r, g) = GeneralName::from_der(rest).ok()?;
        if let GeneralName::DirectoryName(n) = g {
            return Some(normalize(&n));
        }
        rest = r;
    }
    None
}

/// The name constraints in force: one permitted set per CA that had one (a name must
/// satisfy every set that constrains its form), and the union of excluded subtrees.
#[derive(Default)]
struct Constraints<'a> {
    permitted: Vec<Vec<GeneralName<'a>>>,
    excluded: Vec<GeneralName<'a>>,
}

impl<'a> Constraints<'a> {
    /// Take a CA's nameConstraints; false when it cannot be read.
    fn add(&mut self, c: &'a Cert<'_>) -> bool {
        match c.x.name_constraints() {
            Ok(None) => true,
            Ok(Some(nc)) => {
                if let Some(p) = &nc.value.permitted_subtrees {
                    self.permitted
                        .push(p.iter().map(|s| s.base.clone()).collect());
                }
                if let Some(x) = &nc.value.excluded_subtrees {
                    self.excluded.extend(x.iter().map(|s| s.base.clone()));
                }
                true
            }
            Err(_) => false,
        }
    }

    /// RFC 5280 6.1.3 (b)-(c): the subject (and its emailAddress attributes) and every
    /// subjectAltName entry are inside every permitted set and outside every excluded
    /// subtree.
    fn permits(&self, c: &Cert<'_>) -> bool {
        if self.permitted.is_empty() && self.excluded.is_empty() {
            return true;
        }
        let mut names: Vec<Name<'_>> = Vec::new();
        if !c.subject.is_empty() {
            names.push(Name::Dn(&c.subject));
        }
        for atv in c.x.subject().iter_attributes() {
            if *atv.attr_type() == OID_PKCS9_EMAIL_ADDRESS {
                match atv.as_str() {
                    Ok(s) => names.push(Name::Other(GeneralName::RFC822Name(s))),
                    Err(_) => return false,
                }
            }
        }
        match c.x.subject_alternative_name() {
            Ok(Some(san)) => {
                for g in &san.value.general_names {
                    names.push(Name::Other(g.clone()));
                }
            }
            Ok(None) => {}
            Err(_) => return false,
        }
        names.iter().all(|n| {
            self.permitted.iter().all(|set| {
                let mut same = set.iter().filter(|b| same_form(n, b)).peekable();
                same.peek().is_none() || same.any(|b| matches(n, b) == Some(true))
            }) && !self
                .excluded
                .iter()
                .filter(|b| same_form(n, b))
                .any(|b| matches(n, b) != Some(false))
        })
    }
}

/// A name of a certificate to check against constraints.
enum Name<'n> {
    /// The subject, normalized.
    Dn(&'n NormName),
    /// A subjectAltName entry (or an emailAddress attribute as an rfc822Name).
    Other(GeneralName<'n>),
}

fn same_form(n: &Name<'_>, base: &GeneralName<'_>) -> bool {
    match n {
        Name::Dn(_) => matches!(base, GeneralName::DirectoryName(_)),
        Name::Other(g) => std::mem::discriminant(g) == std::mem::discriminant(base),
    }
}

/// `Some(true)` when `n` is inside the subtree `base`, `Some(false)` when it is not,
/// `None` when this module cannot tell (a form it does not process, or a malformed
/// name): such a name fails a permitted set and counts as excluded.
fn matches(n: &Name<'_>, base: &GeneralName<'_>) -> Option<bool> {
    match (n, base) {
        (Name::Dn(dn), GeneralName::DirectoryName(b)) => Some(dn_within(dn, &normalize(b))),
        (Name::Other(GeneralName::DirectoryName(d)), GeneralName::DirectoryName(b)) => {
            Some(dn_within(&normalize(d), &normalize(b)))
        }
        (Name::Other(GeneralName::DNSName(name)), GeneralName::DNSName(b)) => {
            Some(dns_within(name, b))
        }
        (Name::Other(GeneralName::RFC822Name(name)), GeneralName::RFC822Name(b)) => {
            let (local, host) = name.rsplit_once('@')?;
            Some(match b.rsplit_once('@') {
                Some((bl, bh)) => local == bl && host.eq_ignore_ascii_case(bh),
                None => host_within(host, b),
            })
        }
        (Name::Other(GeneralName::URI(uri)), GeneralName::URI(b)) => {
            // A URI without a host cannot satisfy a URI constraint (RFC 5280 4.2.1.10).
            Some(uri_host(uri).is_some_and(|h| host_within(h, b)))
        }
        (Name::Other(GeneralName::IPAddress(ip)), GeneralName::IPAddress(b)) => {
            if b.len() != ip.len() * 2 {
                return Some(false);
            }
            let (addr, mask) = b.split_at(ip.len());
            Some(
                ip.iter()
                    .zip(addr)
                    .zip(mask)
                    .all(|((x, a), m)| x & m == a & m),
            )
        }
        _ => None,
    }
}

/// directoryName subtrees: the name starts with the base's RDNs.
fn dn_within(dn: &NormName, base: &NormName) -> bool {
    dn.len() >= base.len() && dn[..base.len()] == base[..]
}

/// dNSName subtrees: the name itself or any name below it; empty matches all.
fn dns_within(name: &str, base: &str) -> bool {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    let base = base.trim_end_matches('.').to_ascii_lowercase();
    if base.is_empty() {
        return true;
    }
    if let Some(domain) = base.strip_prefix('.') {
        return name.len() > domain.len() + 1 && name.ends_with(&format!(".{domain}"));
    }
    name == base || name.ends_with(&format!(".{base}"))
}

/// rfc822Name and URI host subtrees: a host exactly, or (leading dot) any host below a
/// domain.
fn host_within(host: &str, base: &str) -> bool {
    if base.starts_with('.') {
        host.len() > base.len()
            && host
                .to_ascii_lowercase()
                .ends_with(&base.to_ascii_lowercase())
    } else {
        host.eq_ignore_ascii_case(base)
    }
}

/// The host of `scheme://[userinfo@]host[:port][/...]`.
fn uri_host(uri: &str) -> Option<&str> {
    let (_, rest) = uri.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if host_port.starts_with('[') {
        host_port.split_once(']').map(|(h, _)| &h[1..])?
    } else {
        host_port.split(':').next()?
    };
    (!host.is_empty()).then_some(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directory_strings_fold_case_and_spaces() {
        assert_eq!(fold("  Good   CA "), "good ca");
        assert_eq!(fold("GOOD CA"), fold("good ca"));
        assert_ne!(fold("Good CA"), fold("Good CB"));
        assert_eq!(text_of(30, &[0, b'A', 0, b'b']).as_deref(), Some("Ab"));
        assert_eq!(text_of(28, &[0, 0, 0, b'x']).as_deref(), Some("x"));
        assert_eq!(text_of(30, &[0]), None);
        assert_eq!(text_of(4, b"x"), None);
    }

    #[test]
    fn dns_subtrees() {
        assert!(dns_within("example.com", "example.com"));
        assert!(dns_within("www.Example.com", "example.com"));
        assert!(!dns_within("badexample.com", "example.com"));
        assert!(dns_within("a.example.com", ".example.com"));
        assert!(!dns_within("example.com", ".example.com"));
        assert!(dns_within("anything", ""));
    }

    #[test]
    fn mail_and_uri_subtrees() {
        let m = |n: &str, b: &str| {
            matches(
                &Name::Other(GeneralName::RFC822Name(n)),
                &GeneralName::RFC822Name(b),
            )
        };
        assert_eq!(m("Alice@example.com", "Alice@EXAMPLE.com"), Some(true));
        assert_eq!(m("bob@example.com", "Alice@example.com"), Some(false));
        assert_eq!(m("bob@example.com", "example.com"), Some(true));
        assert_eq!(m("bob@mail.example.com", "example.com"), Some(false));
        assert_eq!(m("bob@mail.example.com", ".example.com"), Some(true));
        assert_eq!(m("bob@example.com", ".example.com"), Some(false));
        assert_eq!(m("no-at-sign", "example.com"), None);
        assert_eq!(
            uri_host("http://user@Host.example:8080/p"),
            Some("Host.example")
        );
        assert_eq!(uri_host("https://[::1]:443/"), Some("::1"));
        assert_eq!(uri_host("urn:isbn:1"), None);
        let u = |n: &str, b: &str| matches(&Name::Other(GeneralName::URI(n)), &GeneralName::URI(b));
        assert_eq!(u("http://a.example.com/x", ".example.com"), Some(true));
        assert_eq!(u("http://example.com/x", ".example.com"), Some(false));
        assert_eq!(u("http://example.com/x", "example.com"), Some(true));
        assert_eq!(u("urn:isbn:1", "example.com"), Some(false));
    }

    #[test]
    fn ip_subtrees() {
        let ip = |n: &[u8], b: &[u8]| {
            matches(
                &Name::Other(GeneralName::IPAddress(n)),
                &GeneralName::IPAddress(b),
            )
        };
        assert_eq!(ip(&[10, 1, 2, 3], &[10, 0, 0, 0, 255, 0, 0, 0]), Some(true));
        assert_eq!(
            ip(&[11, 1, 2, 3], &[10, 0, 0, 0, 255, 0, 0, 0]),
            Some(false)
        );
        assert_eq!(ip(&[10, 1, 2, 3], &[10, 0, 0, 0]), Some(false));
    }
}
