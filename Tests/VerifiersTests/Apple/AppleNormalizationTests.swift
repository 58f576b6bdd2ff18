import Config
import Events
import Foundation
import TestSupport
import Testing
@testable import Toolkit
@testable import Verifiers

@Suite("Apple: normalization")
struct AppleNormalizationTests {
    @Test("every notification type and subtype maps to the vocabulary", arguments: [
        ("SUBSCRIBED", "INITIAL_BUY", EventType.subscriptionStarted),
        ("SUBSCRIBED", "RESUBSCRIBE", .subscriptionResubscribed),
        ("DID_RENEW", nil, .subscriptionRenewed),
        ("DID_RENEW", "BILLING_RECOVERY", .subscriptionRecovered),
        ("DID_FAIL_TO_RENEW", nil, .subscriptionBillingIssue),
        ("DID_FAIL_TO_RENEW", "GRACE_PERIOD", .subscriptionBillingIssue),
        ("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", .subscriptionAutoRenewDisabled),
        ("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_ENABLED", .subscriptionAutoRenewEnabled),
        ("DID_CHANGE_RENEWAL_PREF", "UPGRADE", .subscriptionPlanChanged),
        ("DID_CHANGE_RENEWAL_PREF", "DOWNGRADE", .subscriptionPlanChanged),
        ("DID_CHANGE_RENEWAL_PREF", nil, .subscriptionPlanChanged),
        ("EXPIRED", "VOLUNTARY", .subscriptionExpired),
        ("EXPIRED", "BILLING_RETRY", .subscriptionExpired),
        ("EXPIRED", "PRICE_INCREASE", .subscriptionExpired),
        ("EXPIRED", "PRODUCT_NOT_FOR_SALE", .subscriptionExpired),
        ("GRACE_PERIOD_EXPIRED", nil, .subscriptionExpired),
        ("REVOKE", nil, .subscriptionRevoked),
        ("RENEWAL_EXTENDED", nil, .subscriptionExtended),
        ("RENEWAL_EXTENSION", "SUMMARY", .subscriptionExtended),
        ("RENEWAL_EXTENSION", "FAILURE", .subscriptionExtended),
        ("PRICE_INCREASE", "PENDING", .subscriptionPriceChange),
        ("PRICE_INCREASE", "ACCEPTED", .subscriptionPriceChange),
        ("OFFER_REDEEMED", "UPGRADE", .subscriptionOfferRedeemed),
        ("ONE_TIME_CHARGE", nil, .purchaseCompleted),
        ("REFUND", nil, .purchaseRefunded),
        ("REFUND_DECLINED", nil, .purchaseRefundDeclined),
        ("REFUND_REVERSED", nil, .purchaseRefundReversed),
        ("CONSUMPTION_REQUEST", nil, .purchaseConsumptionRequested),
        ("TEST", nil, .storeTest),
        ("EXTERNAL_PURCHASE_TOKEN", "UNREPORTED", .externalPurchaseTokenUnreported),
        ("EXTERNAL_PURCHASE_TOKEN", "CREATED", .externalPurchaseTokenCreated),
        ("EXTERNAL_PURCHASE_TOKEN", "ACTIVE_TOKEN_REMINDER", .externalPurchaseTokenActive),
        ("EXTERNAL_PURCHASE_TOKEN", "SOMETHING_LATER", .storeOther),
        ("METADATA_UPDATE", nil, .storeOther),
        ("MIGRATION", nil, .storeOther),
        ("PRICE_CHANGE", nil, .storeOther),
        ("RESCIND_CONSENT", nil, .consentRescinded),
        ("SOMETHING_APPLE_ADDS_LATER", nil, .storeOther),
    ] as [(String, String?, EventType)])
    func mapping(type: String, subtype: String?, expected: EventType) async throws {
        #expect(AppleEventType.of(AppleNotificationType(rawValue: type), subtype.map(AppleSubtype.init(rawValue:))) == expected)
    }

