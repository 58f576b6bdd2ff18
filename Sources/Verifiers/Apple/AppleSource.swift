import Config
import Events
import Rejections
import Toolkit

/// App Store Server Notifications V2: `{"signedPayload": "<JWS>"}`, verified as Apple's
/// `SignedDataVerifier` does, then checked against the configured apps. Offline (the default)
/// checks validity at the payload's signedDate; online checks validity now and asks OCSP.
public struct AppleSource: WebhookSource {
    public let name = SourceName.apple
    public let mediaTypes: [MediaType] = [.json]
    private let apps: [AppleSettings.App]
    private let chainVerifier: AppleChainVerifier?
    private let revocation: OCSPChecker?
    private let verifyNested: Bool

    /// Roots are required once an app is configured; with none, every delivery is refused as untrusted.
    /// `fetcher` carries the OCSP requests when `onlineChecks` is on.
    public init(settings: AppleSettings, fetcher: (any HTTPFetcher)? = nil) throws(ConfigError) {
        var roots: [Certificate] = []
        do {
            roots = try AppleRoots.load(paths: settings.roots)
        } catch {
            if !settings.apps.isEmpty { throw error }
        }
        var online: (any HTTPFetcher, OCSPChecker.Settings)?
        if settings.onlineChecks {
            guard let fetcher else {
                throw ConfigError(key: "sources.apple.onlineChecks", message: "online checks need network access, which this command does not have")
            }
            online = (fetcher, OCSPChecker.Settings(timeout: .milliseconds(settings.ocspTimeoutMs),
                                                    responderOverride: settings.ocspResponder))
        }
        self.init(apps: settings.apps, roots: roots, verifyNested: settings.verifyNested, strict: settings.strictX509,
                  online: online)
    }

    public init(apps: [AppleSettings.App], roots: [Certificate], verifyNested: Bool = true, strict: Bool = false,
                online: (fetcher: any HTTPFetcher, settings: OCSPChecker.Settings)? = nil) {
        self.apps = apps
        let trustStore = TrustStore(roots: roots)
        self.chainVerifier = trustStore.map { AppleChainVerifier(trustStore: $0, strict: strict) }
        self.revocation = trustStore.flatMap { store in
            online.map { OCSPChecker(fetcher: $0.fetcher, trustStore: store, settings: $0.settings) }
        }
        self.verifyNested = verifyNested
    }

    public func accept(_ request: WebhookRequest) async throws(Rejection) -> AcceptedDelivery {
        guard let body = JSONValue.parse(request.body), let object = body.object else {
            throw Rejection(.malformedJSON, "the body is not a JSON object")
        }
        guard let signedPayload = object["signedPayload"] else {
            if object["notification_type"] != nil || object["unified_receipt"] != nil {
                throw Rejection(.unsupportedVersion, "App Store Server Notifications V1 is not supported: in App Store Connect, App Information, set the notification version of this URL to Version 2")
            }
            throw Rejection(.missingField, "signedPayload is missing")
        }
        guard let jws = signedPayload.string else { throw Rejection(.invalidField, "signedPayload is not a string") }

        let payload: NotificationPayload = try await verifiedPayload(jws, now: request.now)
        let (bundleId, appAppleId, claimedEnvironment) = try identity(of: payload)
        let (app, environment) = try checkApp(bundleId: bundleId, appAppleId: appAppleId, environment: claimedEnvironment)
        guard let notificationUUID = payload.notificationUUID, !notificationUUID.isEmpty else {
            throw Rejection(.missingField, "notificationUUID is missing")
        }

        var transaction: TransactionPayload?
        if let nested = payload.data?.signedTransactionInfo {
            let decoded: TransactionPayload = try await nestedPayload(nested, now: request.now, what: "signedTransactionInfo")
            guard decoded.bundleId == nil || decoded.bundleId == app.bundleId else {
                throw Rejection(.unknownApp, "signedTransactionInfo is for another bundleId")
            }
            guard decoded.environment == nil || decoded.environment == environment else {
                throw Rejection(.wrongEnvironment, "signedTransactionInfo is for another environment")
            }
            transaction = decoded
        }
        var renewal: RenewalInfoPayload?
        if let nested = payload.data?.signedRenewalInfo {
            let decoded: RenewalInfoPayload = try await nestedPayload(nested, now: request.now, what: "signedRenewalInfo")
            guard decoded.environment == nil || decoded.environment == environment else {
                throw Rejection(.wrongEnvironment, "signedRenewalInfo is for another environment")
            }
            renewal = decoded
        }
        let event = AppleNormalizer(payload: payload, transaction: transaction, renewal: renewal, bundleId: app.bundleId,
                                    environment: environment, notificationUUID: notificationUUID,
                                    receivedAt: request.receivedAt).event()
        return AcceptedDelivery(events: [event], rawKey: event.subject, response: SenderResponse(status: 200))
    }

