import Events
import Logging
import ProviderAPIs
import Rejections
import Toolkit
import Verifiers

/// Apple's half of `POST /v1/purchases`: a StoreKit 2 signed transaction is verified offline with the
/// notifications' verifier (chain, OIDs, ES256, bundle, environment); a transaction id, or the first
/// transaction id of a receipt once the receipt is verified as Apple's for the app (`AppReceiptVerifier`),
/// is looked up through the App Store Server API with the app's key (production first, then sandbox on
/// Apple's not-found), and Apple's signed answers go through the same verifier.
public struct ApplePurchaseVerifier: PurchaseVerifying {
    let source: AppleSource
    /// By bundle id: the apps with a `serverApi` key.
    let clients: [String: AppStoreAPIClient]
    /// Legacy app receipts: their signature, chain and bundle id, before any of their ids is asked about.
    let receipts: AppReceiptVerifier
    let logger: Logger
    var now: @Sendable () -> Timestamp = { Timestamp.now }
    /// Transaction history pages read for one receipt at most (20 transactions a page). With the one
    /// Get All Subscription Statuses call every subscription of the answer shares, and the sandbox retry
    /// of the first call, a request makes at most `maxHistoryPages + 2` calls, however many purchases
    /// the customer has: the App Store's rate limit is the merchant's, and a caller must not spend it.
    static let maxHistoryPages = 5

    public init(source: AppleSource, clients: [String: AppStoreAPIClient], receipts: AppReceiptVerifier, logger: Logger,
                now: @escaping @Sendable () -> Timestamp = { Timestamp.now }) {
        self.source = source
        self.clients = clients
        self.receipts = receipts
        self.logger = logger
        self.now = now
    }

    public func verify(_ claim: PurchaseClaim) async throws(Rejection) -> [VerifiedPurchase] {
        switch claim {
        case .appleSignedTransaction(let jws):
            let verified = try await verifiedTransaction(jws)
            return [Self.purchase(verified, renewal: nil, status: nil, nowMs: now().millisecondsSince1970)]
        case .appleTransactionId(let id, let bundleId):
            let client = try client(for: bundleId)
            let (info, environment) = try await call { () async throws(AppStoreAPIError) in
                try await client.productionThenSandbox { (env) async throws(AppStoreAPIError) in try await client.transactionInfo(id, in: env) }
            }
            let verified = try await verifiedTransaction(info.signedTransactionInfo, bundleId: bundleId, environment: environment)
            var statuses: SubscriptionStatusesResponse?
            return [try await current(verified, client: client, environment: environment, statuses: &statuses)]
        case .appleReceipt(let receipt, let bundleId):
            let ids: [String]
            do { ids = try receipts.transactionIds(base64: receipt, bundleId: bundleId) } catch {
                throw Self.refusal(error, maxBytes: receipts.maxBase64Bytes)
            }
            let client = try client(for: bundleId)
            // An id the verified receipt lists (its first), so Apple is asked only about this customer's purchases.
            return try await history(of: ids[0], listed: Set(ids), bundleId: bundleId, client: client)
        case .google:
            return []
        }
    }

    /// Every purchase in the customer's transaction history, each as its latest transaction says.
    /// `listed`: every id the receipt names; Apple's history must hold one of them, so an answer for
    /// another customer (the same id in the other environment) is never taken for this one's.
    private func history(of transactionId: String, listed: Set<String>, bundleId: String,
                         client: AppStoreAPIClient) async throws(Rejection) -> [VerifiedPurchase] {
        let (first, environment) = try await call { () async throws(AppStoreAPIError) in
            try await client.productionThenSandbox { (env) async throws(AppStoreAPIError) in try await client.transactionHistory(transactionId, in: env) }
        }
        var signed = first.signedTransactions ?? []
        var page = first
        var pages = 1
        while page.hasMore == true, let revision = page.revision, pages < Self.maxHistoryPages {
            page = try await call { () async throws(AppStoreAPIError) in try await client.transactionHistory(transactionId, revision: revision, in: environment) }
            signed += page.signedTransactions ?? []
            pages += 1
        }
        var latest: [String: VerifiedAppleTransaction] = [:]
        var verifiedAll: [VerifiedAppleTransaction] = []
        for jws in signed {
            let verified = try await verifiedTransaction(jws, bundleId: bundleId, environment: environment)
            verifiedAll.append(verified)
            let original = verified.transaction.originalTransactionId ?? ""
            let purchased = verified.transaction.purchaseDate?.milliseconds ?? 0
            if let held = latest[original], (held.transaction.purchaseDate?.milliseconds ?? 0) >= purchased { continue }
            latest[original] = verified
        }
        guard !latest.isEmpty else { throw Rejection(.purchaseNotFound, "Apple lists no transaction for this receipt") }
        guard verifiedAll.contains(where: { listed.contains($0.transaction.transactionId ?? "") || listed.contains($0.transaction.originalTransactionId ?? "") }) else {
            throw Rejection(.purchaseNotFound, "Apple's history for this receipt holds none of its transactions")
        }
        // One statuses call for all: Apple answers every subscription group of the customer's app at once.
        var statuses: SubscriptionStatusesResponse?
        var purchases: [VerifiedPurchase] = []
        for original in latest.keys.sorted() {
            guard let verified = latest[original] else { continue }
            purchases.append(try await current(verified, client: client, environment: environment, statuses: &statuses))
        }
        return purchases
    }