    @Test("the vocabulary test covers all 23 types and 19 subtypes Apple documents")
    func knownValues() async {
        #expect(AppleNotificationType.known.count == 23)
        #expect(AppleSubtype.known.count == 19)
    }

    @Test("a one-time charge bought with an offer code: its offer and discount type, and the app transaction id; offer codes Apple adds later are left out")
    func oneTimeChargeOffer() async throws {
        let chain = try AppleTestChain()
        func charge(offerType: Int, discount: String) async throws -> NormalizedEvent? {
            let transaction = #"{"originalTransactionId":"3000","transactionId":"3000","bundleId":"com.example","productId":"coins.100","purchaseDate":1699990000000,"quantity":1,"type":"Consumable","signedDate":\#(AppleBodies.signedDate),"environment":"Sandbox","currency":"USD","price":990,"offerType":\#(offerType),"offerDiscountType":"\#(discount)","appTransactionId":"704289572208567808"}"#
            let payload = AppleBodies.notification(type: "ONE_TIME_CHARGE", transactionJWS: try chain.sign(transaction), status: nil)
            return try await chain.source().handle(AppleBodies.request(try chain.sign(payload))).events.first
        }
        let event = try #require(try await charge(offerType: 3, discount: "ONE_TIME"))
        #expect(event.type == .purchaseCompleted)
        #expect(event.transaction?.offerType == "offer_code" && event.transaction?.offerDiscountType == "one_time")
        #expect(event.transaction?.appTransactionId == "704289572208567808")
        let later = try await charge(offerType: 9, discount: "SOMETHING_NEW")?.transaction
        #expect(later?.offerType == nil && later?.offerDiscountType == nil)
    }

    @Test("a monthly plan within a 12-month commitment: the billing plan and the commitment travel on the event")
    func commitment() async throws {
        let chain = try AppleTestChain()
        let transaction = #"{"originalTransactionId":"4000","transactionId":"4003","bundleId":"com.example","productId":"pro.yearly","purchaseDate":1699990000000,"expiresDate":1702582000000,"quantity":1,"type":"Auto-Renewable Subscription","signedDate":\#(AppleBodies.signedDate),"environment":"Sandbox","currency":"USD","price":999,"billingPlanType":"MONTHLY","commitmentInfo":{"billingPeriodNumber":3,"totalBillingPeriods":12,"commitmentExpiresDate":1723990000000,"commitmentPrice":119880}}"#
        let payload = AppleBodies.notification(type: "DID_RENEW", transactionJWS: try chain.sign(transaction))
        let event = try #require(try await chain.source().handle(AppleBodies.request(try chain.sign(payload))).events.first)
        #expect(event.transaction?.billingPlan == "monthly")
        #expect(event.transaction?.commitment == NormalizedEvent.Transaction.Commitment(period: 3, periods: 12, expiresAt: "2024-08-18T14:06:40.000Z"))
        #expect(event.transaction?.expiresAt == "2023-12-14T19:26:40.000Z", "the entitlement ends with the period paid")
    }

    @Test("an external purchase token's notice and a rescinded consent are events of their own, about no purchase")
    func appNotices() async throws {
        let chain = try AppleTestChain()
        let token = #"{"notificationType":"EXTERNAL_PURCHASE_TOKEN","subtype":"ACTIVE_TOKEN_REMINDER","notificationUUID":"u-remind","signedDate":\#(AppleBodies.signedDate),"externalPurchaseToken":{"externalPurchaseId":"SANDBOX_7af9","tokenCreationDate":1698148950000,"appAppleId":1234,"bundleId":"com.example","tokenType":"SERVICES","tokenExpirationDate":1700740950000}}"#
        let reminder = try #require(try await chain.source().handle(AppleBodies.request(try chain.sign(token))).events.first)
        #expect(reminder.type == .externalPurchaseTokenActive && reminder.reason == "services" && reminder.subject == "external:SANDBOX_7af9")
        let consent = #"{"notificationType":"RESCIND_CONSENT","notificationUUID":"u-consent","signedDate":\#(AppleBodies.signedDate),"appData":{"appAppleId":1234,"bundleId":"com.example","environment":"Sandbox"}}"#
        let rescinded = try #require(try await chain.source().handle(AppleBodies.request(try chain.sign(consent))).events.first)
        #expect(rescinded.type == .consentRescinded && rescinded.app == "com.example" && rescinded.environment == .sandbox)
        #expect(!reminder.type.concernsPurchases && !rescinded.type.concernsPurchases, "no purchase is made of them")
    }

