#!/usr/bin/env python3
"""Tollgate's contracts held by the tools their users run (docs/interfaces.md).

  openapi    schemathesis (fixed seed, bounded) against docs/openapi.yaml on a running `tollgate dev`
             and on `tollgate work`'s API, with a server credential, and once more on the merchant
             routes as an app would call them (a client credential, with and without a user token):
             no server error, no status or response the document does not list, no schema-invalid
             request accepted, no schema-valid request refused for a constraint the document does not
             state (scripts/interfaces/schemathesis_hooks.py).
  metrics    `promtool check metrics` on the gateway's and the workers' /metrics after real traffic;
             `promtool check rules` on deploy/alerts.yaml.
  topics     aiokafka (a Kafka client without librdkafka), in a consumer group, reads <prefix>.events,
             <prefix>.entitlements and <prefix>.events-dlt; every record goes through the CloudEvents
             SDK's Kafka binding and is held to docs/asyncapi.yaml and docs/schemas.
  can-fail   each check run once on a deliberately broken contract (a minLength removed from a copy of
             docs/openapi.yaml, a HELP line dropped, a record without ce_id), where it must fail.

Usage: check-interfaces.py [openapi|metrics|topics|can-fail ...]  (default: all). Needs the built
`.build/debug/tollgate` (or $TOLLGATE), promtool (Debian's prometheus package) and the Python tools
of scripts/deploy-requirements.txt (`make interfaces` installs all three). Exit status 1 on any failure.
"""
import asyncio
import dataclasses
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import jsonschema
import yaml
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
TOLLGATE = os.path.abspath(os.environ.get("TOLLGATE", os.path.join(ROOT, ".build/debug/tollgate")))
WORK = os.path.join(ROOT, ".build/check-interfaces")
VENV_BIN = os.path.dirname(sys.executable)
API_TOKEN = "check-interfaces-token-0123"
# The app's public credential (docs/security.md), acting for the user of the token CLIENT_USER names.
CLIENT_TOKEN = "check-interfaces-client-token-public"
CLIENT_USER = "check-interfaces-user"
# schemathesis: the same requests every run, and a bound on the whole run's time.
SEED = 20261123
MAX_EXAMPLES = 100
SCHEMATHESIS_SECONDS = 120
FAILURES = []


def report(name, ok, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {name}" + (f": {detail}" if detail else ""), flush=True)
    if not ok:
        FAILURES.append(name)


def http(method, url, body=None, headers=None):
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write(name, content):
    path = os.path.join(WORK, name)
    with open(path, "w") as f:
        f.write(content)
    return path


# ---------------------------------------------------------------------------------------------
# The processes under test, configured so every route reaches its sender's own checks.

def sender_keys():
    """An Alipay+ platform key and a Google key set (JWKS file), made here, so those routes verify
    signatures instead of refusing every request for want of configuration."""
    alipay = os.path.join(WORK, "alipay-platform.pem")
    subprocess.run(["openssl", "genrsa", "-out", os.path.join(WORK, "alipay-private.pem"), "2048"], check=True, capture_output=True)
    subprocess.run(["openssl", "rsa", "-in", os.path.join(WORK, "alipay-private.pem"), "-pubout", "-out", alipay],
                   check=True, capture_output=True)
    google = os.path.join(WORK, "google-private.pem")
    subprocess.run(["openssl", "genrsa", "-out", google, "2048"], check=True, capture_output=True)
    modulus = subprocess.run(["openssl", "rsa", "-in", google, "-noout", "-modulus"], check=True, capture_output=True, text=True)
    n = bytes.fromhex(modulus.stdout.strip().split("=", 1)[1])
    import base64
    b64url = lambda raw: base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
    jwks = write("google-jwks.json", json.dumps({"keys": [{"kty": "RSA", "alg": "RS256", "use": "sig", "kid": "check-1",
                                                            "n": b64url(n), "e": b64url(b"\x01\x00\x01")}]}))
    return alipay, jwks


def start(args, name, ready):
    """Starts `tollgate <args>`; `ready(line)` returns a value once a stdout line says it is up."""
    log = open(os.path.join(WORK, f"{name}.log"), "wb")
    process = subprocess.Popen([TOLLGATE] + args, stdout=subprocess.PIPE, stderr=log, cwd=WORK, text=True)
    deadline = time.time() + 60
    while time.time() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        value = ready(line)
        if value:
            return process, value
    process.kill()
    raise RuntimeError(f"tollgate {name} did not start; log: " + open(os.path.join(WORK, f"{name}.log")).read()[-2000:])


def stop(process):
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()


def user_token_key():
    """The P-256 key pair a merchant's backend signs user tokens with (api.userTokenKeys): (private, public) paths."""
    private, public = os.path.join(WORK, "user-token.key"), os.path.join(WORK, "user-token.pub.pem")
    if not os.path.exists(public):
        subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", private],
                       check=True, capture_output=True)
        subprocess.run(["openssl", "pkey", "-in", private, "-pubout", "-out", public], check=True, capture_output=True)
    return private, public


