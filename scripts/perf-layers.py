#!/usr/bin/env python3
"""`make profile`: where the gateway's CPU goes, by layer, from `perf record` files of its closed loops.

usage: perf-layers.py --results RUN.json --json OUT.json SENDER=FILE.data [SENDER=FILE.data ...]

Each sample (cpu-clock, with its call stack) counts for one layer: the innermost frame, walking from
the sampled instruction outwards, whose symbol or library names a layer below. Kernel time is thus
charged to whoever made the system call (writing a response to the socket counts as HTTP, sending a
produce request as Kafka). Multiplied by the gateway's CPU per request from the same run
(RUN.json, `cpu_s_per_1000`), each share becomes microseconds per request.
"""
import collections, json, re, subprocess, sys

LAYERS = [
    ("crypto", "signature checks (OpenSSL libcrypto)", r"libcrypto"),
    ("kafka", "Kafka client (librdkafka and its threads, the Kafka module)", r"librdkafka|\$s5Kafka|rd_kafka"),
    ("logging", "log lines", r"JSONLogHandler|JSONLogLine|StandardError|\$s7Logging"),
    ("metrics", "metrics", r"Prometheus|\$s7Metrics|GatewayMetrics|MetricsMiddleware|\$s7Gateway0A7Metrics"),
    ("encoding", "event encoding and CloudEvents headers", r"EventJSONWriter|EventCoding|CloudEventHeaders|DeliveryRecordBuilder"),
    ("parse", "parsing the body: JSON, base64, forms, compact JWS, Pub/Sub envelope", r"JSONParser|JSONValue|JSONFields|Base64|FormBody|PercentDecoding|CompactJWS|PubSubPush|CitconBody"),
    ("normalize", "normalizing into the event vocabulary", r"Normalizer|Normalization|[A-Z][a-z]+EventType"),
    ("verifiers", "verification outside parsing and crypto (the Verifiers and Toolkit modules)", r"\$s9Verifiers|\$s7Toolkit"),
    ("writer", "deduplication window, spool check, delivery writer", r"RecentDeliveries|DeliverySpool|DeliveryWriter|\$s5Spool"),
    ("handler", "gateway handler, admission, connection guard", r"\$s7Gateway"),
    ("http", "HTTP: Hummingbird, SwiftNIO, llhttp, and their socket calls", r"Hummingbird|NIOCore|NIOPosix|NIOHTTP|llhttp|\$s7NIO|NIOAsync"),
]
# glibc's allocator has no frame pointers, so its samples rarely show their caller: a layer of its own.
ALLOCATOR = re.compile(r"^(_int_malloc|_int_free|malloc|malloc_consolidate|unlink_chunk.*|cfree.*|__libc_malloc|__libc_free|_int_realloc|realloc|tcache.*)$")
COMPILED = [(key, re.compile(pattern)) for key, _, pattern in LAYERS]
DESCRIPTIONS = {key: text for key, text, _ in LAYERS}
DESCRIPTIONS.update({"allocator": "malloc and free whose caller the stack does not show",
                     "runtime": "Swift runtime outside any layer above (task switches, allocation)",
                     "kernel": "kernel outside any layer above (scheduling, interrupts)", "other": "unattributed"})


def layer(frames, comm):
    if frames and ALLOCATOR.match(frames[0][0]) and len(frames) < 3:
        return "allocator"
    for symbol, library in frames:
        text = symbol + " " + library
        for key, pattern in COMPILED:
            if pattern.search(text):
                return key
    if comm.startswith("rdk:"):
        return "kafka"
    if frames and "kernel" in frames[0][1]:
        return "kernel"
    if any("libswift" in library for _, library in frames):
        return "runtime"
    return "other"


def layers_of(data_file):
    script = subprocess.run(["perf", "script", "-i", data_file, "-F", "comm,ip,sym,dso"],
                            capture_output=True, text=True, check=True).stdout
    counts = collections.Counter()
    comm, frames = None, []
    frame_line = re.compile(r"^\s+[0-9a-f]+\s+(.*?)\s+\((.*)\)\s*$")
    for line in script.splitlines() + [""]:
        if not line.strip():
            if comm is not None:
                counts[layer(frames, comm)] += 1
            comm, frames = None, []
        elif not line[0].isspace():
            comm = line.split()[0]
        else:
            match = frame_line.match(line)
            if match:
                frames.append((match.group(1), match.group(2)))
    return counts


def main():
    args = sys.argv[1:]
    results_path = args[args.index("--results") + 1]
    output = args[args.index("--json") + 1]
    pairs = [a.split("=", 1) for a in args if "=" in a and not a.startswith("--")]
    run = json.load(open(results_path))
    report = {"commit": run.get("commit"), "date": run.get("date"), "layers": DESCRIPTIONS, "sources": {}}
    keys = [key for key, _, _ in LAYERS] + ["allocator", "runtime", "kernel", "other"]
    print("\nwhere the gateway's CPU goes in each closed loop, microseconds per request (share)")
    print(f"{'layer':<10}" + "".join(f"{name:>16}" for name, _ in pairs))
    rows = {}
    for name, data_file in pairs:
        counts = layers_of(data_file)
        total = sum(counts.values()) or 1
        cpu_us = run["sources"][name]["cpu_s_per_1000"] * 1000
        entry = {"samples": total, "cpu_us_per_request": round(cpu_us, 1),
                 "layers": {key: {"share": round(counts[key] / total, 3),
                                  "us_per_request": round(cpu_us * counts[key] / total, 1)} for key in keys}}
        report["sources"][name] = entry
        rows[name] = entry
    for key in keys:
        print(f"{key:<10}" + "".join(f"{rows[n]['layers'][key]['us_per_request']:>9.1f} ({100 * rows[n]['layers'][key]['share']:4.1f}%)"
                                     for n, _ in pairs))
    print(f"{'total':<10}" + "".join(f"{rows[n]['cpu_us_per_request']:>16.1f}" for n, _ in pairs))
    with open(output, "w") as f:
        json.dump(report, f, indent=2, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
