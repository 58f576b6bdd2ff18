#!/usr/bin/env python3
"""Checks the deployment artifacts and the interface documents against the real Tollgate.

Run by `make test` after the Swift tests, with the tools of scripts/deploy-requirements.txt (the
Makefile installs them into .build/deploy-venv). Needs the built `.build/debug/tollgate` (or $TOLLGATE),
docker-compose, openssl and kcat. What the code defines (reason codes and statuses, event types,
senders, routes, metric names, configuration keys with defaults and environment names, topics) comes
from the built binary, `tollgate describe --json`, never from Swift source. Every check prints one
line; the exit status is 1 if any failed.

  compose     docker-compose config -q; every TOLLGATE_* name is in docs/configuration.md and the
              gateways'/workers'/topics environments load with the real configuration loader; each
              long-running service's health check and prometheus.yml job use the port it listens on;
              each gateway mounts its own named volume, writable, over its spool.path, and is one
              container; stop_grace_period above shutdown.gracePeriodMs (+ drainDelayMs for gateways)
  kubernetes  every manifest against the bundled Kubernetes schemas (strict) of each K8S_VERSIONS;
              ServiceMonitor against scripts/schemas; references (volumes and claim templates, Secrets,
              the StatefulSet's Service, HPA targets, PDB selectors) and the ConfigMap's tollgate.yaml
              loaded by the real binary with each workload's environment; each Deployment's or
              StatefulSet's port `http` and probes on the port its command listens on (http.port,
              api.port); each gateway's spool.path on a writable volume from a volumeClaimTemplate,
              spool.maxBytes at most half the claim; shutdown.gracePeriodMs (+ drainDelayMs for
              gateways) below terminationGracePeriodSeconds
  dockerfile  structure: stages, pinned Apple root, non-root user, entrypoint, health check; the
              default spool.path inside a VOLUME owned by that user, not overridden by ENV
  openapi     openapi-spec-validator (3.1); reason codes per status equal the binary's
  asyncapi    structure and references, nothing marked pending; the event and entitlement JSON Schemas
              are valid draft 2020-12, the event type enum, the entitlement state enum, the channel
              addresses, the retry and dead-letter header names and their exception classes equal what
              the binary says; the examples validate
  events      events from `tollgate verify` over deliveries built here (Iaptic, Citcon UPI and CHOP
              incl. Citcon's published example, Alipay+ signed with a fresh key, and Apple's real
              notifications from ../shared/conformance when present) validate against the schema
  server      a real `tollgate dev` (with a catalog, a server and a client credential, a user token
              key): every path and method of the running server (405 Allow probes) equals
              docs/openapi.yaml; answers validate against the OpenAPI response schemas; the merchant
              APIs' refusals carry the documented status and reason code (a client credential without,
              with another user's, another app's, an expired or an unsigned user token; a bare
              transaction id from a client; a checkout at another price, of an unknown product or
              currency; a credential past its rate: 429 with Retry-After); the records it published
              (kcat) validate against the event schema and CloudEvents headers; the entitlement
              examples/iaptic-renewed.json makes is published on <prefix>.entitlements and validates
              (value, headers, key, purchaseId, access) and the API answers it to both credentials with
              the same purchaseId, the catalog's access, and no purchase subject, which only the support
              route answers, to the server credential alone; a record with an
              unsupported ce_specversion is dead-lettered with the documented Spring headers and encodings
  spool       a real `tollgate serve` with Kafka unreachable answers 200 from its spool (then a
              duplicate), /readyz stays 200 reporting kafka unreachable and the spool, its metrics say
              so, SIGTERM exits 0 keeping the spool; restarted against the dev broker, it relays the
              delivery to the events topic and the spool empties
  alerts      deploy/alerts.yaml and the Grafana dashboard use only metric names the binary defines
              and that the running processes above expose (promtool: scripts/check-interfaces.py)
"""
import glob
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import jsonschema
import yaml
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.chdir(ROOT)
TOLLGATE = os.path.abspath(os.environ.get("TOLLGATE", ".build/debug/tollgate"))
# Absolute: the configurations written under WORK resolve their relative paths against WORK.
SHARED = os.path.abspath(os.environ.get("SHARED", "../shared"))
# Kubernetes versions the manifests must validate against (kubernetes-validate bundles 1.25 to 1.37).
K8S_VERSIONS = ["1.30", "1.34"]
# Kinds kubernetes-validate does not bundle, validated against our own schema instead. Any other
# unknown kind is a failure (kubernetes-validate alone would only warn).
LOCAL_K8S_SCHEMAS = {("monitoring.coreos.com/v1", "ServiceMonitor"): "scripts/schemas/servicemonitor-monitoring.coreos.com-v1.json"}

failures = []
WORK = tempfile.mkdtemp(prefix="tollgate-deploy-")
# /metrics of the processes the server and spool checks ran, by label: the alert rules' metric names
# are looked up in them.
LIVE_METRICS = {}


def report(name, ok, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}", flush=True)
    if not ok:
        failures.append(name)


def run(args, env=None, cwd=None, stdin=None, timeout=60):
    return subprocess.run(args, env=env, cwd=cwd, input=stdin, capture_output=True, timeout=timeout)


def load_yaml(path):
    with open(path) as f:
        return yaml.safe_load(f)


def write(name, content, mode="w"):
    path = os.path.join(WORK, name)
    with open(path, mode) as f:
        f.write(content)
    return path


# ---------------------------------------------------------------------------------------------
# What the code says (the sources of truth the documents are compared with)

def documented_env_names():
    return set(re.findall(r"`(TOLLGATE_[A-Z0-9_]+)`", open("docs/configuration.md").read()))


_DESCRIBE = None


def describe():
    """What the built binary says about itself (`tollgate describe --json`): the one source of truth
    the documents are compared with; nothing here reads Swift source."""
    global _DESCRIBE
    if _DESCRIBE is None:
        _DESCRIBE = json.loads(run([TOLLGATE, "describe", "--json"]).stdout)
    return _DESCRIBE


def reason_statuses():
    """Reason code -> HTTP status, of every domain the OpenAPI document describes (the console's pages are
    HTML for people, not an API: docs/console.md lists its reasons, check_console_reasons holds them)."""
    return {r["code"]: r["status"] for r in describe()["reasons"] if r["domain"] != "console"}


def check_console_reasons():
    """docs/console.md's table of reasons equals the binary's console reasons and statuses."""
    actual = {r["code"]: r["status"] for r in describe()["reasons"] if r["domain"] == "console"}
    documented = {code: int(status) for code, status in
                  re.findall(r"^\| `([a-z_]+)` \| (\d{3}) \|", open("docs/console.md").read(), re.M)}
    report("console: docs/console.md's reason codes and statuses equal the binary's", documented == actual and bool(actual),
           f"differences: {sorted(set(documented.items()) ^ set(actual.items()))}" if documented != actual else f"{len(actual)} codes")


def event_types():
    return describe()["eventTypes"]


def purchase_states():
    return describe()["entitlementStates"]


def source_names():
    return [s["name"] for s in describe()["senders"]]


def spring_header_names():
    return describe()["deadLetterHeaders"]


def worker_failure_types():
    return set(describe()["workerFailures"])


def metric_names():
    names = set()
    for family in describe()["metrics"]:
        names.add(family["name"])
        if family["type"] == "histogram":
            names.update({family["name"] + "_bucket", family["name"] + "_sum", family["name"] + "_count"})
    return names


def config_default(key):
    """The default of a configuration key, e.g. `spool.path`."""
    for entry in describe()["config"]:
        if entry["key"] == key:
            return entry.get("default")
    raise KeyError(key)


def upper_snake(name):
    """EnvironmentOverrides.upperSnake: `maxBodyBytes` -> `MAX_BODY_BYTES`."""
    out = ""
    for i, c in enumerate(name):
        if c.isupper() and i > 0:
            previous, following = name[i - 1], name[i + 1] if i + 1 < len(name) else ""
            if previous.islower() or previous.isdigit() or (previous.isupper() and following.islower()):
                out += "_"
        out += c.upper()
    return out


def setting(config, env, section, key):
    """A key's value as the binary would see it: the TOLLGATE_* variable, else the file, else the default."""
    variable = f"TOLLGATE_{upper_snake(section)}_{upper_snake(key)}"
    default = config_default(f"{section}.{key}")
    if variable in env:
        value = env[variable]
    else:
        value = ((config or {}).get(section) or {}).get(key, default)
    if isinstance(default, bool):
        return value if isinstance(value, bool) else str(value).lower() == "true"
    return int(value) if isinstance(default, int) else str(value)


def image_workdir():
    """The runtime stage's WORKDIR in deploy/Dockerfile: where a relative spool.path lands."""
    text = open("deploy/Dockerfile").read()
    final = text[text.rindex("\nFROM "):]
    found = re.findall(r"^WORKDIR (\S+)", final, re.M)
    return found[-1] if found else "/"


def shutdown_budget_ms(config, env, command):
    """How long after SIGTERM the process may take: shutdown.gracePeriodMs, counted from the signal. The
    gateway's drainDelayMs runs inside it; it is added anyway, as a margin. `work` has no drain delay."""
    grace = setting(config, env, "shutdown", "gracePeriodMs")
    drain = setting(config, env, "shutdown", "drainDelayMs") if command == "serve" else 0
    return grace + drain, f"gracePeriodMs {grace}" + (f" + drainDelayMs {drain}" if command == "serve" else "")


def k8s_quantity(text):
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
    match = re.fullmatch(r"(\d+)([KMGT]i?|k)?", str(text))
    return int(match.group(1)) * units.get(match.group(2) or "", 1)


def compose_duration(text):
    """Compose durations: `40s`, `1m30s`, `500ms`."""
    units = {"h": 3_600_000, "m": 60_000, "s": 1_000, "ms": 1, "us": 0.001}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|us|h|m|s)", str(text))
    return sum(float(n) * units[u] for n, u in parts)


def mount_over(path, mounts):
    """The mount (target, description) deepest above `path`, or None."""
    best = None
    for target, mount in mounts:
        target = os.path.normpath(target)
        if (path == target or path.startswith(target.rstrip("/") + "/")) and (best is None or len(target) > len(best[0])):
            best = (target, mount)
    return best


# ---------------------------------------------------------------------------------------------
# The configuration loader as an oracle: `verify` with an empty body loads the configuration first
# (exit 2 on any configuration error), then refuses the body (exit 1).

def config_loads(name, env, config_path=None):
    body = write("empty.json", "{}")
    args = [TOLLGATE, "verify", "--source", "iaptic"] + (["--config", config_path] if config_path else []) + [body]
    result = run(args, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **env}, cwd=WORK)
    ok = result.returncode == 1
    report(name, ok, "" if ok else f"exit {result.returncode}: {result.stderr.decode().strip()}")


def check_env_names(name, names):
    unknown = sorted(n for n in names if n.startswith("TOLLGATE_") and n not in documented_env_names())
    report(name, not unknown, f"not in docs/configuration.md: {unknown}" if unknown else f"{len(names)} variables")


# ---------------------------------------------------------------------------------------------

