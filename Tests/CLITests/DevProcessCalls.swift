import Entitlements
import Foundation
import Kafka
import Logging
import Merchant
import ProviderAPIs
import TestSupport
import Workers

/// What the tests ask of a running `tollgate dev`: deliveries, the entitlement API, metrics, topics, store.
extension DevProcess {
    /// POSTs a signed notification to /webhooks/apple, noting it as delivered when answered 200.
    func post(_ notification: ApplePurchase.Notification) async throws -> HTTP.Response {
        let response = try await HTTP.request("POST", baseURL + "/webhooks/apple", headers: ["Content-Type": "application/json"],
                                              body: notification.body)
        if response.status == 200 { await appleDeliveries.append(notification.notificationUUID) }
        return response
    }

    /// `GET /v1/users/<user>/entitlements?app=<app>&environment=<environment>` with the configured token
    /// (or `token`, or none). Sandbox by default: the dev configuration's Apple app takes Sandbox only.
    func entitlements(user: String, app: String = DevProcess.bundleId, environment: String = "sandbox",
                      token: String? = DevProcess.apiToken, userToken: String? = nil) async throws -> HTTP.Response {
        let user = user.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? user
        var headers = token.map { ["Authorization": "Bearer \($0)"] } ?? [:]
        if let userToken { headers["Tollgate-User-Token"] = userToken }
        return try await HTTP.request("GET", baseURL + "/v1/users/\(user)/entitlements?app=\(app)&environment=\(environment)",
                                      headers: headers)
    }

    /// The API's 200 answer once `accept` takes it.
    func entitlements(user: String, app: String = DevProcess.bundleId, environment: String = "sandbox", until what: String,
                      _ accept: @escaping @Sendable (EntitlementsBody) -> Bool) async throws -> EntitlementsBody {
        try await eventually(what) { () -> EntitlementsBody? in
            let response = try await entitlements(user: user, app: app, environment: environment)
            guard response.status == 200 else { return nil }
            let body = try JSONDecoder().decode(EntitlementsBody.self, from: response.data)
            return accept(body) ? body : nil
        }
    }

    /// The sum of a Prometheus counter's series whose labels include every one of `labels` (`name="value"`).
    func metric(_ name: String, _ labels: [String] = []) async throws -> Double {
        let response = try await HTTP.request("GET", baseURL + "/metrics")
        var sum = 0.0
        for line in response.body.split(separator: "\n") where line.hasPrefix(name + "{") || line.hasPrefix(name + " ") {
            guard labels.allSatisfy({ line.contains($0) }), let value = line.split(separator: " ").last.flatMap({ Double($0) }) else { continue }
            sum += value
        }
        return sum
    }

    func records(_ topic: String) async throws -> [KafkaRecord] {
        try await TopicRecords.read(topic, bootstrap: bootstrap)
    }

    /// The dev process's store (its default URL, relative to its working directory), opened beside it.
    /// The opaque id the APIs and `tollgate.entitlements` give the purchase with this key (the dev store's purchase-id key).
    func purchaseId(source: String, app: String, environment: String, subject: String) async throws -> String {
        try await withStore { $0.purchaseIds }.id(source: source, app: app, environment: environment, subject: subject)
    }

    func withStore<T: Sendable>(_ body: (EntitlementStore) async throws -> T) async throws -> T {
        let url = "sqlite:" + directory.appendingPathComponent(".tollgate/tollgate.sqlite").path
        let store = try await EntitlementStore.open(url: url, logger: Logger(label: "cli-tests") { _ in SwiftLogNoOpLogHandler() })
        do {
            let value = try await body(store)
            await store.close()
            return value
        } catch {
            await store.close()
            throw error
        }
    }
}

/// The entitlement API's answer.
struct EntitlementsBody: Decodable, Equatable, Sendable {
    struct Item: Decodable, Equatable, Sendable {
        var product, source, purchaseId, state: String
        var expiresAt: String?
        var gracePeriodExpiresAt: String?
    }
    var user: String
    var app: String
    var environment: String
    var entitlements: [Item]
}

/// A `tollgate.entitlements` record's value.
struct EntitlementChangeValue: Decodable, Equatable, Sendable {
    var app, environment, user, product, source, purchaseId, state: String
    var active: Bool
    var expiresAt: String?
    var changedAt: String
    var eventId: String
    var sequence: Int64
}
