import Kafka
import Synchronization

/// Whole topics of a running broker, read without a consumer group (nothing is committed).
public enum TopicRecords {
    /// Every record the topic holds now, by partition and offset.
    public static func read(_ topic: String, bootstrap: String) async throws -> [KafkaRecord] {
        let reader = try TopicReader(client: KafkaClientConfig(bootstrapServers: bootstrap, clientId: "tollgate-tests"), topic: topic)
        let collected = Collected()
        do {
            try await reader.read { record in
                collected.append(record)
                return true
            }
        } catch {
            await reader.close()
            throw error
        }
        await reader.close()
        return collected.records.sorted { ($0.partition, $0.offset) < ($1.partition, $1.offset) }
    }

    private final class Collected: Sendable {
        private let storage = Mutex<[KafkaRecord]>([])
        func append(_ record: KafkaRecord) { storage.withLock { $0.append(record) } }
        var records: [KafkaRecord] { storage.withLock { $0 } }
    }
}

extension KafkaRecord {
    public func headerString(_ name: String) -> String? { headers.string(name) }
}
