//! Queries: TXT values (`query_txt`), the zone holding a name (SOA walk), and the
//! addresses of a zone's authoritative servers (NS, then A/AAAA).

use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

use hickory_proto::op::{Message, MessageType, OpCode, Query, ResponseCode};
use hickory_proto::rr::{Name, RData, RecordType};

use crate::error::DnsError;
use crate::wire;

/// Most TXT values returned from one answer.
const MAX_TXT: usize = 64;
/// Most name servers taken from a zone's NS set.
const MAX_NS: usize = 16;
/// Most addresses taken for one name server.
const MAX_ADDRS: usize = 4;

/// Parse a DNS name given as text (absolute: a missing final dot is added).
pub(crate) fn name(text: &str) -> Result<Name, DnsError> {
    let mut n = Name::from_ascii(text).map_err(|e| DnsError::Name {
        name: tlskit_x509::text::escape(text).into_owned(),
        reason: tlskit_x509::text::escape(&e.to_string()).into_owned(),
    })?;
    n.set_fqdn(true);
    Ok(n)
}

/// `name` in its printed form, lower case, with the final dot.
pub(crate) fn show(name: &Name) -> String {
    let mut s = name.to_ascii().to_ascii_lowercase();
    if !s.ends_with('.') {
        s.push('.');
    }
    tlskit_x509::text::escape(&s).into_owned()
}

/// Ask `server` one question; the answer is checked to answer it (ID, opcode, question)
/// before it is returned. `recursion`: set RD (a resolver), or not (an authoritative
/// server).
pub(crate) fn ask(
    server: SocketAddr,
    qname: &Name,
    qtype: RecordType,
    recursion: bool,
    deadline: Instant,
) -> Result<Message, DnsError> {
    let what = format!("{qtype} query for {}", show(qname));
    let mut msg = Message::query();
    msg.metadata.recursion_desired = recursion;
    let mut q = Query::new();
    q.set_name(qname.clone()).set_query_type(qtype);
    msg.add_query(q);
    let id = msg.metadata.id;
    let bytes = msg.to_vec().map_err(|e| DnsError::Malformed {
        server,
        what: what.clone(),
        reason: format!("cannot encode the question: {e}"),
    })?;
    let raw = wire::exchange(server, &bytes, id, deadline, &what)?;
    let answer = Message::from_vec(&raw).map_err(|e| DnsError::Malformed {
        server,
        what: what.clone(),
        reason: tlskit_x509::text::escape(&e.to_string()).into_owned(),
    })?;
    let same_question = answer.queries.len() == 1
        && answer.queries[0].name() == qname
        && answer.queries[0].query_type() == qtype;
    if answer.metadata.message_type != MessageType::Response
        || answer.metadata.op_code != OpCode::Query
        || !same_question
    {
        return Err(DnsError::Malformed {
            server,
            what,
            reason: "it answers another question".into(),
        });
    }
    match answer.metadata.response_code {
        ResponseCode::NoError | ResponseCode::NXDomain => Ok(answer),
        rc => Err(DnsError::Refused {
            server,
            what,
            rcode: rc.to_string(),
        }),
    }
}

/// The TXT values at `name` on `server`, each record's strings joined (as ACME's DNS-01
/// reads them), in the answer's order; empty when the name or the record does not exist.
/// The question is sent with recursion desired, so `server` may be a resolver or an
/// authoritative server; every wait ends at `deadline`. At most 64 values are returned.
pub fn query_txt(
    server: SocketAddr,
    name: &str,
    deadline: Instant,
) -> Result<Vec<String>, DnsError> {
    let qname = self::name(name)?;
    let answer = ask(server, &qname, RecordType::TXT, true, deadline)?;
    Ok(txt_values(&answer, &qname))
}

/// The A and AAAA addresses of `name` as `server` answers (recursion desired), at most 4
/// of each; empty when the name has none. An ACME server resolves identifiers with it
/// (`tlskit ca serve --resolver`).
pub fn query_addrs(
    server: SocketAddr,
    name: &str,
    deadline: Instant,
) -> Result<Vec<IpAddr>, DnsError> {
    let qname = self::name(name)?;
    let mut out = Vec::new();
    for t in [RecordType::A, RecordType::AAAA] {
        let answer = ask(server, &qname, t, true, deadline)?;
        out.extend(glue(&answer, &qname));
    }
    Ok(out)
}

fn txt_values(answer: &Message, qname: &Name) -> Vec<String> {
    answer
        .answers
        .iter()
        .filter(|r| &r.name == qname)
        .filter_map(|r| match &r.data {
            RData::TXT(t) => {
                let mut v = Vec::new();
                for part in t.txt_data.iter() {
                    v.extend_from_slice(part);
                }
                Some(String::from_utf8_lossy(&v).into_owned())
            }
            _ => None,
        })
        .take(MAX_TXT)
        .collect()
}

/// The zone holding `name`, as `server` knows it: the owner of the SOA in the answer to an
/// SOA question (or in the authority section of a negative answer), walking up one label
/// at a time when neither is there.
pub(crate) fn find_zone(
    server: SocketAddr,
    name: &Name,
    deadline: Instant,
) -> Result<Name, DnsError> {
    let mut candidate = name.clone();
    loop {
        let answer = ask(server, &candidate, RecordType::SOA, true, deadline)?;
        let soa_owner = answer
            .answers
            .iter()
            .chain(answer.authorities.iter())
            .find(|r| matches!(r.data, RData::SOA(_)) && r.name.zone_of(name))
            .map(|r| r.name.clone());
        if let Some(zone) = soa_owner {
            return Ok(zone);
        }
        if candidate.is_root() {
            return Err(DnsError::NoZone {
                name: show(name),
                server,
            });
        }
        candidate = candidate.base_name();
    }
}

/// The addresses of `zone`'s name servers (NS records, then their A/AAAA, from the
/// answer's additional section or asked of `server`), at most 16 servers and 4 addresses
/// each, all on port 53.
pub(crate) fn zone_servers(
    server: SocketAddr,
    zone: &Name,
    deadline: Instant,
) -> Result<Vec<(Name, Vec<IpAddr>)>, DnsError> {
    let answer = ask(server, zone, RecordType::NS, true, deadline)?;
    let mut out = Vec::new();
    let ns: Vec<Name> = answer
        .answers
        .iter()
        .filter(|r| &r.name == zone)
        .filter_map(|r| match &r.data {
            RData::NS(n) => Some(n.0.clone()),
            _ => None,
        })
        .take(MAX_NS)
        .collect();
    for host in ns {
        let mut addrs: Vec<IpAddr> = glue(&answer, &host);
        if addrs.is_empty() {
            for t in [RecordType::A, RecordType::AAAA] {
                if let Ok(a) = ask(server, &host, t, true, deadline) {
                    addrs.extend(glue(&a, &host));
                }
            }
        }
        addrs.truncate(MAX_ADDRS);
        out.push((host, addrs));
    }
    Ok(out)
}

fn glue(m: &Message, host: &Name) -> Vec<IpAddr> {
    m.answers
        .iter()
        .chain(m.additionals.iter())
        .filter(|r| &r.name == host)
        .filter_map(|r| match &r.data {
            RData::A(a) => Some(IpAddr::V4(a.0)),
            RData::AAAA(a) => Some(IpAddr::V6(a.0)),
            _ => None,
        })
        .take(MAX_ADDRS)
        .collect()
}