def check_compose():
    result = run(["docker-compose", "-f", "deploy/compose.yaml", "config", "-q"])
    report("compose: docker-compose config -q", result.returncode == 0, result.stderr.decode().strip())
    if result.returncode != 0:
        return
    resolved = yaml.safe_load(run(["docker-compose", "-f", "deploy/compose.yaml", "config"]).stdout)
    services = resolved["services"]
    command = {name: (service.get("command") or ["serve"])[0] for name, service in services.items() if service.get("image") == "tollgate:local"}
    gateways = sorted(name for name, c in command.items() if c == "serve")
    workers = sorted(name for name, c in command.items() if c == "work")
    report("compose: gateways (serve) and workers (work) are defined", bool(gateways) and bool(workers), f"gateways {gateways}, workers {workers}")
    for service in ["topics"] + gateways + workers:
        env = {k: str(v) for k, v in (services[service].get("environment") or {}).items()}
        tollgate_env = {k: v for k, v in env.items() if k.startswith("TOLLGATE_")}
        check_env_names(f"compose: {service} TOLLGATE_* names", tollgate_env)
        config_loads(f"compose: {service} environment loads in tollgate", tollgate_env)
    # The gateway listens on http.port, `tollgate work` on api.port: health checks and scrapes must follow.
    promfile = load_yaml("deploy/prometheus.yml")
    for service in gateways + workers:
        variable, default = ("TOLLGATE_HTTP_PORT", "8080") if command[service] == "serve" else ("TOLLGATE_API_PORT", "8081")
        config = services[service]
        port = str((config.get("environment") or {}).get(variable, default))
        test = " ".join(config.get("healthcheck", {}).get("test", []))
        report(f"compose: {service} health check asks its port {port}", f"/dev/tcp/127.0.0.1/{port} " in test
               and re.search(r"GET /(healthz|readyz) ", test) is not None, test[:120])
        # /metrics is on metrics.port when set (a listener of its own), else beside the rest.
        metrics_port = str((config.get("environment") or {}).get("TOLLGATE_METRICS_PORT", port))
        jobs = [job for job in promfile["scrape_configs"] if job.get("metrics_path", "/metrics") == "/metrics"
                and any(service in sd.get("names", []) and str(sd.get("port")) == metrics_port for sd in job.get("dns_sd_configs", []))]
        report(f"compose: prometheus.yml scrapes {service} /metrics on {metrics_port}", len(jobs) == 1, ", ".join(j["job_name"] for j in jobs))
    check_compose_spools(resolved, gateways)
    # docker stop sends SIGTERM, then SIGKILL after stop_grace_period (10 s unless set).
    for service in gateways + workers:
        env = {k: str(v) for k, v in (services[service].get("environment") or {}).items()}
        budget, what = shutdown_budget_ms({}, env, command[service])
        stop = services[service].get("stop_grace_period")
        stop_ms = compose_duration(stop) if stop else 10_000
        report(f"compose: {service} stop_grace_period ({stop or '10s, the default'}) is above shutdown ({what})", budget < stop_ms)


def check_compose_spools(resolved, gateways):
    """Each gateway's spool.path is on a named volume (or a bind mount) of its own, writable, and the
    service is one container: replicas of a service would share its volume, and the spool is locked by
    one process."""
    sources = {}
    declared = set(resolved.get("volumes") or {})
    for service in gateways:
        config = resolved["services"][service]
        env = {k: str(v) for k, v in (config.get("environment") or {}).items()}
        if not setting({}, env, "spool", "enabled"):
            print(f"note: compose: {service} has spool.enabled false: deliveries Kafka does not take are answered 503")
            continue
        path = setting({}, env, "spool", "path")
        path = os.path.normpath(os.path.join(config.get("working_dir") or image_workdir(), path))
        mounts = []
        for volume in config.get("volumes") or []:
            if isinstance(volume, str):
                parts = volume.split(":")
                if len(parts) == 1:
                    volume = {"type": "volume", "target": parts[0]}
                else:
                    volume = {"type": "bind" if parts[0].startswith(("/", ".", "~")) else "volume", "source": parts[0],
                              "target": parts[1], "read_only": len(parts) > 2 and "ro" in parts[2].split(",")}
            mounts.append((volume["target"], volume))
        for tmpfs in config.get("tmpfs") or []:
            mounts.append((tmpfs.split(":")[0], {"type": "tmpfs"}))
        found = mount_over(path, mounts)
        problems = []
        if found is None:
            problems.append("no volume: the spool would live in the container's writable layer and go with it")
        else:
            target, mount = found
            if mount["type"] == "volume" and mount.get("source") not in declared:
                problems.append(f"{target} is an anonymous volume")
            elif mount["type"] not in ("volume", "bind"):
                problems.append(f"{target} is {mount['type']}, not persistent")
            if mount.get("read_only"):
                problems.append(f"{target} is read-only")
            if mount.get("source"):
                sources.setdefault(mount["source"], []).append(service)
        replicas = (config.get("deploy") or {}).get("replicas", 1)
        if replicas != 1 or config.get("scale", 1) != 1:
            problems.append(f"{replicas} replicas would share one spool volume")
        report(f"compose: {service} spool.path {path} is on a persistent, writable volume of its own", not problems,
               "; ".join(problems) or f"{found[1].get('source')} at {found[0]}")
    shared = {source: names for source, names in sources.items() if len(names) > 1}
    report("compose: no two gateways share a spool volume", not shared, f"{shared}" if shared else f"{len(sources)} volumes")


def k8s_documents():
    for path in sorted(glob.glob("deploy/kubernetes/*.yaml")):
        with open(path) as f:
            for doc in yaml.safe_load_all(f):
                if doc:
                    yield path, doc


def check_kubernetes():
    import kubernetes_validate.utils as kv
    docs = list(k8s_documents())
    for path, doc in docs:
        key = (doc.get("apiVersion"), doc.get("kind"))
        label = f"kubernetes: {os.path.basename(path)} {doc.get('kind')}/{doc.get('metadata', {}).get('name')}"
        if key in LOCAL_K8S_SCHEMAS:
            schema = json.load(open(LOCAL_K8S_SCHEMAS[key]))
            errors = [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(doc)]
            report(label + " (local CRD schema)", not errors, "; ".join(errors))
            continue
        problems = []
        for version in K8S_VERSIONS:
            try:
                kv.validate(doc, version, strict=True)
            except kv.ValidationError as e:
                problems.append(f"{version}: {'.'.join(map(str, e.path))}: {e.message}")
            except kv.SchemaNotFoundError as e:
                problems.append(f"{version}: {e.message} (add a schema to LOCAL_K8S_SCHEMAS)")
        report(label + f" (strict, {', '.join(K8S_VERSIONS)})", not problems, "; ".join(problems))

    # References between the manifests, and the configuration the pods would start with.
    by_kind = {}
    for _, doc in docs:
        by_kind.setdefault(doc["kind"], {})[doc["metadata"]["name"]] = doc
    secrets = {name: doc.get("stringData", {}) for name, doc in by_kind.get("Secret", {}).items()}
    configmaps = {name: doc.get("data", {}) for name, doc in by_kind.get("ConfigMap", {}).items()}
    workloads = [doc for kind in ("Deployment", "StatefulSet", "Job") for doc in by_kind.get(kind, {}).values()]
    for workload in workloads:
        name = workload["metadata"]["name"]
        pod = workload["spec"]["template"]["spec"]
        claims = {c["metadata"]["name"] for c in workload["spec"].get("volumeClaimTemplates", [])}
        missing = []
        for volume in pod.get("volumes", []):
            if "secret" in volume and volume["secret"]["secretName"] not in secrets:
                missing.append("secret " + volume["secret"]["secretName"])
            if "configMap" in volume and volume["configMap"]["name"] not in configmaps:
                missing.append("configMap " + volume["configMap"]["name"])
        if workload["kind"] == "StatefulSet" and workload["spec"].get("serviceName") not in by_kind.get("Service", {}):
            missing.append(f"Service {workload['spec'].get('serviceName')} (serviceName)")
        for container in pod["containers"]:
            mounts = {m["name"] for m in container.get("volumeMounts", [])}
            missing += [f"volume {m}" for m in mounts - {v["name"] for v in pod.get("volumes", [])} - claims]
            env = {}
            for var in container.get("env", []):
                ref = var.get("valueFrom", {}).get("secretKeyRef")
                if ref:
                    if ref["key"] not in secrets.get(ref["name"], {}):
                        missing.append(f"secret key {ref['name']}/{ref['key']}")
                        continue
                    env[var["name"]] = secrets[ref["name"]][ref["key"]]
                else:
                    env[var["name"]] = var.get("value", "")
            report(f"kubernetes: {name} references exist", not missing, ", ".join(missing))
            check_env_names(f"kubernetes: {name} TOLLGATE_* names", env)
            args = container.get("args", [])
            if "--config" not in args:
                continue
            config = yaml.safe_load(configmaps["tollgate-config"]["tollgate.yaml"])
            config_path = local_config_copy(config, pod, container, secrets)
            config_loads(f"kubernetes: {name} ConfigMap + environment load in tollgate", env, config_path)
            report(f"kubernetes: {name} runs a real command", args[0] in ("serve", "work", "topics"), " ".join(args))
            if args[0] in ("serve", "work"):
                # `serve` listens on http.port, `work` on api.port: the named port and the probes must be that one.
                key, variable, default = ("http", "TOLLGATE_HTTP_PORT", 8080) if args[0] == "serve" else ("api", "TOLLGATE_API_PORT", 8081)
                port = int(env.get(variable) or (config.get(key) or {}).get("port", default))
                ports = {p.get("name"): p["containerPort"] for p in container.get("ports", [])}
                probes = {kind: container.get(kind, {}).get("httpGet", {}) for kind in ("readinessProbe", "livenessProbe")}
                problems = [] if ports.get("http") == port else [f"containerPort http {ports.get('http')}"]
                for kind, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
                    probe = probes[kind]
                    if probe.get("path") != path or probe.get("port") not in ("http", port):
                        problems.append(f"{kind} {probe or 'missing'}")
                report(f"kubernetes: {name} port http is {key}.port ({port}), probes /readyz and /healthz on it", not problems, "; ".join(problems))
                # With metrics.port, /metrics has a listener of its own: the container names it `metrics`.
                metrics_port = env.get("TOLLGATE_METRICS_PORT") or (config.get("metrics") or {}).get("port")
                if metrics_port is not None:
                    report(f"kubernetes: {name} port metrics is metrics.port ({metrics_port})", ports.get("metrics") == int(metrics_port),
                           f"containerPort metrics {ports.get('metrics')}")
                # The kubelet sends SIGKILL terminationGracePeriodSeconds after SIGTERM (30 unless set).
                budget, what = shutdown_budget_ms(config, env, args[0])
                seconds = pod.get("terminationGracePeriodSeconds", 30)
                report(f"kubernetes: {name} terminationGracePeriodSeconds ({seconds}) is above shutdown ({what})", budget < seconds * 1000)
            if args[0] == "serve":
                check_k8s_spool(workload, pod, container, config, env)
    check_k8s_targets(by_kind, workloads)


