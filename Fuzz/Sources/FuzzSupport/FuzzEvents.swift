import Events
import Foundation
import Verifiers
import Toolkit

/// Invariants of a normalized event, whatever the sender: its times are RFC 3339 (years 0000-9999) that
/// parse back to the same text, and its JSON (what goes to Kafka) is strict JSON that decodes to the same event.
public enum FuzzEvents {
    public static func check(_ event: NormalizedEvent) {
        let times = [event.occurredAt, event.receivedAt, event.transaction?.purchasedAt, event.transaction?.expiresAt,
                     event.transaction?.revokedAt, event.subscription?.gracePeriodExpiresAt].compactMap { $0 }
        // Every sender refuses times outside years 0000-9999, so each is the 24-byte form.
        for time in times {
            FuzzCheck.require(time.utf8.count == 24 && Timestamp(rfc3339: time)?.rfc3339 == time, "\(time) is not RFC 3339 that parses back")
        }
        let json = EventCoding.encode(event)
        FuzzCheck.require(!json.isEmpty, "the event does not encode")
        FuzzCheck.require(JSONValue.parse(json)?.object != nil, "the event's JSON is not strict JSON: \(String(decoding: json, as: UTF8.self))")
        FuzzCheck.require((try? EventCoding.decode(json)) == event, "the event's JSON does not decode to the same event")
    }
}
