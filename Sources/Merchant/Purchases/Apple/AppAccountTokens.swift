import Entitlements
import Events
import Foundation
import Logging
import ProviderAPIs
import ServiceHost
import Store
import Synchronization
import Toolkit
import Verifiers

/// Sets a purchase's `appAccountToken` at Apple once Tollgate links it to a user (Set App Account
/// Token), for the apps with `sources.apple.apps[].setAppAccountToken`, so every later notification
/// names its owner (docs/purchases.md, "Account tokens at Apple"). Each purchase is set once per token.
///
/// The token is the user's: the user id itself when it is a UUID written in lower case (and not of
/// version 8), so Apple's notifications name the user with no lookup; otherwise a UUID made from the user
/// (version 8, RFC 9562: the first 128 bits of HMAC-SHA-256 over `<bundle id>` NUL `<user>` under a key the
/// store keeps, `app-account-tokens`), the same for the same user every time, saying nothing of the user id
/// to Apple, and no other user's. Tollgate keeps each made token with its user (`app_account_tokens`), and
/// the projection gives a notification naming it to that user, whether or not the app still has the
/// setting on. Once Apple took a user's token, a signed copy from before it (naming no owner) is that
/// user's too: nobody else can report it. The calls are queued (`app_account_token_requests`) and made by the workers' job; a
/// failure that may pass is tried again on the retry tiers' delays (`kafka.retryDelaysMs`, the last
/// repeating), one Apple refuses for good (a family-shared purchase, a transaction it does not know) is
/// dropped and counted.
public final class AppAccountTokens: Sendable {
    static let keyName = "app-account-tokens"
    static let batch = 20

    /// The `outcome` of `tollgate_app_account_tokens_total`.
    enum Outcome: String { case set, failed }

    /// The enabled apps' App Store Server API clients, by bundle id.
    let clients: [String: AppStoreAPIClient]
    let store: EntitlementStore
    let retryDelaysMs: [Int]
    let metrics: MerchantMetrics
    let logger: Logger
    let now: @Sendable () -> Int64
    private let key = Mutex<[UInt8]?>(nil)

    public init(clients: [String: AppStoreAPIClient], store: EntitlementStore, retryDelaysMs: [Int], metrics: MerchantMetrics,
                logger: Logger, now: @escaping @Sendable () -> Int64 = { Timestamp.now.millisecondsSince1970 }) {
        self.clients = clients
        self.store = store
        self.retryDelaysMs = retryDelaysMs.isEmpty ? [5_000] : retryDelaysMs
        self.metrics = metrics
        self.logger = logger
        self.now = now
    }

