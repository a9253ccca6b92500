#!/bin/sh
# Regenerates the interop fixtures of crates/verify/tests/profile.rs with OpenSSL: what
# rcgen cannot make (SHA-1 signatures, RSA-1024 / 2052-bit, P-192 and DSA keys). One RSA
# root (SHA-256) issues one leaf per case; every leaf is otherwise what the webpki
# profile accepts (AKI, EKU serverAuth, SAN = CN). Valid for 10 years from generation.
set -eu
cd "$(dirname "$0")"
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$t/root.key" -out root.pem -days 3650 \
  -sha256 -subj "/CN=tlskit interop test root" -set_serial 1 \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
leaf() { # name keygen-args digest
  name=$1; digest=$3
  cat > "$t/ext" <<EXT
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=DNS:$name.example
authorityKeyIdentifier=keyid
subjectKeyIdentifier=hash
EXT
  openssl genpkey $2 -out "$t/$name.key" 2>/dev/null
  openssl req -new -key "$t/$name.key" -subj "/CN=$name.example" -out "$t/$name.csr" 2>/dev/null
  openssl x509 -req -in "$t/$name.csr" -CA root.pem -CAkey "$t/root.key" -days 3650 \
    -"$digest" -extfile "$t/ext" -set_serial "0x$(openssl rand -hex 8)" -out "$name.pem" 2>/dev/null
}
leaf rsa2048 "-algorithm RSA -pkeyopt rsa_keygen_bits:2048" sha256
leaf sha1 "-algorithm RSA -pkeyopt rsa_keygen_bits:2048" sha1
leaf rsa1024 "-algorithm RSA -pkeyopt rsa_keygen_bits:1024" sha256
leaf rsa2052 "-algorithm RSA -pkeyopt rsa_keygen_bits:2052" sha256
leaf p192 "-algorithm EC -pkeyopt ec_paramgen_curve:P-192" sha256
openssl genpkey -genparam -algorithm DSA -pkeyopt dsa_paramgen_bits:2048 -out "$t/dsaparam.pem" 2>/dev/null
leaf dsa "-paramfile $t/dsaparam.pem" sha256
