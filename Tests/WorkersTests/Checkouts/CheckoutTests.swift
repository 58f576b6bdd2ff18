import Entitlements
import Events
import Foundation
import StoreTestSupport
import Synchronization
import TestSupport
import Testing
import Toolkit
@testable import Merchant
@testable import ProviderAPIs
@testable import Workers

/// Checkouts end to end (docs/checkouts.md): `POST /v1/checkouts` against Antom's `pay` on a local
/// server answering as Antom documents, or for Citcon; the provider's signed notification verified by
/// its sender and published as the gateway publishes it; the workers (real Kafka mock cluster, real
/// SQLite or PostgreSQL store) entitle the checkout's user to its product, or quarantine it.
@Suite("Checkouts: start, pay, refund, quarantine, expire")
struct CheckoutTests {
    static let user = "user-42"
    static let product = "pro.lifetime"

    /// A checkout's body: a product and a currency; `amount`, when given, must be the catalog's price.
    static func body(app: String, provider: String, amount: String? = nil, currency: String = "USD",
                     user: String = user, product: String = product) -> String {
        let sent = amount.map { #","amount":\#($0)"# } ?? ""
        return #"{"app":"\#(app)","user":"\#(user)","product":"\#(product)"\#(sent),"currency":"\#(currency)","provider":"\#(provider)"}"#
    }

    /// Runs `body` with a fake Antom, the fixture, a store and workers that match checkouts.
    static func withCheckouts(_ backend: Backend = .sqlite,
                              _ body: (FakeAntom, CheckoutFixture, EntitlementStore, CheckoutAPI, WorkerHarness, RunningWorkers) async throws -> Void) async throws {
        let platform = await offPool { PrivateKey.generateRSA()! }
        let merchant = await offPool { PrivateKey.generateRSA()! }
        guard let merchantPublic = PublicKey.load(pemOrDER: Array((merchant.publicKeyPEM ?? "").utf8)) else {
            throw CancellationError()
        }
        let antom = FakeAntom(merchantPublicKey: merchantPublic, platformKey: platform, clientId: CheckoutFixture.clientId)
        defer { antom.stop() }
        let fixture = try await CheckoutFixture.make(antomBaseURL: antom.baseURL, merchant: merchant, platform: platform)
        try await TestDatabases.withStore(backend) { store in
            let api = try fixture.api(store: store)
            try await WorkerHarness.with { harness in
                try await harness.withWorkers(store: store, checkouts: try fixture.setup()) { workers in
                    try await body(antom, fixture, store, api, harness, workers)
                }
            }
        }
    }

    @Test("Antom: pay is called signed, the cashier page answered; the signed notification entitles the user", arguments: Backend.allCases)
    func antomCheckoutEntitles(_ backend: Backend) async throws {
        try await Self.withCheckouts(backend) { antom, fixture, store, api, harness, _ in
            let created = try await api.post(Self.body(app: CheckoutFixture.clientId, provider: "alipayplus"))
            #expect(created.status == 201, "\(created.text)")
            let id = try #require(created.string("id"))
            let reference = try #require(created.string("reference"))
            #expect(created.string("state") == "pending")
            #expect(created.string("paymentUrl") == FakeAntom.pageURL(reference))
            #expect(created.json?["ipnUrl"] == nil)
            // What Antom saw: Tollgate's signature verified with the merchant's public key, and the documented fields.
            let seen = try #require(antom.seen.first)
            #expect(seen.signatureVerified)
            #expect(seen.body?["productCode"]?.string == "CASHIER_PAYMENT")
            #expect(seen.body?["paymentRequestId"]?.string == reference)
            #expect(seen.body?["paymentNotifyUrl"]?.string == "\(CheckoutFixture.publicBase)/webhooks/alipayplus")
            #expect(seen.body?["paymentAmount"]?["value"]?.string == "1999")
            #expect(seen.body?["paymentAmount"]?["currency"]?.string == "USD")
            #expect(seen.body?["order"]?["referenceOrderId"]?.string == id)

            #expect(try await !store.entitles(app: CheckoutFixture.clientId, user: Self.user, product: Self.product))
            for event in try await fixture.antomNotification(reference: reference, amount: "1999") { try await harness.publish(event) }
            try await waitUntil("the user entitled") {
                try await store.entitles(app: CheckoutFixture.clientId, user: Self.user, product: Self.product)
            }
            let paid = try await api.get(id)
            #expect(paid.status == 200)
            #expect(paid.string("state") == "paid")
        }
    }

    /// An Antom checkout paid through the workers: its id and reference.
    static func paidAntomCheckout(_ fixture: CheckoutFixture, _ store: EntitlementStore, _ api: CheckoutAPI,
                                  _ harness: WorkerHarness) async throws -> (id: String, reference: String) {
        let created = try await api.post(Self.body(app: CheckoutFixture.clientId, provider: "alipayplus"))
        let id = try #require(created.string("id"))
        let reference = try #require(created.string("reference"))
        for event in try await fixture.antomNotification(reference: reference, amount: "1999") { try await harness.publish(event) }
        try await waitUntil("the checkout paid") { try await api.get(id).string("state") == "paid" }
        // The checkout is marked paid in the same transaction that entitles the user.
        try await waitUntil("the user entitled") {
            try await store.entitles(app: CheckoutFixture.clientId, user: Self.user, product: Self.product)
        }
        return (id, reference)
    }

    @Test("Antom refund in process: Tollgate asks Antom's refund signed, for the paymentId the payment notification carried; Antom's signed refund result takes the entitlement back", arguments: Backend.allCases)
    func antomRefund(_ backend: Backend) async throws {
        try await Self.withCheckouts(backend) { antom, fixture, store, api, harness, workers in
            let (id, reference) = try await Self.paidAntomCheckout(fixture, store, api, harness)
            #expect(try await store.entitles(app: CheckoutFixture.clientId, user: Self.user, product: Self.product))
            #expect(try await api.get(id).string("paymentId") == "pay-\(reference)")
            #expect(try await api.askRefund(id, token: CheckoutFixture.noRefundToken).error == "refund_not_allowed")
            #expect(antom.seen.count == 1)

            antom.set(FakeAntom.RefundMode.inProcess)
            // Two refund requests at once (a double click, two support agents): one refund request id, one
            // refund asked of Antom, however many times it is sent.
            let answers = try await withThrowingTaskGroup(of: CheckoutAnswer.self) { group in
                for _ in 0..<2 { group.addTask { try await api.askRefund(id) } }
                return try await group.reduce(into: [CheckoutAnswer]()) { $0.append($1) }
            }
            let (asked, racing) = (answers[0], answers[1])
            #expect(asked.status == 202, "\(asked.text)")
            #expect(racing.status == 202, "\(racing.text)")
            #expect(asked.string("state") == "paid")
            let refundRequestId = try #require(asked.string("refundRequestId"))
            #expect(racing.string("refundRequestId") == refundRequestId)
            #expect(Set(antom.seen.filter { $0.path == FakeAntom.refundPath }.compactMap { $0.body?["refundRequestId"]?.string }) == [refundRequestId])
            let seen = try #require(antom.seen.last)
            #expect(seen.path == FakeAntom.refundPath && seen.signatureVerified)
            #expect(seen.body?["paymentId"]?.string == "pay-\(reference)")
            #expect(seen.body?["refundRequestId"]?.string == refundRequestId)
            #expect(seen.body?["refundAmount"]?["value"]?.string == "1999" && seen.body?["refundAmount"]?["currency"]?.string == "USD")
            #expect(seen.body?["refundNotifyUrl"]?.string == "\(CheckoutFixture.publicBase)/webhooks/alipayplus")
            // Asking again before the notification repeats the same request (Antom's idempotency key).
            let again = try await api.askRefund(id)
            #expect(again.status == 202 && again.string("refundRequestId") == refundRequestId)
            #expect(antom.seen.last?.body?["refundRequestId"]?.string == refundRequestId)
            #expect(try await store.entitles(app: CheckoutFixture.clientId, user: Self.user, product: Self.product))

            // The same refund id under another client's name names nothing of this client's.
            var foreign = try #require(try await fixture.antomRefundNotification(refundRequestId: refundRequestId).first)
            foreign.app = "CLIENT_OTHER_01"
            foreign.source = "/alipayplus/CLIENT_OTHER_01"
            foreign.id = "alipayplus:CLIENT_OTHER_01:other:REFUND_RESULT:SUCCESS"
            try await harness.publish(foreign)
            try await waitUntil("the foreign refund processed") {
                workers.metrics.total("tollgate_checkout_notifications_total", ["outcome": "refund_unmatched"]) == 1
            }
            #expect(try await store.entitles(app: CheckoutFixture.clientId, user: Self.user, product: Self.product))

            for event in try await fixture.antomRefundNotification(refundRequestId: refundRequestId) { try await harness.publish(event) }
            try await waitUntil("the entitlement taken back") {
                try await !store.entitles(app: CheckoutFixture.clientId, user: Self.user, product: Self.product)
            }
            let refunded = try await api.get(id)
            #expect(refunded.string("state") == "refunded")
            #expect(refunded.json?["refundRequestId"] == nil)
            let purchase = try await store.antomPurchase(reference)
            #expect(purchase?.state == .refunded && purchase?.user == Self.user)
            // Refunded already: 200, nothing asked of Antom.
            let calls = antom.seen.count
            let done = try await api.askRefund(id)
            #expect(done.status == 200 && done.string("state") == "refunded")
            #expect(antom.seen.count == calls)

            // A late copy of the payment (another notification of it) after the refund entitles no one again.
            let repeated = workers.metrics.total("tollgate_checkout_notifications_total", ["outcome": "repeated"])
            for var late in try await fixture.antomNotification(reference: reference, amount: "1999") {
                late.id += ":late-copy"
                try await harness.publish(late)
                try await waitUntil("the late payment processed") { try await store.hasProcessed(eventId: late.id) }
            }
            #expect(workers.metrics.total("tollgate_checkout_notifications_total", ["outcome": "repeated"]) == repeated + 1)
            #expect(try await !store.entitles(app: CheckoutFixture.clientId, user: Self.user, product: Self.product))
            #expect(try await api.get(id).string("state") == "refunded")
        }
    }

    @Test("Antom answers the refund S: Tollgate publishes the refund with the id Antom's notification has, so it applies without the notification and the notification is a duplicate", arguments: Backend.allCases)
    func antomRefundAnswered(_ backend: Backend) async throws {
        try await Self.withCheckouts(backend) { antom, fixture, store, _, harness, _ in
            let published = RecordingPublisher(forward: { events in _ = try await harness.publishAll(events) })
            let api = try fixture.api(store: store, publisher: published)
            let (id, reference) = try await Self.paidAntomCheckout(fixture, store, api, harness)
            let asked = try await api.askRefund(id)
            #expect(asked.status == 202, "\(asked.text)")
            let refundRequestId = try #require(asked.string("refundRequestId"))
            try await waitUntil("the entitlement taken back") {
                try await !store.entitles(app: CheckoutFixture.clientId, user: Self.user, product: Self.product)
            }
            #expect(try await api.get(id).string("state") == "refunded")
            let event = try #require(published.events.withLock { $0.first })
            let notification = try #require(try await fixture.antomRefundNotification(refundRequestId: refundRequestId).first)
            #expect(event.id == notification.id && event.type == .purchaseRefunded)
            #expect(try await store.hasProcessed(eventId: notification.id))
            let purchase = try await store.antomPurchase(reference)
            #expect(purchase?.state == .refunded && purchase?.lastEventId == notification.id)
        }
    }

    @Test("Antom's dispute judged against the merchant takes a paid checkout back: refunded, the entitlement inactive")
    func antomChargeback() async throws {
        try await Self.withCheckouts { _, fixture, store, api, harness, _ in
            let (id, reference) = try await Self.paidAntomCheckout(fixture, store, api, harness)
            for event in try await fixture.antomChargeback(reference: reference) { try await harness.publish(event) }
            try await waitUntil("the entitlement taken back") {
                try await !store.entitles(app: CheckoutFixture.clientId, user: Self.user, product: Self.product)
            }
            #expect(try await api.get(id).string("state") == "refunded")
            let purchase = try await store.antomPurchase(reference)
            #expect(purchase?.state == .revoked)
        }
    }

    @Test("refund refusals: a pending or Citcon checkout 409, Antom F 422 (a new request id next time), Antom down 503 (the same id next time); a failed, unknown or unmatched refund result changes nothing", arguments: Backend.allCases)
    func antomRefundRefusals(_ backend: Backend) async throws {
        try await Self.withCheckouts(backend) { antom, fixture, store, api, harness, workers in
            let pending = try await api.post(Self.body(app: CheckoutFixture.clientId, provider: "alipayplus", product: "other.product"))
            let pendingId = try #require(pending.string("id"))
            #expect(try await api.askRefund(pendingId).error == "checkout_not_refundable")
            let citcon = try await api.post(Self.body(app: CheckoutFixture.citconAccount, provider: "citcon"))
            #expect(try await api.askRefund(try #require(citcon.string("id"))).status == 409)
            #expect(try await api.askRefund("co_unknown").error == "checkout_not_found")
            #expect(try await api.askRefund(pendingId, token: CheckoutFixture.limitedToken).status == 404)

            let (id, reference) = try await Self.paidAntomCheckout(fixture, store, api, harness)
            antom.set(FakeAntom.RefundMode.serverError)
            let down = try await api.askRefund(id)
            #expect(down.status == 503 && down.error == "payment_provider_unavailable", "\(down.text)")
            let downRequest = try #require(antom.seen.last?.body?["refundRequestId"]?.string)
            #expect(try await api.get(id).string("refundRequestId") == downRequest)
            antom.set(FakeAntom.RefundMode.refuse)
            let refused = try await api.askRefund(id)
            #expect(refused.status == 422 && refused.error == "refund_refused", "\(refused.text)")
            #expect(antom.seen.last?.body?["refundRequestId"]?.string == downRequest)
            #expect(try await api.get(id).json?["refundRequestId"] == nil)

            antom.set(FakeAntom.RefundMode.inProcess)
            let asked = try await api.askRefund(id)
            let refundRequestId = try #require(asked.string("refundRequestId"))
            #expect(refundRequestId != downRequest)
            // A refund result naming no refund Tollgate asked for changes nothing, not even a purchase of its own.
            let unmatched = try #require(try await fixture.antomRefundNotification(refundRequestId: "rf-from-the-dashboard").first)
            try await harness.publish(unmatched)
            // A refundStatus Antom does not document keeps the request under way.
            let unknown = try #require(try await fixture.antomRefundNotification(refundRequestId: refundRequestId, status: "PROCESSING").first)
            try await harness.publish(unknown)
            try await waitUntil("both processed") {
                workers.metrics.total("tollgate_checkout_notifications_total", ["outcome": "refund_unmatched"]) == 1
                    && workers.metrics.total("tollgate_checkout_notifications_total", ["outcome": "refund_unknown"]) == 1
            }
            #expect(try await store.antomPurchase("rf-from-the-dashboard") == nil)
            #expect(try await api.get(id).string("refundRequestId") == refundRequestId)
            // A failed one frees the request; the purchase and the entitlement stand.
            for event in try await fixture.antomRefundNotification(refundRequestId: refundRequestId, status: "FAIL") {
                try await harness.publish(event)
            }
            try await waitUntil("the failed refund applied") { try await api.get(id).json?["refundRequestId"] == nil }
            #expect(try await api.get(id).string("state") == "paid")
            #expect(try await store.entitles(app: CheckoutFixture.clientId, user: Self.user, product: Self.product))
            let purchase = try await store.antomPurchase(reference)
            #expect(purchase?.state == .active)
        }
    }

    @Test("Citcon: reference and IPN URL answered; the signed IPN entitles the user, the refund IPN takes it back", arguments: Backend.allCases)
    func citconCheckoutAndRefund(_ backend: Backend) async throws {
        try await Self.withCheckouts(backend) { antom, fixture, store, api, harness, _ in
            let created = try await api.post(Self.body(app: CheckoutFixture.citconAccount, provider: "citcon"))
            #expect(created.status == 201, "\(created.text)")
            let id = try #require(created.string("id"))
            let reference = try #require(created.string("reference"))
            #expect(created.string("ipnUrl") == "\(CheckoutFixture.publicBase)/webhooks/citcon/\(CheckoutFixture.citconAccount)")
            #expect(created.json?["paymentUrl"] == nil)
            #expect(antom.seen.isEmpty)

            for event in try await fixture.citconIPN(reference: reference, id: "ch_1", amount: "1999") { try await harness.publish(event) }
            try await waitUntil("the user entitled") {
                try await store.entitles(app: CheckoutFixture.citconAccount, user: Self.user, product: Self.product)
            }
            #expect(try await api.get(id).string("state") == "paid")

            for event in try await fixture.citconIPN(reference: reference, id: "rf_1", type: "refund", amount: "1999") {
                try await harness.publish(event)
            }
            try await waitUntil("the entitlement taken back") {
                try await !store.entitles(app: CheckoutFixture.citconAccount, user: Self.user, product: Self.product)
            }
            #expect(try await api.get(id).string("state") == "refunded")
        }
    }

    @Test("a user's checkouts are listed newest first, by product and environment, for a server credential and for the user's own token only")
    func listing() async throws {
        try await Self.withCheckouts { _, _, _, api, _, _ in
            let account = CheckoutFixture.citconAccount
            var ids: [String] = []
            for (user, product) in [(Self.user, "pro.lifetime"), (Self.user, "tweak.lifetime"), ("user-7", "pro.lifetime")] {
                let created = try await api.post(Self.body(app: account, provider: "citcon", user: user, product: product))
                ids.append(try #require(created.string("id"), "\(created.text)"))
            }
            let ofUser = try await api.list("app=\(account)&user=\(Self.user)")
            #expect(ofUser.status == 200, "\(ofUser.text)")
            let listed = ofUser.json?["checkouts"]?.array ?? []
            #expect(Set(listed.compactMap { $0["id"]?.string }) == [ids[0], ids[1]])
            let created = listed.compactMap { $0["createdAt"]?.string }
            #expect(created.count == 2 && created == created.sorted(by: >), "newest first: \(created)")
            let ofProduct = try await api.list("app=\(account)&user=\(Self.user)&product=tweak.lifetime&environment=production")
            #expect(ofProduct.json?["checkouts"]?.array?.compactMap { $0["id"]?.string } == [ids[1]])
            #expect(ofProduct.json?["checkouts"]?.array?.first?["state"]?.string == "pending")
            #expect(try await api.list("app=\(account)&user=\(Self.user)&environment=sandbox").json?["checkouts"]?.array?.isEmpty == true)
            #expect(try await api.list("app=\(account)&user=\(Self.user)&state=pending").json?["checkouts"]?.array?.count == 2)
            #expect(try await api.list("app=\(account)&user=\(Self.user)&state=paid").json?["checkouts"]?.array?.isEmpty == true)
            #expect(try await api.list("app=\(account)&user=\(Self.user)&state=quarantined").error == "invalid_field")

            // The app's credential: its user's own checkouts only.
            let own = try await api.list("app=\(account)&user=\(Self.user)", token: CheckoutFixture.clientToken,
                                         userToken: CheckoutFixture.userToken(Self.user, app: account))
            #expect(own.status == 200 && own.json?["checkouts"]?.array?.count == 2, "\(own.text)")
            let another = try await api.list("app=\(account)&user=user-7", token: CheckoutFixture.clientToken,
                                             userToken: CheckoutFixture.userToken(Self.user, app: account))
            #expect(another.status == 403 && another.error == "user_not_allowed" && !another.text.contains(ids[2]), "\(another.text)")
            let tokenless = try await api.list("app=\(account)&user=user-7", token: CheckoutFixture.clientToken)
            #expect(tokenless.status == 401 && tokenless.error == "user_token_required")
            let otherApp = try await api.list("app=\(account)&user=\(Self.user)", token: CheckoutFixture.limitedToken)
            #expect(otherApp.status == 403 && otherApp.error == "app_not_allowed")
            #expect(try await api.list("app=\(account)").error == "missing_field")
            #expect(try await api.list("app=\(account)&user=user-7&user=\(Self.user)").error == "invalid_field")
            #expect(try await api.list("app=\(account)&user=\(Self.user)&environment=staging").error == "invalid_field")

            // At most 100 a call, the newest: 101 checkouts of one user (expired ones, as a user who kept
            // starting and abandoning them leaves behind), written as the service writes them.
            var many: [String] = []
            let startMs = Timestamp.now.millisecondsSince1970 - 1_000_000
            for index in 0..<101 {
                let record = CheckoutRecord(id: "co_many_\(index)", app: account, user: "user-many", product: Self.product, amountMinor: 1999,
                                            currency: "USD", provider: SourceName("citcon"), account: account, reference: "ref-many-\(index)",
                                            environment: .production, state: .expired, paymentURL: nil, notifyURL: nil,
                                            createdAtMs: startMs + Int64(index), expiresAtMs: startMs + Int64(index) + 900_000, paidEventId: nil)
                try await api.service.records.insert(record)
                many.append(record.id)
            }
            let page = try await api.list("app=\(account)&user=user-many")
            let pageIds = page.json?["checkouts"]?.array?.compactMap { $0["id"]?.string } ?? []
            #expect(pageIds.count == 100 && Set(pageIds).isSubset(of: Set(many)), "\(pageIds.count)")
            #expect(!pageIds.contains(many[0]), "the oldest is the one left out")
        }
    }

    @Test("a payment of another amount or currency is quarantined and entitles nobody; the checkout stays pending, and the owner's right payment then entitles")
    func wrongPaymentQuarantined() async throws {
        try await Self.withCheckouts { _, fixture, store, api, harness, workers in
            let first = try await api.post(Self.body(app: CheckoutFixture.citconAccount, provider: "citcon"))
            let firstId = try #require(first.string("id"))
            let firstReference = try #require(first.string("reference"))
            // Someone who knows the reference pays it a cent.
            for event in try await fixture.citconIPN(reference: firstReference, id: "ch_2", amount: "1") {
                try await harness.publish(event)
            }
            let second = try await api.post(Self.body(app: CheckoutFixture.clientId, provider: "alipayplus", product: "other"))
            let secondId = try #require(second.string("id"))
            for event in try await fixture.antomNotification(reference: try #require(second.string("reference")), amount: "1999",
                                                             currency: "EUR") {
                try await harness.publish(event)
            }
            try await waitUntil("both payments quarantined") {
                workers.metrics.total("tollgate_checkout_payments_quarantined_total", ["provider": "citcon", "reason": "amount_mismatch"]) == 1
                    && workers.metrics.total("tollgate_checkout_payments_quarantined_total",
                                             ["provider": "alipayplus", "reason": "currency_mismatch"]) == 1
            }
            let records = CheckoutRecords(store: store)
            #expect(try await records.quarantinedPayments(checkoutId: firstId).map(\.reason) == [.amountMismatch])
            #expect(try await records.quarantinedPayments(checkoutId: secondId).map(\.reason) == [.currencyMismatch])
            #expect(try await api.get(firstId).string("state") == "pending")
            #expect(try await api.get(secondId).string("state") == "pending")
            #expect(try await !store.entitles(app: CheckoutFixture.citconAccount, user: Self.user, product: Self.product))
            #expect(try await !store.entitles(app: CheckoutFixture.clientId, user: Self.user, product: "other"))

            // The owner pays the checkout's amount: paid, entitled, as if nobody had paid a cent before.
            for event in try await fixture.citconIPN(reference: firstReference, id: "ch_3", amount: "1999") {
                try await harness.publish(event)
            }
            try await waitUntil("the owner entitled") {
                try await store.entitles(app: CheckoutFixture.citconAccount, user: Self.user, product: Self.product)
            }
            #expect(try await api.get(firstId).string("state") == "paid")
        }
    }

    @Test("an unpaid checkout expires; a payment that arrives after still entitles (the money was taken)")
    func expiry() async throws {
        let fixture = try await CheckoutFixture.make(antomBaseURL: "http://127.0.0.1:9")
        try await TestDatabases.withStore(.sqlite) { store in
            let offset = Atomic<Int64>(0)
            let clock: @Sendable () -> Int64 = { Timestamp.now.millisecondsSince1970 + offset.load(ordering: .relaxed) }
            let metrics = RecordingMetrics()
            let api = try fixture.api(store: store, metrics: MerchantMetrics(factory: metrics), now: clock)
            let created = try await api.post(Self.body(app: CheckoutFixture.citconAccount, provider: "citcon"))
            let id = try #require(created.string("id"))
            let records = CheckoutRecords(store: store)
            let sweeper = CheckoutExpirySweeper(records: records, metrics: MerchantMetrics(factory: metrics), logger: api.logger, now: clock)
            #expect(try await sweeper.sweepOnce() == 0)
            offset.store(Int64(fixture.config.checkouts.expirySeconds) * 1000 + 1, ordering: .relaxed)
            #expect(try await sweeper.sweepOnce() == 1)
            #expect(try await api.get(id).string("state") == "expired")
            // A new checkout for the same product is no longer held back by the expired one.
            #expect(try await api.post(Self.body(app: CheckoutFixture.citconAccount, provider: "citcon", currency: "EUR")).status == 201)

            let matcher = CheckoutMatcher(records: records, providers: api.service.providers, metrics: MerchantMetrics(factory: metrics), logger: api.logger, now: clock)
            let reference = try #require(created.string("reference"))
            let events = try await fixture.citconIPN(reference: reference, id: "ch_3", amount: "1999")
            let event = try #require(events.first)
            let result = try await matcher.project(event, into: store)
            let matched = try #require(result)
            #expect(matched.user == Self.user && matched.product == Self.product)
            #expect(try await api.get(id).string("state") == "paid")
            #expect(metrics.total("tollgate_checkout_notifications_total", ["provider": "citcon", "outcome": "paid_after_expiry"]) == 1)
            #expect(metrics.total("tollgate_checkouts_expired_total", [:]) == 1)
        }
    }

    @Test("an expired checkout is deleted checkouts.retentionDays after it expired, not before; paid and refunded ones are kept",
          arguments: Backend.allCases)
    func expiredCheckoutsPruned(_ backend: Backend) async throws {
        let fixture = try await CheckoutFixture.make(antomBaseURL: "http://127.0.0.1:9")
        try await TestDatabases.withStore(backend) { store in
            let offset = Atomic<Int64>(0)
            let clock: @Sendable () -> Int64 = { Timestamp.now.millisecondsSince1970 + offset.load(ordering: .relaxed) }
            let metrics = RecordingMetrics()
            let api = try fixture.api(store: store, metrics: MerchantMetrics(factory: metrics), now: clock)
            let records = CheckoutRecords(store: store)
            let matcher = CheckoutMatcher(records: records, providers: api.service.providers, metrics: MerchantMetrics(factory: metrics), logger: api.logger, now: clock)
            // One checkout per product, each left as its role says (products a shop's catalog would sell at 19.99 USD).
            var checkouts: [String: (id: String, reference: String)] = [:]
            for (role, product) in [("unpaid", "pro.lifetime"), ("paid", "other"), ("refunded", "other.product")] {
                let created = try await api.post(Self.body(app: CheckoutFixture.citconAccount, provider: "citcon", product: product))
                checkouts[role] = (try #require(created.string("id")), try #require(created.string("reference")))
            }
            let paid = try #require(checkouts["paid"]), refunded = try #require(checkouts["refunded"]), unpaid = try #require(checkouts["unpaid"])
            for (reference, id) in [(paid.reference, "ch_p"), (refunded.reference, "ch_r")] {
                _ = try await matcher.project(try #require(try await fixture.citconIPN(reference: reference, id: id, amount: "1999").first), into: store)
            }
            _ = try await matcher.project(try #require(try await fixture.citconIPN(reference: refunded.reference, id: "rf_r", type: "refund",
                                                                                   amount: "1999").first), into: store)
            #expect(try await api.get(refunded.id).string("state") == "refunded")

            let sweeper = CheckoutExpirySweeper(records: records, metrics: MerchantMetrics(factory: metrics), logger: api.logger, now: clock,
                                                retentionDays: 7)
            let expiryMs = Int64(fixture.config.checkouts.expirySeconds) * 1000
            let retentionMs = Int64(7 * 86_400_000)
            offset.store(expiryMs + 1_000, ordering: .relaxed)
            #expect(try await sweeper.sweepOnce() == 1)
            #expect(try await api.get(unpaid.id).string("state") == "expired")
            // Everything expires and is kept for a while: paid and refunded ones are past their expiry too.
            offset.store(expiryMs + retentionMs - 60_000, ordering: .relaxed)
            _ = try await sweeper.sweepOnce()
            #expect(try await store.checkoutCount() == 3)
            #expect(metrics.total("tollgate_checkouts_pruned_total") == 0)

            offset.store(expiryMs + retentionMs + 60_000, ordering: .relaxed)
            _ = try await sweeper.sweepOnce()
            #expect(try await records.find(id: unpaid.id) == nil)
            #expect(try await api.get(unpaid.id).error == "checkout_not_found")
            #expect(try await records.find(id: paid.id)?.state == .paid)
            #expect(try await records.find(id: refunded.id)?.state == .refunded)
            #expect(try await store.checkoutCount() == 2)
            #expect(metrics.total("tollgate_checkouts_pruned_total") == 1)
            // Deleted once: the next pass finds nothing more.
            _ = try await sweeper.sweepOnce()
            #expect(metrics.total("tollgate_checkouts_pruned_total") == 1)
        }
    }

    @Test("Antom unreachable, 5xx, U, an unverifiable answer: 503 and no checkout row; F: 422 payment_refused and no row")
    func antomFailuresLeaveNothing() async throws {
        try await Self.withCheckouts { antom, _, store, api, _, _ in
            for (mode, status, reason) in [(FakeAntom.Mode.serverError, 503, "payment_provider_unavailable"),
                                           (.unknown, 503, "payment_provider_unavailable"),
                                           (.wronglySigned, 503, "payment_provider_unavailable"),
                                           (.refuse, 422, "payment_refused")] {
                antom.set(mode)
                let answer = try await api.post(Self.body(app: CheckoutFixture.clientId, provider: "alipayplus"))
                #expect(answer.status == status, "\(mode): \(answer.text)")
                #expect(answer.error == reason, "\(mode)")
                #expect(try await store.checkoutCount() == 0, "\(mode)")
            }
        }
        let unreachable = try await CheckoutFixture.make(antomBaseURL: "http://127.0.0.1:9")
        try await TestDatabases.withStore(.sqlite) { store in
            let answer = try await unreachable.api(store: store).post(Self.body(app: CheckoutFixture.clientId, provider: "alipayplus"))
            #expect(answer.status == 503)
            #expect(answer.error == "payment_provider_unavailable")
            #expect(try await store.checkoutCount() == 0)
        }
    }

    @Test("bad input 400, no token 401, other app 403, account not configured 403, conflicting duplicate 409, unknown id 404")
    func refusals() async throws {
        let fixture = try await CheckoutFixture.make(antomBaseURL: "http://127.0.0.1:9")
        try await TestDatabases.withStore(.sqlite) { store in
            let api = try fixture.api(store: store)
            let account = CheckoutFixture.citconAccount
            let cases: [(String, String?, Int, String)] = [
                (Self.body(app: account, provider: "citcon"), nil, 401, "unauthorized"),
                (Self.body(app: account, provider: "citcon"), "wrong-token", 401, "unauthorized"),
                ("not json", CheckoutFixture.token, 400, "malformed_json"),
                (#"{"app":"shop-us","user":"u","product":"pro.lifetime","provider":"citcon"}"#, CheckoutFixture.token, 400, "missing_field"),
                (Self.body(app: account, provider: "citcon", amount: "0"), CheckoutFixture.token, 422, "price_mismatch"),
                (Self.body(app: account, provider: "citcon", amount: "12.5"), CheckoutFixture.token, 400, "invalid_field"),
                (Self.body(app: account, provider: "citcon", amount: "1e13"), CheckoutFixture.token, 422, "price_mismatch"),
                (Self.body(app: account, provider: "citcon", amount: #""1999""#), CheckoutFixture.token, 400, "invalid_field"),
                (Self.body(app: account, provider: "citcon", product: "not.sold"), CheckoutFixture.token, 422, "unknown_product"),
                (Self.body(app: account, provider: "citcon", currency: "JPY"), CheckoutFixture.token, 422, "currency_not_offered"),
                (Self.body(app: account, provider: "citcon", currency: "usd"), CheckoutFixture.token, 400, "invalid_field"),
                (Self.body(app: account, provider: "paypal"), CheckoutFixture.token, 400, "invalid_field"),
                (Self.body(app: account, provider: "citcon", user: ""), CheckoutFixture.token, 400, "invalid_field"),
                (Self.body(app: account, provider: "citcon"), CheckoutFixture.limitedToken, 403, "app_not_allowed"),
                // Refused before the catalog is read: another app's products and prices stay unknown to it.
                (Self.body(app: account, provider: "citcon", product: "not.sold"), CheckoutFixture.limitedToken, 403, "app_not_allowed"),
                (Self.body(app: "no-such-account", provider: "citcon"), CheckoutFixture.token, 403, "provider_not_configured"),
                (Self.body(app: account, provider: "alipayplus"), CheckoutFixture.token, 403, "provider_not_configured"),
            ]
            for (body, token, status, reason) in cases {
                let answer = try await api.post(body, token: token)
                #expect(answer.status == status, "\(body): \(answer.text)")
                #expect(answer.error == reason, "\(body)")
            }
            let first = try await api.post(Self.body(app: account, provider: "citcon"))
            #expect(first.status == 201)
            let again = try await api.post(Self.body(app: account, provider: "citcon"))
            #expect(again.status == 200)
            #expect(again.string("id") == first.string("id"))
            let conflict = try await api.post(Self.body(app: account, provider: "citcon", currency: "EUR"))
            #expect(conflict.status == 409)
            #expect(conflict.error == "checkout_conflict")
            #expect(try await api.get("co_unknown").error == "checkout_not_found")
            // A token limited to other apps does not see this app's checkout.
            let firstId = try #require(first.string("id"))
            #expect(try await api.get(firstId, token: CheckoutFixture.limitedToken).status == 404)
            #expect(try await store.checkoutCount() == 1)
        }
    }
}
