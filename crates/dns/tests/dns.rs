//! tlskit-dns's public API, fast tier: the exec provider with real scripts, a fake
//! provider behind the trait, the challenge name, and `query_txt` against a small
//! in-test UDP responder (answers made with hickory-proto).

#![allow(clippy::unwrap_used)]

use std::net::{SocketAddr, UdpSocket};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use hickory_proto::op::{Message, MessageType};
use hickory_proto::rr::rdata::TXT;
use hickory_proto::rr::{RData, Record};
use tlskit_dns::{challenge_name, query_txt, wait_for_txt, DnsError, DnsProvider, Exec};

fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

fn soon(s: u64) -> Instant {
    Instant::now() + Duration::from_secs(s)
}

#[test]
fn challenge_names() {
    assert_eq!(
        challenge_name("*.Example.test"),
        "_acme-challenge.example.test."
    );
    assert_eq!(
        challenge_name("example.test."),
        "_acme-challenge.example.test."
    );
    assert_eq!(
        challenge_name("a.b.example.test"),
        "_acme-challenge.a.b.example.test."
    );
}

#[test]
fn exec_provider_runs_the_hook_with_its_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls");
    let hook = script(
        dir.path(),
        "hook",
        &format!("echo \"$1 $2 $3\" >> {}", log.display()),
    );
    let p = Exec::new(&hook);
    p.add_txt("_acme-challenge.example.test.", "v4lue", soon(10))
        .unwrap();
    p.remove_txt("_acme-challenge.example.test.", "v4lue", soon(10))
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "add _acme-challenge.example.test. v4lue\nremove _acme-challenge.example.test. v4lue\n"
    );
    assert!(p.describe().starts_with("exec "), "{}", p.describe());
}

#[test]
fn exec_provider_reports_failure_with_escaped_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let hook = script(
        dir.path(),
        "fail",
        "printf 'no such zone\\033[31m red\\n' >&2; exit 3",
    );
    let e = Exec::new(&hook)
        .add_txt("_acme-challenge.x.test.", "v", soon(10))
        .unwrap_err();
    let s = e.to_string();
    assert!(matches!(e, DnsError::Exec { action: "add", .. }), "{s}");
    assert!(s.contains("exit status: 3"), "{s}");
    assert!(s.contains("no such zone\\x1b[31m red"), "{s}");
    assert!(!s.contains('\x1b'), "{s}");
    let e = Exec::new(&dir.path().join("absent"))
        .remove_txt("n.", "v", soon(10))
        .unwrap_err();
    assert!(e.to_string().contains("cannot start it"), "{e}");
}

#[test]
fn exec_provider_kills_a_hook_past_its_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let hook = script(dir.path(), "slow", "echo started >&2; exec sleep 30");
    let t = Instant::now();
    let e = Exec::new(&hook)
        .add_txt("n.", "v", Instant::now() + Duration::from_millis(300))
        .unwrap_err();
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    assert!(
        e.to_string()
            .contains("did not finish in time and was killed"),
        "{e}"
    );
    // What the hook started is stopped with it: a background child of the shell.
    let pid_file = dir.path().join("child.pid");
    let hook = script(
        dir.path(),
        "forks",
        &format!("sleep 30 & echo $! > {}; wait", pid_file.display()),
    );
    let e = Exec::new(&hook)
        .add_txt("n.", "v", Instant::now() + Duration::from_millis(500))
        .unwrap_err();
    assert!(e.to_string().contains("was killed"), "{e}");
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let stat = PathBuf::from(format!("/proc/{}/stat", pid.trim()));
    let gone = |p: &Path| {
        // Gone, or a zombie nobody has reaped yet: either way no longer running.
        std::fs::read_to_string(p).map_or(true, |s| {
            s.rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z'))
        })
    };
    let t = Instant::now();
    while !gone(&stat) && t.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        gone(&stat),
        "the hook's child {} outlived its deadline",
        pid.trim()
    );
    // Megabytes of standard error: kept to 4 KiB in the message.
    let hook = script(
        dir.path(),
        "chatty",
        "head -c 3000000 /dev/zero | tr '\\0' x >&2; exit 1",
    );
    let e = Exec::new(&hook)
        .add_txt("n.", "v", soon(20))
        .unwrap_err()
        .to_string();
    assert!(e.len() < 5000, "{}", e.len());
}

/// A provider that only records, behind the trait object the ACME side holds.
#[derive(Default)]
struct Fake {
    records: Mutex<Vec<(String, String)>>,
}

impl DnsProvider for Fake {
    fn add_txt(&self, name: &str, value: &str, _: Instant) -> Result<(), DnsError> {
        self.records
            .lock()
            .unwrap()
            .push((name.into(), value.into()));
        Ok(())
    }
    fn remove_txt(&self, name: &str, value: &str, _: Instant) -> Result<(), DnsError> {
        self.records
            .lock()
            .unwrap()
            .retain(|r| r != &(name.to_string(), value.to_string()));
        Ok(())
    }
    fn describe(&self) -> String {
        "fake".into()
    }
}

