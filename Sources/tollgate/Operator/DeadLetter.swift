import ArgumentParser
import Events
import Foundation
import Kafka
import Workers

extension DeadLetter {
    /// The dead letters `references` name (every one when nil), each once even when named twice (by
    /// position and by ce_id); a reference that names none exits 1.
    static func load(_ references: [String]?, client: KafkaClientConfig, topic: String) async throws -> [DeadLetter] {
        let letters = try await TopicScan.reported(client: client, topic: topic).map { DeadLetter(record: $0) }
        guard let references else { return letters }
        var selected: [DeadLetter] = []
        do {
            for reference in references { selected += try select(reference, from: letters) }
        } catch {
            Output.error("tollgate: \(error)")
            throw ExitCode(1)
        }
        var named = Set<String>()
        return selected.filter { named.insert($0.position).inserted }
    }
}

extension TopicScan {
    /// The records, each gap said on standard error (`reportGaps`).
    static func reported(client: KafkaClientConfig, topic: String, sinceMs: Int64? = nil, reportGaps: Bool = true) async throws -> [KafkaRecord] {
        let (records, gaps) = try await records(client: client, topic: topic, sinceMs: sinceMs)
        if reportGaps { for gap in gaps { Output.error("tollgate: " + gap) } }
        return records
    }
}

/// Progress of a long operation on stderr: a line every `every` items and at the end.
struct Progress {
    let label: String
    let total: Int?
    var every = 1_000
    private(set) var done = 0

    init(_ label: String, total: Int? = nil) {
        self.label = label
        self.total = total
    }

    mutating func advance() {
        done += 1
        if done % every == 0 { Output.error("\(label): \(done)\(total.map { " of \($0)" } ?? "")") }
    }
}
