//! RFC 2136 dynamic updates of TXT records, signed with TSIG (RFC 8945) when a key is
//! given. The answer is checked: same ID, UPDATE opcode, NOERROR, and, with a key, a valid
//! TSIG signature over it (hickory-proto's verifier).

use std::net::SocketAddr;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

// The message is built here rather than with update_message::append, which asserts
// (panics) when the name is outside the zone.
use hickory_proto::op::update_message::UpdateMessage as _;
use hickory_proto::op::{Message, MessageType, OpCode, Query, ResponseCode};
use hickory_proto::rr::rdata::TXT;
use hickory_proto::rr::{DNSClass, Name, RData, Record, RecordType};

use crate::error::DnsError;
use crate::key::TsigKey;
use crate::query::show;
use crate::wire;

/// Add (`add`) or delete the TXT record `name` = `value` in `zone` on `server`.
#[allow(clippy::too_many_arguments)] // one call site, each argument a different thing
pub(crate) fn update_txt(
    server: SocketAddr,
    key: Option<&TsigKey>,
    zone: &Name,
    name: &Name,
    value: &str,
    ttl: u32,
    add: bool,
    deadline: Instant,
) -> Result<(), DnsError> {
    let what = format!(
        "update {} TXT record {}",
        if add { "adding the" } else { "removing the" },
        show(name)
    );
    let malformed = |reason: String| DnsError::Malformed {
        server,
        what: what.clone(),
        reason,
    };
    if !zone.zone_of(name) {
        return Err(malformed(format!(
            "{} is not in the zone {}",
            show(name),
            show(zone)
        )));
    }
    let txt = TXT::new(vec![value.to_string()]);
    let mut msg = Message::query();
    msg.metadata.op_code = OpCode::Update;
    msg.metadata.recursion_desired = false;
    let mut z = Query::new();
    z.set_name(zone.clone())
        .set_query_class(DNSClass::IN)
        .set_query_type(RecordType::SOA);
    msg.add_zone(z);
    let mut rec = Record::from_rdata(name.clone(), ttl, RData::TXT(txt));
    if add {
        rec.dns_class = DNSClass::IN;
    } else {
        // RFC 2136 2.5.4: delete an RR from an RRset: class NONE, TTL 0.
        rec.dns_class = DNSClass::NONE;
        rec.ttl = 0;
    }
    msg.add_update(rec);
    let mut verifier = None;
    if let Some(k) = key {
        let signer = k.signer().map_err(|r| DnsError::Tsig {
            server,
            what: what.clone(),
            reason: r.to_string(),
        })?;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        verifier = msg.finalize(&signer, now).map_err(|e| {
            malformed(format!(
                "cannot sign the update: {}",
                k.redact(&e.to_string())
            ))
        })?;
    }
    let id = msg.metadata.id;
    let bytes = msg
        .to_vec()
        .map_err(|e| malformed(format!("cannot encode the update: {e}")))?;
    let raw = wire::exchange(server, &bytes, id, deadline, &what)?;
    let answer = Message::from_vec(&raw)
        .map_err(|e| malformed(tlskit_x509::text::escape(&e.to_string()).into_owned()))?;
    if answer.metadata.message_type != MessageType::Response
        || answer.metadata.op_code != OpCode::Update
    {
        return Err(malformed("it is not an answer to an update".into()));
    }
    if answer.metadata.response_code != ResponseCode::NoError {
        let mut rcode = answer.metadata.response_code.to_string();
        if let Some(sig) = answer.signature() {
            if let Some(err) = sig.data.error {
                use hickory_proto::rr::rdata::tsig::TsigError;
                let word = match err {
                    TsigError::BadSig => "BADSIG".to_string(),
                    TsigError::BadKey => "BADKEY".to_string(),
                    TsigError::BadTime => "BADTIME (are the clocks apart?)".to_string(),
                    TsigError::BadTrunc => "BADTRUNC".to_string(),
                    TsigError::Unknown(n) => format!("code {n}"),
                };
                rcode.push_str(&format!(" (TSIG error {word})"));
            }
        }
        if answer.metadata.response_code == ResponseCode::NotAuth && key.is_some() {
            rcode.push_str("; is the TSIG key the one the server has for this zone?");
        }
        return Err(DnsError::Refused {
            server,
            what,
            rcode,
        });
    }
    if let (Some(v), Some(k)) = (verifier.as_mut(), key) {
        v.verify(&raw).map_err(|e| DnsError::Tsig {
            server,
            what: what.clone(),
            reason: tlskit_x509::text::escape(&k.redact(&e.to_string())).into_owned(),
        })?;
    }
    Ok(())
}
