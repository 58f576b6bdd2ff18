import Config
import Entitlements
import Events
import Foundation
import Merchant

/// A message's body: one CloudEvent in structured mode (`application/cloudevents+json`), the attributes
/// of the event's record on `tollgate.events` but for `id` (the message's: an event that touched two
/// entitlements is two messages) and `subject` (the purchase's opaque id, never a purchase token); its
/// data the event (its `id` opaque too: some event ids carry a purchase token) and the entitlement as it
/// stood right after it (docs/outbound-webhooks.md).
enum WebhookPayload {
    static let contentType = "application/cloudevents+json"

    struct Envelope: Encodable {
        var specversion = "1.0"
        var id, source, type, subject, time: String
        var datacontenttype = "application/json"
        var data: Body
    }

    struct Body: Encodable {
        var event: NormalizedEvent
        var entitlement: EntitlementJSON.Value
    }

    /// The same bytes every time for one message (sorted keys, no clock): a retry carries what the first attempt did.
    static func body(_ message: WebhookMessage, ids: PurchaseIds, catalog: CatalogSettings) throws -> [UInt8] {
        var event = try EventCoding.decode(Array(message.eventJSON.utf8))
        let purchaseId = WebhookMessage.purchaseId(of: event, environment: message.environment, ids: ids)
        event.subject = purchaseId
        event.id = ids.eventId(event.id)
        let entitlement = Entitlement(app: message.app, environment: message.environment, user: message.user, product: message.product,
                                      source: message.source, subject: message.subject,
                                      state: PurchaseState(rawValue: message.state) ?? .expired,
                                      expiresAtMs: message.expiresAtMs, gracePeriodExpiresAtMs: message.graceExpiresAtMs,
                                      quantity: message.quantity)
        let change = EntitlementChange(sequence: message.sequence, entitlement: entitlement, active: message.active,
                                       changedAtMs: message.createdAtMs, eventId: event.id,
                                       transferredFrom: message.transferredFrom, transferredTo: message.transferredTo)
        let envelope = Envelope(id: message.messageId, source: event.source, type: event.type.cloudEventType, subject: purchaseId,
                                time: event.occurredAt,
                                data: Body(event: event, entitlement: EntitlementJSON.value(change, ids: ids, catalog: catalog)))
        return Array(try encoder.encode(envelope))
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()
}

extension WebhookMessage {
    /// The purchase the message's event is about, by its opaque id: the CloudEvent's `subject`.
    public func purchaseId(ids: PurchaseIds) -> String? {
        guard let event = try? EventCoding.decode(Array(eventJSON.utf8)) else { return nil }
        return Self.purchaseId(of: event, environment: environment, ids: ids)
    }

    static func purchaseId(of event: NormalizedEvent, environment: String, ids: PurchaseIds) -> String {
        ids.id(source: Projector.sourceName(of: event), app: event.app, environment: environment, subject: event.subject)
    }
}
