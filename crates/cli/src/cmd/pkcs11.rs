//! `tlskit pkcs11 list` (slots, tokens and key objects of a module) and the token side of
//! `tlskit key new --pkcs11 URI`.

use std::path::PathBuf;

use anyhow::Context;
use serde::Serialize;
use tlskit_pki::key::KeyType;

use crate::output::{print_json, CmdResult, Escaped, Outcome};
use tlskit_store::text::redact;

/// `tlskit pkcs11` subcommands.
#[derive(clap::Subcommand)]
pub(crate) enum Pkcs11Cmd {
    /// List the slots of a PKCS#11 module, their tokens and the key objects on them.
    #[command(
        after_help = "Examples:\n  tlskit pkcs11 list --module /usr/lib/softhsm/libsofthsm2.so\n  TLSKIT_PKCS11_PIN=1234 tlskit pkcs11 list --module /usr/lib/softhsm/libsofthsm2.so --json\n\nWithout a PIN only public objects are listed; with TLSKIT_PKCS11_PIN (or --pin-source)\nthe private keys too, each with a pkcs11: URI that names it. The PIN is never printed."
    )]
    List {
        /// The PKCS#11 module (default: the global --pkcs11-module, else TLSKIT_PKCS11_MODULE).
        #[arg(long, value_name = "PATH")]
        module: Option<PathBuf>,
        /// Read the user PIN from this file (default: TLSKIT_PKCS11_PIN).
        #[arg(long, value_name = "FILE")]
        pin_source: Option<PathBuf>,
        /// Print JSON (schema tlskit.pkcs11.list/1, docs/json.md).
        #[arg(long)]
        json: bool,
    },
}

#[derive(Serialize)]
struct ListJson {
    module: String,
    slots: Vec<SlotJson>,
}

#[derive(Serialize)]
struct SlotJson {
    id: u64,
    description: String,
    token: Option<TokenJson>,
}

#[derive(Serialize)]
struct TokenJson {
    label: String,
    manufacturer: String,
    model: String,
    serial: String,
    login_required: bool,
    pin_locked: bool,
    pin_count_low: bool,
    logged_in: bool,
    error: Option<String>,
    objects: Vec<ObjectJson>,
}

#[derive(Serialize)]
struct ObjectJson {
    class: &'static str,
    label: String,
    id: String,
    key_type: String,
    uri: String,
}

pub(crate) fn run(c: Pkcs11Cmd, global_module: Option<PathBuf>) -> CmdResult {
    match c {
        Pkcs11Cmd::List {
            module,
            pin_source,
            json,
        } => {
            let module = module
                .or(global_module)
                .or_else(|| std::env::var_os(tlskit_pkcs11::MODULE_ENV).map(PathBuf::from))
                .context("no PKCS#11 module: give --module PATH")?;
            let pin = match &pin_source {
                // A regular file of at most 4 KiB, opened without blocking (a FIFO is
                // refused): tlskit-io's bounded reader.
                Some(p) => {
                    let text = tlskit_io::read_to_string(p, 4096)
                        .with_context(|| format!("{}: cannot read the PIN file", p.display()))?;
                    Some(tlskit_pkcs11::AuthPin::new(
                        text.trim_end_matches(['\r', '\n']).to_string(),
                    ))
                }
                None => None,
            };
            let slots = tlskit_pkcs11::list(&module, pin)?;
            let out = ListJson {
                module: redact(&module.display().to_string()).into_owned(),
                slots: slots
                    .into_iter()
                    .map(|s| SlotJson {
                        id: s.id,
                        description: s.description,
                        token: s.token.map(|t| TokenJson {
                            label: t.label,
                            manufacturer: t.manufacturer,
                            model: t.model,
                            serial: t.serial,
                            login_required: t.login_required,
                            pin_locked: t.pin_locked,
                            pin_count_low: t.pin_count_low,
                            logged_in: t.logged_in,
                            error: t.error.map(|e| redact(&e).into_owned()),
                            objects: t
                                .objects
                                .into_iter()
                                .map(|o| ObjectJson {
                                    class: o.class,
                                    label: o.label,
                                    id: o.id,
                                    key_type: o.key_type,
                                    uri: o.uri,
                                })
                                .collect(),
                        }),
                    })
                    .collect(),
            };
            if json {
                print_json(&out)?;
                return Ok(Outcome::Success);
            }
            println!("module {}", out.module);
            for s in &out.slots {
                println!("slot {}: {}", s.id, Escaped(&s.description));
                let Some(t) = &s.token else {
                    println!("  (no initialised token)");
                    continue;
                };
                println!(
                    "  token \"{}\" ({} {}, serial {}){}{}",
                    Escaped(&t.label),
                    Escaped(&t.manufacturer),
                    Escaped(&t.model),
                    Escaped(&t.serial),
                    if t.pin_locked { ", PIN LOCKED" } else { "" },
                    if t.logged_in {
                        ""
                    } else if t.login_required {
                        ", not logged in: private keys not listed"
                    } else {
                        ""
                    }
                );
                if let Some(e) = &t.error {
                    println!("  error: {}", Escaped(e));
                }
                for o in &t.objects {
                    println!(
                        "    {:<7} {:<12} label \"{}\" id {}",
                        o.class,
                        Escaped(&o.key_type),
                        Escaped(&o.label),
                        o.id
                    );
                    println!("            {}", Escaped(&o.uri));
                }
            }
            Ok(Outcome::Success)
        }
    }
}

/// `tlskit key new --pkcs11 URI [--type TYPE]`: generate the key pair on the token.
pub(crate) fn key_new(uri: &str, key_type: KeyType) -> CmdResult {
    use tlskit_pkcs11::GenType;
    let kind = match key_type {
        KeyType::P256 => GenType::P256,
        KeyType::P384 => GenType::P384,
        KeyType::Rsa2048 => GenType::Rsa2048,
        KeyType::Rsa3072 => GenType::Rsa3072,
        other => anyhow::bail!(
            "--type {other} cannot be generated on a token here (p256, p384, rsa2048, rsa3072)"
        ),
    };
    let u = tlskit_pkcs11::Pkcs11Uri::parse(uri)?;
    let g = tlskit_pkcs11::generate(&u, None, kind)?;
    println!("generated a {} key on the token: {}", g.kind, g.uri);
    Ok(Outcome::Success)
}