    /// A subscription as Get All Subscription Statuses reports it now (its latest transaction, renewal
    /// info and status); any other purchase as its transaction says. `statuses` is the request's one
    /// answer of that call, asked the first time a subscription needs it.
    private func current(_ verified: VerifiedAppleTransaction, client: AppStoreAPIClient, environment: AppStoreEnvironment,
                         statuses cached: inout SubscriptionStatusesResponse?) async throws(Rejection) -> VerifiedPurchase {
        let nowMs = now().millisecondsSince1970
        guard verified.transaction.isAutoRenewable, let original = verified.transaction.originalTransactionId else {
            return Self.purchase(verified, renewal: nil, status: nil, nowMs: nowMs)
        }
        let statuses: SubscriptionStatusesResponse
        if let cached {
            statuses = cached
        } else {
            statuses = try await call { () async throws(AppStoreAPIError) in try await client.subscriptionStatuses(original, in: environment) }
            cached = statuses
        }
        let last = (statuses.data ?? []).flatMap { $0.lastTransactions ?? [] }.first { $0.originalTransactionId == original }
        guard let last, let signedTransaction = last.signedTransactionInfo else {
            return Self.purchase(verified, renewal: nil, status: nil, nowMs: nowMs)
        }
        let latest = try await verifiedTransaction(signedTransaction, bundleId: verified.bundleId, environment: environment)
        guard latest.transaction.originalTransactionId == original else {
            throw Rejection(.purchaseNotFound, "Apple's subscription status names another original transaction")
        }
        var renewal: RenewalInfoPayload?
        if let signedRenewal = last.signedRenewalInfo {
            do { renewal = try await source.verifiedRenewalInfo(signedRenewal, environment: latest.environment, now: now()) } catch {
                throw Rejection(error.reason, "signedRenewalInfo: \(error.message)")
            }
        }
        return Self.purchase(latest, renewal: renewal, status: last.status, nowMs: nowMs)
    }

    /// Why a receipt is not believed, in the codes a forged signed transaction gets where they fit; the
    /// messages never carry what the receipt holds.
    static func refusal(_ problem: AppReceiptVerifier.Problem, maxBytes: Int) -> Rejection {
        switch problem {
        case .tooLarge:
            return Rejection(.bodyTooLarge, "the receipt is longer than \(maxBytes) bytes of base64 (purchases.maxReceiptBytes)")
        case .notBase64: return Rejection(.invalidReceipt, "the receipt is not base64")
        case .malformed(let why): return Rejection(.invalidReceipt, "the receipt is not a PKCS#7 app receipt: \(why)")
        case .badSignature: return Rejection(.badSignature, "the receipt's signature does not verify over its content")
        case .untrusted(let why):
            return Rejection(.untrustedChain, "the receipt's signer does not chain to a receipt root (purchases.receiptRootCertificates): \(why)")
        case .expired:
            return Rejection(.certificateExpired, "a certificate of the receipt's chain is not valid at the receipt's creation date")
        case .notReceiptSigner:
            return Rejection(.missingAppleOID, "the receipt's signer lacks Apple's receipt-signing OID \(AppReceiptVerifier.receiptSigningOID)")
        case .otherApp: return Rejection(.receiptAppMismatch, "the receipt is for another app than app")
        case .noPurchases: return Rejection(.purchaseNotFound, "the receipt holds no in-app purchase")
        }
    }

    private func verifiedTransaction(_ jws: String) async throws(Rejection) -> VerifiedAppleTransaction {
        do { return try await source.verifiedTransaction(jws, now: now()) } catch {
            throw Rejection(error.reason, error.message)
        }
    }