def user_token(user, app="demo"):
    """A user token as the merchant's backend signs one (`tollgate user-token`, docs/purchases.md)."""
    return subprocess.run([TOLLGATE, "user-token", "--key", user_token_key()[0], "--app", app, "--user", user],
                          check=True, capture_output=True, text=True).stdout.strip()


def api_yaml(port=None):
    """The merchant APIs' credentials (a server and a client credential, the user token key) and a rate
    high enough that schemathesis' bursts are judged on their content, not throttled; and the catalog
    (docs/catalog.md) that prices the checkouts and the Sileo packages."""
    return f"""api:
  tokens: [{API_TOKEN}, {{ token: {CLIENT_TOKEN}, kind: client, apps: [demo, SANDBOX_DEVREPO0001] }}]
  userTokenKeys: {{ demo: {user_token_key()[1]}, SANDBOX_DEVREPO0001: {user_token_key()[1]} }}
  ratePerSecond: 100000
  rateBurst: 1000000
{f"  port: {port}" if port is not None else ""}
catalog:
  apps:
    - {{ name: Demo, ids: [demo], products: [{{ id: pro.monthly, prices: {{ USD: 1999 }}, entitlements: [pro] }},
                                            {{ id: "apple:pro_monthly", entitlements: [pro] }}] }}
    - {{ name: Dev Repo, ids: [SANDBOX_DEVREPO0001], products: [{{ id: tweak.lifetime, prices: {{ USD: 199 }}, entitlements: [tweak] }},
                                                          {{ id: retired, prices: {{ USD: 99 }} }}] }}
"""


def sileo_vendor():
    """One Sileo vendor at /sileo/dev (docs/sileo.md), its sign-in key made here, so schemathesis reaches
    its routes' own checks."""
    key = os.path.join(WORK, "sileo-signin.pem")
    subprocess.run(["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", os.path.join(WORK, "sileo-private.pem")],
                   check=True, capture_output=True)
    subprocess.run(["openssl", "ec", "-in", os.path.join(WORK, "sileo-private.pem"), "-pubout", "-out", key], check=True, capture_output=True)
    # The downloadURL packages' redirects are signed with it (docs/sileo.md#downloads).
    secret = os.path.join(WORK, "sileo-download.secret")
    with open(secret, "w") as out:
        out.write("check-interfaces-download-secret-0123456789abcdef\n")
    return f"""sileo:
  vendors:
    - basePath: /sileo/dev
      name: Dev Repo
      icon: https://repo.example/icon.png
      description: Dev Pay
      authenticationBanner: {{ message: Sign in to buy, button: Sign in }}
      publicBaseURL: http://127.0.0.1:8080
      app: SANDBOX_DEVREPO0001
      environment: sandbox
      provider: alipayplus
      signIn: {{ url: "http://127.0.0.1:8080/sign-in", assertionKeyFile: {key} }}
      downloadURLSecretFile: {secret}
      packages:
        - {{ id: com.example.tweak, product: tweak.lifetime, currency: USD, price: "$1.99", downloadURL: "https://repo.example/tweak.deb" }}
        - {{ id: com.example.retired, product: retired, currency: USD, price: "$0.99", available: false,
            recoveryURL: "https://repo.example/retired", downloadURL: "https://repo.example/retired.deb" }}
"""