#[test]
fn the_trait_is_object_safe_and_removal_is_by_value() {
    let f = Fake::default();
    let p: &dyn DnsProvider = &f;
    p.add_txt("_acme-challenge.example.test.", "a", soon(1))
        .unwrap();
    p.add_txt("_acme-challenge.example.test.", "b", soon(1))
        .unwrap();
    p.remove_txt("_acme-challenge.example.test.", "a", soon(1))
        .unwrap();
    assert_eq!(
        *f.records.lock().unwrap(),
        vec![("_acme-challenge.example.test.".to_string(), "b".to_string())]
    );
    assert_eq!(p.primary(), None);
}

/// A UDP responder answering each question with `values` as TXT records, after `mangle`
/// (to make hostile answers).
fn responder(values: Vec<&'static str>, mangle: fn(&mut Message, &mut Vec<u8>)) -> SocketAddr {
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = sock.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok((n, from)) = sock.recv_from(&mut buf) {
            let q = Message::from_vec(&buf[..n]).unwrap();
            let mut a = Message::response(q.metadata.id, q.metadata.op_code);
            a.metadata.message_type = MessageType::Response;
            a.queries = q.queries.clone();
            for v in &values {
                a.answers.push(Record::from_rdata(
                    q.queries[0].name().clone(),
                    60,
                    RData::TXT(TXT::new(vec![v.to_string()])),
                ));
            }
            let mut bytes = a.to_vec().unwrap();
            mangle(&mut a, &mut bytes);
            let _ = sock.send_to(&bytes, from);
        }
    });
    addr
}

#[test]
fn query_txt_reads_values_and_refuses_hostile_answers() {
    let ok = responder(vec!["one", "two"], |_, _| {});
    let got = query_txt(ok, "_acme-challenge.example.test", soon(5)).unwrap();
    assert_eq!(got, vec!["one".to_string(), "two".to_string()]);
    // Wrong ID: ignored, and the deadline ends the wait.
    let bad_id = responder(vec!["x"], |_, b| b[0] ^= 0xff);
    let t = Instant::now();
    let e = query_txt(
        bad_id,
        "a.test",
        Instant::now() + Duration::from_millis(300),
    )
    .unwrap_err();
    assert!(matches!(e, DnsError::Timeout { .. }), "{e}");
    assert!(t.elapsed() < Duration::from_secs(3));
    // Garbage after a valid header.
    let garbage = responder(vec!["x"], |_, b| {
        b.truncate(12);
        b[5] = 9; // nine questions announced, none there
    });
    let e = query_txt(garbage, "a.test", soon(5)).unwrap_err();
    assert!(matches!(e, DnsError::Malformed { .. }), "{e}");
    // An answer to another question.
    let other = responder(vec!["x"], |m, b| {
        m.queries[0].set_name(hickory_proto::rr::Name::from_ascii("evil.test.").unwrap());
        *b = m.to_vec().unwrap();
    });
    let e = query_txt(other, "a.test", soon(5)).unwrap_err();
    assert!(e.to_string().contains("another question"), "{e}");
    assert!(matches!(
        query_txt(ok, "a..b", soon(1)),
        Err(DnsError::Name { .. })
    ));
}

#[test]
fn propagation_wait_has_a_deadline_and_names_what_is_missing() {
    let one = responder(vec!["one"], |_, _| {});
    wait_for_txt(
        &[one],
        "n.test",
        &["one".into()],
        Duration::from_millis(50),
        soon(5),
        &mut |_| {},
    )
    .unwrap();
    let mut rounds = 0;
    let e = wait_for_txt(
        &[one],
        "n.test",
        &["one".into(), "two".into()],
        Duration::from_millis(50),
        Instant::now() + Duration::from_millis(400),
        &mut |m| {
            rounds += 1;
            assert!(m[0].contains("1 of 2 values not there yet"), "{m:?}");
        },
    )
    .unwrap_err();
    assert!(rounds >= 1);
    assert!(matches!(e, DnsError::NotPropagated { .. }), "{e}");
    assert!(e.to_string().contains(&one.to_string()), "{e}");
}

