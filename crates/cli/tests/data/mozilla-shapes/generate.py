#!/usr/bin/env python3
"""Synthetic roots of the same shape as Debian's Mozilla roots, each with a compliant
intermediate under it (the corpus of crates/cli/tests/net/mozilla_shapes.rs; README.md
next to this file says what it is and how it was made).

For every root certificate in SRC (default /usr/share/ca-certificates/mozilla) this
writes, under OUT:

  roots/SLUG.pem          a self-signed root with a fresh key of the original's type
                          (RSA keys are 2048 bits, EC keys on the same curve, EdDSA the
                          same algorithm) and otherwise the original's shape, DER-exact:
                          version, serial (zero included), signature AlgorithmIdentifier
                          and hash (SHA-1 self-signatures included), issuer and subject,
                          notBefore, and every extension with its criticality, copied
                          byte for byte; subjectKeyIdentifier and authorityKeyIdentifier
                          are rebuilt in the original's form (the same key-id method, an
                          AKI keyIdentifier equal to the SKI or not, authorityCertIssuer
                          and serial copied) from the new key. notAfter keeps its ASN.1
                          time type and is moved to 2049-12-31 at the earliest, so the
                          committed corpus does not expire with its originals.
  intermediates/SLUG.pem  a compliant intermediate signed by that root (P-256 key,
                          critical basicConstraints cA pathLen 0, critical keyUsage
                          keyCertSign cRLSign, SKI, AKI = the root's SKI, EKU serverAuth
                          clientAuth), and intermediates/SLUG.key its PKCS#8 key. Leaves
                          are made by the test under these, so they never expire.
  manifest.tsv            one line per root: slug, original file, original SHA-256,
                          key type, serial, signature hash, anomalies.

With --check it generates nothing and compares the corpus in OUT with its originals in
SRC (matched by fingerprint), field by field.

Only the Python standard library and the openssl command line are used: rcgen and
pyca/cryptography refuse serial 0 and SHA-1 signatures.
"""

import argparse
import concurrent.futures
import datetime
import hashlib
import os
import re
import secrets
import subprocess
import sys
import tempfile

# ---------------------------------------------------------------- DER reading/writing


def tlv(data, i):
    """(tag, value start, value end) of the DER element at data[i]."""
    tag = data[i]
    if tag & 0x1F == 0x1F:
        raise ValueError("high tag numbers are not used in certificates")
    n = data[i + 1]
    j = i + 2
    if n & 0x80:
        k = n & 0x7F
        if k == 0 or k > 4:
            raise ValueError("unsupported DER length")
        n = int.from_bytes(data[j : j + k], "big")
        j += k
    if j + n > len(data):
        raise ValueError("DER element runs past its container")
    return tag, j, j + n


def children(data, start, end):
    """[(tag, raw element bytes, value bytes)] of the elements in data[start:end]."""
    out = []
    i = start
    while i < end:
        tag, vs, ve = tlv(data, i)
        out.append((tag, data[i:ve], data[vs:ve]))
        i = ve
    return out


def enc_len(n):
    if n < 0x80:
        return bytes([n])
    b = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(b)]) + b


def der(tag, value):
    return bytes([tag]) + enc_len(len(value)) + value


def seq(*parts):
    return der(0x30, b"".join(parts))


def oid(dotted):
    arcs = [int(a) for a in dotted.split(".")]
    body = bytearray([40 * arcs[0] + arcs[1]])
    for a in arcs[2:]:
        chunk = [a & 0x7F]
        a >>= 7
        while a:
            chunk.append(0x80 | (a & 0x7F))
            a >>= 7
        body.extend(reversed(chunk))
    return der(0x06, bytes(body))