    /// Verifies a JWS (alg, x5c chain, ES256, and OCSP when online) and decodes its payload.
    func verifiedPayload<T: SignedPayload>(_ text: String, now: Timestamp) async throws(Rejection) -> T {
        let jws: CompactJWS
        do { jws = try CompactJWS(text) } catch {
            if case .malformed(let why) = error { throw Rejection(.malformedJWS, why) }
            throw Rejection(.malformedJWS, "not a compact JWS")
        }
        guard let payloadJSON = JSONValue.parse(jws.payload), payloadJSON.object != nil else {
            throw Rejection(.malformedJWS, "the JWS payload is not a JSON object")
        }
        guard let chainVerifier else { throw Rejection(.untrustedChain, "no Apple root certificate is configured (sources.apple.roots)") }
        let nowSeconds = Self.floorDiv(now.millisecondsSince1970, 1000)
        // Offline, as Apple's library: the chain must have been valid when Apple signed.
        // Online: it must be valid now, and not revoked.
        // A signedDate that is no date (or outside years 0000-9999) is refused here, before the
        // chain: it must not fall back to the receive time.
        var signedMillis: Int64?
        if let signedDate = payloadJSON["signedDate"] {
            guard let millis = Self.millis(signedDate) else { throw Rejection(.malformedJWS, "payload.signedDate is not a valid AppleDate") }
            signedMillis = millis
        }
        let effective = revocation != nil ? nowSeconds : Self.floorDiv(signedMillis ?? now.millisecondsSince1970, 1000)
        // The chain, then the ES256 signature with its leaf; only a JWS that passes both is cached.
        let signer = try chainVerifier.verifiedSigner(for: jws, at: effective)
        if let revocation {
            try await revocation.check(signer.intermediate, issuer: signer.root, now: nowSeconds)
            try await revocation.check(signer.leaf, issuer: signer.intermediate, now: nowSeconds)
        }
        return try T(AppleFields(payloadJSON, path: "payload"))
    }

    private func nestedPayload<T: SignedPayload>(_ text: String, now: Timestamp, what: String) async throws(Rejection) -> T {
        if verifyNested { return try await verifiedPayload(text, now: now) }
        // The outer signature covers these bytes already; decode without a second chain check.
        guard let jws = try? CompactJWS(text), let payload = JSONValue.parse(jws.payload) else {
            throw Rejection(.malformedJWS, "\(what) is not a compact JWS with a JSON payload")
        }
        return try T(AppleFields(payload, path: what))
    }

    private func identity(of payload: NotificationPayload) throws(Rejection) -> (String?, Int64?, AppleEnvironment?) {
        if let data = payload.data { return (data.bundleId, data.appAppleId, data.environment) }
        if let summary = payload.summary { return (summary.bundleId, summary.appAppleId, summary.environment) }
        if let token = payload.externalPurchaseToken {
            // No environment field: Apple marks sandbox tokens by the id's prefix.
            let sandbox = token.externalPurchaseId?.hasPrefix("SANDBOX") ?? false
            return (token.bundleId, token.appAppleId, sandbox ? .sandbox : .production)
        }
        if let appData = payload.appData { return (appData.bundleId, appData.appAppleId, appData.environment) }
        throw Rejection(.malformedJWS, "the notification has none of data, summary, externalPurchaseToken, appData")
    }

    func configuredApp(_ bundleId: String) -> AppleSettings.App? { apps.first(where: { $0.bundleId == bundleId }) }

    private func checkApp(bundleId: String?, appAppleId: Int64?, environment: AppleEnvironment?) throws(Rejection) -> (AppleSettings.App, AppleEnvironment) {
        guard let bundleId, let app = apps.first(where: { $0.bundleId == bundleId }) else {
            throw Rejection(.unknownApp, "bundleId \(bundleId ?? "(none)") is not configured")
        }
        guard let environment, app.environments.contains(environment.rawValue) else {
            throw Rejection(.wrongEnvironment, "environment \(environment?.rawValue ?? "(none)") is not enabled for \(bundleId)")
        }
        if environment == .production, appAppleId != app.appAppleId {
            throw Rejection(.unknownApp, "appAppleId \(appAppleId.map(String.init) ?? "(none)") does not match \(bundleId)")
        }
        return (app, environment)
    }

    private static func millis(_ value: JSONValue) -> Int64? { AppleDate(json: value)?.milliseconds }

    /// Rounds toward negative infinity without negating `a`: `signedDate` is read before any signature
    /// check and may be Int64.min, whose negation traps.
    static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
        let (quotient, remainder) = a.quotientAndRemainder(dividingBy: b)
        return remainder < 0 ? quotient - 1 : quotient
    }
}