def start_dev():
    alipay, jwks = sender_keys()
    config = write("dev.yaml", f"""http: {{ host: 127.0.0.1, port: 0 }}
{api_yaml()}silence: {{ iaptic: 86400, citcon: 604800 }}
store: {{ url: "sqlite:{WORK}/dev.sqlite" }}
spool: {{ path: {WORK}/dev-spool.sqlite }}
# The Sileo vendor's checkouts: Antom is not reachable here (a closed local port), so a purchase is 503.
checkouts: {{ publicBaseURL: "http://127.0.0.1:8080", antomBaseURL: "http://127.0.0.1:9", antomTimeoutMs: 1000 }}
sources:
  iaptic: {{ apps: [{{ name: demo, secrets: [demo-secret] }}] }}
  citcon: {{ accounts: [{{ name: demo, secrets: [demo-upi-secret] }}] }}
  alipayplus:
    clients:
      - {{ clientId: demo-client, platformPublicKeys: [{alipay}] }}
      - {{ clientId: SANDBOX_DEVREPO0001, platformPublicKeys: [{alipay}], merchantPrivateKey: {os.path.join(WORK, "alipay-private.pem")} }}
  google:
    audience: https://tollgate.example/webhooks/google
    serviceAccountEmail: push@demo.iam.gserviceaccount.com
    packages: [com.example.demo]
    jwks: {jwks}
{sileo_vendor()}""")
    bootstrap = os.path.join(WORK, "bootstrap")
    process, base = start(["dev", "--config", config, "--bootstrap-file", bootstrap], "dev",
                          lambda line: (re.search(r"gateway: listening on (http://\S+)", line) or [None, None])[1])
    deadline = time.time() + 30
    while http("GET", base + "/readyz")[0] != 200 and time.time() < deadline:
        time.sleep(0.3)
    return process, base, open(bootstrap).read().strip()


def start_work(bootstrap):
    port = free_port()
    config = write("work.yaml", f"""http: {{ host: 127.0.0.1 }}
{api_yaml(port)}kafka: {{ brokers: "{bootstrap}", consumerGroup: tollgate-check-work }}
store: {{ url: "sqlite:{WORK}/work.sqlite" }}
""")
    base = f"http://127.0.0.1:{port}"
    process = subprocess.Popen([TOLLGATE, "work", "--config", config], stdout=subprocess.DEVNULL,
                               stderr=open(os.path.join(WORK, "work.log"), "wb"), cwd=WORK)
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            if http("GET", base + "/readyz")[0] == 200:
                return process, base
        except OSError:
            pass
        time.sleep(0.3)
    process.kill()
    raise RuntimeError("tollgate work did not become ready; log: " + open(os.path.join(WORK, "work.log")).read()[-2000:])


def deliveries(base):
    """Real traffic, so the topics and metrics have something to show: an Iaptic renewal (an event and
    an entitlement change) and a refused one."""
    example = open(os.path.join(ROOT, "examples/iaptic-renewed.json"), "rb").read()
    json_type = {"Content-Type": "application/json"}
    status, _, body = http("POST", base + "/webhooks/iaptic", example, json_type)
    report("traffic: POST /webhooks/iaptic (examples/iaptic-renewed.json) answers 200", status == 200, f"{status} {body[:200]!r}")
    status, _, _ = http("POST", base + "/webhooks/iaptic", b"[", json_type)
    report("traffic: a malformed Iaptic body answers 400", status == 400, str(status))
    # A Citcon UPI refund signed as Citcon signs: sha256 of the sorted name=value pairs, then the secret.
    import hashlib
    ipn = {"id": "check-1", "transaction_type": "refund", "reference": "order-1", "amount": 990, "currency": "USD",
           "status": "success", "time_created": "2026-11-20T10:15:00.000Z"}
    ipn["fields"] = ",".join(sorted(ipn))
    pairs = "&".join(f"{k}={ipn[k]}" for k in sorted(ipn))
    ipn["sign"] = hashlib.sha256(f"{pairs}&secret=demo-upi-secret".encode()).hexdigest()
    status, _, body = http("POST", base + "/webhooks/citcon/demo", json.dumps(ipn).encode(), json_type)
    report("traffic: POST /webhooks/citcon/demo (a signed UPI refund) answers 200", status == 200, f"{status} {body[:200]!r}")


