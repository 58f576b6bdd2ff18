import Kafka
import Synchronization

/// Gathers records from a reader's handler (which may run on another thread).
final class RecordCollector: Sendable {
    private let records = Mutex<[KafkaRecord]>([])

    func append(_ record: KafkaRecord) { records.withLock { $0.append(record) } }
    var all: [KafkaRecord] { records.withLock { $0 } }
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
