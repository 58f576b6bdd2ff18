import Config
import Entitlements
import Events
import Foundation

/// The value of a `tollgate.entitlements` record (docs/asyncapi.yaml).
public enum EntitlementJSON {
    public struct Value: Encodable {
        var app, environment, user, product, source, purchaseId, state: String
        /// The catalog's entitlements (access levels) this product grants; absent when it names none.
        var access: [String]?
        var active: Bool
        /// A purchase that moved between users: the other side of the move.
        var transferredFrom: String?
        var transferredTo: String?
        var expiresAt: String?
        var gracePeriodExpiresAt: String?
        /// The deciding purchase's units, where its store says (Apple: less what a prorated refund took back).
        var quantity: Int?
        var changedAt: String
        var eventId: String
        var sequence: Int64

        /// The bytes `JSONEncoder` (sorted keys) writes for this value, written by hand: the projection
        /// encodes one per change (tests compare the two).
        var json: SortedJSON.Value {
            .object([
                ("access", access.map(SortedJSON.Value.strings)), ("active", .bool(active)), ("app", .string(app)),
                ("changedAt", .string(changedAt)), ("environment", .string(environment)), ("eventId", .string(eventId)),
                ("expiresAt", expiresAt.map(SortedJSON.Value.string)),
                ("gracePeriodExpiresAt", gracePeriodExpiresAt.map(SortedJSON.Value.string)), ("product", .string(product)),
                ("purchaseId", .string(purchaseId)), ("quantity", quantity.map { .int(Int64($0)) }), ("sequence", .int(sequence)),
                ("source", .string(source)), ("state", .string(state)),
                ("transferredFrom", transferredFrom.map(SortedJSON.Value.string)),
                ("transferredTo", transferredTo.map(SortedJSON.Value.string)), ("user", .string(user)),
            ])
        }
    }

    public static func value(_ change: EntitlementChange, ids: PurchaseIds, catalog: CatalogSettings) -> Value {
        let e = change.entitlement
        let access = catalog.entitlements(app: e.app, source: e.source, product: e.product)
        return Value(app: e.app, environment: e.environment, user: e.user, product: e.product, source: e.source, purchaseId: ids.id(of: e),
                     state: e.state.rawValue, access: access.isEmpty ? nil : access, active: change.active,
                     transferredFrom: change.transferredFrom, transferredTo: change.transferredTo, expiresAt: e.expiresAtMs.map(rfc3339), gracePeriodExpiresAt: e.gracePeriodExpiresAtMs.map(rfc3339),
                     quantity: e.quantity, changedAt: rfc3339(change.changedAtMs), eventId: change.eventId, sequence: change.sequence)
    }

    public static func encode(_ change: EntitlementChange, ids: PurchaseIds, catalog: CatalogSettings) -> [UInt8] {
        SortedJSON.encode(value(change, ids: ids, catalog: catalog).json, reserving: 384)
    }

    public static func rfc3339(_ ms: Int64) -> String { Timestamp(millisecondsSince1970: ms).rfc3339 }
}