def oid_text(value):
    arcs = [value[0] // 40, value[0] % 40]
    a = 0
    for b in value[1:]:
        a = (a << 7) | (b & 0x7F)
        if not b & 0x80:
            arcs.append(a)
            a = 0
    return ".".join(str(x) for x in arcs)


def integer(n):
    b = n.to_bytes(max(1, (n.bit_length() + 8) // 8), "big")
    return der(0x02, b)


def utc_time(t):
    return der(0x17, t.strftime("%y%m%d%H%M%SZ").encode())


def ext(oid_dotted, critical, value):
    crit = der(0x01, b"\xff") if critical else b""
    return seq(oid(oid_dotted), crit, der(0x04, value))


def pem(label, data):
    import base64

    b64 = base64.b64encode(data).decode()
    lines = [b64[i : i + 64] for i in range(0, len(b64), 64)]
    return "-----BEGIN %s-----\n%s\n-----END %s-----\n" % (label, "\n".join(lines), label)


def pem_der(text):
    import base64

    m = re.search(r"-----BEGIN CERTIFICATE-----(.*?)-----END CERTIFICATE-----", text, re.S)
    if not m:
        raise ValueError("no certificate in the file")
    return base64.b64decode("".join(m.group(1).split()))


# ---------------------------------------------------------------- names of things

SKI, AKI, BC, KU, EKU, NC = (
    "2.5.29.14",
    "2.5.29.35",
    "2.5.29.19",
    "2.5.29.15",
    "2.5.29.37",
    "2.5.29.30",
)
EXT_NAMES = {
    SKI: "subjectKeyIdentifier",
    AKI: "authorityKeyIdentifier",
    BC: "basicConstraints",
    KU: "keyUsage",
    EKU: "extendedKeyUsage",
    NC: "nameConstraints",
    "2.5.29.32": "certificatePolicies",
    "2.5.29.31": "cRLDistributionPoints",
    "2.5.29.17": "subjectAltName",
    "2.5.29.18": "issuerAltName",
    "1.3.6.1.5.5.7.1.1": "authorityInfoAccess",
    "2.16.840.1.113730.1.1": "netscapeCertType",
    "2.16.840.1.113730.1.13": "netscapeComment",
}
# signature AlgorithmIdentifier OID -> (key family, openssl digest)
SIG_ALGS = {
    "1.2.840.113549.1.1.4": ("rsa", "md5"),
    "1.2.840.113549.1.1.5": ("rsa", "sha1"),
    "1.2.840.113549.1.1.11": ("rsa", "sha256"),
    "1.2.840.113549.1.1.12": ("rsa", "sha384"),
    "1.2.840.113549.1.1.13": ("rsa", "sha512"),
    "1.2.840.10045.4.1": ("ec", "sha1"),
    "1.2.840.10045.4.3.2": ("ec", "sha256"),
    "1.2.840.10045.4.3.3": ("ec", "sha384"),
    "1.2.840.10045.4.3.4": ("ec", "sha512"),
    "1.3.101.112": ("ed25519", None),
    "1.3.101.113": ("ed448", None),
}
CURVES = {
    "1.2.840.10045.3.1.7": "P-256",
    "1.3.132.0.34": "P-384",
    "1.3.132.0.35": "P-521",
}
# The intermediate's signature by the root, per root key: a sane modern choice.
INTER_SIG = {
    "rsa": ("1.2.840.113549.1.1.11", "sha256", True),
    "P-256": ("1.2.840.10045.4.3.2", "sha256", False),
    "P-384": ("1.2.840.10045.4.3.3", "sha384", False),
    "P-521": ("1.2.840.10045.4.3.4", "sha512", False),
    "ed25519": ("1.3.101.112", None, False),
    "ed448": ("1.3.101.113", None, False),
}

# ---------------------------------------------------------------- the original


class Original:
    """The parts of a root certificate the synthetic one copies or rebuilds."""

    def __init__(self, data):
        self.der = data
        _, cs, ce = tlv(data, 0)
        parts = children(data, cs, ce)
        if len(parts) != 3:
            raise ValueError("a certificate is a SEQUENCE of three elements")
        tbs_raw = parts[0][1]
        self.outer_sig_alg = parts[1][1]
        _, ts, te = tlv(tbs_raw, 0)
        items = children(tbs_raw, ts, te)
        k = 0
        self.version = None
        if items[0][0] == 0xA0:
            self.version = items[0][1]
            k = 1
        self.serial_raw = items[k][1]
        self.serial = int.from_bytes(items[k][2], "big", signed=True)
        self.sig_alg = items[k + 1][1]
        self.issuer = items[k + 2][1]
        self.validity = items[k + 3][2]
        self.subject = items[k + 4][1]
        self.spki = items[k + 5][1]
        self.unique_ids = [raw for tag, raw, _ in items[k + 6 :] if tag in (0xA1, 0xA2)]
        self.extensions = []  # (oid, critical element raw or b"", value, whole raw)
        for tag, raw, value in items[k + 6 :]:
            if tag != 0xA3:
                continue
            _, es, ee = tlv(value, 0)
            for _, e_raw, e_val in children(value, es, ee):
                fields = children(e_val, 0, len(e_val))
                e_oid = oid_text(fields[0][2])
                crit = b""
                if len(fields) == 3:
                    crit = fields[1][1]
                self.extensions.append((e_oid, crit, fields[-1][2], e_raw))
        sig_oid = oid_text(children(self.sig_alg, *tlv(self.sig_alg, 0)[1:])[0][2])
        if sig_oid not in SIG_ALGS:
            raise ValueError("signature algorithm %s is not supported here" % sig_oid)
        self.sig_family, self.digest = SIG_ALGS[sig_oid]
        self.sig_name = self.digest or sig_oid
        alg = children(self.spki, *tlv(self.spki, 0)[1:])
        alg_parts = children(alg[0][1], *tlv(alg[0][1], 0)[1:])
        key_oid = oid_text(alg_parts[0][2])
        self.key_bits = alg[1][2][1:]  # BIT STRING contents after the unused-bits byte
        if key_oid == "1.2.840.113549.1.1.1":
            self.key = "rsa"
            mod = children(self.key_bits, *tlv(self.key_bits, 0)[1:])[0][2]
            self.key_label = "RSA-%d" % (int.from_bytes(mod, "big").bit_length())
        elif key_oid == "1.2.840.10045.2.1":
            curve = oid_text(alg_parts[1][2])
            if curve not in CURVES:
                raise ValueError("curve %s is not supported here" % curve)
            self.key = CURVES[curve]
            self.key_label = "EC-" + self.key
        elif key_oid == "1.3.101.112":
            self.key, self.key_label = "ed25519", "Ed25519"
        elif key_oid == "1.3.101.113":
            self.key, self.key_label = "ed448", "Ed448"
        else:
            raise ValueError("key algorithm %s is not supported here" % key_oid)
        self.not_before_raw, self.not_after_raw = [
            raw for _, raw, _ in children(self.validity, 0, len(self.validity))
        ]

    def ext_value(self, e_oid):
        for o, _, v, _ in self.extensions:
            if o == e_oid:
                return v
        return None


def key_id_method(key_bits, value):
    """How a key identifier was derived from key_bits (None: not derived from it)."""
    h1 = hashlib.sha1(key_bits).digest()
    if value == h1:
        return "sha1"
    if len(value) == 8 and value[0] >> 4 == 4 and value[1:] == h1[-7:] and (value[0] & 0xF) == (h1[-8] & 0xF):
        return "sha1-60"
    h256 = hashlib.sha256(key_bits).digest()
    if value == h256[: len(value)]:
        return "sha256-%d" % len(value)
    return None


def key_id(method, key_bits, length):
    h1 = hashlib.sha1(key_bits).digest()
    if method == "sha1":
        return h1
    if method == "sha1-60":
        return bytes([0x40 | (h1[-8] & 0xF)]) + h1[-7:]
    # Not derived from the key by a known method: the same length, from the new key.
    return hashlib.sha256(key_bits).digest()[:length]


# ---------------------------------------------------------------- openssl


def openssl(*args, data=None):
    r = subprocess.run(["openssl", *args], input=data, capture_output=True)
    if r.returncode != 0:
        raise RuntimeError("openssl %s: %s" % (" ".join(args), r.stderr.decode(errors="replace").strip()))
    return r.stdout


def new_key(kind, path):
    if kind == "rsa":
        opts = ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]
    elif kind.startswith("P-"):
        opts = ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:" + kind, "-pkeyopt", "ec_param_enc:named_curve"]
    else:
        opts = ["-algorithm", kind.upper()]
    openssl("genpkey", *opts, "-out", path)
    return openssl("pkey", "-in", path, "-pubout", "-outform", "DER")


def sign(key_path, digest, tbs, tmp):
    tbs_path = os.path.join(tmp, "tbs.der")
    with open(tbs_path, "wb") as f:
        f.write(tbs)
    if digest is None:  # EdDSA signs the message itself
        return openssl("pkeyutl", "-sign", "-rawin", "-inkey", key_path, "-in", tbs_path)
    return openssl("dgst", "-" + digest, "-sign", key_path, tbs_path)


def spki_bits(spki):
    alg = children(spki, *tlv(spki, 0)[1:])
    return alg[1][2][1:]


def certificate(tbs, sig_alg, signature):
    return seq(tbs, sig_alg, der(0x03, b"\x00" + signature))


# ---------------------------------------------------------------- one root


FAR = datetime.datetime(2049, 12, 31, 23, 59, 59, tzinfo=datetime.timezone.utc)


def parse_time(raw):
    tag, s, e = tlv(raw, 0)
    text = raw[s:e].decode()
    if tag == 0x17:
        t = datetime.datetime.strptime(text, "%y%m%d%H%M%SZ")
        if t.year >= 2050:
            t = t.replace(year=t.year - 100)
    else:
        t = datetime.datetime.strptime(text, "%Y%m%d%H%M%SZ")
    return tag, t.replace(tzinfo=datetime.timezone.utc)


def synthetic_root(orig, key_path, tmp):
    """(root DER, root key bits, root SKI or None, anomalies)."""
    anomalies = []
    new_spki = new_key(orig.key, key_path)
    bits = spki_bits(new_spki)
    if orig.serial == 0:
        anomalies.append("serial-zero")
    elif orig.serial < 0:
        anomalies.append("serial-negative")
    if len(orig.serial_raw) - 2 > 20:
        anomalies.append("serial-over-20-octets")
    if orig.version is None:
        anomalies.append("version-1")
    if orig.digest in ("sha1", "md5"):
        anomalies.append("%s-self-signature" % orig.digest)
    if orig.issuer != orig.subject:
        anomalies.append("issuer-differs-from-subject")
    if orig.sig_alg != orig.outer_sig_alg:
        anomalies.append("signature-algorithms-differ")
    if orig.unique_ids:
        anomalies.append("unique-identifiers")

    orig_ski = orig.ext_value(SKI)
    new_ski = None
    if orig_ski is not None:
        ski_val = children(orig_ski, 0, len(orig_ski))[0][2]
        method = key_id_method(orig.key_bits, ski_val)
        if method is None:
            anomalies.append("ski-not-from-key(%d-octets)" % len(ski_val))
        elif method != "sha1":
            anomalies.append("ski-" + method)
        new_ski = key_id(method, bits, len(ski_val))
    else:
        anomalies.append("ski-missing")

    exts = []
    for e_oid, crit, value, raw in orig.extensions:
        critical = crit != b""
        name = EXT_NAMES.get(e_oid, e_oid)
        if critical and crit != der(0x01, b"\xff"):
            anomalies.append("%s-critical-encoded-%s" % (name, crit.hex()))
        if e_oid == SKI:
            if critical:
                anomalies.append("ski-critical")
            exts.append(seq(oid(SKI), crit, der(0x04, der(0x04, new_ski))))
        elif e_oid == AKI:
            if critical:
                anomalies.append("aki-critical")
            _, s, e = tlv(value, 0)
            parts = []
            for tag, p_raw, p_val in children(value, s, e):
                if tag == 0x80:
                    if orig_ski is not None and p_val == children(orig_ski, 0, len(orig_ski))[0][2]:
                        parts.append(der(0x80, new_ski))
                    else:
                        method = key_id_method(orig.key_bits, p_val)
                        if method is None:
                            anomalies.append("aki-keyid-foreign")
                            parts.append(p_raw)
                        else:
                            anomalies.append("aki-keyid-differs-from-ski(%s)" % method)
                            parts.append(der(0x80, key_id(method, bits, len(p_val))))
                else:
                    parts.append(p_raw)
            tags = [p[0] for p in parts]
            if 0xA1 in tags or 0x82 in tags:
                anomalies.append("aki-issuer-serial")
            if 0x80 not in tags:
                anomalies.append("aki-without-keyid")
            else:
                anomalies.append("aki-keyid")
            exts.append(seq(oid(AKI), crit, der(0x04, der(0x30, b"".join(parts)))))
        else:
            if e_oid == BC:
                if not critical:
                    anomalies.append("basicConstraints-not-critical")
                bc = children(value, *tlv(value, 0)[1:])
                for tag, _, v in bc:
                    if tag == 0x02:
                        anomalies.append("pathLen-%d" % int.from_bytes(v, "big"))
            elif e_oid == KU and not critical:
                anomalies.append("keyUsage-not-critical")
            elif e_oid == EKU:
                anomalies.append("eku-in-root")
            elif e_oid == NC:
                anomalies.append("name-constraints")
            elif critical and e_oid not in (KU, BC):
                anomalies.append("critical-" + name)
            elif e_oid not in EXT_NAMES:
                anomalies.append("extension-" + e_oid)
            elif e_oid in ("2.16.840.1.113730.1.1", "2.16.840.1.113730.1.13"):
                anomalies.append(name)
            exts.append(raw)
    present = {e[0] for e in orig.extensions}
    if BC not in present:
        anomalies.append("basicConstraints-missing")
    if KU not in present:
        anomalies.append("keyUsage-missing")

    tag, not_after = parse_time(orig.not_after_raw)
    if not_after < FAR:
        anomalies.append("notAfter-moved-from-%s" % not_after.strftime("%Y-%m-%d"))
        not_after_raw = utc_time(FAR) if tag == 0x17 else der(0x18, FAR.strftime("%Y%m%d%H%M%SZ").encode())
    else:
        not_after_raw = orig.not_after_raw
    if orig.not_before_raw[0] == 0x18 and parse_time(orig.not_before_raw)[1].year < 2050:
        anomalies.append("generalizedtime-before-2050")

    body = b""
    if orig.version is not None:
        body += orig.version
    body += orig.serial_raw + orig.sig_alg + orig.issuer
    body += seq(orig.not_before_raw, not_after_raw)
    body += orig.subject + new_spki + b"".join(orig.unique_ids)
    if orig.extensions:
        body += der(0xA3, seq(*exts))
    tbs = der(0x30, body)
    sig = sign(key_path, orig.digest, tbs, tmp)
    return certificate(tbs, orig.outer_sig_alg, sig), bits, new_ski, anomalies


def intermediate(orig, root_key_path, root_bits, root_ski, number, tmp, today):
    """(intermediate DER, its PKCS#8 key PEM) signed by the synthetic root."""
    key_path = os.path.join(tmp, "inter.key")
    spki = new_key("P-256", key_path)
    bits = spki_bits(spki)
    sig_oid, digest, null = INTER_SIG[orig.key]
    sig_alg = seq(oid(sig_oid), der(0x05, b"") if null else b"")
    serial = int.from_bytes(b"\x01" + secrets.token_bytes(15), "big")
    subject = seq(
        der(0x31, seq(oid("2.5.4.6"), der(0x13, b"XX"))),
        der(0x31, seq(oid("2.5.4.10"), der(0x0C, b"tlskit Mozilla shapes"))),
        der(0x31, seq(oid("2.5.4.3"), der(0x0C, ("tlskit shape intermediate %03d" % number).encode()))),
    )
    aki = root_ski if root_ski is not None else hashlib.sha1(root_bits).digest()
    exts = seq(
        ext(BC, True, seq(der(0x01, b"\xff"), integer(0))),
        ext(KU, True, der(0x03, b"\x01\x06")),  # keyCertSign, cRLSign
        ext(SKI, False, der(0x04, hashlib.sha1(bits).digest())),
        ext(AKI, False, seq(der(0x80, aki))),
        ext(EKU, False, seq(oid("1.3.6.1.5.5.7.3.1"), oid("1.3.6.1.5.5.7.3.2"))),
    )
    tbs = seq(
        der(0xA0, integer(2)),
        integer(serial),
        sig_alg,
        orig.subject,
        seq(utc_time(today - datetime.timedelta(days=1)), utc_time(FAR)),
        subject,
        spki,
        der(0xA3, exts),
    )
    sig = sign(root_key_path, digest, tbs, tmp)
    with open(key_path) as f:
        key_pem = f.read()
    return certificate(tbs, sig_alg, sig), key_pem


def slug_of(name):
    base = name[:-4] if name.endswith(".crt") else name
    return re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9.-]", "_", base)).strip("_")


def one(src_path, slug, number, out, today):
    with open(src_path) as f:
        data = pem_der(f.read())
    orig = Original(data)
    with tempfile.TemporaryDirectory() as tmp:
        root_key = os.path.join(tmp, "root.key")
        root, bits, ski, anomalies = synthetic_root(orig, root_key, tmp)
        inter, inter_key = intermediate(orig, root_key, bits, ski, number, tmp, today)
    with open(os.path.join(out, "roots", slug + ".pem"), "w") as f:
        f.write(pem("CERTIFICATE", root))
    with open(os.path.join(out, "intermediates", slug + ".pem"), "w") as f:
        f.write(pem("CERTIFICATE", inter))
    with open(os.path.join(out, "intermediates", slug + ".key"), "w") as f:
        f.write(inter_key)
    serial_hex = format(orig.serial, "x") if orig.serial >= 0 else "-" + format(-orig.serial, "x")
    return "\t".join(
        [
            slug,
            os.path.basename(src_path),
            hashlib.sha256(data).hexdigest(),
            orig.key_label,
            serial_hex,
            orig.sig_name,
            ",".join(anomalies) or "-",
        ]
    )


def debian_version():
    try:
        r = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "ca-certificates"], capture_output=True, text=True)
        return r.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def shape_of(c):
    """What a synthetic root must keep of its original (see the module doc)."""
    aki = c.ext_value(AKI)
    ski = c.ext_value(SKI)
    ski_val = children(ski, 0, len(ski))[0][2] if ski is not None else None
    aki_form = None
    if aki is not None:
        parts = children(aki, *tlv(aki, 0)[1:])
        kid = [v for tag, _, v in parts if tag == 0x80]
        aki_form = (
            [len(v) for v in kid],
            [v == ski_val for v in kid],
            [raw for tag, raw, _ in parts if tag != 0x80],
        )
    return {
        "version": c.version,
        "serial": c.serial_raw,
        "signature algorithm": (c.sig_alg, c.outer_sig_alg),
        "issuer": c.issuer,
        "subject": c.subject,
        "notBefore": c.not_before_raw,
        "notAfter type": c.not_after_raw[0],
        "key type": c.key,
        "unique identifiers": c.unique_ids,
        "extensions and criticality": [(o, crit) for o, crit, _, _ in c.extensions],
        "extension values": [(o, v) for o, _, v, _ in c.extensions if o not in (SKI, AKI)],
        "SKI length": None if ski_val is None else len(ski_val),
        "AKI form": aki_form,
    }