# ---------------------------------------------------------------------------------------------
# openapi: schemathesis.

def schemathesis(spec, base, label, extra=(), expect_failure=False, token=API_TOKEN):
    """One schemathesis run, with `token` as the bearer credential; its output goes to
    .build/check-interfaces/<label>.txt."""
    output = os.path.join(WORK, f"schemathesis-{label}.txt")
    env = dict(os.environ, SCHEMATHESIS_HOOKS="schemathesis_hooks",
               PYTHONPATH=os.path.join(ROOT, "scripts/interfaces"), NO_COLOR="1")
    args = [os.path.join(VENV_BIN, "schemathesis"), "run", spec, "--url", base,
            "--checks", "all", "--exclude-checks", "positive_data_acceptance",
            "--seed", str(SEED), "--max-examples", str(MAX_EXAMPLES), "--generation-database", "none",
            "--request-timeout", "10", "--continue-on-failure", "--no-color", "--workers", "1",
            "-H", f"Authorization: Bearer {token}", *extra]
    started = time.time()
    try:
        result = subprocess.run(args, env=env, cwd=WORK, capture_output=True, text=True, timeout=SCHEMATHESIS_SECONDS + 30)
        text, code = result.stdout + result.stderr, result.returncode
    except subprocess.TimeoutExpired as timeout:
        text, code = (timeout.stdout or b"").decode() if isinstance(timeout.stdout, bytes) else (timeout.stdout or ""), -1
    seconds = time.time() - started
    with open(output, "w") as f:
        f.write(text)
    summary = re.findall(r"^\s*(?:❌|✅|⚠️)?\s*(ST\d+ .*|\d+ generated.*|Selected: .*)$", text, re.MULTILINE)
    if expect_failure:
        return code != 0
    ok = code == 0 and seconds <= SCHEMATHESIS_SECONDS
    failures = re.findall(r"^_+ (.+?) _+$\n(?:.*\n){0,3}?- (.+)$", text, re.MULTILINE)
    detail = "; ".join(f"{op}: {what}" for op, what in failures[:8]) or "; ".join(summary[-3:])
    report(f"openapi: schemathesis against {label} ({seconds:.0f} s, seed {SEED}, log {os.path.relpath(output, ROOT)})", ok,
           detail if not ok else "; ".join(summary[-2:]))
    return ok


def check_openapi(dev_base, work_base):
    spec = os.path.join(ROOT, "docs/openapi.yaml")
    schemathesis(spec, dev_base, "tollgate-dev")
    # The workers' own server: the entitlement API and the probes, nothing of the gateway's.
    schemathesis(spec, work_base, "tollgate-work", ["--include-path-regex", "^/(v1/|healthz|readyz|metrics)"])
    # The merchant routes as the app calls them: its public client credential, with the user token
    # schemathesis generates (none, or one that does not verify), then with a valid one of one user.
    merchant = ["--include-path-regex", "^/v1/(users|purchases|checkouts)"]
    schemathesis(spec, dev_base, "app-client-credential", merchant, token=CLIENT_TOKEN)
    schemathesis(spec, dev_base, "app-client-credential-with-user-token",
                 merchant + ["-H", f"Tollgate-User-Token: {user_token(CLIENT_USER)}"], token=CLIENT_TOKEN)


# ---------------------------------------------------------------------------------------------
# metrics: promtool.

def promtool(args, text=None):
    result = subprocess.run(["promtool", *args], input=text, capture_output=True, text=True, timeout=60)
    return result.returncode, (result.stdout + result.stderr).strip()


def exposition(base):
    return http("GET", base + "/metrics")[2].decode()