def check_k8s_spool(workload, pod, container, config, env):
    """A gateway's spool.path lies on a writable volume from the StatefulSet's volumeClaimTemplates: one
    persistent claim per replica, which follows it across restarts and nodes (an emptyDir dies with the
    pod, a claim in `volumes` would be shared by every replica), and spool.maxBytes leaves room in it."""
    name = workload["metadata"]["name"]
    if not setting(config, env, "spool", "enabled"):
        print(f"note: kubernetes: {name} has spool.enabled false: deliveries Kafka does not take are answered 503")
        return
    path = setting(config, env, "spool", "path")
    path = os.path.normpath(os.path.join(container.get("workingDir") or image_workdir(), path))
    claims = {c["metadata"]["name"]: c for c in workload["spec"].get("volumeClaimTemplates", [])}
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    found = mount_over(path, [(m["mountPath"], m) for m in container.get("volumeMounts", [])])
    problems = []
    claim = None
    if found is None:
        problems.append("no volume mounted over it (the root file system is read-only, or goes with the container)")
    else:
        target, mount = found
        claim = claims.get(mount["name"])
        if claim is None:
            kind = next((k for k in volumes.get(mount["name"], {}) if k != "name"), "undefined")
            problems.append(f"{target} is volume {mount['name']} ({kind}), not from a volumeClaimTemplate of a StatefulSet")
        if mount.get("readOnly"):
            problems.append(f"{target} is mounted read-only")
        security = pod.get("securityContext", {})
        if security.get("runAsNonRoot") and security.get("fsGroup") is None:
            problems.append("no fsGroup: a new volume's root is not writable by the non-root user")
    report(f"kubernetes: {name} spool.path {path} is on a writable volume from a volumeClaimTemplate", not problems,
           "; ".join(problems) or f"claim {mount['name']} at {target}")
    if claim is not None:
        storage = k8s_quantity(claim["spec"]["resources"]["requests"]["storage"])
        max_bytes = setting(config, env, "spool", "maxBytes")
        modes = claim["spec"].get("accessModes", [])
        report(f"kubernetes: {name} spool.maxBytes ({max_bytes}) is at most half its claim ({storage}: SQLite pages, WAL, file system)",
               max_bytes * 2 <= storage)
        report(f"kubernetes: {name} spool claim is ReadWriteOnce (one gateway per volume)",
               modes in (["ReadWriteOnce"], ["ReadWriteOncePod"]), f"{modes}")


def check_k8s_targets(by_kind, workloads):
    """HorizontalPodAutoscalers scale a workload that exists, with its kind; PodDisruptionBudgets select pods."""
    for hpa in by_kind.get("HorizontalPodAutoscaler", {}).values():
        ref = hpa["spec"]["scaleTargetRef"]
        ok = ref["name"] in by_kind.get(ref["kind"], {}) and ref.get("apiVersion") == "apps/v1"
        report(f"kubernetes: HPA {hpa['metadata']['name']} targets {ref['kind']}/{ref['name']}, which exists", ok)
    for pdb in by_kind.get("PodDisruptionBudget", {}).values():
        selector = pdb["spec"]["selector"]["matchLabels"].items()
        matched = [w["metadata"]["name"] for w in workloads if w["kind"] != "Job"
                   and selector <= w["spec"]["template"]["metadata"].get("labels", {}).items()]
        report(f"kubernetes: PDB {pdb['metadata']['name']} selects the pods of one workload", len(matched) == 1, ", ".join(matched))
    # A ServiceMonitor scrapes a named port of the Services it selects (the `metrics` port: metrics.port).
    for monitor in by_kind.get("ServiceMonitor", {}).values():
        selector = monitor["spec"]["selector"]["matchLabels"].items()
        services = [s for s in by_kind.get("Service", {}).values() if selector <= s["metadata"].get("labels", {}).items()]
        names = {p.get("name") for s in services for p in s["spec"].get("ports", [])}
        wanted = [e.get("port") for e in monitor["spec"].get("endpoints", [])]
        report(f"kubernetes: ServiceMonitor {monitor['metadata']['name']} scrapes ports {wanted} its Services name",
               bool(services) and all(w in names for w in wanted), f"Services {[s['metadata']['name'] for s in services]} name {sorted(n for n in names if n)}")


def local_config_copy(config, pod, container, secrets):
    """The ConfigMap's tollgate.yaml with /etc/tollgate paths moved to a temporary folder holding what
    the pod would mount there: Secret files get real generated keys (the examples are placeholders)."""
    etc = os.path.join(WORK, "etc-tollgate")
    os.makedirs(os.path.join(etc, "apple"), exist_ok=True)
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    for mount in container.get("volumeMounts", []):
        volume = volumes.get(mount["name"], {})  # absent: a volumeClaimTemplate
        if "secret" not in volume or not mount["mountPath"].startswith("/etc/tollgate/"):
            continue
        folder = os.path.join(etc, mount["mountPath"][len("/etc/tollgate/"):])
        os.makedirs(folder, exist_ok=True)
        for file_name in secrets[volume["secret"]["secretName"]]:
            target = os.path.join(folder, file_name)
            if not os.path.exists(target):
                generate_rsa(target, public="public" in file_name)
    apple_root = os.path.join(SHARED, "fixtures/apple/AppleRootCA-G3.pem")
    if os.path.exists(apple_root):
        shutil.copy(apple_root, os.path.join(etc, "apple/AppleRootCA-G3.cer"))
    elif config.get("sources", {}).get("apple"):
        print(f"note: {apple_root} is absent: the ConfigMap is loaded without sources.apple")
        del config["sources"]["apple"]
    text = yaml.safe_dump(config).replace("/etc/tollgate/", etc + "/")
    return write("k8s-tollgate.yaml", text)


def generate_rsa(path, public):
    private = path + ".key" if public else path
    run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", private]).check_returncode()
    if public:
        run(["openssl", "pkey", "-in", private, "-pubout", "-out", path]).check_returncode()
    return private


def check_dockerfile():
    text = open("deploy/Dockerfile").read()
    args = dict(re.findall(r"^ARG (\w+)=(\S+)", text, re.M))
    stages = re.findall(r"^FROM (\S+)", text, re.M)
    final = text[text.rindex("\nFROM "):]
    default_root = re.search(r"`sources\.apple\.roots` \| `\[([^\]]+)\]`", open("docs/configuration.md").read()).group(1)
    checks = {
        "build stage is the Swift toolchain on bookworm": re.fullmatch(r"swift:6\.\d+(\.\d+)?-bookworm", args.get("SWIFT_IMAGE", "")),
        "runtime is Debian bookworm slim": args.get("RUNTIME_IMAGE") == "debian:bookworm-slim" and stages[-1] == "${RUNTIME_IMAGE}",
        "multi-stage": len(stages) >= 2 and "COPY --from=build" in text,
        "Apple root pinned to its fingerprint": args.get("APPLE_ROOT_SHA256") == "63343abfb89a6a03ebb57e9b3f5fa7be7c4f5c756f3017b3a8c488c3653e9179"
            and "sha256sum -c" in text and args.get("APPLE_ROOT_URL") == "https://www.apple.com/certificateauthority/AppleRootCA-G3.cer",
        "Apple root installed at the sources.apple.roots default": f"/AppleRootCA-G3.cer {default_root}" in final,
        "non-root user": re.search(r"^USER (\d+)", final, re.M) and re.search(r"^USER (\d+)", final, re.M).group(1) != "0",
        "entrypoint tollgate": '\nENTRYPOINT ["tollgate"]' in final,
        "health check on /healthz": re.search(r"^HEALTHCHECK .*\n?.*/healthz", final, re.M),
    }
    # Without a volume mounted, the gateway's spool (the default spool.path, relative to WORKDIR) must be
    # writable by the image's user and on a VOLUME, and no ENV may override what a configuration file says.
    match = re.search(r"^USER (\d+)", final, re.M)
    user = match.group(1) if match else None
    workdir = image_workdir()
    volumes = set()
    for declared in re.findall(r"^VOLUME (.+)$", final, re.M):
        declared = declared.strip()
        volumes.update(json.loads(declared) if declared.startswith("[") else declared.split())
    spool = os.path.normpath(os.path.join(workdir, config_default("spool.path")))
    owned = user and (re.search(rf"install -d [^\n]*-o ({user}|tollgate) [^\n]*{re.escape(workdir)}\b", final)
                      or re.search(rf"chown [^\n]*({user}|tollgate)[^\n]* {re.escape(workdir)}\b", final))
    checks.update({
        f"default spool.path ({spool}) inside a VOLUME": mount_over(spool, [(v, v) for v in volumes]) is not None,
        f"WORKDIR {workdir} created owned by the image's user ({user})": owned,
        "spool.path not set by ENV (it would override the configuration file's)":
            not any("TOLLGATE_SPOOL" in env for env in re.findall(r"^ENV (?:.*\\\n)*.*$", final, re.M)),
    })
    # What the image installs must follow from what the binary links and builds against, not from a list
    # kept by hand: a new system library (SQLite came with the store) breaks the image otherwise.
    build_stage = text[:text.index("\nFROM ", text.index("AS build"))]
    build_installs = set(re.findall(r"[\w.+-]+", " ".join(re.findall(r"apt-get install ([^\n&]*)", build_stage))))
    runtime_installs = set(re.findall(r"[\w.+-]+", " ".join(re.findall(r"apt-get install ([^\n&]*)", final))))
    dev_packages = {p for p in makefile_variable("APT_PACKAGES") if p.endswith("-dev")}
    checks[f"build stage installs every -dev package the Makefile builds against ({' '.join(sorted(dev_packages))})"] = \
        dev_packages <= build_installs or sorted(dev_packages - build_installs)
    linked = linked_packages(TOLLGATE) - BASE_IMAGE_PACKAGES
    checks[f"runtime stage installs the package of every shared library the binary links ({' '.join(sorted(linked))})"] = \
        linked <= runtime_installs or sorted(linked - runtime_installs)
    for name, ok in checks.items():
        report(f"dockerfile: {name}", ok is True or (bool(ok) and not isinstance(ok, list)),
               f"missing: {' '.join(ok)}" if isinstance(ok, list) else "")


# In debian:bookworm-slim already (libc, and what apt itself links).
BASE_IMAGE_PACKAGES = {"libc6", "libgcc-s1", "libstdc++6", "zlib1g"}


def makefile_variable(name):
    match = re.search(rf"^{name}\s*:?=\s*(.*)$", open("Makefile").read(), re.M)
    return match.group(1).split() if match else []


def linked_packages(binary):
    """The Debian packages of the shared libraries the image's binary links: the binary's own NEEDED
    entries, and those of the Swift toolchain's libraries it uses (the image links the Swift runtime
    and Foundation statically, so their system dependencies, libcurl among them, become its own)."""
    resolved = dict(re.findall(r"^\s*(\S+) => (/\S+)", run(["ldd", binary]).stdout.decode(), re.M))
    system_dirs = ("/lib/", "/lib64/", "/usr/lib/")
    libraries, seen, queue = set(), set(), [binary]
    while queue:
        path = queue.pop()
        if path in seen:
            continue
        seen.add(path)
        for name in re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", run(["readelf", "-d", path]).stdout.decode()):
            target = resolved.get(name)
            if target is None:
                continue
            if target.startswith(system_dirs):
                libraries.add(target)
            else:
                queue.append(target)
    packages = set()
    for library in libraries:
        candidates = {library, os.path.realpath(library), library.replace("/lib/", "/usr/lib/", 1)}
        for candidate in candidates:
            owner = run(["dpkg", "-S", candidate])
            if owner.returncode == 0:
                packages.add(owner.stdout.decode().split(":")[0].strip())
                break
        else:
            packages.add(f"(no package owns {library})")
    return packages


def openapi_registry(spec):
    return Registry().with_resource("urn:openapi", Resource.from_contents(spec, default_specification=DRAFT202012))


