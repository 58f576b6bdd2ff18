import Entitlements
import Events
import Foundation
import StoreTestSupport
import TestSupport
import Testing
import Toolkit
@testable import Merchant
@testable import ProviderAPIs
@testable import Workers

/// A scripted Sileo client walks the Payment Provider API (docs/sileo.md) against the workers' own
/// server as `tollgate work` runs it: a real store, the real projection of `tollgate.events` on the
/// embedded Kafka cluster, and the merchant's sign-in page and the payment page as local servers.
@Suite("Sileo: the Payment Provider API, walked as Sileo walks it")
struct SileoWalkTests {
    static func body(_ fields: [String: String]) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: (try? encoder.encode(fields)) ?? Data(), as: UTF8.self)
    }

    @Test("info, sign-in, user_info empty, package info, purchase, the purchase applied, owned, one download, a refund", arguments: Backend.allCases)
    func walk(backend: Backend) async throws {
        let fixture = try SileoFixture()
        defer { fixture.stop() }
        try await TestDatabases.withStore(backend) { store in
            try await WorkerHarness.with { harness in
                // The vendor's public URL names the server's port, so the port is chosen before it starts.
                let clock = TestClock()
                let now: @Sendable () -> Int64 = { Int64(clock.now.timeIntervalSince1970 * 1000) }
                let port = LoopbackListener.freePort()
                let base = "http://127.0.0.1:\(port)"
                let vendor = try fixture.vendor(publicBaseURL: base)
                try await harness.withWorkers(store: store, clock: now, sileo: [vendor], sileoCheckouts: fixture.checkouts, ownServer: true,
                                              serverPort: port) { workers in
                    _ = try await workers.baseURL()
                    let api = base + SileoFixture.base
                    let packageURL = api + "/package/" + SileoFixture.package

                    // Vendor info, from the configuration.
                    let info = try await SileoHTTP.call("GET", api + "/info")
                    #expect(info.status == 200)
                    #expect(info.json["name"]?.string == "Test Repo")
                    #expect(info.json["authentication_banner"]?["button"]?.string == "Sign in")

                    // Sign-in through the merchant's page.
                    let device = try await fixture.signIn(at: base)
                    #expect(device.token.count == 64 && device.paymentSecret.count == 64)

                    let empty = try await SileoHTTP.call("POST", api + "/user_info", json: Self.body(["token": device.bearer]))
                    #expect(empty.status == 200)
                    #expect(empty.json["items"]?.array == [])
                    #expect(empty.json["user"]?["name"]?.string == "Name of user-a")
                    #expect(empty.json["user"]?["email"]?.string == "user-a@example.com")

                    let before = try await SileoHTTP.call("POST", packageURL + "/info",
                                                          json: Self.body(["token": device.bearer, "udid": "x", "device": "iPhone7,2"]))
                    #expect(before.status == 200)
                    #expect(before.json["price"]?.string == "$1.99")
                    #expect(before.json["purchased"]?.bool == false)
                    #expect(before.json["available"]?.bool == true)

                    // Purchase: a pending checkout for this user and product, and its payment page.
                    let purchase = try await SileoHTTP.call("POST", packageURL + "/purchase",
                                                            json: Self.body(["token": device.bearer, "payment_secret": device.paymentSecret]))
                    #expect(purchase.status == 200)
                    #expect(purchase.json["status"]?.int64 == 1)
                    let paymentURL = try #require(purchase.json["url"]?.string)
                    #expect(paymentURL.hasPrefix(fixture.paymentPage.baseURL + "/pay?checkout=co-1"))
                    let intent = try #require(fixture.checkouts.pending.withLock { $0.first })
                    #expect(intent == CheckoutIntent(app: SileoFixture.app, user: "user-a", product: SileoFixture.product, amountMinor: 199,
                                                     currency: "USD", provider: SourceName("alipayplus"), environment: .production))

                    // The provider's paid notification, as the gateway publishes it, projected by the workers.
                    try await harness.publish(SileoFixture.purchase(.purchaseCompleted, id: "sileo-paid-1", user: "user-a", subject: "ref-1"))
                    try await waitUntil("the purchase is owned") {
                        let answer = try await SileoHTTP.call("POST", packageURL + "/info", json: Self.body(["token": device.bearer]))
                        return answer.json["purchased"]?.bool == true
                    }
                    let owned = try await SileoHTTP.call("POST", api + "/user_info", json: Self.body(["token": device.bearer]))
                    #expect(owned.json["items"]?.array == [.string(SileoFixture.package)])
                    // Owned now: a second purchase asks for nothing.
                    let again = try await SileoHTTP.call("POST", packageURL + "/purchase",
                                                         json: Self.body(["token": device.bearer, "payment_secret": device.paymentSecret]))
                    #expect(again.json["status"]?.int64 == 0)

                    // One download through a single-use key; the second use is refused.
                    let authorized = try await SileoHTTP.call("POST", packageURL + "/authorize_download",
                                                              json: Self.body(["token": device.bearer, "udid": "x", "device": "iPhone7,2",
                                                                               "version": "1.0", "repo": "https://repo.example"]))
                    #expect(authorized.status == 200)
                    let downloadURL = try #require(authorized.json["url"]?.string)
                    #expect(downloadURL.hasPrefix(api + "/download/" + SileoFixture.package + "?key="))
                    #expect(!downloadURL.contains(device.token) && !downloadURL.contains(device.paymentSecret) && !downloadURL.contains("user-a"))
                    let file = try await SileoHTTP.call("GET", downloadURL)
                    #expect(file.status == 200)
                    #expect([UInt8](file.body) == SileoFixture.fileBytes)
                    let second = try await SileoHTTP.call("GET", downloadURL)
                    #expect(second.status == 403)
                    #expect(second.json["reason"]?.string == "invalid_download_key")
                    #expect(workers.metrics.total("tollgate_sileo_downloads_total", ["vendor": SileoFixture.base, "delivery": "file"]) == 1)

                    // A refund takes the package back.
                    try await harness.publish(SileoFixture.purchase(.purchaseRefunded, id: "sileo-refund-1", user: "user-a", subject: "ref-1"))
                    try await waitUntil("the refund applied") {
                        let answer = try await SileoHTTP.call("POST", packageURL + "/info", json: Self.body(["token": device.bearer]))
                        return answer.json["purchased"]?.bool == false
                    }
                    let gone = try await SileoHTTP.call("POST", api + "/user_info", json: Self.body(["token": device.bearer]))
                    #expect(gone.json["items"]?.array == [])
                    let refused = try await SileoHTTP.call("POST", packageURL + "/authorize_download", json: Self.body(["token": device.bearer]))
                    #expect(refused.status == 403)
                    #expect(refused.json["reason"]?.string == "not_entitled")
                }
            }
        }
    }
}
