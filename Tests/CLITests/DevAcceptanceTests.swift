import Events
import Foundation
import Testing

extension DevEndToEndTests {
    /// A signed App Store notification through the gateway, the projection and the
    /// outbox, seen where a merchant's services see it (the entitlement API and `tollgate.entitlements`).
    @Suite("tollgate dev: Apple notifications to entitlements")
    struct Acceptance {
        @Test("SUBSCRIBED grants the entitlement, EXPIRED removes it; both changes reach tollgate.entitlements in order")
        func subscribedThenExpired() async throws {
            let dev = try DevEndToEndTests.dev()
            let purchase = ApplePurchase()
            let key = "\(DevProcess.bundleId)/sandbox/\(purchase.user)/\(purchase.product)"

            let subscribed = try purchase.subscribed(chain: dev.chain)
            let subscribedResponse = try await dev.post(subscribed)
            #expect(subscribedResponse.status == 200, "\(subscribedResponse.body)")
            let granted = try await dev.entitlements(user: purchase.user, until: "the API lists the subscription") { !$0.entitlements.isEmpty }
            #expect(granted.user == purchase.user)
            #expect(granted.app == DevProcess.bundleId)
            #expect(granted.environment == "sandbox")
            let purchaseId = try await dev.purchaseId(source: "apple", app: DevProcess.bundleId, environment: "sandbox",
                                                      subject: purchase.originalTransactionId)
            #expect(granted.entitlements == [EntitlementsBody.Item(
                product: purchase.product, source: "apple", purchaseId: purchaseId, state: "active",
                expiresAt: Timestamp(millisecondsSince1970: purchase.expiresMs).rfc3339, gracePeriodExpiresAt: nil)])
            // {user} is percent-decoded as app is: every byte escaped (user%2D42 style) names the same user.
            let escapedUser = purchase.user.utf8.map { String(format: "%%%02X", $0) }.joined()
            let escaped = try await HTTP.request("GET", dev.baseURL + "/v1/users/\(escapedUser)/entitlements?app=\(DevProcess.bundleId)&environment=sandbox",
                                                 headers: ["Authorization": "Bearer \(DevProcess.apiToken)"])
            #expect(escaped.status == 200, "\(escaped.body)")
            #expect(try JSONDecoder().decode(EntitlementsBody.self, from: escaped.data) == granted)
            let malformed = try await HTTP.request("GET", dev.baseURL + "/v1/users/%FF%FE/entitlements?app=\(DevProcess.bundleId)",
                                                   headers: ["Authorization": "Bearer \(DevProcess.apiToken)"])
            #expect(malformed.status == 400 && malformed.body.contains(#""error":"malformed_request""#), "\(malformed.body)")
            // A NUL names nobody: refused here, never sent to the store (where PostgreSQL would fail on it).
            let nul = try await HTTP.request("GET", dev.baseURL + "/v1/users/user%00/entitlements?app=\(DevProcess.bundleId)",
                                             headers: ["Authorization": "Bearer \(DevProcess.apiToken)"])
            #expect(nul.status == 400 && nul.body.contains(#""error":"malformed_request""#), "\(nul.body)")
            // A token limited to another app gets 403 for this one, and answers for its own.
            let limited = try await dev.entitlements(user: purchase.user, token: DevProcess.limitedToken)
            #expect(limited.status == 403 && limited.body.contains(#""error":"app_not_allowed""#), "\(limited.body)")
            let ownApp = try await dev.entitlements(user: purchase.user, app: DevProcess.limitedTokenApp, token: DevProcess.limitedToken)
            #expect(ownApp.status == 404 && ownApp.body.contains(#""error":"unknown_user""#), "\(ownApp.body)")

            let expired = try purchase.expired(chain: dev.chain)
            let expiredResponse = try await dev.post(expired)
            #expect(expiredResponse.status == 200, "\(expiredResponse.body)")
            // The user stays known (200, not 404) with nothing active.
            _ = try await dev.entitlements(user: purchase.user, until: "the API no longer lists it") { $0.entitlements.isEmpty }

            let changes = try await dev.eventually("both changes are on tollgate.entitlements") { () -> [EntitlementChangeValue]? in
                let records = try await dev.records("tollgate.entitlements").filter { $0.keyString == key }
                return records.count >= 2 ? try records.map { try JSONDecoder().decode(EntitlementChangeValue.self, from: Data($0.value)) } : nil
            }
            #expect(changes.map(\.active) == [true, false])
            #expect(changes.map(\.state) == ["active", "expired"])
            #expect(changes.map(\.expiresAt) == Array(repeating: Timestamp(millisecondsSince1970: purchase.expiresMs).rfc3339, count: 2))
            #expect(changes.map(\.eventId) == [subscribed.eventId, expired.eventId])
            #expect(changes.allSatisfy { $0.app == DevProcess.bundleId && $0.environment == "sandbox" && $0.user == purchase.user && $0.product == purchase.product
                && $0.source == "apple" && $0.purchaseId == purchaseId })
            #expect(changes[0].sequence < changes[1].sequence)
        }

        @Test("the entitlement API refuses a missing or wrong bearer token (401) and answers 404 for an unknown user")
        func apiRefusals() async throws {
            let dev = try DevEndToEndTests.dev()
            let user = "nobody-\(UUID().uuidString)"

            let missing = try await dev.entitlements(user: user, token: nil)
            #expect(missing.status == 401)
            #expect(missing.body.contains(#""error":"unauthorized""#))
            let wrong = try await dev.entitlements(user: user, token: DevProcess.apiToken + "x")
            #expect(wrong.status == 401)
            #expect(wrong.body.contains(#""error":"unauthorized""#))

            let unknown = try await dev.entitlements(user: user)
            #expect(unknown.status == 404)
            #expect(unknown.body.contains(#""error":"unknown_user""#))

            // The gateway's server carries the API here, and answers its wrong methods as its own.
            let delete = try await HTTP.request("DELETE", dev.baseURL + "/v1/users/\(user)/entitlements?app=x")
            #expect(delete.status == 405)
            #expect(delete.body.contains(#""error":"method_not_allowed""#))
        }
    }
}
