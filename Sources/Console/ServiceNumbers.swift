import Foundation
import Synchronization

/// Where the console reads the gateway's and the workers' numbers: a Prometheus text exposition (a
/// gateway replica's `/metrics` fetched over HTTP, or this process's own registry).
public struct MetricsSource: Sendable {
    public let name: String
    public let read: @Sendable () async throws -> String

    public init(name: String, read: @escaping @Sendable () async throws -> String) {
        self.name = name
        self.read = read
    }
}

/// The numbers of the overview that live on `/metrics`, not in the store: deliveries accepted and refused
/// per sender and reason, each sender's silence and threshold, the spool, the consumers' lag. Every
/// `MetricsSource` is read once a minute (concurrently, 3 s each at most) and only the counters a window
/// needs are kept, in memory, for a day and an hour; gauges are shown as a page's reading says. A window
/// is each counter's increase, per source, from its last reading at or before the window's start (its
/// first one when sampling began later) to a reading taken for the page: a counter that went down was
/// reset (its process restarted) and counts from zero again. Values above 2^53 are not read.
public final class ServiceNumbers: Sendable {
    /// The families read; every other line of an exposition is skipped.
    static let families: Set<String> = [
        "tollgate_deliveries_accepted_total", "tollgate_rejections_total", "tollgate_sender_silence_seconds",
        "tollgate_sender_silence_threshold_seconds", "tollgate_spool_records", "tollgate_spool_oldest_age_seconds",
        "tollgate_consumer_lag", "tollgate_kafka_reachable",
    ]
    /// How long samples are kept: the day window and its baseline.
    static let keptMs: Int64 = 25 * 3_600_000
    /// The largest value read: above it a Double no longer counts by ones (and a sum could overflow a page's integers).
    static let largestValue = 9_007_199_254_740_992.0

    /// What a window counts: a sender's accepted deliveries (no reason) or its refusals for one reason.
    struct CounterKey: Hashable, Sendable {
        var sender: String
        var reason: String?
    }

    /// One reading of every source: each source's counters, and (for a page) every series read.
    struct Sample: Sendable {
        var atMs: Int64
        var counters: [String: [CounterKey: Double]]
        var series: [String: [Series: Double]] = [:]
    }

    struct Series: Hashable, Sendable {
        var name: String
        var labels: [String: String]
    }

    let sources: [MetricsSource]
    private let samples = Mutex<[Sample]>([])
    /// The last reading, shared by the pages of the next 10 seconds instead of asking every source again.
    private let lastReading = Mutex<Sample?>(nil)

    public init(sources: [MetricsSource]) { self.sources = sources }

    public var isEmpty: Bool { sources.isEmpty }

    /// Reads every source now, concurrently; a source that cannot answer is left out of this reading (and named).
    func read(nowMs: Int64) async -> (sample: Sample, failed: [String]) {
        let answers = await withTaskGroup(of: (String, [Series: Double]?).self) { group in
            for source in sources {
                group.addTask { (source.name, try? Self.parse(await source.read())) }
            }
            var answers: [(String, [Series: Double]?)] = []
            for await answer in group { answers.append(answer) }
            return answers
        }
        var sample = Sample(atMs: nowMs, counters: [:])
        for (name, series) in answers {
            guard let series else { continue }
            sample.series[name] = series
            sample.counters[name] = Self.counters(series)
        }
        return (sample, answers.filter { $0.1 == nil }.map(\.0).sorted())
    }

    /// A reading for a page: the last one (a page's or the minute's sample) when it is under 10 seconds old.
    func current(nowMs: Int64) async -> Sample {
        if let last = lastReading.withLock({ $0 }), nowMs - last.atMs < 10_000, last.atMs <= nowMs { return last }
        let reading = await read(nowMs: nowMs).sample
        lastReading.withLock { $0 = reading }
        return reading
    }

    /// Takes a sample and keeps its counters; returns the sources that failed.
    func sample(nowMs: Int64) async -> [String] {
        let (sample, failed) = await read(nowMs: nowMs)
        lastReading.withLock { $0 = sample }
        samples.withLock { kept in
            kept.append(Sample(atMs: sample.atMs, counters: sample.counters))
            kept.removeAll { $0.atMs < nowMs - Self.keptMs }
        }
        return failed
    }

    /// The counters a window needs, summed over the labels it does not show (a rejection's route, an app).
    static func counters(_ series: [Series: Double]) -> [CounterKey: Double] {
        var counters: [CounterKey: Double] = [:]
        for (key, value) in series {
            guard let sender = key.labels["source"] else { continue }
            if key.name == "tollgate_deliveries_accepted_total" {
                counters[CounterKey(sender: sender, reason: nil), default: 0] += value
            } else if key.name == "tollgate_rejections_total" {
                counters[CounterKey(sender: sender, reason: key.labels["reason"] ?? "?"), default: 0] += value
            }
        }
        return counters
    }

