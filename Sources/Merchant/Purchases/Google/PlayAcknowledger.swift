import Entitlements
import Events
import Logging
import ProviderAPIs

/// Tells Google that a verified Play purchase was granted (`purchases.subscriptions.acknowledge`,
/// `purchases.products.acknowledge`), so Google does not refund it three days after the purchase.
/// An attempt that fails for a reason that may pass (Google unreachable, 5xx, 429, refused credentials)
/// queues the acknowledgement in the store for `PlayAcknowledgementRetryLoop`; one that Google refuses
/// for good (410 gone, 404, another 4xx) is dropped. Acknowledging twice is harmless: Google answers 200.
public struct PlayAcknowledger: PlayAcknowledging {
    /// The `outcome` of `tollgate_worker_play_acknowledgements_total`.
    public enum Outcome: String, Sendable, CaseIterable {
        /// Google took it at the first attempt.
        case acknowledged
        /// Google could not take it now: queued for the retry loop.
        case queued
        /// Google could not take it now, and it was queued already.
        case already
        /// Google took it on a retry of the loop.
        case retried
        /// Its three days passed before Google took it: Google refunds the purchase.
        case expired
        /// Google refused it for good (410, 404, another 4xx), or it could not be queued: not retried.
        case failed
    }

    /// What one call to Google gave.
    enum Attempt: Sendable, Equatable {
        case acknowledged
        /// Not retried: Google no longer keeps the purchase (410) or refuses the call for good.
        case refused(String)
        /// May work later; `retryAfterSeconds` from a 429's `Retry-After`.
        case unavailable(String, retryAfterSeconds: Int?)
    }

    let client: PlayAPIClient
    let store: EntitlementStore
    let metrics: MerchantMetrics
    let logger: Logger
    let backoff: PlayAcknowledgementBackoff
    let now: @Sendable () -> Int64

    public init(client: PlayAPIClient, store: EntitlementStore, metrics: MerchantMetrics, logger: Logger,
                backoff: PlayAcknowledgementBackoff = PlayAcknowledgementBackoff(),
                now: @escaping @Sendable () -> Int64 = { Timestamp.now.millisecondsSince1970 }) {
        self.client = client
        self.store = store
        self.metrics = metrics
        self.logger = logger
        self.backoff = backoff
        self.now = now
    }

    public func acknowledge(_ acknowledgement: PlayAcknowledgement) async {
        let attempt = await self.attempt(kind: acknowledgement.kind, packageName: acknowledgement.packageName,
                                         productId: acknowledgement.productId, token: acknowledgement.purchaseToken)
        switch attempt {
        case .acknowledged:
            metrics.playAcknowledgement(.acknowledged)
            await note(acknowledgement.packageName, acknowledgement.purchaseToken, "acknowledged", "")
        case .refused(let why):
            metrics.playAcknowledgement(.failed)
            await note(acknowledgement.packageName, acknowledgement.purchaseToken, "refused", why)
            logger.warning("Google refused the Play acknowledgement for good; not retried", metadata: fields(acknowledgement, why))
        case .unavailable(let why, let retryAfterSeconds):
            let nowMs = now()
            await note(acknowledgement.packageName, acknowledgement.purchaseToken, nowMs < acknowledgement.deadlineMs ? "queued" : "expired", why)
            guard nowMs < acknowledgement.deadlineMs else {
                metrics.playAcknowledgement(.expired)
                logger.error("Play acknowledgement not taken by Google within three days of the purchase: Google refunds it",
                             metadata: fields(acknowledgement, why))
                return
            }
            let pending = PendingPlayAcknowledgement(
                packageName: acknowledgement.packageName, kind: acknowledgement.kind.rawValue, productId: acknowledgement.productId,
                purchaseToken: acknowledgement.purchaseToken, deadlineMs: acknowledgement.deadlineMs, attempts: 1,
                nextAttemptAtMs: backoff.nextAttemptAtMs(afterAttempts: 1, nowMs: nowMs, deadlineMs: acknowledgement.deadlineMs,
                                                         retryAfterSeconds: retryAfterSeconds),
                queuedAtMs: nowMs)
            do {
                let queued = try await store.queuePlayAcknowledgement(pending, lastError: why)
                metrics.playAcknowledgement(queued ? .queued : .already)
                logger.warning("Play acknowledgement queued for retry", metadata: fields(acknowledgement, why))
            } catch {
                // Lost unless the app posts the purchase again before the deadline (which acknowledges it then).
                metrics.playAcknowledgement(.failed)
                logger.error("Play acknowledgement could not be queued for retry", metadata: fields(acknowledgement, "\(why); store: \(error)"))
            }
        }
    }

    /// An attempt in the purchase's story (the console's): what came of it and why, never the token.
    func note(_ packageName: String, _ token: String, _ outcome: String, _ why: String) async {
        await store.noteStoreCall("play.acknowledge", source: SourceName.google.rawValue, app: packageName, subject: token,
                                  outcome: outcome, detail: why, nowMs: now())
    }

    /// One call to Google's acknowledge endpoint of the purchase's kind.
    func attempt(kind: PlayAcknowledgement.Kind, packageName: String, productId: String, token: String) async -> Attempt {
        do throws(PlayAPIError) {
            let kept = switch kind {
            case .subscription: try await client.acknowledgeSubscription(packageName: packageName, subscriptionId: productId, token: token)
            case .product: try await client.acknowledgeProduct(packageName: packageName, productId: productId, token: token)
            }
            return kept ? .acknowledged : .refused("Google no longer keeps the purchase (410)")
        } catch {
            // The call and the kind only: Google's text may quote the token.
            let why = "\(error.call.rawValue): \(error.kindLabel)"
            return error.isTransient ? .unavailable(why, retryAfterSeconds: error.retryAfterSeconds) : .refused(why)
        }
    }

    /// What a log line says about an acknowledgement: never its token.
    func fields(_ a: PlayAcknowledgement, _ why: String) -> Logger.Metadata {
        ["package": .string(a.packageName), "product": .string(a.productId), "kind": .string(a.kind.rawValue), "error": .string(why)]
    }
}

/// When the retry loop asks Google again: `initialMs` after the first failure, doubling up to `maxMs`,
/// never sooner than a 429's `Retry-After`, and a last time shortly before the deadline.
public struct PlayAcknowledgementBackoff: Sendable {
    public var initialMs: Int64
    public var maxMs: Int64
    /// The last attempt is made this long before the deadline at the latest.
    public var lastAttemptBeforeDeadlineMs: Int64

    public init(initialMs: Int64 = 30_000, maxMs: Int64 = 30 * 60_000, lastAttemptBeforeDeadlineMs: Int64 = 5 * 60_000) {
        self.initialMs = initialMs
        self.maxMs = maxMs
        self.lastAttemptBeforeDeadlineMs = lastAttemptBeforeDeadlineMs
    }

    func nextAttemptAtMs(afterAttempts attempts: Int, nowMs: Int64, deadlineMs: Int64, retryAfterSeconds: Int?) -> Int64 {
        let doubled = initialMs << Int64(min(max(attempts - 1, 0), 20))
        let delay = max(min(doubled, maxMs), Int64(retryAfterSeconds ?? 0) * 1_000)
        // One attempt still fits before the deadline; past the last one, the loop drops it as expired.
        let lastChance = deadlineMs - lastAttemptBeforeDeadlineMs
        return nowMs < lastChance ? min(nowMs + delay, lastChance) : nowMs + delay
    }
}