def check(src, out):
    """Compare the corpus in OUT with the originals in SRC that it was made from; return
    (roots compared, manifest roots not in SRC, differences)."""
    compared, absent, diffs = 0, [], []
    with open(os.path.join(out, "manifest.tsv")) as f:
        lines = [l.rstrip("\n").split("\t") for l in f if not l.startswith("#") and l.strip()]
    for slug, name, fp, *_ in lines:
        path = os.path.join(src, name)
        try:
            with open(path) as f:
                data = pem_der(f.read())
        except OSError:
            absent.append(name)
            continue
        if hashlib.sha256(data).hexdigest() != fp:
            absent.append(name)
            continue
        with open(os.path.join(out, "roots", slug + ".pem")) as f:
            synthetic = Original(pem_der(f.read()))
        want, got = shape_of(Original(data)), shape_of(synthetic)
        for k in want:
            if want[k] != got[k]:
                diffs.append("%s: %s differs from %s" % (slug, k, name))
        if spki_bits(synthetic.spki) == Original(data).key_bits:
            diffs.append("%s: the original's key" % slug)
        compared += 1
    return compared, absent, diffs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", default="/usr/share/ca-certificates/mozilla", help="directory of the original roots (*.crt)")
    ap.add_argument("--out", required=True, help="output directory (roots/, intermediates/, manifest.tsv)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument(
        "--check",
        action="store_true",
        help="generate nothing: compare the corpus in OUT with the originals in SRC (exit 1 on a difference)",
    )
    args = ap.parse_args()
    if args.check:
        compared, absent, diffs = check(args.src, args.out)
        for d in diffs:
            print("generate.py --check: " + d)
        print(
            "generate.py --check: %d roots compared with their originals, %d differences, %d not in %s"
            % (compared, len(diffs), len(absent), args.src)
        )
        sys.exit(1 if diffs or compared == 0 else 0)
    names = sorted(n for n in os.listdir(args.src) if n.endswith(".crt"))
    if not names:
        sys.exit("generate.py: no *.crt in %s" % args.src)
    for sub in ("roots", "intermediates"):
        os.makedirs(os.path.join(args.out, sub), exist_ok=True)
    slugs = {}
    for n in names:
        s = slug_of(n)
        while s in slugs.values():
            s += "_"
        slugs[n] = s
    today = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        jobs = [pool.submit(one, os.path.join(args.src, n), slugs[n], i + 1, args.out, today) for i, n in enumerate(names)]
        lines = []
        for n, j in zip(names, jobs):
            try:
                lines.append(j.result())
            except Exception as e:  # one bad root names itself and stops the run
                sys.exit("generate.py: %s: %s" % (n, e))
    with open(os.path.join(args.out, "manifest.tsv"), "w") as f:
        f.write(
            "# %d roots from %s, ca-certificates %s, generated %s by generate.py\n"
            % (len(lines), args.src, debian_version(), today.strftime("%Y-%m-%d"))
        )
        f.write("# slug\toriginal file\toriginal SHA-256\tkey\tserial\tsignature hash\tanomalies\n")
        f.write("\n".join(lines) + "\n")
    print("generate.py: %d roots written to %s" % (len(lines), args.out))


if __name__ == "__main__":
    main()
