import Config
import Events
import Foundation
import Rejections
import Toolkit

/// Google Play Real-time developer notifications over a Cloud Pub/Sub push subscription: the
/// push's OIDC token is verified first, then the envelope is read and the RTDN decoded. An
/// authentic push whose data is not an RTDN is still acknowledged (a non-2xx makes Pub/Sub slow
/// the whole subscription) and goes to the quarantine topic.
public struct GoogleSource: WebhookSource {
    public let name = SourceName.google
    public let mediaTypes: [MediaType] = [.json]
    /// Nil until `audience` and `serviceAccountEmail` are configured: every push is then refused.
    private let authenticator: GooglePushAuthenticator?
    private let packages: Set<String>

    /// A `jwks` file is read now (a bad one fails start-up); a URL is fetched through `fetcher` on first use.
    public init(settings: GoogleSettings, fetcher: (any HTTPFetcher)? = nil) throws(ConfigError) {
        guard let audience = settings.audience, !audience.isEmpty,
              let email = settings.serviceAccountEmail, !email.isEmpty else {
            self.init(authenticator: nil, packages: settings.packages)
            return
        }
        let keySet: GoogleKeySet
        if Self.isURL(settings.jwks) {
            keySet = GoogleKeySet(url: settings.jwks, fetcher: fetcher)
        } else {
            guard let data = FileManager.default.contents(atPath: settings.jwks) else {
                throw ConfigError(key: "sources.google.jwks", message: "cannot read \(settings.jwks)")
            }
            do { keySet = try GoogleKeySet.file(Array(data), path: settings.jwks) } catch {
                throw ConfigError(key: "sources.google.jwks", message: "\(settings.jwks) is not a Google key set: \(error)")
            }
        }
        self.init(audience: audience, serviceAccountEmail: email, keySet: keySet, packages: settings.packages)
    }

    public init(audience: String, serviceAccountEmail: String, keySet: GoogleKeySet, packages: [String]) {
        self.init(authenticator: GooglePushAuthenticator(audience: audience, serviceAccountEmail: serviceAccountEmail, keySet: keySet),
                  packages: packages)
    }

    private init(authenticator: GooglePushAuthenticator?, packages: [String]) {
        self.authenticator = authenticator
        self.packages = Set(packages)
    }

    /// `http://` or `https://`; anything else names a file.
    public static func isURL(_ jwks: String) -> Bool {
        let lowered = jwks.lowercased()
        return lowered.hasPrefix("https://") || lowered.hasPrefix("http://")
    }

    public func accept(_ request: WebhookRequest) async throws(Rejection) -> AcceptedDelivery {
        guard let authenticator else {
            throw Rejection(.wrongAudience, "sources.google.audience and serviceAccountEmail are not configured, so no push can be authenticated")
        }
        // Authenticity first: nothing of an unauthenticated request is parsed beyond its token.
        _ = try await authenticator.verify(authorization: try request.singleHeader("authorization"), now: request.now)
        return try deliver(request)
    }

    /// The raw topic keeps no token: the push was authenticated when it arrived.
    public func reverify(_ request: WebhookRequest) async throws(Rejection) -> AcceptedDelivery {
        try deliver(request)
    }

    /// Everything after authentication: the envelope, the notification, the configured package.
    private func deliver(_ request: WebhookRequest) throws(Rejection) -> AcceptedDelivery {
        let push = try PubSubPush(request)

        let notification: DeveloperNotification
        do throws(DeveloperNotification.Invalid) {
            guard let data = push.data else {
                throw DeveloperNotification.Invalid(reason: "missing_data", message: "the Pub/Sub message has no data")
            }
            notification = try DeveloperNotification(data: data)
        } catch {
            return AcceptedDelivery(events: [], rawKey: push.messageId, response: SenderResponse(status: 200),
                                    quarantine: Quarantine(reason: error.reason, message: error.message))
        }
        guard packages.contains(notification.packageName) else {
            throw Rejection(.unknownPackage, "packageName \(GoogleKeySet.printable(notification.packageName)) is not configured (sources.google.packages)")
        }
        let event = GoogleNormalizer(notification: notification, messageId: push.messageId, subscription: push.subscription,
                                     receivedAt: request.receivedAt).event()
        return AcceptedDelivery(events: [event], rawKey: event.subject, response: SenderResponse(status: 200))
    }

    public func readinessProblem(now: Timestamp) async -> String? {
        await authenticator?.keySet.readinessProblem(now: now)
    }
}
