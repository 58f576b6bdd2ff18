import Foundation
import Kafka

/// A `tollgate.entitlements` record as a consumer sees it: its key, the `tollgate_event_id` header and
/// the JSON value (docs/asyncapi.yaml).
struct EntitlementRecord: Decodable, Equatable {
    var app, environment, user, product, source, purchaseId, state: String
    var access: [String]?
    var active: Bool
    var expiresAt: String?
    var eventId: String
    var sequence: Int64

    /// The record's key, `<app>/<environment>/<user>/<product>`.
    var key = ""
    var headerEventId: String?

    private enum CodingKeys: String, CodingKey {
        case app, environment, user, product, source, purchaseId, access, state, active, expiresAt, eventId, sequence
    }

    init(_ record: KafkaRecord) throws {
        self = try JSONDecoder().decode(EntitlementRecord.self, from: Data(record.value))
        key = record.keyString ?? ""
        headerEventId = record.headers.string("tollgate_event_id")
    }
}