def check_openapi():
    from openapi_spec_validator import validate
    spec = load_yaml("docs/openapi.yaml")
    try:
        validate(spec)
        report("openapi: docs/openapi.yaml is valid OpenAPI " + spec["openapi"], True)
    except Exception as e:  # the validator's exceptions vary by version
        report("openapi: docs/openapi.yaml is valid OpenAPI", False, str(e).splitlines()[0])
    documented = {}
    for name, schema in spec["components"]["schemas"].items():
        if re.fullmatch(r"Error\d{3}", name):
            for code in schema["properties"]["error"]["enum"]:
                documented[code] = int(name[5:])
    # The entitlement API's codes are listed once in its APIError schema; their statuses are the binary's.
    statuses = reason_statuses()
    for code in spec["components"]["schemas"]["APIError"]["properties"]["error"]["enum"]:
        documented.setdefault(code, statuses.get(code))
    # The Sileo vendor API's own codes are listed once in SileoReason; their statuses are the binary's.
    for code in spec["components"]["schemas"]["SileoReason"]["enum"]:
        documented.setdefault(code, statuses.get(code))
    # So are the purchases API's, in PurchaseReason.
    for code in spec["components"]["schemas"]["PurchaseReason"]["enum"]:
        documented.setdefault(code, statuses.get(code))
    actual = statuses
    # Each operation's own refusals (AppleError400, ...): codes the binary answers with that status.
    misplaced = [f"{name}: {code}" for name, schema in spec["components"]["schemas"].items()
                 if re.fullmatch(r"[A-Za-z]+Error\d{3}", name) and not re.fullmatch(r"Error\d{3}", name)
                 for code in schema["properties"]["error"]["enum"] if statuses.get(code) != int(name[-3:])]
    report("openapi: each operation's reason codes answer with their response's status", not misplaced, "; ".join(misplaced))
    report("openapi: reason codes and statuses equal the binary's", documented == actual,
           f"differences: {sorted(set(documented.items()) ^ set(actual.items()))}" if documented != actual else f"{len(actual)} codes")
    return spec


def walk_refs(node, base, problems, root):
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            file_part, _, pointer = ref.partition("#")
            target = root if not file_part else load_json_or_yaml(os.path.join(base, file_part))
            try:
                for token in [t for t in pointer.split("/") if t]:
                    target = target[token.replace("~1", "/").replace("~0", "~")]
            except (KeyError, TypeError):
                problems.append(ref)
        for value in node.values():
            walk_refs(value, base, problems, root)
    elif isinstance(node, list):
        for value in node:
            walk_refs(value, base, problems, root)


def load_json_or_yaml(path):
    with open(path) as f:
        return json.load(f) if path.endswith(".json") else yaml.safe_load(f)