    @Test("an unknown type or subtype decodes and is kept as store.other with its name")
    func unknownValues() async throws {
        let chain = try AppleTestChain()
        let jws = try chain.sign(AppleBodies.notification(type: "BRAND_NEW", subtype: "SHINY"))
        let event = try #require(try await chain.source().handle(AppleBodies.request(jws)).events.first)
        #expect(event.type == .storeOther)
        #expect(event.sourceType == "BRAND_NEW/SHINY")
    }

    @Test("a refund says how: its revocation type and the share refunded, of the transaction's quantity; what Apple adds later, or a share outside 0-100%, is left out")
    func refundShare() async throws {
        let chain = try AppleTestChain()
        func refund(type: String, percentage: Int) async throws -> NormalizedEvent.Transaction? {
            let transaction = #"{"originalTransactionId":"2000","transactionId":"2001","bundleId":"com.example","productId":"coins.100","purchaseDate":1699990000000,"quantity":3,"type":"Consumable","signedDate":\#(AppleBodies.signedDate),"environment":"Sandbox","currency":"USD","price":2970,"revocationDate":1700000000000,"revocationReason":0,"revocationType":"\#(type)","revocationPercentage":\#(percentage)}"#
            let payload = AppleBodies.notification(type: "REFUND", transactionJWS: try chain.sign(transaction), status: nil)
            return try await chain.source().handle(AppleBodies.request(try chain.sign(payload))).events.first?.transaction
        }
        let prorated = try await refund(type: "REFUND_PRORATED", percentage: 33_333)
        #expect(prorated?.revocationType == .refundProrated && prorated?.revocationPercentage == 33_333 && prorated?.quantity == 3)
        #expect(try await refund(type: "FAMILY_REVOKE", percentage: 100_000)?.revocationType == .familyRevoke)
        let later = try await refund(type: "REFUND_SOMEDAY", percentage: 150_000)
        #expect(later?.revocationType == nil && later?.revocationPercentage == nil && later?.revokedAt != nil)
    }

    @Test("a summary notification is keyed by its request identifier")
    func summary() async throws {
        let chain = try AppleTestChain()
        let payload = #"{"notificationType":"RENEWAL_EXTENSION","subtype":"SUMMARY","notificationUUID":"u-summary","signedDate":\#(AppleBodies.signedDate),"summary":{"requestIdentifier":"req-1","environment":"Sandbox","appAppleId":1234,"bundleId":"com.example","productId":"pro.monthly","storefrontCountryCodes":["USA"],"failedCount":0,"succeededCount":5}}"#
        let event = try #require(try await chain.source().handle(AppleBodies.request(try chain.sign(payload))).events.first)
        #expect(event.subject == "summary:req-1")
        #expect(event.type == .subscriptionExtended)
        #expect(event.product == "pro.monthly")
    }

    @Test("an external purchase token takes its environment from the id's prefix")
    func externalPurchaseToken() async throws {
        let chain = try AppleTestChain()
        func payload(_ id: String) -> String {
            #"{"notificationType":"EXTERNAL_PURCHASE_TOKEN","subtype":"UNREPORTED","notificationUUID":"u-ext","signedDate":\#(AppleBodies.signedDate),"externalPurchaseToken":{"externalPurchaseId":"\#(id)","tokenCreationDate":1698148900000,"appAppleId":1234,"bundleId":"com.example"}}"#
        }
        let sandbox = try #require(try await chain.source().handle(AppleBodies.request(try chain.sign(payload("SANDBOX_b2158121")))).events.first)
        #expect(sandbox.subject == "external:SANDBOX_b2158121")
        #expect(sandbox.environment == .sandbox)
        let production = try #require(try await chain.source().handle(AppleBodies.request(try chain.sign(payload("b2158121")))).events.first)
        #expect(production.environment == .production)
    }

