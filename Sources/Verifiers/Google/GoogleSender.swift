import Config
import Events
import ProviderAPIs
import Toolkit

extension SourceName {
    public static let google = SourceName("google")
}

/// Google Play real-time developer notifications over Pub/Sub push (docs/senders/google.md).
public enum GoogleSender: SenderDefinition {
    public static let name = SourceName.google

    /// Pub/Sub's own headers: which message and subscription a raw record came from.
    public static let keptRequestHeaders = ["x-goog-pubsub-message-id", "x-goog-pubsub-publish-time", "x-goog-pubsub-subscription-name"]

    public static func readSettings(_ g: ConfigReader) throws(ConfigError) -> GoogleSettings {
        var google = GoogleSettings()
        google.audience = try g.string("audience").flatMap { $0.isEmpty ? nil : $0 }
        google.serviceAccountEmail = try g.string("serviceAccountEmail").flatMap { $0.isEmpty ? nil : $0 }
        google.jwks = try g.string("jwks", default: google.jwks)
        google.packages = try g.strings("packages")
        // The three go together: without any of them no push can be accepted, so a partial
        // configuration is a mistake worth stopping for.
        let configured = [google.audience != nil, google.serviceAccountEmail != nil, !google.packages.isEmpty]
        if configured.contains(true), configured.contains(false) {
            let missing = zip(["audience", "serviceAccountEmail", "packages"], configured).filter { !$0.1 }.map(\.0)
            throw ConfigError(key: g.name(missing[0]), message: "is required with the other Google settings (audience, serviceAccountEmail, packages)")
        }
        if google.packages.contains(where: \.isEmpty) { throw ConfigError(key: g.name("packages"), message: "a package name is empty") }
        if google.jwks.isEmpty { throw ConfigError(key: g.name("jwks"), message: "expected a URL or a file path") }
        // Over plain HTTP anyone on the path could hand the gateway keys of their own, and every
        // token signed with them would verify.
        if google.jwks.contains("://"), !google.jwks.lowercased().hasPrefix("https://") {
            throw ConfigError(key: g.name("jwks"), message: "expected an https:// URL or a file path (the key set decides which tokens verify: never over plain http)")
        }
        if !google.jwks.contains("://") { google.jwks = g.resolvePath(google.jwks, key: "jwks") }
        google.playApi = try g.section("playApi") { (p) throws(ConfigError) in
            var play = GoogleSettings.PlayAPI()
            play.baseURL = try p.credentialedURL("baseURL", default: play.baseURL)
            play.tokenURL = try p.credentialedURL("tokenURL", default: play.tokenURL)
            play.credentialsFile = try p.string("credentialsFile").map { p.resolvePath($0, key: "credentialsFile") }
            play.timeoutMs = try p.int("timeoutMs", default: play.timeoutMs, range: 100...120_000)
            return play
        }
        google.refundReviews = try g.list("refundReviews") { (r) throws(ConfigError) in
            let package = try r.requiredString("package")
            guard google.packages.contains(package) else {
                throw ConfigError(key: r.name("package"), message: "\(package) is not one of sources.google.packages")
            }
            let text = try r.requiredString("refundPreference")
            guard let preference = RefundReviewAnswer.Preference(rawValue: text) else {
                let allowed = RefundReviewAnswer.Preference.allCases.map(\.rawValue).joined(separator: ", ")
                throw ConfigError(key: r.name("refundPreference"), message: "expected one of \(allowed), got \"\(text)\"")
            }
            return GoogleSettings.RefundReviewPolicy(package: package, refundPreference: preference,
                                                     sampleContentProvided: try r.bool("sampleContentProvided", default: false))
        }
        if let first = google.refundReviews.first, google.playApi.credentialsFile == nil {
            throw ConfigError(key: g.name("refundReviews"), message: "answering \(first.package)'s refund reviews needs playApi.credentialsFile, whose key signs the answers")
        }
        if Set(google.refundReviews.map(\.package)).count < google.refundReviews.count {
            throw ConfigError(key: g.name("refundReviews"), message: "a package is listed twice")
        }
        return google
    }

    public static func makeSource(_ settings: GoogleSettings, fetcher: (any HTTPFetcher)?) throws(ConfigError) -> any WebhookSource {
        try GoogleSource(settings: settings, fetcher: fetcher)
    }

    public static func startupWarnings(_ settings: GoogleSettings) -> [StartupWarning] {
        guard settings.playApi.credentialsFile == nil, !settings.packages.isEmpty else { return [] }
        return [StartupWarning(.workers, key: "sources.google.playApi.credentialsFile",
                               "no Play Developer API credentials: Google events are applied without the purchase state Google keeps")]
    }

    /// Google's keys from a URL would be a network call: offline checks want them saved to a file.
    public static func offlineSettings(_ settings: GoogleSettings) throws(OfflineRefusal) -> GoogleSettings {
        if settings.audience != nil, GoogleSource.isURL(settings.jwks) {
            throw OfflineRefusal("""
                sources.google.jwks is a URL (\(settings.jwks)), and verify works offline: save the key set \
                (curl -o google-certs.json \(settings.jwks)) and set sources.google.jwks to that file
                """)
        }
        return settings
    }
}

extension SourcesSettings {
    public var google: GoogleSettings {
        get { settings(.google) ?? GoogleSettings() }
        set { set(newValue, for: .google) }
    }
}

public struct GoogleSettings: Sendable {
    public struct PlayAPI: Sendable {
        public var baseURL = "https://androidpublisher.googleapis.com"
        public var tokenURL = "https://oauth2.googleapis.com/token"
        public var credentialsFile: String?
        /// Deadline of one HTTP request to the token endpoint or the API.
        public var timeoutMs = 10_000
    }
    public var audience: String?
    public var serviceAccountEmail: String?
    public var jwks = "https://www.googleapis.com/oauth2/v3/certs"
    public var packages: [String] = []
    public var playApi = PlayAPI()
    /// `refundReviews`: the packages whose chargeback reviews the workers answer (`orders.reviewrefund`), and how.
    public struct RefundReviewPolicy: Sendable, Equatable {
        public var package: String
        /// What the answer prefers; the workers approve a purchase the store never granted, whatever this says.
        public var refundPreference: RefundReviewAnswer.Preference
        /// Whether the app offers a free sample, trial or description of the content before purchase.
        public var sampleContentProvided: Bool
        public init(package: String, refundPreference: RefundReviewAnswer.Preference, sampleContentProvided: Bool) {
            self.package = package; self.refundPreference = refundPreference; self.sampleContentProvided = sampleContentProvided
        }
    }
    /// None by default: nothing about a customer is sent to Google unless the merchant says so.
    public var refundReviews: [RefundReviewPolicy] = []
    public init() {}
}