def check_asyncapi():
    doc = load_yaml("docs/asyncapi.yaml")
    report("asyncapi: version 3.0.0", doc.get("asyncapi") == "3.0.0")
    required = {"info", "channels", "operations", "components"}
    report("asyncapi: has info, channels, operations, components", required <= doc.keys())
    problems = []
    walk_refs(doc, "docs", problems, doc)
    report("asyncapi: every $ref resolves", not problems, ", ".join(problems))
    for name, op in doc["operations"].items():
        if op.get("action") not in ("send", "receive"):
            problems.append(name)
    report("asyncapi: operations send or receive", not problems)

    schema = json.load(open("docs/schemas/event.schema.json"))
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
        report("asyncapi: docs/schemas/event.schema.json is valid JSON Schema 2020-12", True)
    except jsonschema.SchemaError as e:
        report("asyncapi: docs/schemas/event.schema.json is valid JSON Schema 2020-12", False, e.message)
    enum = schema["$defs"]["eventType"]["enum"]
    report("asyncapi: event type enum equals the binary's event types", enum == event_types(),
           f"{sorted(set(enum) ^ set(event_types()))}" if enum != event_types() else f"{len(enum)} types")

    # Channel addresses, with their parameters filled in, are the topics the binary creates.
    code = {t["name"] for t in describe()["topics"]}
    documented = set()
    for channel in doc["channels"].values():
        address = channel["address"]
        if "{source}" in address:
            documented.update(address.replace("{prefix}", "tollgate").replace("{source}", s) for s in source_names())
        elif "{delayMs}" in address:
            documented.update(address.replace("{prefix}", "tollgate").replace("{delayMs}", str(d)) for d in (5000, 60000, 600000))
        else:
            documented.add(address.replace("{prefix}", "tollgate"))
    report("asyncapi: channel addresses equal the topics the binary creates", documented == code,
           f"documented {sorted(documented)} vs code {sorted(code)}" if documented != code else ", ".join(sorted(documented)))
    headers_schema = doc["components"]["schemas"]["cloudEventHeaders"]
    for example in doc["components"]["messages"]["normalizedEvent"].get("examples", []):
        errors = [e.message for e in jsonschema.Draft202012Validator(headers_schema).iter_errors(example["headers"])]
        report(f"asyncapi: example {example['name']} headers match cloudEventHeaders", not errors, "; ".join(errors))

    # Nothing is documented as pending: every channel and operation exists in the code.
    pending = [f"{kind} {name}" for kind in ("channels", "operations") for name, item in doc[kind].items()
               if "x-status" in item or "pending" in str(item.get("title", "")).lower()]
    report("asyncapi: no channel or operation is marked pending", not pending, ", ".join(pending))

    # The entitlement value's schema, its enums against the code, and the example against it.
    entitlement = json.load(open("docs/schemas/entitlement.schema.json"))
    try:
        jsonschema.Draft202012Validator.check_schema(entitlement)
        report("asyncapi: docs/schemas/entitlement.schema.json is valid JSON Schema 2020-12", True)
    except jsonschema.SchemaError as e:
        report("asyncapi: docs/schemas/entitlement.schema.json is valid JSON Schema 2020-12", False, e.message)
    states = entitlement["$defs"]["state"]["enum"]
    report("asyncapi: entitlement state enum equals the binary's entitlement states", states == purchase_states(),
           f"documented {states} vs code {purchase_states()}" if states != purchase_states() else f"{len(states)} states")
    sources = entitlement["properties"]["source"]["enum"]
    report("asyncapi: entitlement source enum equals the binary's senders", sources == source_names(), f"{sources} vs {source_names()}")
    message = doc["components"]["messages"]["entitlementChange"]
    report("asyncapi: entitlementChange's payload is docs/schemas/entitlement.schema.json",
           message["payload"]["schema"].get("$ref") == "./schemas/entitlement.schema.json")
    entitlement_validator = jsonschema.Draft202012Validator(entitlement, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    schemas = doc["components"]["schemas"]
    for example in message.get("examples", []):
        errors = [e.message for e in entitlement_validator.iter_errors(example["payload"])]
        errors += [e.message for e in jsonschema.Draft202012Validator(schemas["entitlementHeaders"]).iter_errors(example["headers"])]
        report(f"asyncapi: entitlement example {example['name']} validates (payload, headers)", not errors, "; ".join(errors))

    # Retry and dead-letter headers: the names the workers write, the classes they raise (from the binary).
    code_headers = set(spring_header_names())
    retry = set(schemas["retryHeaders"]["properties"])
    dead = set(schemas["deadLetterHeaders"]["properties"])
    report("asyncapi: retryHeaders are the headers the binary writes", retry == code_headers,
           f"documented {sorted(retry)} vs code {sorted(code_headers)}" if retry != code_headers else f"{len(retry)} headers")
    report("asyncapi: deadLetterHeaders are those less retry_topic-backoff-timestamp", dead == code_headers - {"retry_topic-backoff-timestamp"},
           f"{sorted(dead ^ (code_headers - {'retry_topic-backoff-timestamp'}))}")
    fqcns = set(schemas["springExceptionFQCN"]["enum"])
    report("asyncapi: kafka_dlt-exception-fqcn enum equals the binary's worker failure kinds", fqcns == worker_failure_types(),
           f"documented {sorted(fqcns)} vs code {sorted(worker_failure_types())}" if fqcns != worker_failure_types() else ", ".join(sorted(fqcns)))
    return doc, schema, entitlement


# ---------------------------------------------------------------------------------------------
# Real events: `tollgate verify` over deliveries built here.

CITCON_PUBLISHED_BODY = (
    '{"id":"84571d30e61711eba6a94911fce35a55","transaction_type":"charge","reference":"reference132","amount":100,'
    '"currency":"USD","status":"authorized","time_completed":"2021-08-14T09:47:43.000Z","time_created":"2021-07-16T09:23:44.000Z",'
    '"payment_method":"paypal","amount_captured":"","amount_refunded":"",'
    '"fields":"id,transaction_type,reference,amount,currency,status,time_completed,time_created,payment_method,amount_captured,amount_refunded",'
    '"sign":"621233f017ad8139fe97d47b4653735e121b9f6e7dafe3638eba0fcd80801db5"}')


def citcon_upi(values, secret):
    names = sorted(list(values) + ["fields"])
    fields = ",".join(values)
    pairs = {**{k: v for k, v in values.items()}, "fields": fields}
    text = "&".join(f"{n}={pairs[n] if not isinstance(pairs[n], str) else pairs[n]}" for n in names) + f"&secret={secret}"
    body = dict(values, fields=fields, sign=hashlib.sha256(text.encode()).hexdigest())
    return json.dumps(body, separators=(",", ":"))


def citcon_legacy(values, token):
    from urllib.parse import urlencode
    fields = ",".join(values)
    pairs = dict(values, fields=fields)
    text = "".join(f"{n}={pairs[n]}&" for n in sorted(pairs)) + f"token={token}"
    return urlencode(dict(pairs, sign=hashlib.md5(text.encode()).hexdigest()))


def deliveries():
    """(label, source, config, extra verify arguments, body bytes)"""
    iaptic_config = "sources: { iaptic: { apps: [{ name: demo, secrets: [demo-secret] }] } }\n"
    renewed = open("examples/iaptic-renewed.json").read()
    refunded = json.loads(renewed)
    refunded["notification"].update(id="ntf_refund", reason="REFUNDED")
    refunded["purchases"]["apple:pro_monthly"].update(refundDate="2026-11-25T08:00:00.000Z", cancelationReason="Customer",
                                                      quantity=1, isExpired=True, renewalIntent="Lapse")
    refunded["purchases"]["apple:coins_100"] = {"purchaseId": "apple:2000000555", "productId": "apple:coins_100",
                                                "purchaseDate": "2026-11-01T00:00:00Z", "amountMicros": 990000, "currency": "EUR"}
    yield "iaptic renewed (examples/iaptic-renewed.json)", "iaptic", iaptic_config, [], renewed.encode()
    yield "iaptic refund + snapshot", "iaptic", iaptic_config, [], json.dumps(refunded).encode()
    yield "iaptic test", "iaptic", iaptic_config, [], b'{"type":"test","password":"demo-secret"}'

    yield ("citcon UPI, Citcon's published example", "citcon", 'sources: { citcon: { accounts: [{ name: demo, secrets: ["braintree"] }] } }\n',
           ["--path", "/webhooks/citcon/demo", "--header", "Content-Type: application/json"], CITCON_PUBLISHED_BODY.encode())
    citcon_config = "sources: { citcon: { accounts: [{ name: shop, secrets: [upi-secret], tokens: [chop-token] }] } }\n"
    for status, kind in (("success", "charge"), ("fail", "charge"), ("success", "refund"), ("opened", "chargeback")):
        body = citcon_upi({"id": f"c-{kind}-{status}", "transaction_type": kind, "reference": "order-7", "amount": 1250,
                           "currency": "JPY" if kind == "refund" else "USD", "status": status,
                           "time_created": "2026-11-20T10:00:00Z", "time_completed": "2026-11-20T10:00:05Z"}, "upi-secret")
        yield (f"citcon UPI {kind}/{status}", "citcon", citcon_config,
               ["--path", "/webhooks/citcon/shop", "--header", "Content-Type: application/json"], body.encode())
    legacy = citcon_legacy({"id": "legacy-1", "reference": "order-8", "notify_status": "success", "amount": "500",
                            "currency": "USD", "time": "1763632800"}, "chop-token")
    yield ("citcon CHOP form", "citcon", citcon_config,
           ["--path", "/webhooks/citcon/shop", "--header", "Content-Type: application/x-www-form-urlencoded"], legacy.encode())

    key = generate_rsa(os.path.join(WORK, "antom-public.pem"), public=True)
    alipay_config = f"sources: {{ alipayplus: {{ clients: [{{ clientId: SANDBOX_DEPLOY, platformPublicKeys: [{WORK}/antom-public.pem] }}] }} }}\n"
    for notify, status, code in (("PAYMENT_RESULT", "S", "SUCCESS"), ("PAYMENT_RESULT", "F", "USER_BALANCE_NOT_ENOUGH"),
                                 ("PAYMENT_PENDING", "U", "PAYMENT_IN_PROCESS")):
        body = json.dumps({"notifyType": notify, "result": {"resultCode": code, "resultStatus": status, "resultMessage": "x"},
                           "paymentRequestId": "pay-req-1", "paymentId": f"p-{status}",
                           "paymentAmount": {"currency": "KRW", "value": "12000"},
                           "paymentCreateTime": "2026-11-20T12:00:00+08:00", "paymentTime": "2026-11-20T12:00:09+08:00"},
                          separators=(",", ":"))
        request_time = "2026-11-20T12:00:10+08:00"
        signed = run(["openssl", "dgst", "-sha256", "-sign", key],
                     stdin=f"POST /webhooks/alipayplus\nSANDBOX_DEPLOY.{request_time}.{body}".encode()).stdout
        import base64
        from urllib.parse import quote
        signature = quote(base64.b64encode(signed).decode(), safe="")
        yield (f"alipayplus {notify}/{status}", "alipayplus", alipay_config,
               # --at: the signed Request-Time is judged against it (sources.alipayplus.maxRequestAgeSeconds).
               ["--at", "2026-11-20T04:00:30Z", "--header", "Client-Id: SANDBOX_DEPLOY", "--header", f"Request-Time: {request_time}",
                "--header", f"Signature: algorithm=RSA256,keyVersion=1,signature={signature}"], body.encode())

    real = sorted(glob.glob(os.path.join(SHARED, "conformance/apple/real/*.jws")))
    root = os.path.join(SHARED, "fixtures/apple/AppleRootCA-G3.pem")
    if real and os.path.exists(root):
        apple_config = (f"sources: {{ apple: {{ roots: [{root}], apps: [{{ bundleId: com.loki-project.loki-messenger, "
                        f"appAppleId: 1470168868, environments: [Sandbox] }}] }} }}\n")
        for path in real:
            jws = open(path).read().strip()
            yield f"apple real {os.path.basename(path)}", "apple", apple_config, [], json.dumps({"signedPayload": jws}).encode()
    else:
        print(f"note: no real Apple notifications under {SHARED}/conformance: Apple events not checked here")


def check_events(event_schema):
    validator = jsonschema.Draft202012Validator(event_schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    seen_types = set()
    for index, (label, source, config, extra, body) in enumerate(deliveries()):
        config_path = write(f"verify-{index}.yaml", config)
        body_path = write(f"verify-{index}.body", body, "wb")
        result = run([TOLLGATE, "verify", "--source", source, "--config", config_path] + extra + [body_path])
        if result.returncode != 0:
            report(f"events: {label}", False, f"verify exit {result.returncode}: {result.stderr.decode().strip()}")
            continue
        events = json.loads(result.stdout)
        errors = [f"{'/'.join(map(str, e.path))}: {e.message}" for event in events for e in validator.iter_errors(event)]
        seen_types.update(event["type"] for event in events)
        report(f"events: {label} ({len(events)} event{'s' if len(events) != 1 else ''}) validate", bool(events) and not errors,
               "; ".join(errors))
    print(f"note: event types exercised: {', '.join(sorted(seen_types))}")


# ---------------------------------------------------------------------------------------------
# The running server.

def http(method, url, body=None, headers=None):
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def response_schema_pointer(spec, path, method, status, media="application/json"):
    response = spec["paths"][path][method]["responses"].get(str(status))
    if response is None:
        return None, None
    pointer = f"/paths/{path.replace('~', '~0').replace('/', '~1')}/{method}/responses/{status}"
    if "$ref" in response:
        pointer = response["$ref"][1:]
        response = spec
        for token in [t for t in pointer.split("/") if t]:
            response = response[token]
    if media not in response.get("content", {}):
        return pointer, None
    return pointer, pointer + "/content/" + media.replace("/", "~1") + "/schema"


def check_answer(spec, registry, label, spec_path, method, status, headers, body, expected_status):
    pointer, schema_pointer = response_schema_pointer(spec, spec_path, method, status,
                                                      (headers.get("Content-Type") or "").split(";")[0].strip() or "application/json")
    problems = []
    if status != expected_status:
        problems.append(f"status {status}, expected {expected_status}: {body[:200]!r}")
    if pointer is None:
        problems.append(f"status {status} is not documented for {method.upper()} {spec_path}")
    elif schema_pointer:
        value = json.loads(body) if headers.get("Content-Type", "").startswith("application/json") else body.decode()
        validator = jsonschema.Draft202012Validator({"$ref": "urn:openapi#" + schema_pointer}, registry=registry)
        problems += [e.message for e in validator.iter_errors(value)]
    report(f"server: {label} answers as documented", not problems, "; ".join(problems))


# The merchant APIs' credentials in the `tollgate dev` of check_server (docs/security.md): the merchant's
# backend, the app's public client credential, and a server credential spent only by the rate probe.
SERVER_TOKEN = "validate-deploy-token-0123"
CLIENT_TOKEN = "validate-deploy-client-token-public"
RATE_PROBE_TOKEN = "validate-deploy-rate-probe-0123"
RATE_BURST = 20


def catalog_yaml():
    """The catalog (docs/catalog.md): the Iaptic sample's product grants `pro`; the Sileo vendor's package
    and the checkouts are priced here."""
    return ("catalog:\n  apps:\n"
            "    - { name: Demo, ids: [demo], products: [{ id: pro.monthly, prices: { USD: 1999 }, entitlements: [pro] },\n"
            "                                             { id: 'apple:pro_monthly', entitlements: [pro] }] }\n"
            "    - { name: Dev Repo, ids: [SANDBOX_DEVREPO0001], products: [{ id: tweak.lifetime, prices: { USD: 199 }, entitlements: [tweak] }] }\n")


def user_token_key():
    """The P-256 key pair a merchant's backend signs user tokens with (api.userTokenKeys): (private, public) paths."""
    private, public = os.path.join(WORK, "user-token.key"), os.path.join(WORK, "user-token.pub.pem")
    if not os.path.exists(public):
        run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", private]).check_returncode()
        run(["openssl", "pkey", "-in", private, "-pubout", "-out", public]).check_returncode()
    return private, public


def b64url(raw):
    import base64
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def es256_token(claims, header=None, key=None):
    """A compact JWS signed here with openssl (DER ECDSA turned into JOSE's r || s), so the checks can make
    tokens `tollgate user-token` would not: expired, for another app, with another header."""
    signing_input = b64url(json.dumps(header or {"alg": "ES256", "typ": "JWT"}).encode()) + "." + b64url(json.dumps(claims).encode())
    der = run(["openssl", "dgst", "-sha256", "-sign", key or user_token_key()[0]], stdin=signing_input.encode()).stdout
    # SEQUENCE { INTEGER r, INTEGER s }, each at most 33 bytes: short-form lengths.
    r_length = der[3]
    r = der[4:4 + r_length]
    s_length = der[5 + r_length]
    s = der[6 + r_length:6 + r_length + s_length]
    signature = r[-32:].rjust(32, b"\0") + s[-32:].rjust(32, b"\0")
    return signing_input + "." + b64url(signature)


def user_token(user, app="demo"):
    """A user token as the merchant's backend signs one, by `tollgate user-token` (docs/purchases.md)."""
    result = run([TOLLGATE, "user-token", "--key", user_token_key()[0], "--app", app, "--user", user])
    result.check_returncode()
    return result.stdout.decode().strip()


def sileo_vendor_yaml():
    """One Sileo vendor at /sileo/dev (docs/sileo.md), its sign-in key made here, so its routes are served,
    with the Antom sandbox client it sells through; its package is priced by catalog_yaml()."""
    key = os.path.join(WORK, "sileo-signin.pem")
    subprocess.run(["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", os.path.join(WORK, "sileo-private.pem")],
                   check=True, capture_output=True)
    subprocess.run(["openssl", "ec", "-in", os.path.join(WORK, "sileo-private.pem"), "-pubout", "-out", key], check=True, capture_output=True)
    # The downloadURL package's redirect is signed with it (docs/sileo.md#downloads).
    secret = write("sileo-download.secret", "validate-deploy-download-secret-0123456789abcdef\n")
    # The vendor's checkouts: an Antom sandbox client with its merchant key (Antom itself is not reached here).
    merchant, platform = os.path.join(WORK, "antom-merchant.pem"), os.path.join(WORK, "antom-platform.pem")
    subprocess.run(["openssl", "genrsa", "-out", merchant, "2048"], check=True, capture_output=True)
    subprocess.run(["openssl", "rsa", "-in", merchant, "-pubout", "-out", platform], check=True, capture_output=True)
    # Follows the `sources` mapping of start_dev: its first line is one more source.
    return (f"  alipayplus: {{ clients: [{{ clientId: SANDBOX_DEVREPO0001, platformPublicKeys: [{platform}], merchantPrivateKey: {merchant} }}] }}\n"
            "checkouts: { publicBaseURL: 'http://127.0.0.1:8080', antomBaseURL: 'http://127.0.0.1:9' }\n"
            "sileo:\n  vendors:\n    - { basePath: /sileo/dev, name: Dev Repo, icon: 'https://repo.example/icon.png', description: Dev Pay,\n"
            "        publicBaseURL: 'http://127.0.0.1:8080', app: SANDBOX_DEVREPO0001, environment: sandbox, provider: alipayplus,\n"
            f"        signIn: {{ url: 'http://127.0.0.1:8080/sign-in', assertionKeyFile: {key} }}, downloadURLSecretFile: {secret},\n"
            "        packages: [{ id: com.example.tweak, product: tweak.lifetime, currency: USD, price: '$1.99',\n"
            "                     downloadURL: 'https://repo.example/tweak.deb' }] }\n")


def start_dev():
    config = write("dev.yaml", "http: { host: 127.0.0.1, port: 0 }\n"
                   f"api:\n  tokens: [{SERVER_TOKEN}, {RATE_PROBE_TOKEN}, {{ token: {CLIENT_TOKEN}, kind: client, apps: [demo] }}]\n"
                   f"  userTokenKeys: {{ demo: {user_token_key()[1]} }}\n"
                   # One request a second refills the buckets: the rate probe's burst outruns it whatever the machine's speed.
                   f"  ratePerSecond: 1\n  rateBurst: {RATE_BURST}\n"
                   + catalog_yaml() +
                   "silence: { iaptic: 86400 }\n"
                   "sources:\n  iaptic: { apps: [{ name: demo, secrets: [demo-secret] }] }\n"
                   "  citcon: { accounts: [{ name: demo, secrets: [demo-upi-secret] }] }\n"
                   + sileo_vendor_yaml())
    bootstrap = os.path.join(WORK, "bootstrap")
    process = subprocess.Popen([TOLLGATE, "dev", "--config", config, "--bootstrap-file", bootstrap],
                               stdout=subprocess.PIPE, stderr=open(os.path.join(WORK, "dev.log"), "wb"), cwd=WORK, text=True)
    deadline = time.time() + 60
    while time.time() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        match = re.search(r"gateway: listening on (http://\S+)", line)
        if match:
            return process, match.group(1), open(bootstrap).read().strip()
    process.kill()
    raise RuntimeError("tollgate dev did not print its address; log: " + open(os.path.join(WORK, "dev.log")).read()[-2000:])


def check_server(spec, asyncapi, event_schema, entitlement_schema):
    process, base, bootstrap = start_dev()
    try:
        server_checks(spec, asyncapi, event_schema, entitlement_schema, base, bootstrap)
        # After the deliveries, entitlement and dead letter: most metrics have a sample by now; the
        # samplers (consumer lag) may still be due, so their first sample is awaited, up to 15 s.
        http("GET", base + "/readyz")
        LIVE_METRICS["tollgate dev"] = await_alert_metrics(base)
        check_spool(spec, asyncapi, bootstrap)
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()


def server_checks(spec, asyncapi, event_schema, entitlement_schema, base, bootstrap):
    registry = openapi_registry(spec)
    # Routes: every candidate path answers PATCH with 405 and its methods in Allow, or 404.
    senders = source_names()
    literal = {r["path"] for r in describe()["routes"]}
    documented = {}
    for path, item in spec["paths"].items():
        documented[path] = sorted(m.upper() for m in item if m in ("get", "head", "post", "put", "delete", "patch", "options"))
    candidates = set(documented) | literal | {f"/webhooks/{s}" for s in senders} | {f"/webhooks/{s}/{{account}}" for s in senders}
    served = {}
    for path in sorted(candidates):
        status, headers, body = http("PATCH", base + path.replace("{account}", "probe-account"))
        if status == 405:
            served[path] = sorted(m.strip() for m in headers.get("Allow", "").split(","))
        elif status != 404:
            report(f"server: PATCH {path}", False, f"unexpected {status}")
    differences = [f"{path}: server {served.get(path, 'absent')}, document {documented.get(path, 'absent')}"
                   for path in sorted(set(served) | set(documented)) if served.get(path) != documented.get(path)]
    report("server: routes and methods equal docs/openapi.yaml", not differences, "; ".join(differences) or f"{len(served)} paths")

    # Answers against the documented schemas.
    deadline = time.time() + 30
    while True:
        status, headers, body = http("GET", base + "/readyz")
        if status == 200 or time.time() > deadline:
            break
        time.sleep(0.5)
    check_answer(spec, registry, "GET /readyz", "/readyz", "get", status, headers, body, 200)
    check_answer(spec, registry, "GET /healthz", "/healthz", "get", *http("GET", base + "/healthz"), 200)
    status, headers, body = http("GET", base + "/metrics")
    report("server: GET /metrics is Prometheus text", status == 200 and headers.get("Content-Type", "").startswith("text/plain"))
    check_answer(spec, registry, "PATCH /healthz", "/healthz", "get", *http("PATCH", base + "/healthz"), 405)
    example = open("examples/iaptic-renewed.json", "rb").read()
    json_headers = {"Content-Type": "application/json"}
    check_answer(spec, registry, "POST /webhooks/iaptic (examples/iaptic-renewed.json)", "/webhooks/iaptic", "post",
                 *http("POST", base + "/webhooks/iaptic", example, json_headers), 200)
    check_answer(spec, registry, "POST /webhooks/iaptic with a wrong password", "/webhooks/iaptic", "post",
                 *http("POST", base + "/webhooks/iaptic", example.replace(b"demo-secret", b"wrong"), json_headers), 401)
    check_answer(spec, registry, "POST /webhooks/iaptic not JSON", "/webhooks/iaptic", "post",
                 *http("POST", base + "/webhooks/iaptic", b"[", json_headers), 400)
    check_answer(spec, registry, "POST /webhooks/iaptic as XML", "/webhooks/iaptic", "post",
                 *http("POST", base + "/webhooks/iaptic", example, {"Content-Type": "application/xml"}), 415)
    check_answer(spec, registry, "POST /webhooks/iaptic over the body limit", "/webhooks/iaptic", "post",
                 *http("POST", base + "/webhooks/iaptic", b" " * 300_000, json_headers), 413)
    check_answer(spec, registry, "POST /webhooks/citcon/nobody", "/webhooks/citcon/{account}", "post",
                 *http("POST", base + "/webhooks/citcon/nobody", b"{}", json_headers), 404)
    upi = citcon_upi({"id": "srv-1", "transaction_type": "charge", "reference": "r-1", "amount": 100, "currency": "USD",
                      "status": "success"}, "demo-upi-secret")
    check_answer(spec, registry, "POST /webhooks/citcon/demo", "/webhooks/citcon/{account}", "post",
                 *http("POST", base + "/webhooks/citcon/demo", upi.encode(), json_headers), 200)
    check_answer(spec, registry, "POST /webhooks/alipayplus without Client-Id", "/webhooks/alipayplus", "post",
                 *http("POST", base + "/webhooks/alipayplus", b"{}", json_headers), 400)
    check_answer(spec, registry, "POST /webhooks/google (not configured)", "/webhooks/google", "post",
                 *http("POST", base + "/webhooks/google", b"{}", json_headers), 401)
    api = "/v1/users/{user}/entitlements"
    check_answer(spec, registry, "GET entitlements without a token", api, "get",
                 *http("GET", base + "/v1/users/u-1/entitlements?app=demo"), 401)
    bearer = {"Authorization": f"Bearer {SERVER_TOKEN}"}
    check_answer(spec, registry, "GET entitlements of an unknown user", api, "get",
                 *http("GET", base + "/v1/users/nobody/entitlements?app=demo", None, bearer), 404)
    check_answer(spec, registry, "GET entitlements without app", api, "get",
                 *http("GET", base + "/v1/users/u-1/entitlements", None, bearer), 400)
    status, headers, body = http("GET", base + "/nowhere")
    error_schema = {"$ref": "urn:openapi#/components/schemas/Error404"}
    errors = [e.message for e in jsonschema.Draft202012Validator(error_schema, registry=registry).iter_errors(json.loads(body))]
    report("server: an unknown path answers the documented 404 body", status == 404 and not errors, "; ".join(errors))
    merchant_api_checks(spec, registry, base)

    # The records the server published, as a consumer reads them. The dead-letter probe writes a
    # record that is not an event to the events topic, so it comes last.
    check_published(asyncapi, event_schema, bootstrap)
    check_entitlements(spec, registry, asyncapi, entitlement_schema, base, bootstrap)
    check_dead_letter(asyncapi, bootstrap)


def merchant_api_checks(spec, registry, base):
    """The merchant APIs' credentials, user tokens, prices and rates (docs/security.md, docs/catalog.md):
    each refusal with its documented status, schema and reason code."""
    api = "/v1/users/{user}/entitlements"
    client = {"Authorization": f"Bearer {CLIENT_TOKEN}"}
    server = {"Authorization": f"Bearer {SERVER_TOKEN}", "Content-Type": "application/json"}

    def expect(label, spec_path, method, answer, status, reason):
        check_answer(spec, registry, label, spec_path, method, *answer, status)
        try:
            found = json.loads(answer[2]).get("error")
        except ValueError:
            found = None
        report(f"server: {label} is {reason}", found == reason, f"{found!r}")

    now = int(time.time())
    alice = "merchant-check-alice"
    cases = [
        ("a client credential without a user token", {}, 401, "user_token_required"),
        ("a client credential with another user's token", {"Tollgate-User-Token": user_token("merchant-check-mallory")}, 403, "user_not_allowed"),
        ("a client credential with another app's token", {"Tollgate-User-Token": user_token(alice, app="com.example.repo")}, 401, "invalid_user_token"),
        ("a client credential with an expired token",
         {"Tollgate-User-Token": es256_token({"sub": alice, "aud": "demo", "iat": now - 1200, "exp": now - 300})}, 401, "user_token_expired"),
        ("a client credential with a token living two hours",
         {"Tollgate-User-Token": es256_token({"sub": alice, "aud": "demo", "iat": now, "exp": now + 7200})}, 401, "invalid_user_token"),
        ("a client credential with an unsigned token (alg none)",
         {"Tollgate-User-Token": b64url(b'{"alg":"none"}') + "." + b64url(json.dumps({"sub": alice, "aud": "demo", "iat": now, "exp": now + 600}).encode()) + "."},
         401, "invalid_user_token"),
    ]
    for label, extra, status, reason in cases:
        expect(f"GET entitlements with {label}", api, "get",
               http("GET", f"{base}/v1/users/{alice}/entitlements?app=demo", None, {**client, **extra}), status, reason)
    own = {**client, "Tollgate-User-Token": user_token(alice)}
    status, headers, body = http("GET", f"{base}/v1/users/{alice}/entitlements?app=demo", None, own)
    check_answer(spec, registry, "GET entitlements of a user without purchases, with the client credential and the user's token", api, "get",
                 status, headers, body, 200)
    report("server: a client credential reads a user without purchases as entitled to nothing (200, empty lists), not 404",
           status == 200 and json.loads(body).get("entitlements") == [] and json.loads(body).get("access") == [], body.decode()[:200])

    transaction = json.dumps({"app": "demo", "user": alice, "apple": {"transactionId": "2000000123456789"}}).encode()
    expect("POST /v1/purchases with a bare transaction id from a client credential", "/v1/purchases", "post",
           http("POST", base + "/v1/purchases", transaction, {**own, "Content-Type": "application/json"}), 403, "proof_of_possession_required")

    def checkout(**fields):
        return json.dumps({"app": "demo", "user": alice, "product": "pro.monthly", "currency": "USD", "provider": "citcon", **fields}).encode()
    for label, body, status, reason in (("at another price", checkout(amount=1), 422, "price_mismatch"),
                                        ("of a product the catalog does not have", checkout(product="pro.forever"), 422, "unknown_product"),
                                        ("in a currency the catalog does not price", checkout(currency="JPY"), 422, "currency_not_offered")):
        expect(f"POST /v1/checkouts {label}", "/v1/checkouts", "post", http("POST", base + "/v1/checkouts", body, server), status, reason)
    expect("POST /v1/checkouts from a client credential without a user token", "/v1/checkouts", "post",
           http("POST", base + "/v1/checkouts", checkout(), {**client, "Content-Type": "application/json"}), 401, "user_token_required")

    # A credential past its burst (api.rateBurst) is refused with Retry-After; the others are not.
    import concurrent.futures
    probe = {"Authorization": f"Bearer {RATE_PROBE_TOKEN}"}
    url = f"{base}/v1/users/{alice}/entitlements?app=demo"
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(lambda _: http("GET", url, None, probe), range(RATE_BURST * 2)))
    limited = [a for a in answers if a[0] == 429]
    report(f"server: a credential sending {RATE_BURST * 2} requests at once past api.rateBurst {RATE_BURST} is refused 429",
           bool(limited), f"{sorted({a[0] for a in answers})}")
    if limited:
        expect("GET entitlements past the credential's rate", api, "get", limited[0], 429, "rate_limited")
        retry = limited[0][1].get("Retry-After", "")
        report("server: the 429 carries Retry-After in whole seconds, at least 1", retry.isdigit() and int(retry) >= 1, repr(retry))
    status = http("GET", url, None, {"Authorization": f"Bearer {SERVER_TOKEN}"})[0]
    report("server: another credential is not limited meanwhile", status == 404, str(status))


# ---------------------------------------------------------------------------------------------
# The spool, with a real `tollgate serve`: Kafka unreachable, then back.

def start_serve(config, env, log_name):
    log = os.path.join(WORK, log_name)
    process = subprocess.Popen([TOLLGATE, "serve", "--config", config], env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **env},
                               stdout=subprocess.PIPE, stderr=open(log, "wb"), cwd=WORK, text=True)
    deadline = time.time() + 60
    while time.time() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        match = re.search(r"gateway: listening on (http://\S+)", line)
        if match:
            return process, match.group(1)
    process.kill()
    raise RuntimeError(f"tollgate serve did not print its address; log: {open(log).read()[-2000:]}")


