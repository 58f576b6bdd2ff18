import Config
import Entitlements
import Events
import Foundation
import Testing
import Toolkit
@testable import Merchant
@testable import ProviderAPIs
@testable import Workers

/// A customer holding the app (its client credential) cannot set a checkout's price, nor start or read
/// another user's checkouts (docs/security.md).
@Suite("Checkouts: the catalog's price, the client credential's user")
struct CheckoutPricingTests {
    static let user = CheckoutTests.user
    static let product = CheckoutTests.product

    @Test("the caller cannot set the price: an amount other than the catalog's is 422 and nothing is made; a 1-cent payment for a 19.99 checkout entitles nobody and the owner's right payment still does")
    func priceComesFromTheCatalog() async throws {
        try await CheckoutTests.withCheckouts { _, fixture, store, api, harness, _ in
            let account = CheckoutFixture.citconAccount
            let cheap = try await api.post(CheckoutTests.body(app: account, provider: "citcon", amount: "1"))
            #expect(cheap.status == 422, "\(cheap.text)")
            #expect(cheap.error == "price_mismatch")
            #expect(try await store.checkoutCount() == 0)

            let created = try await api.post(CheckoutTests.body(app: account, provider: "citcon"))
            #expect(created.status == 201, "\(created.text)")
            #expect(created.json?["amount"]?.int64 == 1999)
            #expect(created.string("currency") == "USD")
            let id = try #require(created.string("id"))
            let reference = try #require(created.string("reference"))

            // The provider's real notification for one cent on the checkout's reference.
            let events = try await fixture.citconIPN(reference: reference, id: "ch_cent", amount: "1")
            for event in events { try await harness.publish(event) }
            let records = CheckoutRecords(store: store)
            try await waitUntil("the cent's payment quarantined") { try await !records.quarantinedPayments(checkoutId: id).isEmpty }
            #expect(try await !store.entitles(app: account, user: Self.user, product: Self.product))
            #expect(try await api.get(id).string("state") == "pending")
            // The owner's payment of the catalog's price still pays it.
            for event in try await fixture.citconIPN(reference: reference, id: "ch_price", amount: "1999") { try await harness.publish(event) }
            try await waitUntil("the owner entitled") { try await store.entitles(app: account, user: Self.user, product: Self.product) }
        }
    }

    @Test("a client credential starts and reads checkouts only for the user its user token names; it never refunds")
    func clientCredentialActsForItsUser() async throws {
        try await CheckoutTests.withCheckouts { _, _, store, api, _, _ in
            let account = CheckoutFixture.citconAccount
            let body = CheckoutTests.body(app: account, provider: "citcon")
            let client = CheckoutFixture.clientToken
            let noToken = try await api.post(body, token: client)
            #expect(noToken.status == 401)
            #expect(noToken.error == "user_token_required")
            let otherUser = try await api.post(body, token: client, userToken: CheckoutFixture.userToken("mallory", app: account))
            #expect(otherUser.status == 403)
            #expect(otherUser.error == "user_not_allowed")
            let otherApp = try await api.post(body, token: client, userToken: CheckoutFixture.userToken(Self.user, app: CheckoutFixture.clientId))
            #expect(otherApp.status == 401)
            #expect(otherApp.error == "invalid_user_token")
            let forged = try await api.post(body, token: client, userToken: UserTokenSigner.sign(
                user: Self.user, app: account, key: try #require(PrivateKey.generateP256()), nowMs: Timestamp.now.millisecondsSince1970))
            #expect(forged.error == "invalid_user_token")
            #expect(try await store.checkoutCount() == 0)

            let own = CheckoutFixture.userToken(Self.user, app: account)
            let created = try await api.post(body, token: client, userToken: own)
            #expect(created.status == 201, "\(created.text)")
            let id = try #require(created.string("id"))
            #expect(try await api.get(id, token: client, userToken: own).status == 200)
            // Another user's token, or none, reads the checkout as unknown, as a wrong id would.
            let anonymous = try await api.get(id, token: client)
            #expect(anonymous.status == 404 && anonymous.error == "checkout_not_found")
            let mallory = try await api.get(id, token: client, userToken: CheckoutFixture.userToken("mallory", app: account))
            #expect(mallory.status == 404)
            #expect(mallory.error == "checkout_not_found")
            #expect(try await api.askRefund(id, token: client, userToken: own).error == "refund_not_allowed")
        }
    }
}
