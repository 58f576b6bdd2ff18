import Config
import Entitlements
import Events
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Rejections
import ServiceHost
import Toolkit
import Verifiers

/// `GET /v1/users/{user}/purchases?app=...[&environment=sandbox]`: what the merchant's support staff
/// need to find a user's purchases at the store (the Google purchase token, the Apple original
/// transaction id) beside the opaque ids the other APIs answer. Server credentials only: a client
/// credential, public by assumption, is refused 403 `server_credential_required` (docs/security.md).
public struct SupportAPI: Sendable {
    public static let path = "/v1/users/:user/purchases"

    let store: EntitlementStore
    let credentials: APICredentials
    let purchaseIds: PurchaseIds
    let metrics: MerchantMetrics
    let logger: Logger

    public var routes: RouteGroup {
        .merchant([.init(.get, Self.path) { request, context in try await respond(request, context) }],
                  credentials: CredentialMiddleware(credentials: credentials), refusals: .merchant(metrics))
    }

    struct Body: Encodable {
        struct Item: Encodable {
            var purchaseId, store, subject, kind, state: String
            var product: String?
            var expiresAt: String?
            var quantity: Int?
            var appTransactionId: String?
            var lastEventId, lastEventType, lastEventAt: String
        }
        var user, app, environment: String
        var purchases: [Item]
    }

    func respond(_ request: Request, _ context: MerchantRequestContext) async throws(Rejection) -> Response {
        let caller = try context.caller()
        guard caller.isServer else {
            throw Rejection(.serverCredentialRequired, "purchase credentials are for the merchant's servers: use a server credential")
        }
        let (user, app, environment) = try EntitlementAPI.userQuery(request, user: context.parameters.get("user"))
        try credentials.authorize(caller, app: app, user: user)
        let purchases: [Purchase]
        do {
            purchases = try await store.purchases(app: app, user: user, environment: environment.rawValue)
        } catch {
            logger.error("purchase lookup failed", metadata: ["error": .string("\(error)")])
            throw Rejection(.storeUnavailable, "the entitlement store cannot answer now", retryAfterSeconds: 5)
        }
        let items = purchases.map { p in
            Body.Item(purchaseId: purchaseIds.id(of: p.key),
                      store: p.key.source, subject: p.key.subject, kind: p.kind.rawValue, state: p.state.rawValue, product: p.product,
                      expiresAt: p.expiresAtMs.map(EntitlementJSON.rfc3339), quantity: p.quantity, appTransactionId: p.appTransactionId,
                      lastEventId: p.lastEventId, lastEventType: p.lastEventType,
                      lastEventAt: EntitlementJSON.rfc3339(p.lastEventAtMs))
        }
        let data = (try? EntitlementAPI.encoder.encode(Body(user: user, app: app, environment: environment.rawValue, purchases: items))) ?? Data()
        return EntitlementAPI.json(.ok, data)
    }
}
