import Entitlements
import Logging
import Verifiers

/// Google's half of `POST /v1/purchases`, as `EntitlementWorkers` composes it: the verifier, the
/// acknowledger and the acknowledgements' retry loop, all on the Play Developer API client of the
/// enrichment (`sources.google.playApi`). Without its credentials the verifier refuses every Google
/// claim (`play_api_not_configured`) and there is nothing to acknowledge.
public struct GooglePurchases: Sendable {
    public let verifier: GooglePurchaseVerifier
    public let acknowledger: PlayAcknowledger?
    /// Runs in the workers' StopOrder (`playAcknowledgementRetry`), before the store closes.
    public let retryLoop: PlayAcknowledgementRetryLoop?

    public init(verifier: GooglePurchaseVerifier, acknowledger: PlayAcknowledger?, retryPollInterval: Duration = .seconds(10)) {
        self.verifier = verifier
        self.acknowledger = acknowledger
        retryLoop = acknowledger.map { PlayAcknowledgementRetryLoop(acknowledger: $0, pollInterval: retryPollInterval) }
    }

    public static func make(settings: GoogleSettings, enricher: GooglePlayEnricher?, store: EntitlementStore, metrics: MerchantMetrics,
                            logger: Logger) -> GooglePurchases {
        let client = enricher?.playAPIClient
        // The verifier's answers are the enricher's to take: one Play read per reported purchase.
        return GooglePurchases(verifier: GooglePurchaseVerifier(client: client, packages: settings.packages, reads: enricher?.reads),
                               acknowledger: client.map { PlayAcknowledger(client: $0, store: store, metrics: metrics, logger: logger) })
    }
}
