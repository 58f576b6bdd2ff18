import Events
import Rejections
import Toolkit

/// A signed transaction or renewal info that passed the notifications' verification (chain to the
/// configured root, Apple's OIDs, ES256), for a configured bundle in an enabled environment.
public struct VerifiedAppleTransaction: Sendable {
    public let transaction: TransactionPayload
    public let bundleId: String
    public let environment: NormalizedEvent.Environment
}

extension AppleSource {
    /// StoreKit 2's JWS transaction, or an App Store Server API answer's `signedTransactionInfo`,
    /// verified as a notification is. A transaction names no `appAppleId`, so the bundle and the
    /// environment are what is checked against the configuration.
    public func verifiedTransaction(_ jws: String, now: Timestamp) async throws(Rejection) -> VerifiedAppleTransaction {
        let transaction: TransactionPayload = try await verifiedPayload(jws, now: now)
        guard let bundleId = transaction.bundleId, let app = configuredApp(bundleId) else {
            throw Rejection(.unknownApp, "bundleId \(transaction.bundleId ?? "(none)") is not configured")
        }
        guard let environment = transaction.environment, app.environments.contains(environment.rawValue) else {
            throw Rejection(.wrongEnvironment, "environment \(transaction.environment?.rawValue ?? "(none)") is not enabled for \(bundleId)")
        }
        guard transaction.originalTransactionId?.isEmpty == false, transaction.transactionId?.isEmpty == false,
              transaction.productId?.isEmpty == false else {
            throw Rejection(.missingSignedField, "the transaction names no transactionId, originalTransactionId or productId")
        }
        return VerifiedAppleTransaction(transaction: transaction, bundleId: bundleId,
                                        environment: environment == .production ? .production : .sandbox)
    }

    /// An App Store Server API answer's `signedRenewalInfo`, verified as a notification is; its
    /// environment must be `environment`.
    public func verifiedRenewalInfo(_ jws: String, environment: NormalizedEvent.Environment, now: Timestamp) async throws(Rejection) -> RenewalInfoPayload {
        let renewal: RenewalInfoPayload = try await verifiedPayload(jws, now: now)
        guard renewal.environment.map({ ($0 == .production ? .production : .sandbox) == environment }) ?? false else {
            throw Rejection(.wrongEnvironment, "signedRenewalInfo is for another environment")
        }
        return renewal
    }
}
