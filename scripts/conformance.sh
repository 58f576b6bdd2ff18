#!/usr/bin/env bash
# Runs `tollgate verify` over the third-party conformance data in ../shared/conformance, exactly as an
# operator would, and checks each result. The files are read in place, never copied into the project.
set -euo pipefail
cd "$(dirname "$0")/.."
# Absolute: the configurations written under $work resolve their relative paths against it.
shared="$(realpath -m "${SHARED:-../shared}")"
tollgate="${TOLLGATE:-.build/debug/tollgate}"
if [ ! -d "$shared/conformance" ]; then
  echo "conformance: $shared/conformance is absent, nothing to check"
  exit 0
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cat > "$work/apple.yaml" <<YAML
sources:
  apple:
    roots: [$shared/fixtures/apple/AppleRootCA-G3.pem]
    apps: [{ bundleId: com.loki-project.loki-messenger, appAppleId: 1470168868, environments: [Sandbox] }]
YAML

passed=0
failed=0
for jws in "$shared"/conformance/apple/real/*.jws; do
  name="$(basename "$jws")"
  printf '{"signedPayload":"%s"}' "$(tr -d '\n' < "$jws")" > "$work/body.json"
  expected_type="$(python3 -c 'import json,sys; d=[e for e in json.load(open(sys.argv[1])) if e["file"]==sys.argv[2]][0]; print(d["notificationType"] + ("/" + d["subtype"] if d["subtype"] else ""))' "$shared/conformance/apple/real/expected.json" "$name")"
  if out="$("$tollgate" verify --source apple --config "$work/apple.yaml" "$work/body.json" 2>&1)" \
     && python3 -c 'import json,sys; e=json.loads(sys.argv[1]); assert len(e)==1 and e[0]["sourceType"]==sys.argv[2], e' "$out" "$expected_type"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL apple/real/$name: $out"
  fi
done

# The same real notification must be refused when the chain is checked against a root it does not chain to.
sed -i "s#AppleRootCA-G3.pem#AppleRootCA-G2.pem#" "$work/apple.yaml"
printf '{"signedPayload":"%s"}' "$(tr -d '\n' < "$shared/conformance/apple/real/02-DID_RENEW.jws")" > "$work/body.json"
if "$tollgate" verify --source apple --config "$work/apple.yaml" "$work/body.json" 2> "$work/err.json"; then
  failed=$((failed + 1)); echo "FAIL: accepted with the wrong root"
elif grep -q '"error":"untrusted_chain"' "$work/err.json"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL: wrong reason with the wrong root: $(cat "$work/err.json")"
fi

# Citcon's published UPI example verifies with its secret, and only with it.
citcon="$shared/conformance/citcon"
secret="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["secret"])' "$citcon/official-doc-example.json")"
printf 'sources:\n  citcon:\n    accounts: [{ name: demo, secrets: ["%s"] }]\n' "$secret" > "$work/citcon.yaml"
if out="$("$tollgate" verify --source citcon --config "$work/citcon.yaml" --path /webhooks/citcon/demo \
           --header 'Content-Type: application/json' "$citcon/official-doc-example.body.json" 2>&1)" \
   && python3 -c 'import json,sys; e=json.loads(sys.argv[1]); assert len(e)==1 and e[0]["id"]=="citcon:demo:84571d30e61711eba6a94911fce35a55:charge:authorized", e' "$out"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL citcon/official-doc-example: $out"
fi
printf 'sources:\n  citcon:\n    accounts: [{ name: demo, secrets: ["not-%s"] }]\n' "$secret" > "$work/citcon.yaml"
if "$tollgate" verify --source citcon --config "$work/citcon.yaml" "$citcon/official-doc-example.body.json" 2> "$work/err.json"; then
  failed=$((failed + 1)); echo "FAIL: Citcon example accepted with another secret"
elif grep -q '"error":"bad_signature"' "$work/err.json"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL: wrong reason with another Citcon secret: $(cat "$work/err.json")"
fi

echo "conformance: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
