import Logging
import Metrics
import ProviderAPIs
import Toolkit
import Verifiers

/// The App Store Server API clients `sources.apple` describes: one per app with a `serverApi` key,
/// by bundle id. Keys are read here, at start-up, so a missing or wrong `.p8` stops the process
/// with its path rather than failing the first purchase.
public enum AppStoreAPIClients {
    public static func make(settings: AppleSettings, fetcher: any HTTPFetcher, logger: Logger,
                            metricsFactory: any MetricsFactory = MetricsSystem.factory) throws(AppStoreCredentialsError) -> [String: AppStoreAPIClient] {
        var clients: [String: AppStoreAPIClient] = [:]
        let urls = AppStoreAPIClient.BaseURLs(production: settings.serverAPI.productionURL, sandbox: settings.serverAPI.sandboxURL)
        for app in settings.apps {
            guard let key = app.serverAPI else { continue }
            let credentials: AppStoreAPICredentials
            do {
                credentials = try AppStoreAPICredentials.load(issuerId: key.issuerId, keyId: key.keyId, bundleId: app.bundleId,
                                                              path: key.privateKeyFile)
            } catch {
                throw AppStoreCredentialsError("sources.apple.apps[\(app.bundleId)].serverApi.privateKeyFile: \(error.message)")
            }
            clients[app.bundleId] = AppStoreAPIClient(credentials: credentials, baseURLs: urls, fetcher: fetcher,
                                                      timeout: .milliseconds(settings.serverAPI.timeoutMs), logger: logger,
                                                      metricsFactory: metricsFactory)
        }
        return clients
    }
}