    /// An answer of the API: signed by Apple for this app, in the environment it was asked in.
    private func verifiedTransaction(_ jws: String, bundleId: String, environment: AppStoreEnvironment) async throws(Rejection) -> VerifiedAppleTransaction {
        let verified = try await verifiedTransaction(jws)
        guard verified.bundleId == bundleId, (verified.environment == .production) == (environment == .production) else {
            throw Rejection(.purchaseNotFound, "Apple's answer is for another app or environment")
        }
        return verified
    }

    private func client(for bundleId: String) throws(Rejection) -> AppStoreAPIClient {
        guard let client = clients[bundleId] else {
            throw Rejection(.unknownApp, "no App Store Server API key is configured for \(bundleId) (sources.apple.apps[].serverApi)")
        }
        return client
    }

    /// One API call, its failure as a refusal: Apple's not-found is the purchase's, anything else
    /// (unreachable, 5xx, 429, our key refused) leaves nothing applied and asks the app to come back.
    private func call<T>(_ body: () async throws(AppStoreAPIError) -> T) async throws(Rejection) -> T {
        do { return try await body() } catch {
            if error.isNotFound { throw Rejection(.purchaseNotFound, "Apple does not know this transaction") }
            if case .http(let status, _) = error.kind, status == 400 {
                throw Rejection(.purchaseNotFound, "Apple refused the transaction id as invalid")
            }
            logger.warning("App Store Server API call failed", metadata: ["call": .string(error.call.rawValue), "kind": .string(error.kindLabel)])
            var retryAfter = 5
            if case .rateLimited(let seconds) = error.kind { retryAfter = max(1, seconds) }
            throw Rejection(.storeAPIUnavailable, "the App Store Server API cannot answer now (\(error.kindLabel))", retryAfterSeconds: retryAfter)
        }
    }

    /// The purchase a verified transaction states; `status` is Get All Subscription Statuses' (1 active,
    /// 2 expired, 3 billing retry, 4 grace period, 5 revoked).
    static func purchase(_ verified: VerifiedAppleTransaction, renewal: RenewalInfoPayload?, status: Int?, nowMs: Int64) -> VerifiedPurchase {
        let t = verified.transaction
        let subscription = t.isAutoRenewable
        let expiresMs = t.expiresDate?.milliseconds
        let type: EventType
        if t.revocationDate != nil {
            type = subscription ? .subscriptionRevoked : .purchaseRefunded
        } else if subscription {
            switch status {
            case 2?: type = .subscriptionExpired
            case 3?, 4?: type = .subscriptionBillingIssue
            case 5?: type = .subscriptionRevoked
            case 1?: type = .subscriptionStarted
            default: type = (expiresMs ?? Int64.max) > nowMs ? .subscriptionStarted : .subscriptionExpired
            }
        } else {
            type = .purchaseCompleted
        }
        let rfc3339 = { (ms: Int64) in Timestamp(millisecondsSince1970: ms).rfc3339 }
        var state: NormalizedEvent.Subscription?
        if subscription {
            let grace = status == 4 ? renewal?.gracePeriodExpiresDate.map { rfc3339($0.milliseconds) } : nil
            state = NormalizedEvent.Subscription(autoRenew: renewal?.autoRenewStatus.map { $0 == 1 }, gracePeriodExpiresAt: grace,
                                                 billingRetry: renewal?.isInBillingRetryPeriod)
        }
        let occurredMs = t.signedDate?.milliseconds ?? nowMs
        var purchase = VerifiedPurchase(
            source: AppleSender.name, app: verified.bundleId, environment: verified.environment,
            subject: t.originalTransactionId ?? "", product: t.productId ?? "", kind: subscription ? .subscription : .oneTime,
            type: type, occurredAt: Timestamp(millisecondsSince1970: occurredMs),
            transaction: t.normalizedTransaction, price: t.normalizedPrice, subscription: state, owner: t.appAccountToken ?? renewal?.appAccountToken)
        if t.offerType != nil || t.offerDiscountType != nil {
            purchase.offer = VerifiedPurchase.Offer(introductory: t.offerType == 1, trial: t.offerDiscountType == "FREE_TRIAL",
                                                   id: t.offerType == 2 ? t.offerIdentifier : nil)
        }
        purchase.priceIncreaseAgreed = renewal?.priceIncreaseStatus.map { $0 == 1 }
        purchase.record = .apple(originalPurchaseDate: t.originalPurchaseDate.map { Timestamp(millisecondsSince1970: $0.milliseconds) })
        return purchase
    }
}
