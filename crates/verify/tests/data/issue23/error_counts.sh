#!/usr/bin/env bash
# Both error kinds of `tlskit verify` on the issue 23 corpus: chains every mainstream
# relying party accepts (valid) and chains they refuse (invalid), made with the openssl
# CLI in a temporary directory. `openssl verify -purpose sslserver -verify_hostname` (not
# -x509_strict) is run beside as the reference. Usage:
#   error_counts.sh TLSKIT_BINARY [extra verify args, e.g. --profile webpki]
# Prints one line per case and the two counts. Used for crates/verify/README.md.
set -euo pipefail
bin=$1; shift
extra=("$@")
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT; cd "$d"
ec=(-newkey ec -pkeyopt ec_paramgen_curve:P-256)
root() { # root NAME [openssl req args...]
  local n=$1; shift
  openssl req -x509 -nodes -keyout "$n.key" -out "$n.pem" -subj "/CN=$n" -days 3650 \
    -addext "basicConstraints=critical,CA:TRUE" "$@" 2>/dev/null
}
sign() { # sign NAME ISSUER EXTFILE-TEXT [x509 args] (CSR: P-256, CN=$CN or NAME)
  local n=$1 ca=$2 ext=$3; shift 3
  openssl req -new "${ec[@]}" -nodes -keyout "$n.key" -out "$n.csr" -subj "/CN=${CN:-$n}" 2>/dev/null
  printf '%b' "$ext" > "$n.ext"
  openssl x509 -req -in "$n.csr" -CA "$ca.pem" -CAkey "$ca.key" -set_serial $((RANDOM+1)) \
    -days 365 -sha256 -extfile "$n.ext" -out "$n.pem" "$@" 2>/dev/null
}
KU="keyUsage=critical,keyCertSign,cRLSign\n"
INT="basicConstraints=critical,CA:TRUE\n${KU}subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n"
LEAF="basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n"
# case NAME EXPECTED(valid|invalid) ROOT CHAINFILE HOST
cases=()
case_() { cases+=("$1 $2 $3 $4 $5"); }

# --- valid: what browsers, Go and OpenSSL accept ---------------------------------------
root zero "${ec[@]}" -set_serial 0 -addext "$(printf 'keyUsage=critical,keyCertSign,cRLSign')"
CN=a.example sign zl zero "subjectAltName=DNS:a.example\n$LEAF"; cat zl.pem > c_zero.pem
case_ serial-zero-root valid zero c_zero.pem a.example
root qv "${ec[@]}" -addext "keyUsage=critical,keyCertSign,cRLSign" -addext "authorityKeyIdentifier=keyid:always,issuer:always"
CN=a.example sign ql qv "subjectAltName=DNS:a.example\n$LEAF"; cat ql.pem > c_qv.pem
case_ quovadis-like-root-aki valid qv c_qv.pem a.example
root peb "${ec[@]}" -addext "keyUsage=critical,keyCertSign,cRLSign" -addext "extendedKeyUsage=serverAuth,clientAuth"
CN=a.example sign pl peb "subjectAltName=DNS:a.example\n$LEAF"; cat pl.pem > c_peb.pem
case_ pebble-like-root-eku valid peb c_peb.pem a.example
root r "${ec[@]}" -addext "keyUsage=critical,keyCertSign,cRLSign"
sign stepi r "$INT"
CN="Step Online CA" sign stepl stepi "subjectAltName=DNS:a.example\n$LEAF"; cat stepl.pem stepi.pem > c_step.pem
case_ step-ca-like-intermediate-cn valid r c_step.pem a.example
sign nci r "${INT}nameConstraints=critical,permitted;DNS:corp.example\n"
CN="Corp Web" sign ncl nci "subjectAltName=DNS:www.corp.example\n$LEAF"; cat ncl.pem nci.pem > c_nc.pem
case_ name-constrained-cn-outside-san valid r c_nc.pem www.corp.example
sign i r "$INT"
CN="Wildcard Server" sign wl i "subjectAltName=DNS:*.example.org\n$LEAF"; cat wl.pem i.pem > c_wild.pem
case_ wildcard-san-cn-outside valid r c_wild.pem host.example.org
CN="IP Server" sign ipl i "subjectAltName=IP:192.0.2.7\n$LEAF"; cat ipl.pem i.pem > c_ip.pem
case_ ip-san-cn-outside valid r c_ip.pem 192.0.2.7
CN=a.example sign noaki i "subjectAltName=DNS:a.example\nbasicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth\nsubjectKeyIdentifier=none\nauthorityKeyIdentifier=none\n"
cat noaki.pem i.pem > c_noaki.pem
case_ leaf-without-aki valid r c_noaki.pem a.example
CN=a.example sign noeku i "subjectAltName=DNS:a.example\nbasicConstraints=critical,CA:FALSE\nauthorityKeyIdentifier=keyid\n"
cat noeku.pem i.pem > c_noeku.pem
case_ leaf-without-eku valid r c_noeku.pem a.example
sign bcnc r "basicConstraints=CA:TRUE\n${KU}subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n"
CN=a.example sign bcl bcnc "subjectAltName=DNS:a.example\n$LEAF"; cat bcl.pem bcnc.pem > c_bcnc.pem
case_ intermediate-bc-not-critical valid r c_bcnc.pem a.example
CN=a.example sign good i "subjectAltName=DNS:a.example\n$LEAF"; cat good.pem i.pem > c_good.pem
case_ compliant valid r c_good.pem a.example

