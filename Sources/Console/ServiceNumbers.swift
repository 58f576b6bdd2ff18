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
/// per sender and reason, each sender's last delivery and silence threshold, the spool, the consumers' lag.
/// Sampled once a minute from every `MetricsSource` and kept in memory for a day and an hour: a window
/// is the counters' increase between its oldest sample and a reading taken for the page (a replica's restart,
/// a counter going down, counts from zero again). A window longer than the samples held says since when.
public final class ServiceNumbers: Sendable {
    /// The families read; every other line of an exposition is skipped.
    static let families: Set<String> = [
        "tollgate_deliveries_accepted_total", "tollgate_rejections_total", "tollgate_sender_silence_seconds",
        "tollgate_sender_silence_threshold_seconds", "tollgate_spool_records", "tollgate_spool_oldest_age_seconds",
        "tollgate_consumer_lag", "tollgate_kafka_reachable",
    ]
    /// How long samples are kept: the day window and its baseline.
    static let keptMs: Int64 = 25 * 3_600_000

    struct Sample: Sendable {
        var atMs: Int64
        /// Per source, each series (`name{label="value",...}` as exposed) and its value.
        var values: [String: [Series: Double]]
    }

    struct Series: Hashable, Sendable {
        var name: String
        var labels: [String: String]
    }

    let sources: [MetricsSource]
    private let samples = Mutex<[Sample]>([])
    /// The last reading taken for a page: pages within 10 seconds share it instead of asking every source again.
    private let lastReading = Mutex<Sample?>(nil)

    public init(sources: [MetricsSource]) { self.sources = sources }

    public var isEmpty: Bool { sources.isEmpty }

    /// Reads every source now; a source that cannot answer is left out of this reading (and counted by the caller).
    func read(nowMs: Int64) async -> (sample: Sample, failed: [String]) {
        var values: [String: [Series: Double]] = [:]
        var failed: [String] = []
        for source in sources {
            do { values[source.name] = Self.parse(try await source.read()) } catch { failed.append(source.name) }
        }
        return (Sample(atMs: nowMs, values: values), failed)
    }

    /// A reading for a page: the last one when it is under 10 seconds old.
    func current(nowMs: Int64) async -> Sample {
        if let last = lastReading.withLock({ $0 }), nowMs - last.atMs < 10_000, last.atMs <= nowMs { return last }
        let reading = await read(nowMs: nowMs).sample
        lastReading.withLock { $0 = reading }
        return reading
    }

    /// Takes a sample and keeps it; returns the sources that failed.
    func sample(nowMs: Int64) async -> [String] {
        let (sample, failed) = await read(nowMs: nowMs)
        samples.withLock { kept in
            kept.append(sample)
            kept.removeAll { $0.atMs < nowMs - Self.keptMs }
        }
        return failed
    }

    /// The overview's numbers over the last `windowMs`, ending with `current` (a reading taken for the page).
    func window(_ windowMs: Int64, current: Sample) -> Window {
        let kept = samples.withLock { $0 }
        let start = current.atMs - windowMs
        // The last sample at or before the window's start is its baseline; without one, the oldest kept.
        let baselineIndex = kept.lastIndex { $0.atMs <= start } ?? 0
        let series = Array(kept[min(baselineIndex, kept.count)...]) + [current]
        var window = Window(sinceMs: series.first?.atMs ?? current.atMs, complete: kept.first.map { $0.atMs <= start } ?? false)
        for source in Set(series.flatMap(\.values.keys)) {
            // Each source's readings in order; one it could not give is skipped, its increase counted at the next.
            let readings = series.compactMap { $0.values[source] }
            for (before, after) in zip(readings, readings.dropFirst()) {
                for (key, value) in after where key.name.hasSuffix("_total") {
                    // A counter that went down was reset (its process restarted): it counted from zero since;
                    // a series that appeared counted from zero too.
                    let increase = before[key].map { value >= $0 ? value - $0 : value } ?? value
                    guard increase > 0, let sender = key.labels["source"] else { continue }
                    if key.name == "tollgate_deliveries_accepted_total" {
                        window.accepted[sender, default: 0] += increase
                    } else if key.name == "tollgate_rejections_total" {
                        window.rejected[sender, default: [:]][key.labels["reason"] ?? "?", default: 0] += increase
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
        for (source, values) in sample.values {
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
            guard let valueText = rest.split(separator: " ").first, let value = Double(valueText), value.isFinite else { continue }
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
