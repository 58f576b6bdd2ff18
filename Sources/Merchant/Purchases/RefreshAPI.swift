import Entitlements
import Foundation
import Hummingbird
import Logging
import Rejections
import ServiceHost

/// `POST /v1/purchases/{purchase}/refresh`: the merchant's backend asks Tollgate to re-read one purchase
/// from its store now and apply what changed (`PurchaseRefresher`). Server credentials only, for the
/// apps they may act in: the call spends the merchant's store quota, so a client credential (public by
/// assumption) is refused 403, and each call takes from the same per-app share of the store's quota as
/// the at-risk refresh (429 with `Retry-After` once spent). A purchase of an app the credential may not
/// act in answers as an unknown one.
public struct RefreshAPI: Sendable {
    public static let path = "/v1/purchases/:purchase/refresh"

    let refresher: PurchaseRefresher
    let store: EntitlementStore
    let quota: StoreQuota
    let credentials: APICredentials
    let metrics: MerchantMetrics
    let logger: Logger

    public var routes: RouteGroup {
        .merchant([.init(.post, Self.path) { request, context in try await respond(request, context) }],
                  credentials: CredentialMiddleware(credentials: credentials),
                  refusals: .merchant(metrics, logger: logger, route: Self.path))
    }

    struct Answer: Encodable {
        var purchaseId, app, environment: String
        var user: String?
        /// Whether the store's word differed from the stored purchase (an event was published).
        var changed: Bool
        var eventIds: [String]
        var purchase: PurchasesAPI.Answer.Item
    }

    /// An operator's refresh from the console: every app, the same quota; whether the store's word changed
    /// the purchase, and whether that change was applied within `purchases.waitMs`.
    public func refreshForOperator(purchaseId: String) async throws(Rejection) -> (changed: Bool, applied: Bool) {
        let (_, refreshed) = try await refresh(id: purchaseId, trigger: .console) { _ in true }
        return (refreshed.eventId != nil, refreshed.applied)
    }

    /// The purchase `id` names (in an app `allows` takes), read back from its store within the app's share of its quota.
    private func refresh(id: String, trigger: PurchaseRefresher.Trigger,
                         allows: (String) -> Bool) async throws(Rejection) -> (Purchase, PurchaseRefresher.Refreshed) {
        let stored: Purchase?
        do { stored = try await store.purchase(id: id) } catch {
            logger.error("purchase lookup failed", metadata: ["error": .string("\(error)")])
            throw Rejection(.storeUnavailable, "the entitlement store cannot answer now", retryAfterSeconds: 5)
        }
        guard let stored, allows(stored.key.app) else {
            throw Rejection(.unknownPurchase, "no purchase has this id")
        }
        guard PurchaseRefresher.claim(for: stored) != nil else {
            throw PurchaseRefresher.unsupported(stored)
        }
        guard quota.take(store: stored.key.source, app: stored.key.app, calls: PurchaseRefresher.calls(for: stored)) else {
            throw Rejection(.rateLimited, "this app's share of the store's quota for refreshes is spent (workers.refreshPlayQueriesPerMinute, refreshAppleRequestsPerSecond)",
                            retryAfterSeconds: 1)
        }
        return (stored, try await refresher.refresh(stored, trigger: trigger, nowMs: refresher.service.now().millisecondsSince1970))
    }

    func respond(_ request: Request, _ context: MerchantRequestContext) async throws(Rejection) -> Response {
        let caller = try context.caller()
        guard caller.isServer else {
            throw Rejection(.serverCredentialRequired, "refreshing a purchase spends the store's quota: use a server credential")
        }
        let id = context.parameters.get("purchase") ?? ""
        let (stored, refreshed) = try await refresh(id: id, trigger: .api) { caller.credential.allows(app: $0) }
        let answer = Answer(purchaseId: id, app: stored.key.app, environment: stored.key.environment, user: stored.user,
                            changed: refreshed.eventId != nil, eventIds: refreshed.eventId.map { [$0] } ?? [],
                            purchase: PurchasesAPI.Answer.Item(refreshed.purchase, ids: store.purchaseIds))
        return PurchasesAPI.json(refreshed.applied ? .ok : .accepted, answer)
    }
}