def check_metrics(dev_base, work_base):
    for label, base in (("tollgate dev", dev_base), ("tollgate work", work_base)):
        text = exposition(base)
        families = len(re.findall(r"^# TYPE ", text, re.MULTILINE))
        code, output = promtool(["check", "metrics"], text)
        report(f"metrics: promtool check metrics on {label}'s /metrics ({families} families)", code == 0 and not output, output[:500])
    code, output = promtool(["check", "rules", os.path.join(ROOT, "deploy/alerts.yaml")])
    report("metrics: promtool check rules deploy/alerts.yaml", code == 0, output.splitlines()[-1] if output else "")
    code, output = promtool(["test", "rules", os.path.join(ROOT, "deploy/alerts.test.yaml")])
    report("metrics: promtool test rules deploy/alerts.test.yaml (alerts fire on their series, not before)", code == 0, output[-500:])


# ---------------------------------------------------------------------------------------------
# topics: aiokafka and the CloudEvents SDK.

def asyncapi_validators():
    asyncapi = yaml.safe_load(open(os.path.join(ROOT, "docs/asyncapi.yaml")))
    event_schema = json.load(open(os.path.join(ROOT, "docs/schemas/event.schema.json")))
    entitlement_schema = json.load(open(os.path.join(ROOT, "docs/schemas/entitlement.schema.json")))
    registry = Registry().with_resource("urn:asyncapi", Resource.from_contents(asyncapi, default_specification=DRAFT202012))
    formats = jsonschema.FormatChecker()
    headers = lambda name: jsonschema.Draft202012Validator({"$ref": f"urn:asyncapi#/components/schemas/{name}"},
                                                           registry=registry, format_checker=formats)
    # The document's message payloads are these two files ($ref ./schemas/...), read as such.
    return asyncapi, {"ce": headers("cloudEventHeaders"), "dlt": headers("deadLetterHeaders"),
                      "event": jsonschema.Draft202012Validator(event_schema, format_checker=formats),
                      "entitlement": jsonschema.Draft202012Validator(entitlement_schema, format_checker=formats)}


def documented_headers(headers, binary):
    """Kafka header bytes as the document writes them: base64 where it says so, else UTF-8 text."""
    import base64
    return {k: base64.b64encode(v).decode() if k in binary else v.decode() for k, v in headers.items()}


def cloud_event_problems(record, validators, asyncapi, topic):
    """What is wrong with one record of `topic`, read through the CloudEvents SDK's Kafka binding."""
    from cloudevents.core.bindings.kafka import KafkaMessage, from_binary
    from cloudevents.core.formats.json import JSONFormat
    headers = {k: bytes(v) for k, v in record.headers}
    problems = []
    if len(headers) != len(record.headers):
        problems.append("a header appears twice")
    # The binding's attributes are the ce_* headers and content-type; the others (Spring's binary
    # dead-letter headers) are the topic's own and are checked below.
    attribute_headers = {k: v for k, v in headers.items() if k.startswith("ce_") or k == "content-type"}
    try:
        event = from_binary(KafkaMessage(headers=attribute_headers, key=record.key, value=record.value), JSONFormat())
    except Exception as error:  # the SDK refuses what is not a CloudEvent
        return [f"the CloudEvents SDK refuses it: {type(error).__name__}: {error}"]
    attributes = event.get_attributes()
    ce_headers = {k: v for k, v in headers.items() if k.startswith("ce_") or k == "content-type" or k == "tollgate_replay-count"}
    problems += [f"headers {e.message}" for e in validators["ce"].iter_errors(documented_headers(ce_headers, set()))]
    if attributes.get("partitionkey") != attributes.get("subject"):
        problems.append(f"key {attributes.get('partitionkey')!r} is not ce_subject {attributes.get('subject')!r}")
    data = event.get_data()
    if topic.endswith(".events"):
        problems += [f"data {e.message}" for e in validators["event"].iter_errors(data)]
        if isinstance(data, dict):
            expected = {"id": data.get("id"), "source": data.get("source"), "subject": data.get("subject"),
                        "type": "dev.tollgate." + str(data.get("type"))}
            problems += [f"ce_{k} {attributes.get(k)!r} is not the event's {v!r}" for k, v in expected.items() if attributes.get(k) != v]
    elif topic.endswith("-dlt"):
        problems += [f"dead-letter headers {e.message}"
                     for e in validators["dlt"].iter_errors(documented_headers(headers, documented_headers_binary(asyncapi)))]
    return problems