    /// The overview's counts over the last `windowMs`, ending with `current` (a reading taken for the page).
    func window(_ windowMs: Int64, current: Sample) -> Window {
        let kept = samples.withLock { $0 }
        let start = current.atMs - windowMs
        // A reading older than the newest sample (taken before it, shown after it) would look like a reset.
        let isNewest = kept.last.map { current.atMs >= $0.atMs } ?? true
        let series = isNewest ? kept + [current] : kept
        var window = Window(sinceMs: series.first?.atMs ?? current.atMs, complete: kept.first.map { $0.atMs <= start } ?? false)
        for source in Set(series.flatMap(\.counters.keys)) {
            let readings = series.filter { $0.counters[source] != nil }
            // Its baseline: its last reading at or before the window's start, else its first.
            let from = readings.lastIndex { $0.atMs <= start } ?? 0
            let counted = readings[from...].compactMap { $0.counters[source] }
            for (before, after) in zip(counted, counted.dropFirst()) {
                for (key, value) in after {
                    // A counter that went down was reset: it counted from zero since; one that appeared, too.
                    let increase = before[key].map { value >= $0 ? value - $0 : value } ?? value
                    guard increase > 0 else { continue }
                    if let reason = key.reason {
                        window.rejected[key.sender, default: [:]][reason, default: 0] += increase
                    } else {
                        window.accepted[key.sender, default: 0] += increase
                    }
                }
            }
        }
        return window
    }

    struct Window {
        var sinceMs: Int64
        /// Whether samples cover the whole window (else it starts at `sinceMs`).
        var complete: Bool
        var accepted: [String: Double] = [:]
        var rejected: [String: [String: Double]] = [:]
    }

    /// What the sources say now: per sender its silence (the shortest of every replica's: any of them heard
    /// from it) and the silence threshold; the spool (summed over replicas, the oldest record's age the largest); the lag per topic.
    struct Now {
        var silence: [String: Double] = [:]
        var silenceThreshold: [String: Double] = [:]
        var spoolRecords: Double?
        var spoolOldestAge: Double?
        var kafkaReachable: [String: Double] = [:]
        var lag: [String: Double] = [:]
    }

    static func now(_ sample: Sample) -> Now {
        var now = Now()
        for (source, values) in sample.series {
            for (key, value) in values {
                switch key.name {
                case "tollgate_sender_silence_seconds":
                    if let sender = key.labels["source"] { now.silence[sender] = min(now.silence[sender] ?? value, max(0, value)) }
                case "tollgate_sender_silence_threshold_seconds":
                    if let sender = key.labels["source"] { now.silenceThreshold[sender] = value }
                case "tollgate_spool_records": now.spoolRecords = (now.spoolRecords ?? 0) + value
                case "tollgate_spool_oldest_age_seconds": now.spoolOldestAge = max(now.spoolOldestAge ?? 0, value)
                case "tollgate_kafka_reachable": now.kafkaReachable[source] = value
                case "tollgate_consumer_lag":
                    if let topic = key.labels["topic"] { now.lag[topic, default: 0] += max(0, value) }
                default: break
                }
            }
        }
        return now
    }

    /// The series of the families read, from a Prometheus text exposition (version 0.0.4): `name{labels} value
    /// [timestamp]`, comments skipped. Linear in the text; a line it cannot read is skipped.
    static func parse(_ text: String) -> [Series: Double] {
        var values: [Series: Double] = [:]
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            guard let first = line.first, first != "#" else { continue }
            let nameEnd = line.firstIndex { $0 == "{" || $0 == " " } ?? line.endIndex
            let name = String(line[..<nameEnd])
            guard families.contains(name) else { continue }
            var labels: [String: String] = [:]
            var rest = line[nameEnd...]
            if rest.first == "{" {
                guard let (parsed, after) = parseLabels(rest.dropFirst()) else { continue }
                labels = parsed
                rest = after
            }
            guard let valueText = rest.split(separator: " ").first, let value = Double(valueText), value.isFinite,
                  abs(value) <= largestValue else { continue }
            values[Series(name: name, labels: labels)] = value
        }
        return values
    }

    /// `label="value",...}` with `\\`, `\"` and `\n` escaped in values; what follows the closing brace.
    private static func parseLabels(_ text: Substring) -> ([String: String], Substring)? {
        var labels: [String: String] = [:]
        var index = text.startIndex
        while index < text.endIndex {
            if text[index] == "}" { return (labels, text[text.index(after: index)...]) }
            if text[index] == "," { index = text.index(after: index); continue }
            guard let equals = text[index...].firstIndex(of: "="), text.index(after: equals) < text.endIndex,
                  text[text.index(after: equals)] == "\"" else { return nil }
            let name = String(text[index..<equals])
            var value = ""
            var cursor = text.index(equals, offsetBy: 2)
            var closed = false
            while cursor < text.endIndex {
                let character = text[cursor]
                if character == "\\" {
                    let next = text.index(after: cursor)
                    guard next < text.endIndex else { return nil }
                    value.append(text[next] == "n" ? "\n" : text[next])
                    cursor = text.index(after: next)
                } else if character == "\"" {
                    closed = true
                    cursor = text.index(after: cursor)
                    break
                } else {
                    value.append(character)
                    cursor = text.index(after: cursor)
                }
            }
            guard closed else { return nil }
            labels[name] = value
            index = cursor
        }
        return nil
    }
}