# --- invalid: what they refuse -----------------------------------------------------------
root cli "${ec[@]}" -addext "keyUsage=critical,keyCertSign,cRLSign" -addext "extendedKeyUsage=clientAuth"
CN=a.example sign cll cli "subjectAltName=DNS:a.example\n$LEAF"; cat cll.pem > c_cli.pem
case_ clientauth-only-root invalid cli c_cli.pem a.example
sign nokcs r "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,digitalSignature\nsubjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n"
CN=a.example sign nkl nokcs "subjectAltName=DNS:a.example\n$LEAF"; cat nkl.pem nokcs.pem > c_nokcs.pem
case_ issuer-ku-without-keycertsign invalid r c_nokcs.pem a.example
CN=a.example sign crit i "subjectAltName=DNS:a.example\n${LEAF}1.3.6.1.4.1.99999.1=critical,ASN1:NULL\n"
cat crit.pem i.pem > c_crit.pem
case_ unknown-critical-extension invalid r c_crit.pem a.example
sign notca r "basicConstraints=critical,CA:FALSE\nsubjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n"
CN=a.example sign ncl2 notca "subjectAltName=DNS:a.example\n$LEAF"; cat ncl2.pem notca.pem > c_notca.pem
case_ issuer-not-ca invalid r c_notca.pem a.example
CN="Outside" sign out nci "subjectAltName=DNS:www.other.example\n$LEAF"; cat out.pem nci.pem > c_out.pem
case_ name-constraint-violated invalid r c_out.pem www.other.example
sign pl0 r "basicConstraints=critical,CA:TRUE,pathlen:0\n${KU}subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n"
sign pl1 pl0 "$INT"; CN=a.example sign pll pl1 "subjectAltName=DNS:a.example\n$LEAF"; cat pll.pem pl1.pem pl0.pem > c_pl.pem
case_ path-len-exceeded invalid r c_pl.pem a.example
CN=b.example sign wrong i "subjectAltName=DNS:b.example\n$LEAF"; cat wrong.pem i.pem > c_wrong.pem
case_ name-mismatch invalid r c_wrong.pem a.example
CN=a.example sign sha1 i "subjectAltName=DNS:a.example\n$LEAF" -sha1; cat sha1.pem i.pem > c_sha1.pem
case_ sha1-signature invalid r c_sha1.pem a.example
openssl genpkey -algorithm RSA-PSS -pkeyopt rsa_keygen_bits:2048 -out pss.key 2>/dev/null
openssl req -x509 -key pss.key -out pss.pem -subj "/CN=pss" -days 3650 -sha256 \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
CN=a.example sign psl pss "subjectAltName=DNS:a.example\n$LEAF"; cat psl.pem > c_pss.pem
case_ rsa-pss-only-root-key invalid pss c_pss.pem a.example
CN=a.example sign cl i "subjectAltName=DNS:a.example\nbasicConstraints=critical,CA:FALSE\nextendedKeyUsage=clientAuth\nauthorityKeyIdentifier=keyid\n"
cat cl.pem i.pem > c_cl.pem
case_ leaf-clientauth-only invalid r c_cl.pem a.example

wrong_accept=0; wrong_refuse=0; ref_disagree=0; n=0
for c in "${cases[@]}"; do
  set -- $c; name=$1 want=$2 ca=$3 chain=$4 host=$5
  if [[ $host =~ ^[0-9.]+$ ]]; then hflag=(--ip "$host"); ohost=(-verify_ip "$host"); else hflag=(--host "$host"); ohost=(-verify_hostname "$host"); fi
  if out=$("$bin" verify --roots "$ca.pem" --cert "$chain" "${hflag[@]}" ${extra[@]+"${extra[@]}"} 2>&1); then got=valid; else got=invalid; fi
  [ -n "${VERBOSE:-}" ] && printf '%s\n' "$out" | grep -E 'reason|warnings:|^    - ' | sed 's/^/    /' >&2 || true
  # openssl: the leaf, the rest of the chain as untrusted.
  csplit -s -z -f part "$chain" '/-----BEGIN/' '{*}'
  untrusted=(); [ -f part01 ] && { cat part0[1-9] > unt.pem; untrusted=(-untrusted unt.pem); }
  if openssl verify -purpose sslserver "${ohost[@]}" -CAfile "$ca.pem" "${untrusted[@]}" part00 >/dev/null 2>&1; then ref=valid; else ref=invalid; fi
  rm -f part0* unt.pem
  n=$((n+1))
  [ "$want" = valid ] && [ "$got" = invalid ] && wrong_refuse=$((wrong_refuse+1))
  [ "$want" = invalid ] && [ "$got" = valid ] && wrong_accept=$((wrong_accept+1))
  [ "$want" != "$ref" ] && ref_disagree=$((ref_disagree+1))
  printf '%-36s expected %-7s tlskit %-7s openssl %s\n' "$name" "$want" "$got" "$ref"
done
echo "cases $n: invalid accepted $wrong_accept, valid refused $wrong_refuse (openssl verify differs from the expectation on $ref_disagree)"
