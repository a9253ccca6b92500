//! Key generation on the token (`tlskit key new --pkcs11 URI`): the private half is
//! created sensitive and not extractable, so it never leaves the token.

use std::path::Path;

use cryptoki::mechanism::Mechanism;
use cryptoki::object::{Attribute, ObjectClass};

use crate::error::{call_name, rv_name};
use crate::spki;
use crate::token::{self, KeyKind};
use crate::uri::redact;
use crate::{Pkcs11Error, Pkcs11Uri};

/// Key types that can be generated on a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum GenType {
    /// ECDSA P-256.
    P256,
    /// ECDSA P-384.
    P384,
    /// RSA 2048.
    Rsa2048,
    /// RSA 3072.
    Rsa3072,
}

/// What [`generate`] made.
#[derive(Debug, Clone)]
pub struct Generated {
    /// The URI of the new private key (token, object, id, type=private; no PIN).
    pub uri: Pkcs11Uri,
    /// Its type.
    pub kind: KeyKind,
    /// Its SubjectPublicKeyInfo (DER).
    pub spki: Vec<u8>,
}

/// Generate a key pair on the token the URI names. The URI must name the new object
/// (`object=` and/or `id=`); an existing key with that label or id is never replaced.
/// Without `id=` a random 8-byte id is chosen (so the public and private halves pair up).
pub fn generate(
    uri: &Pkcs11Uri,
    module: Option<&Path>,
    kind: GenType,
) -> Result<Generated, Pkcs11Error> {
    let shown = redact(&uri.to_string());
    if uri.object.is_none() && uri.id.is_none() {
        return Err(Pkcs11Error::BadUri {
            uri: shown,
            reason: "name the new key with object=LABEL (and optionally id=%XX)".into(),
        });
    }
    let path = token::module_path(uri, module)
        .ok_or_else(|| Pkcs11Error::NoModule { uri: shown.clone() })?;
    let ctx = token::module(&path)?;
    let pin = token::pin(uri)?;
    let (slot, label) = token::find_slot(&ctx, uri)?;
    let call = |name: &str| {
        let shown = shown.clone();
        let name = name.to_string();
        move |e: cryptoki::error::Error| Pkcs11Error::Call {
            uri: shown,
            call: call_name(&e, &name),
            rv: rv_name(&e),
        }
    };
    let session = ctx.open_rw_session(slot).map_err(call("C_OpenSession"))?;
    token::login(&ctx, slot, &session, &path, uri, &label, pin.as_ref())?;
    // Never two keys under one name.
    for a in [
        uri.object
            .as_ref()
            .map(|l| Attribute::Label(l.as_bytes().to_vec())),
        uri.id.clone().map(Attribute::Id),
    ]
    .into_iter()
    .flatten()
    {
        let found = session
            .find_objects(&[Attribute::Class(ObjectClass::PRIVATE_KEY), a])
            .map_err(call("C_FindObjects"))?;
        if !found.is_empty() {
            return Err(Pkcs11Error::Object {
                uri: shown,
                reason: "a private key with this label or id already exists on the token; not replacing it".into(),
            });
        }
    }
    let id = match &uri.id {
        Some(id) => id.clone(),
        None => {
            let mut b = [0u8; 8];
            aws_lc_rs::rand::fill(&mut b).map_err(|_| Pkcs11Error::Unsupported {
                uri: shown.clone(),
                reason: "the system random generator failed".into(),
            })?;
            b.to_vec()
        }
    };
    let mut common = vec![Attribute::Token(true), Attribute::Id(id.clone())];
    if let Some(l) = &uri.object {
        common.push(Attribute::Label(l.as_bytes().to_vec()));
    }
    let mut public = common.clone();
    public.push(Attribute::Verify(true));
    let mut private = common;
    private.extend([
        Attribute::Private(true),
        Attribute::Sensitive(true),
        Attribute::Extractable(false),
        Attribute::Sign(true),
    ]);
    let mech = match kind {
        GenType::P256 | GenType::P384 => {
            let params = if kind == GenType::P256 {
                spki::P256_PARAMS
            } else {
                spki::P384_PARAMS
            };
            public.push(Attribute::EcParams(params.to_vec()));
            Mechanism::EccKeyPairGen
        }
        GenType::Rsa2048 | GenType::Rsa3072 => {
            let bits: u64 = if kind == GenType::Rsa2048 { 2048 } else { 3072 };
            public.push(Attribute::ModulusBits(bits.into()));
            public.push(Attribute::PublicExponent(vec![0x01, 0x00, 0x01]));
            Mechanism::RsaPkcsKeyPairGen
        }
    };
    let (_, priv_handle) = session
        .generate_key_pair(&mech, &public, &private)
        .map_err(call("C_GenerateKeyPair"))?;
    let (kind, spki, _) = token::public_of(&session, priv_handle, &shown)?;
    let mut out = uri.without_pin_value();
    out.token = Some(label);
    out.id = Some(id);
    out.object_type = Some(crate::ObjectType::Private);
    Ok(Generated {
        uri: out,
        kind,
        spki,
    })
}