def documented_headers_binary(asyncapi):
    """The dead-letter headers the document encodes as base64 (its own or through a $ref)."""
    schemas = asyncapi["components"]["schemas"]
    binary = set()
    for schema in ("deadLetterHeaders", "retryHeaders"):
        for name, prop in schemas[schema].get("properties", {}).items():
            target = schemas.get(prop.get("$ref", "").split("/")[-1], prop)
            if target.get("contentEncoding") == "base64":
                binary.add(name)
    return binary


def entitlement_problems(record, validators):
    problems = []
    headers = {k: bytes(v) for k, v in record.headers}
    if headers.get("content-type") != b"application/json":
        problems.append(f"content-type {headers.get('content-type')!r}")
    if not headers.get("tollgate_event_id"):
        problems.append("no tollgate_event_id header")
    try:
        value = json.loads(record.value)
    except ValueError as error:
        return problems + [f"value is not JSON: {error}"]
    problems += [f"value {e.message}" for e in validators["entitlement"].iter_errors(value)]
    key = record.key.decode() if record.key else None
    expected_key = "/".join(str(value.get(k)) for k in ("app", "environment", "user", "product"))
    if key != expected_key:
        problems.append(f"key {key!r} is not <app>/<environment>/<user>/<product> {expected_key!r}")
    return problems


async def read_topics(bootstrap, prefix, want):
    """Reads each topic from the start in a consumer group of aiokafka's own until `want(topic,
    records)` says enough, or 45 s pass; commits what it read, as a consumer would."""
    from aiokafka import AIOKafkaConsumer
    topics = [f"{prefix}.events", f"{prefix}.entitlements", f"{prefix}.events-dlt"]
    consumer = AIOKafkaConsumer(*topics, bootstrap_servers=bootstrap, group_id="check-interfaces-aiokafka",
                                auto_offset_reset="earliest", enable_auto_commit=False)
    await consumer.start()
    records = {topic: [] for topic in topics}
    try:
        deadline = time.time() + 45
        while time.time() < deadline and not all(want(t, records[t]) for t in topics):
            batches = await consumer.getmany(timeout_ms=500)
            for partition, batch in batches.items():
                records[partition.topic].extend(batch)
        await consumer.commit()
        assigned = sorted({tp.topic for tp in consumer.assignment()})
    finally:
        await consumer.stop()
    return records, assigned


async def produce_dead_letter(bootstrap, prefix):
    """An event whose data the workers cannot decode, written by aiokafka: the workers dead-letter it."""
    from aiokafka import AIOKafkaProducer
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        headers = [("ce_specversion", b"1.0"), ("ce_id", b"iaptic:check-interfaces-dead-letter"), ("ce_source", b"/iaptic/demo"),
                   ("ce_type", b"dev.tollgate.subscription.renewed"), ("ce_subject", b"apple:check-interfaces"),
                   ("ce_time", b"2026-11-20T10:15:00.000Z"), ("content-type", b"application/json")]
        await producer.send_and_wait(f"{prefix}.events", b'{"not":"an event"}', key=b"apple:check-interfaces", headers=headers)
    finally:
        await producer.stop()