def stop_serve(process, label, grace_seconds):
    """SIGTERM, as Kubernetes and docker stop send it: exit 0 within the grace period."""
    started = time.time()
    process.send_signal(signal.SIGTERM)
    try:
        code = process.wait(timeout=grace_seconds + 10)
    except subprocess.TimeoutExpired:
        process.kill()
        code = "none (killed)"
    elapsed = time.time() - started
    report(f"spool: {label}: SIGTERM exits 0 within shutdown.gracePeriodMs", code == 0 and elapsed < grace_seconds,
           f"exit {code} after {elapsed:.1f} s")


def sample(text, name, labels=None):
    """The first sample of `name` whose labels include `labels`, or None."""
    for match in re.finditer(rf"^{name}(?:\{{([^}}]*)\}})? (\S+)$", text, re.M):
        found = dict(re.findall(r'(\w+)="([^"]*)"', match.group(1) or ""))
        if (labels or {}).items() <= found.items():
            return float(match.group(2))
    return None


def check_spool(spec, asyncapi, bootstrap):
    registry = openapi_registry(spec)
    prefix = asyncapi["components"]["parameters"]["prefix"]["default"]
    spool = os.path.join(WORK, "spool-gateway", "spool.sqlite")
    grace_ms = 10_000
    config = write("spool-serve.yaml", "http: { host: 127.0.0.1, port: 0 }\n"
                   "sources:\n  iaptic: { apps: [{ name: demo, secrets: [demo-secret] }] }\n"
                   f"spool: {{ path: {spool} }}\n"
                   f"shutdown: {{ gracePeriodMs: {grace_ms}, drainDelayMs: 300 }}\n")
    example = json.load(open("examples/iaptic-renewed.json"))
    example["notification"]["id"] = "ntf_validate_deploy_spool"
    body, json_headers = json.dumps(example).encode(), {"Content-Type": "application/json"}

    # Nothing listens on port 1: every produce times out after kafka.ackTimeoutMs.
    process, base = start_serve(config, {"TOLLGATE_KAFKA_BROKERS": "127.0.0.1:1", "TOLLGATE_KAFKA_ACK_TIMEOUT_MS": "500"},
                                "serve-kafka-down.log")
    try:
        check_answer(spec, registry, "POST /webhooks/iaptic to serve with Kafka unreachable (spooled)", "/webhooks/iaptic", "post",
                     *http("POST", base + "/webhooks/iaptic", body, json_headers), 200)
        check_answer(spec, registry, "the same delivery again (a duplicate)", "/webhooks/iaptic", "post",
                     *http("POST", base + "/webhooks/iaptic", body, json_headers), 200)
        status, headers, answer = http("GET", base + "/readyz")
        check_answer(spec, registry, "GET /readyz of serve with Kafka unreachable and room in the spool", "/readyz", "get",
                     status, headers, answer, 200)
        ready = json.loads(answer) if headers.get("Content-Type", "").startswith("application/json") else {}
        report("spool: /readyz says kafka unreachable, one delivery in the spool", ready.get("kafka") == "unreachable"
               and (ready.get("spool") or {}).get("records") == 1, answer.decode()[:300])
        metrics = http("GET", base + "/metrics")[2].decode()
        LIVE_METRICS["tollgate serve, Kafka unreachable"] = metrics
        expected = [("tollgate_deliveries_written_total", {"source": "iaptic", "outcome": "spooled"}, lambda v: v == 1),
                    ("tollgate_deliveries_written_total", {"source": "iaptic", "outcome": "duplicate"}, lambda v: v == 1),
                    ("tollgate_kafka_reachable", None, lambda v: v == 0),
                    ("tollgate_spool_records", None, lambda v: v == 1),
                    ("tollgate_spool_bytes", None, lambda v: v > 0),
                    ("tollgate_spool_max_bytes", None, lambda v: v == config_default("spool.maxBytes")),
                    ("tollgate_spool_oldest_age_seconds", None, lambda v: v > 0)]
        problems = [f"{name}{labels or ''} = {sample(metrics, name, labels)}" for name, labels, ok in expected
                    if sample(metrics, name, labels) is None or not ok(sample(metrics, name, labels))]
        report("spool: /metrics counts one delivery spooled and one duplicate, Kafka unreachable, the spool's gauges",
               not problems, "; ".join(problems))
        report("spool: the spool file and its lock are at spool.path", os.path.exists(spool) and os.path.exists(spool + ".lock"))
    finally:
        if process.poll() is None:
            stop_serve(process, "Kafka unreachable, the spool kept", grace_ms / 1000)

    # Restarted on the same spool with Kafka back: the relay publishes it, in order, and forgets it.
    process, base = start_serve(config, {"TOLLGATE_KAFKA_BROKERS": bootstrap}, "serve-kafka-back.log")
    try:
        deadline = time.time() + 30
        while True:
            http("GET", base + "/readyz")
            metrics = http("GET", base + "/metrics")[2].decode()
            if (sample(metrics, "tollgate_spool_records") == 0 and (sample(metrics, "tollgate_spool_relayed_total") or 0) >= 1) \
                    or time.time() > deadline:
                break
            time.sleep(0.5)
        LIVE_METRICS["tollgate serve, relaying"] = metrics
        report("spool: restarted with Kafka reachable, the relay empties the spool (tollgate_spool_relayed_total 1, records 0)",
               sample(metrics, "tollgate_spool_relayed_total") == 1 and sample(metrics, "tollgate_spool_records") == 0
               and sample(metrics, "tollgate_kafka_reachable") == 1,
               ", ".join(f"{n} {sample(metrics, n)}" for n in ("tollgate_spool_relayed_total", "tollgate_spool_records", "tollgate_kafka_reachable")))
        record = wait_for_record(bootstrap, f"{prefix}.events", lambda r: dict(zip(r["headers"][::2], r["headers"][1::2]))
                                 .get("ce_id", "").startswith("iaptic:demo:ntf_validate_deploy_spool:"))
        report(f"spool: the spooled delivery's event reached {prefix}.events", record is not None)
    finally:
        if process.poll() is None:
            stop_serve(process, "spool relayed", grace_ms / 1000)


