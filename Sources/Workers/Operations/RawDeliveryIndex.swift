import Console
import Entitlements
import Events
import Foundation
import Kafka
import Logging
import ServiceHost
import ServiceLifecycle

/// Reads every raw topic in a consumer group of its own while the operator console is on and records
/// where each delivery's raw record is, by the events it carried (`raw_deliveries`), then commits: a
/// purchase's story finds its deliveries there instead of scanning the raw topics per page view. A batch
/// read again is recorded once.
struct RawDeliveryIndex: Service {
    let config: ConsumerConfig
    /// Each raw topic's sender.
    let senders: [String: SourceName]
    let store: EntitlementStore
    let metrics: WorkerMetrics
    let logger: Logger
    let clock: @Sendable () -> Int64

    func run() async throws {
        try await runRecordingConsumer(config, topics: senders.keys.sorted(), role: "raw delivery index", metrics: metrics, logger: logger,
                                       lagMetric: "tollgate_console_raw_index_lag") { [senders, store, clock] records in
            let deliveries = records.flatMap { record in senders[record.topic].map { Self.deliveries(of: record, source: $0) } ?? [] }
            try await store.recordRawDeliveries(deliveries, nowMs: clock())
        }
    }

    /// One row per event the record's delivery carried: the first named by its CloudEvents header, all of
    /// them by `tollgate_event_ids` when there were several. A record with no event (none is written today) has none.
    static func deliveries(of record: KafkaRecord, source: SourceName) -> [RawDeliveryRows.Delivery] {
        var ids: [String] = []
        if let all = record.headers.string(RawRecordHeaders.eventIds),
           let decoded = try? JSONDecoder().decode([String].self, from: Data(all.utf8)) {
            ids = decoded
        } else if let first = record.headers.string(CloudEventHeaders.id) {
            ids = [first]
        }
        let position = PurchaseHistoryRows.Position(topic: record.topic, partition: record.partition, offset: record.offset)
        guard !ids.isEmpty else { return [] }
        // Made once here, withheld as every page withholds, so a story shows each body without reading the topic;
        // kept with the delivery's first event only (the others read it from there).
        let shown = record.value.count <= 65_536 ? DeliveryRedaction.pretty(record.value) : nil
        return ids.prefix(100).enumerated().map { index, id in
            RawDeliveryRows.Delivery(eventId: id, source: source.rawValue, position: position,
                                     receivedAt: record.headers.string(RawRecordHeaders.receivedAt),
                                     path: record.headers.string(RawRecordHeaders.path),
                                     scope: record.headers.string(RawRecordHeaders.authenticatedScope), bodyBytes: Int64(record.value.count),
                                     bodyShown: index == 0 ? shown : nil)
        }
    }
}