def check_topics(bootstrap):
    asyncapi, validators = asyncapi_validators()
    prefix = asyncapi["components"]["parameters"]["prefix"]["default"]
    asyncio.run(produce_dead_letter(bootstrap, prefix))
    dead_id = b"iaptic:check-interfaces-dead-letter"

    def want(topic, records):
        if topic.endswith("-dlt"):
            return any(dict(r.headers).get("ce_id") == dead_id for r in records)
        return len(records) >= (2 if topic.endswith(".events") else 1)

    records, assigned = asyncio.run(read_topics(bootstrap, prefix, want))
    report("topics: aiokafka joins a consumer group and is assigned the three topics", len(assigned) == 3, ", ".join(assigned))
    for topic, batch in records.items():
        if topic.endswith(".events"):
            # The dead-letter probe is on the events topic too; it is not an event and is held to the DLT's rules.
            batch = [r for r in batch if dict(r.headers).get("ce_id") != dead_id]
        problems = []
        for record in batch:
            found = entitlement_problems(record, validators) if topic.endswith(".entitlements") else \
                cloud_event_problems(record, validators, asyncapi, topic)
            problems += [f"offset {record.offset}: {p}" for p in found]
        report(f"topics: {topic} read by aiokafka, each record through the CloudEvents SDK and the documents"
               if not topic.endswith(".entitlements") else f"topics: {topic} read by aiokafka, keys and values as documented",
               bool(batch) and not problems, "; ".join(problems[:5]) or f"{len(batch)} records")
    return records


# ---------------------------------------------------------------------------------------------
# can-fail: each check against a deliberately broken contract.

def check_can_fail(dev_base, records):
    spec = yaml.safe_load(open(os.path.join(ROOT, "docs/openapi.yaml")))
    app = next(p for p in spec["paths"]["/v1/users/{user}/entitlements"]["get"]["parameters"] if p.get("name") == "app")
    app["schema"].pop("minLength", None)
    broken = write("openapi-without-minlength.yaml", yaml.safe_dump(spec, sort_keys=False))
    failed = schemathesis(broken, dev_base, "broken-openapi", ["--include-operation-id", "userEntitlements"], expect_failure=True)
    report("can-fail: schemathesis fails once the app parameter's minLength is removed from the document", failed)

    text = exposition(dev_base)
    without_help = re.sub(r"^# HELP tollgate_rejections_total .*\n", "", text, count=1, flags=re.MULTILINE)
    code, output = promtool(["check", "metrics"], without_help)
    report("can-fail: promtool check metrics fails on the exposition without one HELP line",
           without_help != text and (code != 0 or bool(output)), output[:200])

    asyncapi, validators = asyncapi_validators()
    prefix = asyncapi["components"]["parameters"]["prefix"]["default"]
    event = next(iter(records.get(f"{prefix}.events", [])), None)
    if event is None:
        report("can-fail: a record without ce_id is refused by the topic check", False, "no event was read")
        return
    stripped = dataclasses.replace(event, headers=[(k, v) for k, v in event.headers if k != "ce_id"])
    problems = cloud_event_problems(stripped, validators, asyncapi, f"{prefix}.events")
    report("can-fail: a record without ce_id is refused by the topic check", bool(problems), "; ".join(problems[:2]))


# ---------------------------------------------------------------------------------------------

def main():
    wanted = set(sys.argv[1:]) or {"openapi", "metrics", "topics", "can-fail"}
    unknown = wanted - {"openapi", "metrics", "topics", "can-fail"}
    if unknown:
        sys.exit(f"unknown check: {', '.join(sorted(unknown))}")
    if not os.path.exists(TOLLGATE):
        sys.exit(f"{TOLLGATE} is not built (make build-tests)")
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    dev, dev_base, bootstrap = start_dev()
    work = None
    try:
        deliveries(dev_base)
        records = check_topics(bootstrap) if wanted & {"topics", "can-fail"} else {}
        if wanted & {"openapi", "metrics"}:
            work, work_base = start_work(bootstrap)
        if "openapi" in wanted:
            check_openapi(dev_base, work_base)
        if "metrics" in wanted:
            check_metrics(dev_base, work_base)
        if "can-fail" in wanted:
            check_can_fail(dev_base, records)
    finally:
        if work:
            stop(work)
        stop(dev)
    if FAILURES:
        print(f"\n{len(FAILURES)} interface check(s) failed (docs/interfaces.md says what each means):")
        for name in FAILURES:
            print(f"  - {name}")
        sys.exit(1)
    print("\nevery interface check passed")


if __name__ == "__main__":
    main()