def kcat_records(bootstrap, topic, binary_headers=False):
    """The topic's records as kcat -J prints them. kcat escapes control bytes but passes bytes of 0x80 and
    above through raw, so the output is read as Latin-1 (one character per byte); with binary_headers
    the header values are returned as the exact bytes, otherwise decoded as UTF-8."""
    result = run(["kcat", "-b", bootstrap, "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-J"], timeout=30)
    # Split on the newline byte before decoding: str.splitlines also breaks at Latin-1's \x85 and at
    # \x1c-\x1e, which a raw byte inside a record (a DLT's binary header) can be.
    records = [json.loads(line.decode("latin-1")) for line in result.stdout.split(b"\n") if line.strip()]
    for record in records:
        for field in ("key", "payload"):
            if isinstance(record.get(field), str):
                record[field] = record[field].encode("latin-1").decode("utf-8", "replace")
        raw = [v.encode("latin-1") if isinstance(v, str) else b"" for v in record.get("headers") or []]
        names = [name.decode("utf-8", "replace") for name in raw[::2]]
        values = raw[1::2] if binary_headers else [value.decode("utf-8", "replace") for value in raw[1::2]]
        record["headers"] = [item for pair in zip(names, values) for item in pair]
    return records


def wait_for_record(bootstrap, topic, match, binary_headers=False, seconds=30):
    """The first record of `topic` for which match(record) holds, polling until the deadline."""
    deadline = time.time() + seconds
    while True:
        for record in kcat_records(bootstrap, topic, binary_headers):
            if match(record):
                return record
        if time.time() > deadline:
            return None
        time.sleep(0.5)