    /// The token that stands for `user` in `app`.
    func token(app: String, user: String) async throws(StoreError) -> String {
        if Self.isOwnToken(user) { return user }
        let key = try await self.key()
        var bytes = Array(Digest.hmacSHA256(key: key, message: Array((app + "\u{0}" + user).utf8)).prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x80
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        let hex = Digest.hex(bytes)
        let parts = [hex.prefix(8), hex.dropFirst(8).prefix(4), hex.dropFirst(12).prefix(4), hex.dropFirst(16).prefix(4), hex.dropFirst(20)]
        return parts.joined(separator: "-")
    }

    /// Whether the user id is a UUID in lower case that no made token can be (not version 8): it is its own token.
    static func isOwnToken(_ user: String) -> Bool {
        guard let uuid = UUID(uuidString: user), uuid.uuidString.lowercased() == user else { return false }
        return !isMade(user)
    }

    /// Whether `token` has the shape of a made token (a version 8 UUID): only those are looked up.
    public static func isMade(_ token: String) -> Bool {
        guard UUID(uuidString: token) != nil else { return false }
        let version = token.utf8.dropFirst(14).first
        return version == UInt8(ascii: "8")
    }

    /// The user behind a made token of `app`, as Apple names it (any case); nil for any other token.
    public static func user(named token: String, app: String, store: EntitlementStore) async throws(StoreError) -> String? {
        guard isMade(token) else { return nil }
        return try await store.user(forAppAccountToken: token.lowercased(), app: app)
    }

    private func key() async throws(StoreError) -> [UInt8] {
        if let key = key.withLock({ $0 }) { return key }
        var generator = SystemRandomNumberGenerator()
        let candidate = Digest.hex((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
        let kept = Array(try await store.serverKey(named: Self.keyName, candidate: candidate).utf8)
        key.withLock { $0 = kept }
        return kept
    }

    /// Queues the call for each Apple purchase of an enabled app that the store here holds for `user` (the
    /// projection's word: a claim that lost a race is not linked) and Apple does not yet name `user`'s.
    /// Never fails the purchase's answer: a queue the store cannot take is logged, and the next report sets it.
    func link(_ purchases: [VerifiedPurchase], to user: String) async {
        for purchase in purchases where purchase.source == .apple && clients[purchase.app] != nil {
            do {
                let token = try await token(app: purchase.app, user: user)
                if purchase.owner?.lowercased() == token { continue }
                let key = PurchaseKey(source: purchase.source.rawValue, app: purchase.app, environment: purchase.environment.rawValue,
                                      subject: purchase.subject)
                guard let holder = try await store.purchase(key)?.user, holder.isExactly(user) else { continue }
                try await store.queueAppAccountToken(app: purchase.app, environment: purchase.environment.rawValue,
                                                     originalTransactionId: purchase.subject, token: token, user: user, nowMs: now())
            } catch {
                logger.error("an app account token could not be queued", metadata: ["app": .string(purchase.app), "error": .string("\(error)")])
            }
        }
    }

    /// Makes the calls due now (the workers' `app account tokens` job).
    public func setDue() async throws(StoreError) -> PeriodicJob.Pass {
        let nowMs = now()
        let due = try await store.claimAppAccountTokenRequests(nowMs: nowMs, claimUntilMs: nowMs + 60_000, limit: Self.batch)
        for request in due { try await set(request) }
        metrics.appAccountTokensWaiting(try await store.appAccountTokenRequestsWaiting())
        return due.count == Self.batch ? .moreWaiting : .idle
    }

    private func set(_ request: AppAccountTokenRequest) async throws(StoreError) {
        guard let client = clients[request.app] else {
            return try await store.finishAppAccountTokenRequest(request, outcome: Outcome.failed.rawValue)
        }
        do {
            try await client.setAppAccountToken(request.originalTransactionId, token: request.token,
                                                in: request.environment == NormalizedEvent.Environment.sandbox.rawValue ? .sandbox : .production)
        } catch where error.isTransient || error.isKeyRefused {
            let attempts = request.attempts + 1
            var delay = Int64(retryDelaysMs[min(attempts - 1, retryDelaysMs.count - 1)])
            if case .rateLimited(let seconds) = error.kind { delay = max(delay, Int64(seconds) * 1_000) }
            logger.warning("setting an app account token failed; trying again", metadata: [
                "app": .string(request.app), "attempts": "\(attempts)", "error": .string(error.description)])
            return try await store.rescheduleAppAccountTokenRequest(request, attempts: attempts, nextAttemptAtMs: now() + delay,
                                                                   lastError: error.description)
        } catch {
            try await store.finishAppAccountTokenRequest(request, outcome: Outcome.failed.rawValue)
            logger.error("Apple refused an app account token for good", metadata: ["app": .string(request.app), "error": .string(error.description)])
            return metrics.appAccountToken(outcome: Outcome.failed.rawValue)
        }
        try await store.finishAppAccountTokenRequest(request, outcome: Outcome.set.rawValue)
        metrics.appAccountToken(outcome: Outcome.set.rawValue)
        logger.info("app account token set at Apple", metadata: ["app": .string(request.app)])
    }
}