    @Test("an appData notification is checked against the app like the others")
    func appData() async throws {
        let chain = try AppleTestChain()
        let payload = #"{"notificationType":"RESCIND_CONSENT","notificationUUID":"u-app","signedDate":\#(AppleBodies.signedDate),"appData":{"appAppleId":1234,"bundleId":"com.example","environment":"Sandbox"}}"#
        #expect(await chain.source().reason(AppleBodies.request(try chain.sign(payload))) == nil)
        let other = payload.replacingOccurrences(of: "com.example", with: "com.nope")
        #expect(await chain.source().reason(AppleBodies.request(try chain.sign(other))) == .unknownApp)
    }

    @Test("Xcode payloads may carry fractional millisecond dates")
    func fractionalDates() async throws {
        let chain = try AppleTestChain()
        let apps = [AppleSettings.App(bundleId: "com.example", appAppleId: nil, environments: ["Xcode"])]
        let payload = AppleBodies.notification(environment: "Xcode", appAppleId: nil).replacingOccurrences(
            of: "\"signedDate\":\(AppleBodies.signedDate)", with: "\"signedDate\":\(AppleBodies.signedDate).5")
        let event = try #require(try await chain.source(apps: apps).handle(AppleBodies.request(try chain.sign(payload))).events.first)
        #expect(event.occurredAt == "2023-11-14T22:13:20.000Z")
    }

    @Test("the same notification always gets the same ce_id")
    func deterministicId() async throws {
        let chain = try AppleTestChain()
        let request = AppleBodies.request(try chain.sign(AppleBodies.notification()))
        let first = try await chain.source().handle(request).events.map(\.id)
        let second = try await chain.source().handle(request).events.map(\.id)
        #expect(first == second)
        #expect(first == ["apple:0b7a1b2c-3d4e-5f60-7182-93a4b5c6d7e8"])
    }
}

@Suite("Apple: roots")
struct AppleRootsTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("shared/fixtures/apple")

    @Test("a root that calls itself Apple Root CA - G3 must have Apple's fingerprint")
    func impostorRoot() async throws {
        let key = try #require(PrivateKey.generateP256())
        var builder = CertificateBuilder(subject: "Apple Root CA - G3", notBefore: AppleTestChain.y2020, notAfter: AppleTestChain.y2040)
        builder.isCA = true
        let impostor = try #require(builder.issue(key: key, issuer: nil, issuerKey: key))
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("impostor-\(UUID().uuidString).der").path
        try Data(impostor.der).write(to: URL(fileURLWithPath: path))
        #expect(throws: ConfigError.self) { _ = try AppleRoots.load(paths: [path]) }
    }

    @Test("the real Apple Root CA - G3 (from ../shared) loads, PEM or DER", .enabled(if: FileManager.default.fileExists(atPath: fixtures.path)))
    func realRoot() async throws {
        let pem = Self.fixtures.appendingPathComponent("AppleRootCA-G3.pem").path
        let roots = try AppleRoots.load(paths: [pem])
        #expect(roots.first?.commonName == "Apple Root CA - G3")
        let der = FileManager.default.temporaryDirectory.appendingPathComponent("g3-\(UUID().uuidString).cer")
        try Data(try #require(roots.first).der).write(to: der)
        #expect(try AppleRoots.load(paths: [der.path]).count == 1)
    }

    @Test("a missing root file fails start-up only when Apple apps are configured")
    func missingRoot() async throws {
        var settings = AppleSettings()
        settings.roots = ["/nonexistent/root.pem"]
        #expect(throws: Never.self) { _ = try AppleSource(settings: settings) }
        settings.apps = AppleTestChain.apps
        #expect(throws: ConfigError.self) { _ = try AppleSource(settings: settings) }
    }
}
