//! `tlskit pkcs11 list`: the slots of a module, their tokens and the key objects on them.
//! Without a PIN only public objects are visible; with one (`TLSKIT_PKCS11_PIN`) the
//! private keys are listed too. A token that fails (wrong PIN, removed) is reported in its
//! entry and the rest is still listed.

use std::path::Path;

use cryptoki::object::{Attribute, AttributeType, ObjectClass};
use cryptoki::types::AuthPin;

use crate::error::{call_name, rv_name};
use crate::token::{self, escape};
use crate::uri::{encode, Pkcs11Uri};
use crate::Pkcs11Error;

/// One slot.
#[derive(Debug, Clone)]
pub struct SlotEntry {
    /// The slot id.
    pub id: u64,
    /// Its description.
    pub description: String,
    /// The token in it, if any.
    pub token: Option<TokenEntry>,
}

/// One token.
#[derive(Debug, Clone)]
pub struct TokenEntry {
    /// Label.
    pub label: String,
    /// Manufacturer.
    pub manufacturer: String,
    /// Model.
    pub model: String,
    /// Serial number.
    pub serial: String,
    /// Whether a login is needed for private objects.
    pub login_required: bool,
    /// Whether the user PIN is locked.
    pub pin_locked: bool,
    /// Whether the last wrong PIN left few tries (CKF_USER_PIN_COUNT_LOW).
    pub pin_count_low: bool,
    /// Whether the private keys were listed (logged in).
    pub logged_in: bool,
    /// Key objects.
    pub objects: Vec<ObjectEntry>,
    /// Why the listing of this token is incomplete, if it is.
    pub error: Option<String>,
}

/// One key object.
#[derive(Debug, Clone)]
pub struct ObjectEntry {
    /// `private`, `public` or `cert`.
    pub class: &'static str,
    /// Label (CKA_LABEL).
    pub label: String,
    /// Id (CKA_ID), lower-case hex.
    pub id: String,
    /// `ECDSA P-256`, `RSA 2048`, ... (keys only; empty when unknown).
    pub key_type: String,
    /// A URI that names it.
    pub uri: String,
}

/// List the slots of the module at `module`.
pub fn list(module: &Path, pin: Option<AuthPin>) -> Result<Vec<SlotEntry>, Pkcs11Error> {
    let ctx = token::module(module)?;
    let shown = module.display().to_string();
    let slots = ctx.get_all_slots().map_err(|e| Pkcs11Error::Call {
        uri: shown.clone(),
        call: call_name(&e, "C_GetSlotList"),
        rv: rv_name(&e),
    })?;
    let pin = pin.or_else(|| {
        std::env::var(token::PIN_ENV)
            .ok()
            .filter(|v| !v.is_empty())
            .map(AuthPin::new)
    });
    let mut out = Vec::new();
    for slot in slots {
        let description = ctx
            .get_slot_info(slot)
            .map(|i| escape(i.slot_description().trim_end()))
            .unwrap_or_default();
        let mut entry = SlotEntry {
            id: slot.id(),
            description,
            token: None,
        };
        let Ok(info) = ctx.get_token_info(slot) else {
            out.push(entry);
            continue;
        };
        if !info.token_initialized() {
            out.push(entry);
            continue;
        }
        let label = info.label().trim_end().to_string();
        let mut t = TokenEntry {
            label: escape(&label),
            manufacturer: escape(info.manufacturer_id().trim_end()),
            model: escape(info.model().trim_end()),
            serial: escape(info.serial_number().trim_end()),
            login_required: info.login_required(),
            pin_locked: info.user_pin_locked(),
            pin_count_low: info.user_pin_count_low(),
            logged_in: false,
            objects: Vec::new(),
            error: None,
        };
        match ctx.open_ro_session(slot) {
            Err(e) => {
                t.error = Some(format!(
                    "{}: {}",
                    call_name(&e, "C_OpenSession"),
                    rv_name(&e)
                ))
            }
            Ok(session) => {
                if pin.is_some() && info.login_required() {
                    let uri = Pkcs11Uri {
                        token: Some(label.clone()),
                        ..Default::default()
                    };
                    match token::login(&ctx, slot, &session, module, &uri, &label, pin.as_ref()) {
                        Ok(()) => t.logged_in = true,
                        Err(e) => t.error = Some(e.to_string()),
                    }
                }
                for (class, name) in [
                    (ObjectClass::PRIVATE_KEY, "private"),
                    (ObjectClass::PUBLIC_KEY, "public"),
                    (ObjectClass::CERTIFICATE, "cert"),
                ] {
                    let Ok(found) = session.find_objects(&[Attribute::Class(class)]) else {
                        continue;
                    };
                    for h in found {
                        let label_b =
                            token::get_attr(&session, h, AttributeType::Label).unwrap_or_default();
                        let id =
                            token::get_attr(&session, h, AttributeType::Id).unwrap_or_default();
                        let key_type = if class == ObjectClass::CERTIFICATE {
                            String::new()
                        } else if class == ObjectClass::PRIVATE_KEY {
                            token::public_of(&session, h, "")
                                .map(|(k, _, _)| k.to_string())
                                .unwrap_or_default()
                        } else {
                            match token::key_type(&session, h) {
                                Some(k) if k == cryptoki::object::KeyType::EC => "EC".into(),
                                Some(k) if k == cryptoki::object::KeyType::RSA => "RSA".into(),
                                _ => String::new(),
                            }
                        };
                        let mut uri = format!("pkcs11:token={}", encode(label.as_bytes()));
                        if !label_b.is_empty() {
                            uri.push_str(&format!(";object={}", encode(&label_b)));
                        }
                        if !id.is_empty() {
                            let hex: String = id.iter().map(|b| format!("%{b:02X}")).collect();
                            uri.push_str(&format!(";id={hex}"));
                        }
                        uri.push_str(&format!(";type={name}"));
                        t.objects.push(ObjectEntry {
                            class: name,
                            label: escape(&String::from_utf8_lossy(&label_b)),
                            id: id.iter().map(|b| format!("{b:02x}")).collect(),
                            key_type,
                            uri,
                        });
                    }
                }
            }
        }
        entry.token = Some(t);
        out.push(entry);
    }
    Ok(out)
}