def java_big_integer(value):
    """Java's BigInteger.valueOf(value).toByteArray(): minimal big-endian two's complement."""
    return value.to_bytes((value.bit_length() + 8) // 8, "big", signed=True)


def check_published(asyncapi, event_schema, bootstrap):
    prefix = asyncapi["components"]["parameters"]["prefix"]["default"]
    event_validator = jsonschema.Draft202012Validator(event_schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    schemas = asyncapi["components"]["schemas"]
    header_validator = jsonschema.Draft202012Validator(schemas["cloudEventHeaders"], format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    raw_validator = jsonschema.Draft202012Validator(schemas["rawDeliveryHeaders"], format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    records = kcat_records(bootstrap, f"{prefix}.events")
    problems = []
    for record in records:
        headers = dict(zip(record["headers"][::2], record["headers"][1::2]))
        event = json.loads(record["payload"])
        problems += [f"value {e.message}" for e in event_validator.iter_errors(event)]
        problems += [f"headers {e.message}" for e in header_validator.iter_errors(headers)]
        expected = {"ce_id": event["id"], "ce_source": event["source"], "ce_type": "dev.tollgate." + event["type"],
                    "ce_subject": event["subject"], "ce_time": event["occurredAt"]}
        problems += [f"{k} {headers.get(k)!r} != {v!r}" for k, v in expected.items() if headers.get(k) != v]
        if record["key"] != event["subject"]:
            problems.append(f"key {record['key']!r} != subject")
    report(f"server: records on {prefix}.events validate (value, CloudEvents headers, key)", len(records) >= 2 and not problems,
           "; ".join(problems[:5]) or f"{len(records)} records")
    problems = []
    raw = kcat_records(bootstrap, f"{prefix}.raw.iaptic")
    for record in raw:
        headers = dict(zip(record["headers"][::2], record["headers"][1::2]))
        problems += [e.message for e in raw_validator.iter_errors(headers)]
    report(f"server: records on {prefix}.raw.iaptic carry the documented headers", len(raw) >= 1 and not problems,
           "; ".join(problems[:5]) or f"{len(raw)} records")


def check_entitlements(spec, registry, asyncapi, entitlement_schema, base, bootstrap):
    """examples/iaptic-renewed.json (posted above) names a user and a product, so the workers make an
    entitlement of it: its change reaches the compacted topic as documented and the API answers it."""
    prefix = asyncapi["components"]["parameters"]["prefix"]["default"]
    example = json.load(open("examples/iaptic-renewed.json"))
    user, product = example.get("applicationUsername"), example["notification"].get("productId")
    report("server: examples/iaptic-renewed.json names a user and a product (applicationUsername, productId)",
           bool(user) and bool(product), f"{user!r}, {product!r}")
    events = [json.loads(r["payload"]) for r in kcat_records(bootstrap, f"{prefix}.events")]
    event = next((e for e in events if e["source"] == "/iaptic/demo" and e.get("product") == product), None)
    report("server: its event on the events topic carries that user and product", event is not None and event.get("user") == user,
           "no such event" if event is None else f"user {event.get('user')!r}")
    if event is None:
        return
    key = f"{event['app']}/{event['environment']}/{user}/{product}"
    record = wait_for_record(bootstrap, f"{prefix}.entitlements", lambda r: r.get("key") == key)
    if record is None:
        report(f"server: an entitlement record with key {key} reaches {prefix}.entitlements within 30 s", False)
        return
    schemas = asyncapi["components"]["schemas"]
    headers = dict(zip(record["headers"][::2], record["headers"][1::2]))
    value = json.loads(record["payload"])
    problems = [f"value {e.message}" for e in jsonschema.Draft202012Validator(
        entitlement_schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER).iter_errors(value)]
    problems += [f"headers {e.message}" for e in jsonschema.Draft202012Validator(schemas["entitlementHeaders"]).iter_errors(headers)]
    expected = {"app": event["app"], "environment": event["environment"], "user": user, "product": product, "source": "iaptic",
                "eventId": event["id"], "state": "active", "active": True, "expiresAt": event["transaction"]["expiresAt"], "access": ["pro"]}
    problems += [f"{k} {value.get(k)!r} != {v!r}" for k, v in expected.items() if value.get(k) != v]
    if headers.get("tollgate_event_id") != event["id"]:
        problems.append(f"tollgate_event_id {headers.get('tollgate_event_id')!r} != {event['id']!r}")
    # The purchase by its opaque id: the event's subject (Iaptic's purchase id) is nowhere in the record.
    # (eventId is the causing event's ce_id, which for Iaptic holds Iaptic's purchase id: not checked here.)
    beside_event_id = json.dumps({k: v for k, v in value.items() if k != "eventId"})
    if not re.fullmatch(r"pur_[A-Za-z0-9_-]{22}", str(value.get("purchaseId"))) or event["subject"] in beside_event_id:
        problems.append(f"purchaseId {value.get('purchaseId')!r}, or the subject {event['subject']!r} in the record")
    report(f"server: the record on {prefix}.entitlements validates (value against docs/schemas/entitlement.schema.json, "
           "headers, key <app>/<environment>/<user>/<product>)", not problems, "; ".join(problems[:5]) or key)
    # The sample is a sandbox purchase: the API answers production unless asked for its environment.
    query = f"{base}/v1/users/{user}/entitlements?app={event['app']}&environment={event['environment']}"
    for label, headers in (("the server credential", {"Authorization": f"Bearer {SERVER_TOKEN}"}),
                           ("the client credential with the user's token", {"Authorization": f"Bearer {CLIENT_TOKEN}",
                                                                            "Tollgate-User-Token": user_token(user, event["app"])})):
        status, answer_headers, body = http("GET", query, None, headers)
        check_answer(spec, registry, f"GET entitlements of {user} with {label}", "/v1/users/{user}/entitlements", "get",
                     status, answer_headers, body, 200)
        answer = json.loads(body) if status == 200 else {}
        items = answer.get("entitlements", [])
        access = answer.get("access", [])
        ok = ([e.get("product") for e in items] == [product] and items[0].get("purchaseId") == value.get("purchaseId")
              and [(a.get("name"), a.get("products"), a.get("expiresAt")) for a in access] == [("pro", [product], value.get("expiresAt"))]
              and event["subject"].encode() not in body)
        report(f"server: the API answers {label}: {product}, the record's purchaseId, access pro (the catalog's), no subject", ok,
               body.decode()[:300])
    # The support route: the store's id behind the purchase id, to a server credential only.
    support = f"{base}/v1/users/{user}/purchases?app={event['app']}&environment={event['environment']}"
    status, answer_headers, body = http("GET", support, None, {"Authorization": f"Bearer {SERVER_TOKEN}"})
    check_answer(spec, registry, f"GET purchases of {user} with the server credential", "/v1/users/{user}/purchases", "get",
                 status, answer_headers, body, 200)
    purchases = json.loads(body).get("purchases", []) if status == 200 else []
    report("server: the support route names the record's purchaseId beside the event's subject",
           [(p.get("purchaseId"), p.get("subject")) for p in purchases] == [(value.get("purchaseId"), event["subject"])], body.decode()[:300])
    status, answer_headers, body = http("GET", support, None, {"Authorization": f"Bearer {CLIENT_TOKEN}",
                                                                "Tollgate-User-Token": user_token(user, event["app"])})
    check_answer(spec, registry, f"GET purchases of {user} with the client credential", "/v1/users/{user}/purchases", "get",
                 status, answer_headers, body, 403)
    report("server: the support route refuses the client credential server_credential_required",
           status == 403 and json.loads(body).get("error") == "server_credential_required", body.decode()[:200])


def check_dead_letter(asyncapi, bootstrap):
    """A record the workers cannot decode (CloudEvents headers, value not JSON) goes straight to the
    dead-letter topic with Spring's headers, byte for byte as docs/asyncapi.yaml describes them."""
    import base64
    import struct
    prefix = asyncapi["components"]["parameters"]["prefix"]["default"]
    events_topic, dlt = f"{prefix}.events", f"{prefix}.events-dlt"
    ce_id = "iaptic:demo:validate-deploy-dead-letter"
    ce = {"ce_specversion": "1.0", "ce_id": ce_id, "ce_source": "/iaptic/demo", "ce_type": "dev.tollgate.subscription.renewed",
          "ce_subject": "apple:validate-deploy", "ce_time": "2026-11-20T10:15:00.000Z", "content-type": "application/json"}
    args = ["kcat", "-b", bootstrap, "-P", "-t", events_topic, "-p", "0", "-k", ce["ce_subject"]]
    for name, value in ce.items():
        args += ["-H", f"{name}={value}"]
    result = run(args, stdin=b"not an event\n", timeout=30)
    if result.returncode != 0:
        report("server: produce an undecodable record with kcat", False, result.stderr.decode().strip())
        return
    original = wait_for_record(bootstrap, events_topic, lambda r: ce_id.encode() in r["headers"], binary_headers=True)
    record = wait_for_record(bootstrap, dlt, lambda r: ce_id.encode() in r["headers"], binary_headers=True)
    if original is None or record is None:
        report(f"server: an undecodable record on {events_topic} is dead-lettered on {dlt} within 30 s", False,
               "not on the events topic" if original is None else "no dead letter")
        return
    headers = dict(zip(record["headers"][::2], record["headers"][1::2]))
    expected = {
        "retry_topic-attempts": struct.pack(">i", 1),
        "retry_topic-original-timestamp": java_big_integer(original["ts"]),
        "kafka_dlt-original-topic": events_topic.encode(),
        "kafka_dlt-original-partition": struct.pack(">i", original["partition"]),
        "kafka_dlt-original-offset": struct.pack(">q", original["offset"]),
        "kafka_dlt-original-consumer-group": b"tollgate-workers",
        "kafka_dlt-exception-fqcn": b"tollgate.UndecodableEvent",
    }
    problems = [f"{k} {headers.get(k)!r} != {v!r}" for k, v in expected.items() if headers.get(k) != v]
    problems += [f"{k} changed" for k, v in ce.items() if headers.get(k) != v.encode()]
    if "retry_topic-backoff-timestamp" in headers:
        problems.append("a dead letter carries retry_topic-backoff-timestamp")
    if len(record["headers"][::2]) != len(set(record["headers"][::2])):
        problems.append("a header appears twice")
    if record["key"] != ce["ce_subject"] or record["payload"] != "not an event":
        problems.append("key or value changed")
    # The headers as the document describes them: binary values base64, the rest UTF-8.
    schemas = asyncapi["components"]["schemas"]
    binary = {name for name, prop in schemas["deadLetterHeaders"]["properties"].items()
              if schemas.get(prop.get("$ref", "").split("/")[-1], prop).get("contentEncoding") == "base64"}
    documented = {k: base64.b64encode(v).decode() if k in binary else v.decode() for k, v in headers.items()}
    registry = Registry().with_resource("urn:asyncapi", Resource.from_contents(asyncapi, default_specification=DRAFT202012))
    validator = jsonschema.Draft202012Validator({"$ref": "urn:asyncapi#/components/schemas/deadLetterHeaders"}, registry=registry)
    problems += [f"headers {e.message}" for e in validator.iter_errors(documented)]
    report(f"server: the dead letter on {dlt} carries Spring's headers with the documented encodings", not problems,
           "; ".join(problems[:5]) or f"{len(headers)} headers")


# ---------------------------------------------------------------------------------------------

# Metrics the runs of check_server and check_spool cannot provoke, with why.
NOT_EXERCISED = {
    "tollgate_play_api_": "Play Developer API calls: no Google sender or service account is configured",
    "tollgate_worker_play_acknowledgement": "Play acknowledgements: no Play Developer API service account is configured",
    "tollgate_worker_retries_total": "a retry tier: only a transient failure (store or Play API down) sends an event there",
    "tollgate_reconcile_": "reconciliation runs: no app has an App Store Server API key here (its runs: ReconcileCommandTests, AppleBackfillTests)",
    "tollgate_webhook_": "outbound webhooks: no endpoint is configured here (their runs: OutboundWebhookTests)",
    "tollgate_refund_review": "Google refund reviews: no package has a policy here (their runs: RefundReviewTests; the alerts: deploy/alerts.test.yaml)",
}


def await_alert_metrics(base, seconds=15):
    """/metrics of the process at base once its periodic samplers have reported (the consumer lag, every
    5 s from the first known value), or at the deadline: a condition awaited, not a fixed sleep."""
    deadline = time.monotonic() + seconds
    while True:
        text = http("GET", base + "/metrics")[2].decode()
        if re.search(r"^tollgate_consumer_lag\{", text, re.M) or time.monotonic() > deadline:
            return text
        time.sleep(0.2)


def check_alerts():
    known = metric_names()
    for path in ("deploy/alerts.yaml", "deploy/grafana-dashboard.json"):
        if not os.path.exists(path):
            report(f"alerts: {path} exists", False)
            continue
        text = open(path).read()
        if path.endswith(".json"):
            json.loads(text)
        else:
            rules = yaml.safe_load(text)
            report(f"alerts: {path} has rule groups", bool(rules.get("groups")) and all(
                r.get("expr") and (r.get("alert") or r.get("record")) for g in rules["groups"] for r in g["rules"]))
        used = set(re.findall(r"\btollgate_\w+", text))
        unknown = sorted(used - known)
        report(f"alerts: {path} uses only metrics the code defines", not unknown and bool(used),
               f"unknown: {unknown}" if unknown else f"{len(used)} names")
        # A metric has no sample until its first value, so a name may exist in the code and never be
        # exposed under it (a typo in a label-less registration, a gauge nobody sets). Everything the
        # rules use must appear on a live /metrics, except what the runs above cannot provoke.
        exposed = {name for text in LIVE_METRICS.values() for name in re.findall(r"^(?:# TYPE )?(tollgate_\w+)", text, re.M)}
        absent = sorted(name for name in used - exposed if not any(name.startswith(p) for p in NOT_EXERCISED))
        report(f"alerts: {path}'s metrics are exposed by the running processes ({', '.join(LIVE_METRICS) or 'none ran'})",
               bool(LIVE_METRICS) and not absent, f"absent: {absent}" if absent else
               f"{len(used & exposed)} of {len(used)} names; not provoked here: {sorted(used - exposed)}")
    # promtool check rules: scripts/check-interfaces.py (docs/interfaces.md).


def main():
    if not os.access(TOLLGATE, os.X_OK):
        print(f"validate-deploy: {TOLLGATE} is missing; build it first (swift build)")
        return 1
    try:
        check_compose()
        check_kubernetes()
        check_dockerfile()
        spec = check_openapi()
        check_console_reasons()
        asyncapi, event_schema, entitlement_schema = check_asyncapi()
        check_events(event_schema)
        check_server(spec, asyncapi, event_schema, entitlement_schema)
        check_alerts()
    finally:
        shutil.rmtree(WORK, ignore_errors=True)
    print(f"validate-deploy: {len(failures)} failed" + (": " + ", ".join(failures) if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