/// A truncated UDP answer is asked again over TCP on the same address; a TCP answer is
/// read by its length prefix and checked like a UDP one.
#[test]
fn truncated_answers_are_asked_again_over_tcp() {
    use std::io::{Read, Write};
    // UDP and TCP on one port.
    let (udp, tcp) = loop {
        let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        if let Ok(udp) = UdpSocket::bind(tcp.local_addr().unwrap()) {
            break (udp, tcp);
        }
    };
    let addr = udp.local_addr().unwrap();
    let answer = |q: &Message, values: &[&str]| {
        let mut a = Message::response(q.metadata.id, q.metadata.op_code);
        a.queries = q.queries.clone();
        for v in values {
            a.answers.push(Record::from_rdata(
                q.queries[0].name().clone(),
                60,
                RData::TXT(TXT::new(vec![v.to_string()])),
            ));
        }
        a
    };
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok((n, from)) = udp.recv_from(&mut buf) {
            let q = Message::from_vec(&buf[..n]).unwrap();
            let mut a = answer(&q, &[]);
            a.metadata.truncation = true;
            let _ = udp.send_to(&a.to_vec().unwrap(), from);
        }
    });
    std::thread::spawn(move || {
        for (i, c) in tcp.incoming().enumerate() {
            let mut c = c.unwrap();
            let mut len = [0u8; 2];
            c.read_exact(&mut len).unwrap();
            let mut q = vec![0u8; usize::from(u16::from_be_bytes(len))];
            c.read_exact(&mut q).unwrap();
            let q = Message::from_vec(&q).unwrap();
            let mut bytes = answer(&q, &["over-tcp"]).to_vec().unwrap();
            if i == 1 {
                // The second connection: an answer with another ID.
                bytes[0] ^= 0xff;
            }
            let mut out = u16::try_from(bytes.len()).unwrap().to_be_bytes().to_vec();
            out.extend_from_slice(&bytes);
            c.write_all(&out).unwrap();
        }
    });
    let got = query_txt(addr, "big.example.test", soon(5)).unwrap();
    assert_eq!(got, vec!["over-tcp".to_string()]);
    let e = query_txt(addr, "big.example.test", soon(5)).unwrap_err();
    assert!(matches!(e, DnsError::Malformed { .. }), "{e}");
}

/// A fake authoritative server for `example.test`: SOA in the authority section of a
/// negative answer, `ns_count` NS records (the first at 127.0.0.1, the others at
/// 192.0.2.N), their addresses as glue.
fn zone_server(ns_count: u8) -> SocketAddr {
    use hickory_proto::op::ResponseCode;
    use hickory_proto::rr::rdata::{A, NS, SOA};
    use hickory_proto::rr::{Name, RecordType};
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = sock.local_addr().unwrap();
    std::thread::spawn(move || {
        let zone = Name::from_ascii("example.test.").unwrap();
        let ns = |i: u8| Name::from_ascii(format!("ns{i}.example.test.")).unwrap();
        let mut buf = [0u8; 4096];
        while let Ok((n, from)) = sock.recv_from(&mut buf) {
            let q = Message::from_vec(&buf[..n]).unwrap();
            let mut a = Message::response(q.metadata.id, q.metadata.op_code);
            a.queries = q.queries.clone();
            let (qname, qtype) = (q.queries[0].name().clone(), q.queries[0].query_type());
            if qtype == RecordType::NS && qname == zone {
                for i in 0..ns_count {
                    a.answers
                        .push(Record::from_rdata(zone.clone(), 60, RData::NS(NS(ns(i)))));
                    let ip = if i == 0 {
                        [127, 0, 0, 1]
                    } else {
                        [192, 0, 2, i]
                    };
                    a.additionals.push(Record::from_rdata(
                        ns(i),
                        60,
                        RData::A(A::from(std::net::Ipv4Addr::from(ip))),
                    ));
                }
            } else {
                a.metadata.response_code = ResponseCode::NXDomain;
                let soa = SOA::new(ns(0), zone.clone(), 1, 60, 60, 600, 60);
                a.authorities
                    .push(Record::from_rdata(zone.clone(), 60, RData::SOA(soa)));
            }
            let _ = sock.send_to(&a.to_vec().unwrap(), from);
        }
    });
    addr
}

#[test]
fn propagation_servers_are_the_zones_name_servers() {
    use tlskit_dns::propagation_servers;
    let primary = zone_server(2);
    let got = propagation_servers(
        "_acme-challenge.example.test.",
        None,
        Some(primary),
        soon(5),
    )
    .unwrap();
    // ns0 is at the primary's address: asked at the primary's port; ns1 on port 53.
    assert_eq!(got, vec![primary, "192.0.2.1:53".parse().unwrap()]);
    // --acme-dns-resolver: that server alone, nothing asked.
    let r: SocketAddr = "127.0.0.1:9".parse().unwrap();
    assert_eq!(
        propagation_servers(
            "_acme-challenge.example.test.",
            Some(r),
            Some(primary),
            soon(1)
        )
        .unwrap(),
        vec![r]
    );
    // A zone with 100 name servers: 16 taken.
    let many = zone_server(100);
    let got =
        propagation_servers("_acme-challenge.example.test.", None, Some(many), soon(5)).unwrap();
    assert_eq!(got.len(), 16, "{got:?}");
    // A server that knows no zone for the name.
    let none = responder(vec![], |_, _| {});
    let e =
        propagation_servers("_acme-challenge.other.test.", None, Some(none), soon(5)).unwrap_err();
    assert!(matches!(e, DnsError::NoZone { .. }), "{e}");
}

/// A name that is not one is refused before any packet is sent, quoted escaped once.
#[test]
fn an_invalid_name_is_quoted_escaped_once() {
    let nobody: SocketAddr = "127.0.0.1:9".parse().unwrap();
    let e = query_txt(nobody, "a..\x1b[31m", soon(1)).unwrap_err();
    assert!(matches!(e, DnsError::Name { .. }), "{e}");
    let s = e.to_string();
    assert!(
        s.starts_with("\"a..\\x1b[31m\" is not a valid DNS name: "),
        "{s}"
    );
}
